"""Tenancy: nothing crosses agents, and the visibility filter admits exactly what a viewer may see."""

from __future__ import annotations

import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.model import Edge, EdgeType, Message, Tier, Viewer
from uniko_memory.store.filters import Eq, all_of, visible_to
from uniko_memory.store.protocol import Store

from .conftest import VECTOR_ATOL
from .corpus import AGENT, OTHER, corpus_vectors, entity, ids, load_corpus, message, ses


async def test_agents_do_not_see_each_other(store: Store) -> None:
    a_msgs, vecs = await load_corpus(store, AGENT)
    # OTHER gets the same external keys but different texts.
    b_msgs = [message(OTHER, m.external_id, f"beta private note {i}") for i, m in enumerate(a_msgs[:3])]
    async with store.unit(OTHER) as u:
        for m in b_msgs:
            u.put(m)
    assert {m.id for m in a_msgs}.isdisjoint({m.id for m in b_msgs}), "ids are per-agent"

    a_ids = [m.id for m in a_msgs]
    for nid in a_ids:
        assert await store.get(OTHER, nid) is None
    assert await store.get_many(OTHER, a_ids) == {}
    assert await store.get_vectors(OTHER, a_ids) == {}
    assert {n.id for n in await store.find(OTHER, Tier.MESSAGE)} == {m.id for m in b_msgs}
    assert await store.count(OTHER, Tier.MESSAGE) == 3
    assert await store.count(OTHER) == 3
    assert await store.count(AGENT, Tier.MESSAGE) == 12
    assert await store.text_search(OTHER, Tier.MESSAGE, "quokka") == []
    assert await store.vector_search(OTHER, Tier.MESSAGE, vecs[0]) == []  # OTHER stored no vectors
    assert await store.hybrid_search(OTHER, Tier.MESSAGE, "quokka", vecs[0]) == []
    assert await store.text_search(AGENT, Tier.MESSAGE, "beta") == []
    assert set(ids(await store.text_search(OTHER, Tier.MESSAGE, "beta"))) == {m.id for m in b_msgs}
    # Filters cannot be used to reach another agent's rows either.
    assert await store.find(OTHER, Tier.MESSAGE, Eq("session", ses(AGENT, 1))) == []
    assert await store.find(OTHER, Tier.MESSAGE, Eq("id", a_ids[0])) == []


async def test_same_literal_id_in_two_agents_is_two_nodes(store: Store) -> None:
    """Even if a caller reuses one id string in two agents, the rows, vectors and edges stay apart."""
    shared_id = "msg_shared_literal"
    vecs = corpus_vectors()
    a = Message.model_validate({**message(AGENT, "s", "alpha side walrus").model_dump(), "id": shared_id})
    b = Message.model_validate({**message(OTHER, "s", "beta side narwhal").model_dump(), "id": shared_id})
    ent_a, ent_b = entity(AGENT, "Same"), entity(OTHER, "Same")
    async with store.unit(AGENT) as u:
        u.put(a, vector=vecs[0])
        u.put(ent_a)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=shared_id, dst=ent_a.id, props={"agent": "a"}))
    async with store.unit(OTHER) as u:
        u.put(b, vector=vecs[1])
        u.put(ent_b)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=shared_id, dst=ent_b.id, props={"agent": "b"}))
    assert await store.get(AGENT, shared_id) == a
    assert await store.get(OTHER, shared_id) == b
    va = await store.get_vectors(AGENT, [shared_id])
    vb = await store.get_vectors(OTHER, [shared_id])
    assert va[shared_id].tolist() == pytest.approx(vecs[0].tolist(), abs=VECTOR_ATOL)
    assert vb[shared_id].tolist() == pytest.approx(vecs[1].tolist(), abs=VECTOR_ATOL)
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "narwhal")) == []
    assert ids(await store.text_search(OTHER, Tier.MESSAGE, "walrus")) == []
    assert [e.props for e in await store.neighbors(AGENT, [shared_id])] == [{"agent": "a"}]
    assert [e.props for e in await store.neighbors(OTHER, [shared_id])] == [{"agent": "b"}]
    # Deleting in one agent leaves the other alone.
    assert await store.delete(OTHER, [shared_id]) == 1
    assert await store.get(AGENT, shared_id) == a
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "walrus")) == [shared_id]
    assert len(await store.neighbors(AGENT, [shared_id])) == 1


async def test_delete_and_redact_cannot_touch_another_agent(store: Store) -> None:
    msgs, _ = await load_corpus(store, AGENT)
    assert await store.delete(OTHER, [msgs[0].id]) == 0
    assert await store.redact(OTHER, [msgs[1].id]) == 0
    assert await store.get(AGENT, msgs[0].id) == msgs[0]
    assert await store.get(AGENT, msgs[1].id) == msgs[1]


async def test_unit_refuses_a_node_of_another_agent(store: Store) -> None:
    """A unit for agent A given a node whose ``agent`` is B must refuse it (nothing crosses agents)."""
    foreign = message(OTHER, "f", "belongs to beta")
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "ok", "fine"))
            u.put(foreign)
    assert await store.get(AGENT, foreign.id) is None
    assert await store.get(OTHER, foreign.id) is None
    assert await store.get(AGENT, message(AGENT, "ok", "x").id) is None


VIS = {
    "pub": "public",
    "empty": "",
    "mine": "private:p1",
    "theirs": "private:p2",
    "myteam": "team:t",
    "otherteam": "team:u",
    "secret": "secret:x",
    "bare_private": "private:",
    "prefix": "private:p1x",
    "case": "private:P1",
    "spaced": "private: p1",
    "org": "org:acme",
}
ADMITTED = {"pub", "empty", "mine", "myteam"}


async def test_visibility_filter(store: Store) -> None:
    nodes = {
        key: message(AGENT, f"vis-{key}", f"visibility probe gecko {key}", visibility=vis, seq=i)
        for i, (key, vis) in enumerate(VIS.items())
    }
    vec = corpus_vectors()[0]
    async with store.unit(AGENT) as u:
        for n in nodes.values():
            u.put(n, vector=vec)
    viewer = Viewer(participant_id="p1", teams=frozenset({"t"}))
    f = visible_to(viewer.admitted_values())
    expected = {nodes[k].id for k in ADMITTED}

    assert {n.id for n in await store.find(AGENT, Tier.MESSAGE, f)} == expected
    assert await store.count(AGENT, Tier.MESSAGE, f) == len(expected)
    assert set(ids(await store.text_search(AGENT, Tier.MESSAGE, "gecko", k=50, filter=f))) == expected
    assert set(ids(await store.vector_search(AGENT, Tier.MESSAGE, vec, k=50, filter=f))) == expected
    assert set(ids(await store.hybrid_search(AGENT, Tier.MESSAGE, "gecko", vec, k=50, filter=f))) == expected
    # Combined with another filter through all_of.
    both = all_of(f, Eq("id", nodes["mine"].id), None)
    assert [n.id for n in await store.find(AGENT, Tier.MESSAGE, both)] == [nodes["mine"].id]
    # A viewer in an org sees org rows; nobody sees malformed schemes.
    org_viewer = Viewer(participant_id="p9", orgs=frozenset({"acme"}))
    got = {n.id for n in await store.find(AGENT, Tier.MESSAGE, visible_to(org_viewer.admitted_values()))}
    assert got == {nodes[k].id for k in ("pub", "empty", "org")}
