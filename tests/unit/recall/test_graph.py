"""The graph channel's walk: which edges it reads and how personalised PageRank spreads mass."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from uniko_memory.model import Edge, EdgeType
from uniko_memory.recall.graph import (
    BOOKKEEPING_EDGES,
    WALK_EDGES,
    neighbourhood,
    personalized_pagerank,
    top_evidence,
)
from uniko_memory.store.embedded import EmbeddedStore

AGENT = "graph"


@pytest_asyncio.fixture
async def store() -> AsyncIterator[EmbeddedStore]:
    s = await EmbeddedStore.in_memory(dim=8)
    # ent_x is named in msg_1; a consolidation cycle touched ent_x and three observations, only
    # one of which (obs_1) was drawn from a turn that names ent_x.
    edges = [
        Edge(type=EdgeType.MENTIONS, src="msg_1", dst="ent_x"),
        Edge(type=EdgeType.NEXT, src="msg_1", dst="msg_2"),
        Edge(type=EdgeType.OBSERVED_IN, src="obs_1", dst="msg_1"),
        Edge(type=EdgeType.INVOLVED, src="cyc_1", dst="ent_x"),
        *(Edge(type=EdgeType.PROCESSED, src="cyc_1", dst=f"obs_{i}") for i in (1, 2, 3)),
        Edge(type=EdgeType.CREATED, src="cyc_1", dst="fct_9"),
    ]
    async with s.unit(AGENT) as u:
        for e in edges:
            u.put_edge(e)
    yield s
    await s.close()


def test_walk_edges_are_every_type_but_the_bookkeeping() -> None:
    assert set(WALK_EDGES) | BOOKKEEPING_EDGES == set(EdgeType)
    assert not set(WALK_EDGES) & BOOKKEEPING_EDGES
    assert EdgeType.PROCESSED in BOOKKEEPING_EDGES and EdgeType.MENTIONS in WALK_EDGES


@pytest.mark.asyncio
async def test_the_walk_skips_the_consolidation_audit_trail(store: EmbeddedStore) -> None:
    edges = await neighbourhood(store, AGENT, ["ent_x"], hops=2, max_nodes=100)
    assert set(edges) == {
        ("msg_1", "MENTIONS", "ent_x"),
        ("msg_1", "NEXT", "msg_2"),
        ("obs_1", "OBSERVED_IN", "msg_1"),
    }
    everything = await neighbourhood(
        store, AGENT, ["ent_x"], hops=2, max_nodes=100, edge_types=list(EdgeType)
    )
    # Through the cycle node, every observation it processed would be two hops from the seed.
    assert {("cyc_1", "PROCESSED", "obs_2"), ("cyc_1", "CREATED", "fct_9")} <= set(everything)


@pytest.mark.asyncio
async def test_max_nodes_caps_the_frontier(store: EmbeddedStore) -> None:
    # The seed fills the cap: its own edges are read, nothing beyond them is expanded.
    edges = await neighbourhood(store, AGENT, ["ent_x"], hops=2, max_nodes=1)
    assert edges == [("msg_1", "MENTIONS", "ent_x")]


@pytest_asyncio.fixture
async def hubs() -> AsyncIterator[EmbeddedStore]:
    """A seed mentioned by 40 turns, each of which also mentions one of two busy entities."""
    s = await EmbeddedStore.in_memory(dim=8)
    async with s.unit(AGENT) as u:
        for i in range(40):
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=f"msg_{i:02d}", dst="ent_seed"))
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=f"msg_{i:02d}", dst=f"ent_hub{i % 2}"))
        for j in range(200):  # the hubs' other mentions: the second hop's bulk
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=f"msg_x{j:03d}", dst=f"ent_hub{j % 2}"))
    yield s
    await s.close()


@pytest.mark.asyncio
async def test_an_edge_budget_the_walk_stays_under_changes_nothing(hubs: EmbeddedStore) -> None:
    whole = await neighbourhood(hubs, AGENT, ["ent_seed"], hops=3, max_nodes=1000)
    assert len(whole) == 280
    for batch in (1, 7, 64):
        same = await neighbourhood(
            hubs, AGENT, ["ent_seed"], hops=3, max_nodes=1000, max_edges=280, read_batch=batch
        )
        assert same == whole


@pytest.mark.asyncio
async def test_the_edge_budget_stops_reading_the_frontier(hubs: EmbeddedStore) -> None:
    first_hop = await neighbourhood(hubs, AGENT, ["ent_seed"], hops=1, max_nodes=1000)
    reads: list[int] = []
    real = hubs.neighbor_keys

    async def counted(agent, ids, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(len(ids))
        return await real(agent, ids, *args, **kwargs)

    hubs.neighbor_keys = counted  # type: ignore[method-assign]
    capped = await neighbourhood(
        hubs, AGENT, ["ent_seed"], hops=2, max_nodes=1000, max_edges=60, read_batch=8
    )
    assert len(capped) == 60
    # Hop one holds the seed's 40 edges; hop two reads its 40 turns 8 at a time (each batch: 8
    # new edges to a hub) and stops once 20 more are found, after three batches.
    assert capped[:40] == first_hop
    assert reads == [1, 8, 8, 8]
    again = await neighbourhood(hubs, AGENT, ["ent_seed"], hops=2, max_nodes=1000, max_edges=60, read_batch=8)
    assert again == capped  # deterministic


def test_pagerank_prefers_nodes_near_the_seed_and_heavier_edges() -> None:
    edges = [("a", "MENTIONS", "s"), ("b", "IN_SESSION", "s"), ("c", "MENTIONS", "a")]
    rank = personalized_pagerank(edges, ["s"], {"MENTIONS": 1.0, "IN_SESSION": 0.3})
    assert rank["a"] > rank["b"] and rank["a"] > rank["c"] and rank["s"] > rank["c"]
    assert sum(rank.values()) == pytest.approx(1.0)


def test_pagerank_without_edges_keeps_the_mass_on_the_seeds() -> None:
    rank = personalized_pagerank([], ["s", "t"], {})
    assert rank == pytest.approx({"s": 0.5, "t": 0.5})
    assert personalized_pagerank([("a", "NEXT", "b")], [], {}) == {}


def test_zero_weight_edges_are_not_walked() -> None:
    rank = personalized_pagerank([("a", "MENTIONS", "s"), ("b", "NEXT", "s")], ["s"], {"NEXT": 0.0})
    assert "b" not in rank and rank["a"] > 0


def test_top_evidence_leaves_out_seeds_and_structure() -> None:
    rank = {"ent_s": 0.5, "ses_1": 0.2, "par_p": 0.1, "msg_1": 0.15, "obs_1": 0.05}
    assert top_evidence(rank, ["ent_s"], 5) == [("msg_1", 0.15), ("obs_1", 0.05)]
    assert top_evidence(rank, ["ent_s"], 1) == [("msg_1", 0.15)]
