"""Recency that knows reading: per-tier stretched-exponential decay on the more recent of the
node's time and its last read (off by default), and reads recorded off the read path (batched,
patch-only, never failing a recall) on both stores."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import AGENT, MAIN, build
from uniko_memory.facade import Uniko
from uniko_memory.model import NodeUsage, Observation, Procedure
from uniko_memory.recall import RecallConfig
from uniko_memory.recall.feedback import policy_factor, recency_factor, stretched_decay
from uniko_memory.recall.fusion import Candidate

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")
NOW = datetime(2024, 1, 1, tzinfo=UTC)


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    u = await build(MAIN, uni=await open_backend(request.param))
    try:
        yield u
    finally:
        await u.close()


def obs(days: int) -> Candidate:
    at = NOW - timedelta(days=days)
    return Candidate(node=Observation(id=f"obs_{days}", agent=AGENT, content="x", observed_at=at), fused=1.0)


async def test_the_curve_is_per_type_and_stretched() -> None:
    assert stretched_decay(30, 30, 1.2) == pytest.approx(0.5)
    assert stretched_decay(7, 30, 1.2) == pytest.approx(0.886, abs=1e-3)  # flat at first
    assert stretched_decay(365, 365, 0.8) == pytest.approx(0.5)
    assert stretched_decay(-5, 30, 1.2) == 1.0  # a future time is fresh


async def test_off_by_default_and_the_read_clock_wins() -> None:
    fb = RecallConfig().feedback
    assert recency_factor(obs(300), None, NOW, fb) == 1.0
    assert policy_factor(obs(300), None, 0, fb, NOW) == 1.0
    on = fb.model_copy(update={"recency_weight": 0.5})
    old = recency_factor(obs(300), None, NOW, on)
    read = recency_factor(
        obs(300), NodeUsage(access_count=1, last_accessed_at=NOW - timedelta(days=1)), NOW, on
    )
    assert 0.5 <= old < read <= 1.0  # never below 1 - weight: de-boost, never hide
    proc = Candidate(node=Procedure(id="proc_1", agent=AGENT, name="p", created_at=NOW - timedelta(days=300)))
    assert recency_factor(proc, None, NOW, on) > old  # a procedure decays slower than an observation


async def test_reads_are_recorded_off_the_read_path_without_invalidating(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    store = uni.kb.store
    bundle = await agent.recall("Bailey counseling")
    gen = store.generation(AGENT)
    await agent.flush()
    usage = await store.usage(AGENT, [i.node_id for i in bundle.items])
    assert usage and all(u.access_count >= 1 and u.last_accessed_at is not None for u in usage.values())
    assert store.generation(AGENT) == gen  # patch-only: cached recalls stay valid
    hits = uni.recall_cache.hits
    await agent.recall("Bailey counseling")
    assert uni.recall_cache.hits == hits + 1


async def test_a_failing_tracking_write_never_fails_a_recall(uni: Uniko, monkeypatch: Any) -> None:
    async def broken(*a: Any, **kw: Any) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(uni.kb.store, "record_usage", broken)
    agent = uni.agent(AGENT)
    for q in ("salsa studio", "violin recital", "treehouse backyard"):
        assert (await agent.recall(q, use_cache=False)).items
    await agent.flush()  # the dropped batch is logged, not raised
