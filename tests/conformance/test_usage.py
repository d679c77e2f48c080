"""Node usage (``record_usage`` / ``usage``): additive, atomic per node under concurrency, durable,
scoped to the agent's own nodes, dropped with the node; feedback bumps the generation, read
tracking does not."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.model import UsageDelta
from uniko_memory.store.protocol import Store

from .conftest import StoreHarness
from .corpus import AGENT, OTHER, load_corpus, ts


async def test_counts_add_up_and_the_last_access_only_moves_forward(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    a, b = msgs[0].id, msgs[1].id
    assert await store.usage(AGENT, [a, b]) == {}
    await store.record_usage(AGENT, {a: UsageDelta(echo=1.0, accessed_at=ts(5), lex_share=0.25)})
    await store.record_usage(AGENT, {a: UsageDelta(fizzle=0.5, access_count=2, accessed_at=ts(3))})
    await store.record_usage(AGENT, {b: UsageDelta(access_count=1)})
    got = await store.usage(AGENT, [a, b, "msg_missing"])
    assert set(got) == {a, b}
    assert (got[a].echo, got[a].fizzle, got[a].access_count) == (1.0, 0.5, 2)
    assert got[a].last_accessed_at == ts(5) and got[a].last_lex_share == 0.25
    assert got[b].access_count == 1 and got[b].last_accessed_at is None


async def test_concurrent_feedback_never_loses_a_count(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    a = msgs[0].id
    await asyncio.gather(*(store.record_usage(AGENT, {a: UsageDelta(echo=1.0)}) for _ in range(20)))
    assert (await store.usage(AGENT, [a]))[a].echo == 20.0


async def test_usage_is_the_agents_own_and_goes_with_the_node(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    a = msgs[0].id
    assert await store.record_usage(OTHER, {a: UsageDelta(echo=1.0)}) == 0  # not OTHER's node
    assert await store.record_usage(AGENT, {"msg_missing": UsageDelta(echo=1.0)}) == 0
    assert await store.usage(OTHER, [a]) == {}
    await store.record_usage(AGENT, {a: UsageDelta(echo=2.0)})
    await store.delete(AGENT, [a])
    assert await store.usage(AGENT, [a]) == {}


async def test_only_feedback_invalidates(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    a = msgs[0].id
    g0 = store.generation(AGENT)
    await store.record_usage(AGENT, {a: UsageDelta(access_count=1, accessed_at=ts(1) + timedelta(days=1))})
    assert store.generation(AGENT) == g0
    await store.record_usage(AGENT, {a: UsageDelta(echo=1.0)}, invalidates=True)
    assert store.generation(AGENT) == g0 + 1


async def test_bad_deltas_are_refused(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    with pytest.raises(ValidationError):
        await store.record_usage(AGENT, {msgs[0].id: {"echo": 1}})  # type: ignore[dict-item]


async def test_usage_is_durable(harness: StoreHarness) -> None:
    store = await harness.open()
    msgs, _ = await load_corpus(store)
    await store.record_usage(AGENT, {msgs[0].id: UsageDelta(echo=1.0, fizzle=2.0)})
    store = await harness.reopen(store)
    got = (await store.usage(AGENT, [msgs[0].id]))[msgs[0].id]
    assert (got.echo, got.fizzle) == (1.0, 2.0)
