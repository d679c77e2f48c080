"""PipelineSystem: backpressure, dead letters and their retries, consolidation triggers, health,
flush and shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from tests.unit.ingest._support import messages, nodes, open_uni, turn, wait_until
from uniko_memory.errors import Backpressure, ClosedError
from uniko_memory.facade import Uniko
from uniko_memory.model import DeadLetter, Message, Observation, Tier
from uniko_memory.pipeline import PipelineSystem

AGENT = "pipe"


class Blocker:
    """Replaces an async method with one that waits on an event before running the real one."""

    def __init__(self, obj: Any, name: str) -> None:
        self.event = asyncio.Event()
        self.entered = 0
        real = getattr(obj, name)

        async def blocked(*args: Any, **kwargs: Any) -> Any:
            self.entered += 1
            await self.event.wait()
            return await real(*args, **kwargs)

        setattr(obj, name, blocked)

    def release(self) -> None:
        self.event.set()


class FailingExtractor:
    """An observation extractor (the P3 protocol) that always raises."""

    def __init__(self) -> None:
        self.calls = 0

    async def extract(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise RuntimeError("extractor is down (injected)")


class CountingCycle:
    def __init__(self) -> None:
        self.agents: list[str] = []

    async def __call__(self, agent: str) -> dict[str, str]:
        self.agents.append(agent)
        return {"agent": agent, "cycle": str(len(self.agents))}


@pytest.fixture
async def tiny() -> AsyncIterator[Uniko]:
    """Ingest queue of 1 and one ingest worker slot, so backpressure is easy to reach."""
    u = await open_uni({"pipeline": {"ingest_queue_capacity": 1, "ingest_concurrency": 1}})
    try:
        yield u
    finally:
        await u.close(timeout=5)


# ---------------------------------------------------------------------------------- backpressure
async def test_full_ingest_queue_raises_backpressure_and_wait_waits(tiny: Uniko) -> None:
    ps = tiny._pipeline
    blocker = Blocker(tiny._atomic, "ingest")
    s = tiny.agent(AGENT).session("s1")
    futures = []
    with pytest.raises(Backpressure, match=r"ingest queue full \(1 units\)"):
        for i in range(10):
            futures.append(await s.submit(turn("A", f"streamed turn {i}", i, id=f"q{i}")))
            await asyncio.sleep(0.01)  # let the worker take what it can
    # One unit runs (blocked), one waits for a worker slot, one fills the queue.
    assert len(futures) == 3 and blocker.entered == 1
    assert ps.health().backpressure_events == 1
    assert tiny.health()["pipeline"]["state"] == "backpressured"

    waiting = asyncio.create_task(s.submit(turn("A", "patient turn", 20, id="q-wait"), wait=True))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # wait=True waits for room instead of raising
    blocker.release()
    futures.append(await asyncio.wait_for(waiting, 10))
    results = await asyncio.wait_for(asyncio.gather(*futures), 10)
    assert [r.results[0].message_id for r in results] == ["q0", "q1", "q2", "q-wait"]
    await tiny.agent(AGENT).flush(timeout=10)
    assert [m.external_id for m in await messages(tiny, AGENT)] == ["q0", "q1", "q2", "q-wait"]
    assert tiny.health()["pipeline"]["state"] == "healthy"


async def test_submit_future_carries_ingest_errors(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.observe(turn("A", "original", id="x"))
    fut = await s.submit(turn("A", "changed", id="x"))
    from uniko_memory.errors import IdConflict

    with pytest.raises(IdConflict):
        await asyncio.wait_for(fut, 10)
    await uni.agent(AGENT).flush(timeout=10)  # a failed unit does not leave flush() waiting


# ---------------------------------------------------------------------------------- dead letters
async def _dead_letters(uni: Uniko) -> list[DeadLetter]:
    return [d for d in await nodes(uni, AGENT, Tier.DEAD_LETTER) if isinstance(d, DeadLetter)]


async def test_failing_p3_is_dead_lettered_then_retried_after_the_fault_is_fixed(uni: Uniko) -> None:
    ps = uni._pipeline
    extractor = FailingExtractor()
    uni._post.extractor = extractor
    r = (
        await uni.agent(AGENT)
        .session("s1")
        .observe(turn("Caroline", "I went to a LGBTQ support group yesterday"))
    )
    await uni.agent(AGENT).flush(timeout=10)
    assert extractor.calls == 1
    [dl] = await _dead_letters(uni)
    assert dl.step == "p3_observations" and dl.status == "pending" and dl.retry_count == 0
    assert "extractor is down" in dl.error and dl.payload == {"message_ids": [r.message_node_id]}
    assert dl.node_ref == r.message_node_id and dl.max_retries == 3
    assert ps.health().dead_letters_pending == 1
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 0
    # The failure is contained to P3: the message was still embedded (P7a ran).
    assert await uni.kb.store.get_vectors(AGENT, [r.message_node_id])

    # Not due yet (500 ms backoff) -> a plain retry does nothing; force retries now.
    assert await ps.retry_dead_letters(AGENT) == 0
    assert extractor.calls == 1
    uni._post.extractor = None  # the fault is gone
    assert await ps.retry_dead_letters(AGENT, force=True) == 1
    [dl] = await _dead_letters(uni)
    assert dl.status == "resolved" and dl.retry_count == 1
    [obs] = [o for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]
    assert obs.content == "Caroline went to a LGBTQ support group on 7 May 2023"
    assert await uni.kb.store.get_vectors(AGENT, [obs.id])
    assert ps.health().dead_letters_pending == 0
    assert await ps.retry_dead_letters(AGENT, force=True) == 0  # resolved letters stay resolved


async def test_dead_letter_is_exhausted_after_max_retries_with_the_fault_kept(uni: Uniko) -> None:
    ps = uni._pipeline
    extractor = FailingExtractor()
    uni._post.extractor = extractor
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.agent(AGENT).flush(timeout=10)
    delays = []
    for attempt in range(1, 4):
        assert await ps.retry_dead_letters(AGENT, force=True) == 0
        [dl] = await _dead_letters(uni)
        assert dl.retry_count == attempt and extractor.calls == 1 + attempt
        assert dl.next_retry_at is not None
        delays.append(dl.next_retry_at)
        assert dl.status == ("exhausted" if attempt == 3 else "pending")
    assert delays == sorted(delays)  # exponential backoff pushes the next try later
    assert ps.health().dead_letters_pending == 0
    assert await ps.retry_dead_letters(AGENT, force=True) == 0  # exhausted: never retried again
    assert extractor.calls == 4


async def test_failing_p7a_is_dead_lettered_and_retried(uni: Uniko) -> None:
    ps = uni._pipeline
    embedder = uni.kb.embedder
    real = embedder.embed_documents

    async def broken(texts: Any) -> Any:
        raise ConnectionError("embedding service unreachable (injected)")

    embedder.embed_documents = broken
    r = (
        await uni.agent(AGENT)
        .session("s1")
        .observe(turn("Caroline", "I went hiking in Yosemite on Saturday."))
    )
    await uni.agent(AGENT).flush(timeout=10)
    [dl] = await _dead_letters(uni)
    assert dl.step == "p7a_embeddings" and "unreachable" in dl.error
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1  # P3 succeeded regardless
    [m] = await messages(uni, AGENT)
    assert not m.post_ingest_done  # a restart's recover() would pick it up too
    embedder.embed_documents = real
    assert await ps.retry_dead_letters(force=True) == 1
    [obs] = await nodes(uni, AGENT, Tier.OBSERVATION)
    vectors = await uni.kb.store.get_vectors(AGENT, [r.message_node_id, obs.id])
    assert set(vectors) == {r.message_node_id, obs.id}  # the observation P3 made is embedded too
    [m] = await messages(uni, AGENT)
    assert m.post_ingest_done


async def test_dead_letters_survive_a_restart(tmp_path: Any) -> None:
    from tests.unit.ingest._support import FakeEmbedder
    from uniko_memory.config import UnikoConfig

    path = tmp_path / "dl.db"
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    uni._post.extractor = FailingExtractor()
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.agent(AGENT).flush(timeout=10)
    await uni.close()
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    try:
        [dl] = await _dead_letters(uni)
        assert dl.status == "pending"
        assert await uni._pipeline.retry_dead_letters(force=True) == 1
        assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- consolidation
def test_threshold_counts_per_agent() -> None:
    async def run() -> None:
        uni = await open_uni()
        try:
            cycle = CountingCycle()
            ps = uni._pipeline
            ps.consolidate_fn = cycle
            ps.note_observations("a", 19)
            ps.note_observations("b", 19)
            await asyncio.sleep(0.05)
            assert cycle.agents == []
            ps.note_observations("a", 1)
            await wait_until(lambda: cycle.agents == ["a"])
            await asyncio.sleep(0.05)
            assert cycle.agents == ["a"] and ps.consolidations_run == 1
            ps.note_observations("a", 19)
            await asyncio.sleep(0.05)
            assert cycle.agents == ["a"]  # the counter restarted at the cycle
            ps.note_observations("b", 1)
            await wait_until(lambda: cycle.agents == ["a", "b"])
        finally:
            await uni.close()

    asyncio.run(run())


async def test_consolidation_fires_at_twenty_observations_from_ingest(uni: Uniko) -> None:
    cycle = CountingCycle()
    uni._pipeline.consolidate_fn = cycle
    s = uni.agent(AGENT).session("s1")
    places = [
        "Paris",
        "Lisbon",
        "Seattle",
        "Denver",
        "Boston",
        "Austin",
        "Chicago",
        "Dallas",
        "Miami",
        "Tokyo",
    ]
    for i in range(19):
        await s.observe(turn("Caroline", f"I visited {places[i % 10]} with my sister in year {2000 + i}.", i))
    await uni.agent(AGENT).flush(timeout=30)
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 19
    await asyncio.sleep(0.05)
    assert cycle.agents == []
    await s.observe(turn("Caroline", "I adopted a cat named Biscuit.", 20))
    await uni.agent(AGENT).flush(timeout=30)
    await wait_until(lambda: cycle.agents == [AGENT])
    assert uni.health()["pipeline"]["consolidations_run"] == 1


async def test_explicit_consolidate_runs_the_cycle_after_pending_work(uni: Uniko) -> None:
    seen: list[int] = []

    async def cycle(agent: str) -> str:
        seen.append(await uni.kb.store.count(agent, Tier.OBSERVATION))
        return "done"

    uni._pipeline.consolidate_fn = cycle
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    assert await uni.agent(AGENT).consolidate() == "done"
    assert seen == [1]  # it flushed P3 first


async def test_consolidate_without_a_cycle_is_a_noop(uni: Uniko) -> None:
    uni._pipeline.consolidate_fn = None  # a PipelineSystem built without a cycle
    assert await uni.agent(AGENT).consolidate() is None
    assert uni.health()["pipeline"]["consolidations_run"] == 0


async def test_failing_cycle_is_contained(uni: Uniko) -> None:
    async def cycle(agent: str) -> None:
        raise RuntimeError("P4 broke (injected)")

    uni._pipeline.consolidate_fn = cycle
    assert await uni.agent(AGENT).consolidate() is None
    assert uni.health()["pipeline"]["consolidations_run"] == 0
    await uni.agent(AGENT).session("s1").observe(turn("A", "still ingesting fine"))


async def test_consolidation_timer_fires_with_pending_observations() -> None:
    uni = await open_uni(
        {"pipeline": {"consolidation_interval_secs": 0.05, "dead_letter_check_interval_secs": 0.05}}
    )
    try:
        cycle = CountingCycle()
        uni._pipeline.consolidate_fn = cycle
        await asyncio.sleep(0.15)
        assert cycle.agents == []  # nothing pending, nothing to do
        uni._pipeline.note_observations(AGENT, 1)
        await wait_until(lambda: cycle.agents == [AGENT], timeout=5)
    finally:
        await uni.close()


async def test_timer_retries_due_dead_letters() -> None:
    uni = await open_uni(
        {
            "pipeline": {
                "dead_letter_check_interval_secs": 0.05,
                "retry_initial_delay_ms": 0,
            }
        }
    )
    try:
        uni._post.extractor = FailingExtractor()
        await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
        await uni.agent(AGENT).flush(timeout=10)
        uni._post.extractor = None
        await wait_until(lambda: uni._pipeline.health().dead_letters_pending == 0, timeout=5)
        assert [d.status for d in await _dead_letters(uni)] == ["resolved"]
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- health
async def test_health_states(tiny: Uniko) -> None:
    ps = tiny._pipeline
    h = ps.health()
    assert h.state == "healthy" and h.ingest.capacity == 1 and h.post_ingest.capacity == 1
    assert h.llm_circuit == "closed" and h.dead_letters_pending == 0
    report = tiny.health()
    assert report["pipeline"]["state"] == "healthy" and report["embedder"] == "tests/fake-bag-of-words"

    ps.breaker = SimpleNamespace(state="open")
    assert ps.health().state == "degraded" and ps.health().llm_circuit == "open"
    ps.breaker = None

    blocker = Blocker(tiny._atomic, "ingest")
    s = tiny.agent(AGENT).session("s1")
    futures = [await s.submit(turn("A", f"t{i}", i, id=f"h{i}"), wait=True) for i in range(3)]
    await asyncio.sleep(0.05)
    h = ps.health()
    assert h.state == "backpressured" and h.ingest.queue_depth == 1 and h.ingest.in_flight == 1

    ps._ingest_stats.last_progress -= 1000  # no progress for a long time with work queued
    ps._post_stats.last_progress -= 1000
    assert ps.health().state == "stalled"
    blocker.release()
    await asyncio.gather(*futures)
    await tiny.agent(AGENT).flush(timeout=10)
    h = ps.health()
    assert h.state == "healthy" and h.ingest.latency_ema_ms > 0 and h.post_ingest.latency_ema_ms > 0


# ---------------------------------------------------------------------------------- flush / shutdown
async def test_flush_waits_for_background_work(uni: Uniko) -> None:
    slow = uni._post.observe

    async def slowly(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)
        return await slow(*args, **kwargs)

    uni._post.observe = slowly  # type: ignore[method-assign]
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 0
    await uni.agent(AGENT).flush(timeout=10)
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1
    [m] = await messages(uni, AGENT)
    assert m.post_ingest_done


async def test_flush_is_per_agent(uni: Uniko) -> None:
    blocker = Blocker(uni._post, "observe")
    await uni.agent("busy").session("s1").observe(turn("A", "I adopted a cat named Biscuit."))
    await uni.agent("idle").flush(timeout=1)  # nothing pending for this agent
    with pytest.raises(TimeoutError):
        await uni.agent("busy").flush(timeout=0.2)
    blocker.release()
    await uni.agent("busy").flush(timeout=10)


async def test_shutdown_drains_queued_work(tmp_path: Any) -> None:
    from tests.unit.ingest._support import FakeEmbedder
    from uniko_memory.config import UnikoConfig

    path = tmp_path / "drain.db"
    uni = await Uniko.open(
        path, UnikoConfig.build({"ingest": {"post_ingest_batch": 2}}), embedder=FakeEmbedder()
    )
    s = uni.agent(AGENT).session("s1")
    for i in range(8):
        await s.observe(turn("Caroline", f"I visited Lisbon with my sister in year {2000 + i}.", i))
    await uni.close(timeout=30)  # drains: every queued post-ingest batch runs first
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    try:
        msgs = await messages(uni, AGENT)
        assert len(msgs) == 8 and all(m.post_ingest_done for m in msgs)
        assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 8
    finally:
        await uni.close()


async def test_shutdown_with_timeout_does_not_hang_and_refuses_new_work(uni: Uniko) -> None:
    Blocker(uni._post, "observe")  # never released
    await uni.agent(AGENT).session("s1").observe(turn("A", "I adopted a cat named Biscuit."))
    ps: PipelineSystem = uni._pipeline
    await asyncio.wait_for(ps.shutdown(timeout=0.2), 5)
    with pytest.raises(ClosedError):
        await ps.submit_ingest(AGENT, "s1", [turn("A", "too late")])


async def test_restart_recovers_unfinished_post_ingest(tmp_path: Any) -> None:
    from tests.unit.ingest._support import FakeEmbedder
    from uniko_memory.config import UnikoConfig

    path = tmp_path / "recover.db"
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    Blocker(uni._post, "observe")  # P3 never runs in this process
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.close(timeout=0.2)
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    try:
        await uni.agent(AGENT).flush(timeout=10)
        [m] = await messages(uni, AGENT)
        assert m.post_ingest_done
        assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1
        assert isinstance(await uni.kb.store.get(AGENT, m.id), Message)
    finally:
        await uni.close()


async def test_post_worker_survives_a_failure_outside_the_step_policies(uni: Uniko) -> None:
    """Even when recording the dead letter fails, the worker lives on for the next batch."""
    uni._post.extractor = FailingExtractor()
    real = uni._pipeline._dead_letter
    calls = {"n": 0}

    async def broken_dead_letter(*args: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("cannot write the dead letter (injected)")
        await real(*args)

    uni._pipeline._dead_letter = broken_dead_letter  # type: ignore[method-assign]
    s = uni.agent(AGENT).session("s1")
    await s.observe(turn("Caroline", "I adopted a cat named Biscuit.", 0))
    await uni.agent(AGENT).flush(timeout=10)
    uni._post.extractor = None
    await s.observe(turn("Caroline", "I went hiking in Yosemite on Saturday.", 1))
    await uni.agent(AGENT).flush(timeout=10)
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1
    assert all(not t.done() for t in uni._pipeline._tasks)


async def test_timer_retries_dead_letters_left_by_a_previous_process(tmp_path: Any) -> None:
    from tests.unit.ingest._support import FakeEmbedder
    from uniko_memory.config import UnikoConfig

    path = tmp_path / "dl-timer.db"
    cfg = UnikoConfig.build(
        {"pipeline": {"dead_letter_check_interval_secs": 0.05, "retry_initial_delay_ms": 0}}
    )
    uni = await Uniko.open(path, UnikoConfig(), embedder=FakeEmbedder())
    uni._post.extractor = FailingExtractor()
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.agent(AGENT).flush(timeout=10)
    await uni.close()
    uni = await Uniko.open(path, cfg, embedder=FakeEmbedder())
    try:
        assert uni.health()["pipeline"]["dead_letters_pending"] == 1
        await wait_until(lambda: uni._pipeline.health().dead_letters_pending == 0, timeout=5)
        assert [d.status for d in await _dead_letters(uni)] == ["resolved"]
        assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 1
    finally:
        await uni.close()
