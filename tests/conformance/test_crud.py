"""Basic reads and writes: typed round-trips, units of work, upserts, find/count, blobs, meta, generation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.model import Edge, EdgeType, Entity, Fact, Message, Observation, Tier, content_hash
from uniko_memory.store.filters import Eq
from uniko_memory.store.protocol import Store, UnitOfWork

from .conftest import DIM, VECTOR_ATOL
from .corpus import (
    AGENT,
    OTHER,
    chunk,
    corpus_messages,
    corpus_vectors,
    entity,
    fact,
    load_corpus,
    message,
    observation,
    ts,
    unit,
)


def _assert_utc(dt: datetime | None) -> None:
    if dt is None:
        return
    assert dt.tzinfo is not None, "datetimes must come back timezone-aware"
    assert dt.utcoffset() == timedelta(0), f"datetime {dt!r} is not UTC"


async def test_store_satisfies_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    assert store.dim == DIM
    async with store.unit(AGENT) as u:
        assert isinstance(u, UnitOfWork)
        assert u.agent == AGENT


async def test_get_missing_returns_none(store: Store) -> None:
    assert await store.get(AGENT, "msg_does_not_exist") is None
    assert await store.get_many(AGENT, ["msg_does_not_exist"]) == {}
    assert await store.get_many(AGENT, []) == {}


async def test_typed_round_trip_every_tier(store: Store) -> None:
    m = message(
        AGENT,
        "rt-1",
        "Let's meet at the café ☕ on Friday — bring the 'specs' & \"notes\"",
        when=datetime(2024, 5, 6, 14, 30, 15, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        seq=7,
        visibility="team:core",
        content_type="text",
        category="plans",
        metadata={"thread": {"id": 42, "tags": ["a", "b"]}, "score": 0.5, "flag": True, "none": None},
        addressed_to=["par_x", "par_y"],
    )
    o = observation(
        AGENT,
        "o-1",
        "Alice will travel to Lisbon next week",
        when=ts(3),
        subject="Alice",
        predicate="travels_to",
        object="Lisbon",
        temporal_phrase="next week",
        anchor_lo=ts(100),
        anchor_hi=ts(268),
        anchor_granularity="week",
        confidence=0.8,
        message_id=m.id,
        session_id=m.session_id,
        speaker_id=m.sender_id,
    )
    f = fact(AGENT, "Alice", "lives_in", "Porto", when=ts(2), confidence=0.9, certainty="definite")
    e = entity(AGENT, "Alice Moreau", "PERSON", frequency=3, confidence=0.75, unstable=True)
    c = chunk(AGENT, m, 0, "Let's meet at the café on Friday", heading="Plans", metadata={"k": [1, 2]})
    nodes = [m, o, f, e, c]
    async with store.unit(AGENT) as u:
        for n in nodes:
            u.put(n)
    for n in nodes:
        got = await store.get(AGENT, n.id)
        assert got is not None, f"{type(n).__name__} {n.id} not found"
        assert type(got) is type(n)
        assert got == n, f"{type(n).__name__} did not round-trip:\n{got!r}\n!=\n{n!r}"
        for _name, value in got:
            if isinstance(value, datetime):
                _assert_utc(value)
    got_m = await store.get(AGENT, m.id)
    assert isinstance(got_m, Message)
    assert got_m.timestamp == datetime(2024, 5, 6, 9, 0, 15, 123456, tzinfo=UTC)  # microseconds kept
    many = await store.get_many(AGENT, [n.id for n in nodes] + ["missing_id"])
    assert set(many) == {n.id for n in nodes}
    for n in nodes:
        assert many[n.id] == n and type(many[n.id]) is type(n)


async def test_unit_read_your_writes(store: Store) -> None:
    committed = message(AGENT, "ryw-0", "already committed")
    async with store.unit(AGENT) as u:
        u.put(committed)
    fresh = message(AGENT, "ryw-1", "written inside the unit")
    async with store.unit(AGENT) as u:
        assert await u.get(committed.id) == committed
        assert await u.get(fresh.id) is None
        u.put(fresh)
        assert await u.get(fresh.id) == fresh
        u.delete_node(committed.id)
        assert await u.get(committed.id) is None
    assert await store.get(AGENT, fresh.id) == fresh
    assert await store.get(AGENT, committed.id) is None


async def test_upsert_same_node_twice_keeps_one(store: Store) -> None:
    m = message(AGENT, "dup", "the zebra crossing is repainted")
    for _ in range(2):
        async with store.unit(AGENT) as u:
            u.put(m, vector=unit([1, 0, 0, 0, 0, 0, 0, 0]))
    async with store.unit(AGENT) as u:
        u.put(m)
        u.put(m)
    assert await store.count(AGENT, Tier.MESSAGE) == 1
    assert [n.id for n in await store.find(AGENT, Tier.MESSAGE)] == [m.id]
    assert [h.id for h in await store.text_search(AGENT, Tier.MESSAGE, "zebra")] == [m.id]
    assert [h.id for h in await store.vector_search(AGENT, Tier.MESSAGE, unit([1, 0, 0, 0, 0, 0, 0, 0]))] == [
        m.id
    ]


async def test_upsert_replaces_content_and_text_index(store: Store) -> None:
    m = message(AGENT, "upd", "original wording mentions a walrus")
    async with store.unit(AGENT) as u:
        u.put(m)
    m2 = m.model_copy(update={"content": "revised wording mentions a narwhal"})
    async with store.unit(AGENT) as u:
        u.put(m2)
    assert await store.get(AGENT, m.id) == m2
    assert await store.text_search(AGENT, Tier.MESSAGE, "walrus") == []
    assert [h.id for h in await store.text_search(AGENT, Tier.MESSAGE, "narwhal")] == [m.id]


async def test_set_vector_and_get_vectors(store: Store) -> None:
    msgs = corpus_messages()[:3]
    vecs = corpus_vectors()[:3]
    async with store.unit(AGENT) as u:
        for m in msgs:
            u.put(m)
        u.set_vector(msgs[0].id, Tier.MESSAGE, vecs[0])
        u.set_vector(msgs[1].id, Tier.MESSAGE, vecs[1])
    got = await store.get_vectors(AGENT, [m.id for m in msgs] + ["missing"])
    assert set(got) == {msgs[0].id, msgs[1].id}  # msgs[2] has no vector
    for i in range(2):
        assert got[msgs[i].id].shape == (DIM,)
        np.testing.assert_allclose(got[msgs[i].id], vecs[i], atol=VECTOR_ATOL)
    # Replacing a vector: the search reflects the new one.
    async with store.unit(AGENT) as u:
        u.set_vector(msgs[0].id, Tier.MESSAGE, vecs[2])
    got = await store.get_vectors(AGENT, [msgs[0].id])
    np.testing.assert_allclose(got[msgs[0].id], vecs[2], atol=VECTOR_ATOL)
    hits = await store.vector_search(AGENT, Tier.MESSAGE, vecs[2], k=1)
    assert hits[0].id == msgs[0].id  # tie at 1.0 with nobody: msgs[2] has no vector
    assert await store.get_vectors(AGENT, []) == {}


async def test_find_by_tier_order_and_limit(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    extra = [observation(AGENT, "o", "an observation", when=ts(1)), fact(AGENT, "a", "b", "c")]
    async with store.unit(AGENT) as u:
        for n in extra:
            u.put(n)
    found = await store.find(AGENT, Tier.MESSAGE)
    assert [n.id for n in found] == [m.id for m in msgs]  # ascending by time
    assert all(isinstance(n, Message) for n in found)
    desc = await store.find(AGENT, Tier.MESSAGE, descending=True)
    assert [n.id for n in desc] == [m.id for m in reversed(msgs)]
    assert [n.id for n in await store.find(AGENT, Tier.MESSAGE, limit=3)] == [m.id for m in msgs[:3]]
    assert [n.id for n in await store.find(AGENT, Tier.MESSAGE, limit=2, descending=True)] == [
        msgs[-1].id,
        msgs[-2].id,
    ]
    obs = await store.find(AGENT, Tier.OBSERVATION)
    assert [type(n) for n in obs] == [Observation]
    assert [type(n) for n in await store.find(AGENT, Tier.FACT)] == [Fact]
    assert await store.find(AGENT, Tier.ENTITY) == []


async def test_find_order_by_field(store: Store) -> None:
    """``order_by`` takes a filter field (dimension or attribute), not only ``time``."""
    msgs, _ = await load_corpus(store)
    by_seq = await store.find(AGENT, Tier.MESSAGE, order_by="seq", descending=True, limit=3)
    assert [n.id for n in by_seq] == [msgs[11].id, msgs[10].id, msgs[9].id]
    by_id = await store.find(AGENT, Tier.MESSAGE, order_by="id")
    assert [n.id for n in by_id] == sorted(m.id for m in msgs)
    with pytest.raises(ValidationError):
        await store.find(AGENT, Tier.MESSAGE, order_by="seq; DROP TABLE nodes")


async def test_count(store: Store) -> None:
    await load_corpus(store)
    async with store.unit(AGENT) as u:
        u.put(entity(AGENT, "Alice"))
        u.put(entity(AGENT, "Bob"))
    assert await store.count(AGENT, Tier.MESSAGE) == 12
    assert await store.count(AGENT, Tier.ENTITY) == 2
    assert await store.count(AGENT, Tier.FACT) == 0
    assert await store.count(AGENT) == 14  # tier None: every tier
    assert await store.count(AGENT, Tier.MESSAGE, Eq("content_type", "code")) == 3
    assert await store.count(OTHER) == 0


async def test_edges_put_replace_delete(store: Store) -> None:
    a = message(AGENT, "e-a", "first")
    b = message(AGENT, "e-b", "second")
    ent: Entity = entity(AGENT, "Alice")
    async with store.unit(AGENT) as u:
        for n in (a, b, ent):
            u.put(n)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=a.id, dst=ent.id, props={"count": 1}))
        u.put_edge(Edge(type=EdgeType.NEXT, src=a.id, dst=b.id, props={"gap_ms": 1000}))
    # Replay the same edge, then the same key with new props: one edge, new props.
    async with store.unit(AGENT) as u:
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=a.id, dst=ent.id, props={"count": 1}))
    async with store.unit(AGENT) as u:
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=a.id, dst=ent.id, props={"count": 5, "first": "x"}))
    edges = await store.neighbors(AGENT, [a.id], [EdgeType.MENTIONS])
    assert edges == [Edge(type=EdgeType.MENTIONS, src=a.id, dst=ent.id, props={"count": 5, "first": "x"})]
    async with store.unit(AGENT) as u:
        u.delete_edge(EdgeType.NEXT, a.id, b.id)
    assert await store.neighbors(AGENT, [a.id], [EdgeType.NEXT]) == []
    # Deleting an edge leaves both endpoints and other edges alone.
    assert await store.get(AGENT, b.id) == b
    assert len(await store.neighbors(AGENT, [a.id])) == 1


async def test_blobs(store: Store) -> None:
    data = bytes(range(256)) * 16 + b"\x00tail"
    sha = content_hash(data)
    assert await store.get_blob(sha) is None
    async with store.unit(AGENT) as u:
        u.put_blob(sha, data)
    assert await store.get_blob(sha) == data
    # Content-addressed: putting the same blob again is a no-op.
    async with store.unit(AGENT) as u:
        u.put_blob(sha, data)
    assert await store.get_blob(sha) == data
    big = np.random.default_rng(7).bytes(1 << 20)
    big_sha = content_hash(big)
    async with store.unit(AGENT) as u:
        u.put_blob(big_sha, big)
    assert await store.get_blob(big_sha) == big


async def test_meta(store: Store) -> None:
    assert await store.get_meta("embedder") is None
    await store.set_meta("embedder", "minilm-l6@384")
    assert await store.get_meta("embedder") == "minilm-l6@384"
    await store.set_meta("embedder", "other")
    assert await store.get_meta("embedder") == "other"
    await store.set_meta("unicode", "ünïcødé ✓ 🚀")
    assert await store.get_meta("unicode") == "ünïcødé ✓ 🚀"


async def test_agents(store: Store) -> None:
    async with store.unit(AGENT) as u:
        u.put(message(AGENT, "x", "hello"))
    async with store.unit(OTHER) as u:
        u.put(message(OTHER, "x", "hello"))
    agents = await store.agents()
    assert set(agents) == {AGENT, OTHER}
    assert len(agents) == 2


async def test_generation_counts_committed_units_per_agent(store: Store) -> None:
    g_a, g_b = store.generation(AGENT), store.generation(OTHER)
    for i in range(3):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, f"g-{i}", "text"))
        assert store.generation(AGENT) == g_a + i + 1
    assert store.generation(OTHER) == g_b  # other agents' commits don't move it
    async with store.unit(OTHER) as u:
        u.put(message(OTHER, "g", "text"))
    assert store.generation(OTHER) == g_b + 1
    assert store.generation(AGENT) == g_a + 3


async def test_generation_moves_on_delete_and_redact(store: Store) -> None:
    """Generation is the cache-invalidation token, so store-level delete/redact must move it too."""
    m1, m2 = message(AGENT, "gd-1", "one"), message(AGENT, "gd-2", "two")
    async with store.unit(AGENT) as u:
        u.put(m1)
        u.put(m2)
    g = store.generation(AGENT)
    assert await store.redact(AGENT, [m1.id]) == 1
    g2 = store.generation(AGENT)
    assert g2 > g
    assert await store.delete(AGENT, [m2.id]) == 1
    assert store.generation(AGENT) > g2
