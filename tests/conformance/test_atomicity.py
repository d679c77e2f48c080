"""A unit of work is all-or-nothing: an exception inside the block leaves nothing behind."""

from __future__ import annotations

import asyncio

import pytest

from uniko_memory.model import Edge, EdgeType, Tier, content_hash
from uniko_memory.store.protocol import Store

from .conftest import VECTOR_ATOL
from .corpus import AGENT, entity, message, unit


class Boom(RuntimeError):
    pass


async def test_exception_discards_every_kind_of_write(store: Store) -> None:
    keep = message(AGENT, "keep", "this message survives a failed unit")
    keep_ent = entity(AGENT, "Keeper")
    async with store.unit(AGENT) as u:
        u.put(keep, vector=unit([1, 0, 0, 0, 0, 0, 0, 0]))
        u.put(keep_ent)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=keep.id, dst=keep_ent.id, props={"count": 1}))
    g = store.generation(AGENT)

    new = message(AGENT, "new", "a doomed message about aardvarks")
    blob = b"doomed blob bytes"
    sha = content_hash(blob)
    err = Boom("fail inside the unit")
    with pytest.raises(Boom) as info:
        async with store.unit(AGENT) as u:
            u.put(new, vector=unit([0, 1, 0, 0, 0, 0, 0, 0]))
            u.put_edge(Edge(type=EdgeType.NEXT, src=keep.id, dst=new.id))
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=keep.id, dst=keep_ent.id, props={"count": 99}))
            u.set_vector(keep.id, Tier.MESSAGE, unit([0, 0, 1, 0, 0, 0, 0, 0]))
            u.put(keep.model_copy(update={"content": "overwritten"}))
            u.delete_edge(EdgeType.MENTIONS, keep.id, keep_ent.id)
            u.delete_node(keep_ent.id)
            u.put_blob(sha, blob)
            assert await u.get(new.id) == new
            raise err
    assert info.value is err, "the original exception must propagate unchanged"

    assert await store.get(AGENT, new.id) is None
    assert await store.get(AGENT, keep.id) == keep
    assert await store.get(AGENT, keep_ent.id) == keep_ent
    assert await store.get_blob(sha) is None
    assert await store.count(AGENT, Tier.MESSAGE) == 1
    assert await store.text_search(AGENT, Tier.MESSAGE, "aardvarks") == []
    assert [h.id for h in await store.text_search(AGENT, Tier.MESSAGE, "survives")] == [keep.id]
    vecs = await store.get_vectors(AGENT, [keep.id, new.id])
    assert set(vecs) == {keep.id}
    assert vecs[keep.id].tolist() == pytest.approx(unit([1, 0, 0, 0, 0, 0, 0, 0]).tolist(), abs=VECTOR_ATOL)
    edges = await store.neighbors(AGENT, [keep.id])
    assert edges == [Edge(type=EdgeType.MENTIONS, src=keep.id, dst=keep_ent.id, props={"count": 1})]
    assert store.generation(AGENT) == g, "a rolled-back unit must not move the generation"


async def test_exception_in_first_unit_leaves_store_empty(store: Store) -> None:
    with pytest.raises(KeyError):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "m", "hello"))
            raise KeyError("x")
    assert await store.count(AGENT) == 0
    assert await store.find(AGENT, Tier.MESSAGE) == []
    # The store is still usable afterwards.
    async with store.unit(AGENT) as u:
        u.put(message(AGENT, "m", "hello"))
    assert await store.count(AGENT) == 1


async def test_cancellation_discards_the_unit(store: Store) -> None:
    started = asyncio.Event()

    async def writer() -> None:
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "cancelled", "never lands"))
            started.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(writer())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.get(AGENT, message(AGENT, "cancelled", "x").id) is None


async def test_uncommitted_writes_invisible_to_other_readers(store: Store) -> None:
    m = message(AGENT, "pending", "not yet committed pangolin")
    async with store.unit(AGENT) as u:
        u.put(m)
        # Reads outside the unit must neither see the write nor block on it.
        assert await asyncio.wait_for(store.get(AGENT, m.id), 5) is None
        assert await asyncio.wait_for(store.text_search(AGENT, Tier.MESSAGE, "pangolin"), 5) == []
        assert await asyncio.wait_for(store.count(AGENT, Tier.MESSAGE), 5) == 0
    assert await store.get(AGENT, m.id) == m
