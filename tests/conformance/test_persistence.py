"""Everything written survives closing and reopening the store."""

from __future__ import annotations

import pytest

from uniko_memory.model import Direction, Edge, EdgeType, Tier, content_hash
from uniko_memory.store.protocol import Store

from .conftest import VECTOR_ATOL, StoreHarness
from .corpus import AGENT, OTHER, QUOKKA, N, entity, ids, load_corpus, message


async def test_reopen_keeps_everything(harness: StoreHarness) -> None:
    if not harness.persistent:
        pytest.skip(f"{harness.name} is not persistent")
    store: Store = await harness.open()
    msgs, vecs = await load_corpus(store)
    ent = entity(AGENT, "Quokka", "ANIMAL")
    edge = Edge(type=EdgeType.MENTIONS, src=msgs[QUOKKA].id, dst=ent.id, props={"count": 3})
    blob = b"persisted \x00 blob"
    other = message(OTHER, "o", "beta agent keeps its own message")
    async with store.unit(AGENT) as u:
        u.put(ent)
        u.put_edge(edge)
        u.put_blob(content_hash(blob), blob)
    async with store.unit(OTHER) as u:
        u.put(other)
    await store.set_meta("schema_note", "v1")
    redacted, deleted = msgs[0], msgs[1]
    await store.redact(AGENT, [redacted.id])
    await store.delete(AGENT, [deleted.id])
    text_before = ids(await store.text_search(AGENT, Tier.MESSAGE, "weekend quokka"))
    vec_before = ids(await store.vector_search(AGENT, Tier.MESSAGE, vecs[4], k=N))

    store = await harness.reopen(store)

    assert store.dim == len(vecs[0])
    for m in msgs[2:]:
        assert await store.get(AGENT, m.id) == m
    assert await store.get(AGENT, ent.id) == ent
    assert await store.get(OTHER, other.id) == other
    assert await store.get(AGENT, other.id) is None
    assert await store.get(AGENT, redacted.id) == redacted.redacted_copy()
    assert await store.get(AGENT, deleted.id) is None
    # count agrees with find (which leaves redacted nodes out by default).
    assert await store.count(AGENT, Tier.MESSAGE) == len(await store.find(AGENT, Tier.MESSAGE)) == N - 2
    assert len(await store.find(AGENT, Tier.MESSAGE, include_redacted=True)) == N - 1
    assert await store.neighbors(AGENT, [ent.id], direction=Direction.IN) == [edge]
    assert await store.get_blob(content_hash(blob)) == blob
    assert await store.get_meta("schema_note") == "v1"
    assert set(await store.agents()) == {AGENT, OTHER}
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "weekend quokka")) == text_before
    vec_hits = await store.vector_search(AGENT, Tier.MESSAGE, vecs[4], k=N)
    assert ids(vec_hits) == vec_before
    assert vec_hits[0].id == msgs[4].id and vec_hits[0].score == pytest.approx(1.0, abs=VECTOR_ATOL)
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[QUOKKA], k=3)
    assert hyb[0].id == msgs[QUOKKA].id
    got_vecs = await store.get_vectors(AGENT, [m.id for m in msgs])
    assert set(got_vecs) >= {m.id for m in msgs[2:]}
    assert deleted.id not in got_vecs
    # Redacted/deleted nodes stay out of search after a reopen.
    assert redacted.id not in ids(await store.text_search(AGENT, Tier.MESSAGE, "memo", k=50))
    assert redacted.id not in ids(await store.vector_search(AGENT, Tier.MESSAGE, vecs[0], k=50))
    assert deleted.id not in ids(await store.vector_search(AGENT, Tier.MESSAGE, vecs[1], k=50))

    # And the reopened store takes new writes that also persist.
    extra = message(AGENT, "after", "written after the reopen mentions a capybara")
    async with store.unit(AGENT) as u:
        u.put(extra, vector=vecs[2])
    store = await harness.reopen(store)
    assert await store.get(AGENT, extra.id) == extra
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "capybara")) == [extra.id]


async def test_rolled_back_unit_does_not_persist(harness: StoreHarness) -> None:
    if not harness.persistent:
        pytest.skip(f"{harness.name} is not persistent")
    store: Store = await harness.open()
    m = message(AGENT, "rb", "rolled back")
    with pytest.raises(RuntimeError):
        async with store.unit(AGENT) as u:
            u.put(m)
            raise RuntimeError("abort")
    store = await harness.reopen(store)
    assert await store.get(AGENT, m.id) is None
    assert await store.count(AGENT) == 0
