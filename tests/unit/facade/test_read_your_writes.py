"""Issue 40.4: a read after a write in the same process sees that write with a real score."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from tests.unit.ingest._support import FakeEmbedder, open_uni, turn
from uniko_memory.model import Tier

TEXT = "Our new flat in Rotterdam has a balcony over the canal"


class SlowEmbedder(FakeEmbedder):
    """Vectors a moment late, as a loaded machine gives them: the turn's background work is still
    pending when the caller reads."""

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        await asyncio.sleep(0.4)
        return await super().embed_documents(texts)


async def _observe_then_recall(wait: float) -> tuple[list[tuple[str, float]], str]:
    uni = await open_uni(embedder=SlowEmbedder())
    try:
        agent = uni.agent("rw")
        await agent.session("s1").observe(turn("Maya", TEXT, 0))
        bundle = await agent.recall(
            "balcony flat Rotterdam canal", use_cache=False, read_after_write_secs=wait
        )
        turn_id = next(m.id for m in await uni.kb.store.find("rw", Tier.MESSAGE, limit=10))
        return [(i.node_id, i.score) for i in bundle.items if turn_id in i.message_ids()], turn_id
    finally:
        await uni.close()


async def test_a_turn_just_observed_is_recalled_with_a_real_score() -> None:
    found, _ = await _observe_then_recall(5.0)
    assert found and all(score > 0 for _, score in found)


async def test_the_wait_is_bounded_and_can_be_turned_off() -> None:
    uni = await open_uni(embedder=SlowEmbedder())
    calls: list[float | None] = []
    real_flush = uni._pipeline.flush

    async def spy(agent: str | None = None, timeout: float | None = None) -> None:
        calls.append(timeout)
        await real_flush(agent, timeout)

    uni._pipeline.flush = spy  # type: ignore[method-assign]
    try:
        agent = uni.agent("rw")
        await agent.session("s1").observe(turn("Maya", TEXT, 0))
        await agent.recall("balcony", use_cache=False, read_after_write_secs=0.01)  # times out: goes on
        await agent.recall("balcony", use_cache=False, read_after_write_secs=0)
        await agent.recall("balcony", use_cache=False)
        assert calls == [0.01, 5.0]
    finally:
        await uni.close()
