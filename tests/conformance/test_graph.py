"""neighbors(): typed edges with props, by direction and edge type."""

from __future__ import annotations

import pytest

from uniko_memory.model import Direction, Edge, EdgeType
from uniko_memory.store.protocol import Store

from .corpus import AGENT, entity, fact, message, observation


def _key(e: Edge) -> tuple[str, str, str]:
    return e.key()


def _sorted(edges: list[Edge]) -> list[Edge]:
    return sorted(edges, key=_key)


@pytest.fixture
async def graph(store: Store) -> dict[str, object]:
    m1 = message(AGENT, "g1", "Alice moved to Porto")
    m2 = message(AGENT, "g2", "She loves it there")
    alice = entity(AGENT, "Alice", "PERSON")
    porto = entity(AGENT, "Porto", "LOCATION")
    obs = observation(AGENT, "g-o1", "Alice lives in Porto", message_id=m1.id)
    fct = fact(AGENT, "Alice", "lives_in", "Porto")
    edges = {
        "m1_alice": Edge(type=EdgeType.MENTIONS, src=m1.id, dst=alice.id, props={"count": 2}),
        "m1_porto": Edge(type=EdgeType.MENTIONS, src=m1.id, dst=porto.id, props={"count": 1}),
        "m1_m2": Edge(type=EdgeType.NEXT, src=m1.id, dst=m2.id, props={"gap_ms": 61_000}),
        "m2_alice": Edge(type=EdgeType.MENTIONS, src=m2.id, dst=alice.id, props={"count": 1}),
        "obs_m1": Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=m1.id),
        "obs_alice": Edge(type=EdgeType.ABOUT, src=obs.id, dst=alice.id),
        "fct_obs": Edge(
            type=EdgeType.SUPPORTED_BY,
            src=fct.id,
            dst=obs.id,
            props={"weight": 0.75, "nested": {"rule": "r1", "ids": ["a", "b"]}, "ok": True, "none": None},
        ),
    }
    async with store.unit(AGENT) as u:
        for n in (m1, m2, alice, porto, obs, fct):
            u.put(n)
        for e in edges.values():
            u.put_edge(e)
    return {"m1": m1, "m2": m2, "alice": alice, "porto": porto, "obs": obs, "fct": fct, "edges": edges}


async def test_neighbors_out(store: Store, graph) -> None:
    e = graph["edges"]
    got = await store.neighbors(AGENT, [graph["m1"].id])
    assert _sorted(got) == _sorted([e["m1_alice"], e["m1_porto"], e["m1_m2"]])
    got = await store.neighbors(AGENT, [graph["m1"].id], direction=Direction.OUT)
    assert _sorted(got) == _sorted([e["m1_alice"], e["m1_porto"], e["m1_m2"]])
    assert all(isinstance(x, Edge) and isinstance(x.type, EdgeType) for x in got)


async def test_neighbors_in(store: Store, graph) -> None:
    e = graph["edges"]
    got = await store.neighbors(AGENT, [graph["alice"].id], direction=Direction.IN)
    assert _sorted(got) == _sorted([e["m1_alice"], e["m2_alice"], e["obs_alice"]])
    got = await store.neighbors(AGENT, [graph["m1"].id], direction=Direction.IN)
    assert got == [e["obs_m1"]]
    # An entity has no outgoing edges.
    assert await store.neighbors(AGENT, [graph["alice"].id], direction=Direction.OUT) == []


async def test_neighbors_both(store: Store, graph) -> None:
    e = graph["edges"]
    got = await store.neighbors(AGENT, [graph["m1"].id], direction=Direction.BOTH)
    assert _sorted(got) == _sorted([e["m1_alice"], e["m1_porto"], e["m1_m2"], e["obs_m1"]])
    got = await store.neighbors(AGENT, [graph["obs"].id], direction=Direction.BOTH)
    assert _sorted(got) == _sorted([e["obs_m1"], e["obs_alice"], e["fct_obs"]])


async def test_neighbors_edge_type_filter(store: Store, graph) -> None:
    e = graph["edges"]
    got = await store.neighbors(AGENT, [graph["m1"].id], [EdgeType.MENTIONS])
    assert _sorted(got) == _sorted([e["m1_alice"], e["m1_porto"]])
    got = await store.neighbors(
        AGENT, [graph["m1"].id], [EdgeType.NEXT, EdgeType.OBSERVED_IN], Direction.BOTH
    )
    assert _sorted(got) == _sorted([e["m1_m2"], e["obs_m1"]])
    assert await store.neighbors(AGENT, [graph["m1"].id], [EdgeType.INVALIDATES], Direction.BOTH) == []


async def test_neighbors_many_ids_and_props(store: Store, graph) -> None:
    e = graph["edges"]
    got = await store.neighbors(AGENT, [graph["m1"].id, graph["m2"].id, graph["fct"].id])
    assert _sorted(got) == _sorted([e["m1_alice"], e["m1_porto"], e["m1_m2"], e["m2_alice"], e["fct_obs"]])
    sup = next(x for x in got if x.type == EdgeType.SUPPORTED_BY)
    assert sup.props == {
        "weight": 0.75,
        "nested": {"rule": "r1", "ids": ["a", "b"]},
        "ok": True,
        "none": None,
    }
    nxt = next(x for x in got if x.type == EdgeType.NEXT)
    assert nxt.props == {"gap_ms": 61_000} and isinstance(nxt.props["gap_ms"], int)
    # BOTH over two ids joined by an edge returns that edge once.
    both = await store.neighbors(AGENT, [graph["m1"].id, graph["m2"].id], [EdgeType.NEXT], Direction.BOTH)
    assert both == [e["m1_m2"]]


async def test_neighbors_empty_and_unknown(store: Store, graph) -> None:
    assert await store.neighbors(AGENT, []) == []
    assert await store.neighbors(AGENT, ["nope_missing"], direction=Direction.BOTH) == []


async def test_self_loop_returned_once(store: Store) -> None:
    m = message(AGENT, "loop", "self reference")
    loop = Edge(type=EdgeType.NEXT, src=m.id, dst=m.id, props={"gap_ms": 0})
    async with store.unit(AGENT) as u:
        u.put(m)
        u.put_edge(loop)
    assert await store.neighbors(AGENT, [m.id], direction=Direction.BOTH) == [loop]


@pytest.mark.parametrize("direction", [Direction.OUT, Direction.IN, Direction.BOTH])
@pytest.mark.parametrize("types", [None, [EdgeType.MENTIONS], [EdgeType.NEXT, EdgeType.OBSERVED_IN]])
async def test_neighbor_keys_match_neighbors(store: Store, graph, direction, types) -> None:
    ids = [graph[k].id for k in ("m1", "m2", "alice", "obs")]
    edges = await store.neighbors(AGENT, ids, types, direction)
    keys = await store.neighbor_keys(AGENT, ids, types, direction)
    assert len(keys) == len(set(keys))
    assert set(keys) == {(e.src, e.type.value, e.dst) for e in edges}
    assert all(type(k[1]) is str for k in keys)  # the type value, not the enum


async def test_neighbor_keys_empty_unknown_and_other_agent(store: Store, graph) -> None:
    assert await store.neighbor_keys(AGENT, []) == []
    assert await store.neighbor_keys(AGENT, ["nope_missing"], direction=Direction.BOTH) == []
    assert await store.neighbor_keys("someone-else", [graph["m1"].id], direction=Direction.BOTH) == []
