"""``PipelineSystem``: bounded queues and asyncio workers for everything off the ingest hot path.

- Streaming ingest (``submit_ingest``) goes through a bounded queue (200) and a concurrency
  semaphore (8). A full queue raises ``Backpressure`` at once, or waits with ``wait=True``.
- Post-ingest (P3 observations + P7a embeddings) is batched by one worker. Enqueueing waits when
  that queue is full, so backpressure reaches the producer instead of growing memory.
- Step failures follow their ``StepErrorPolicy``; dead letters are persisted as ``DeadLetter``
  nodes and retried with exponential backoff up to ``dead_letter_max_retries``.
- Consolidation fires per agent at ``consolidation_threshold`` new observations, on a timer, or
  when asked; the cycle itself is pluggable.
- Heavy CPU work holds one of ``cpu_slots`` (default 1) so an interactive recall always finds a
  free core: background work never starves a query.
- ``exclusive_cycle(agent)`` is the agent's cycle lock: a forget or a sweep holds it so no
  consolidation cycle of that agent runs meanwhile. When the store offers leases
  (``store.lease_store``: Weaviate; or ``leases=`` is given), the lock is also the agent's cycle
  lease, shared by every process on the store: a cycle runs in one process at a time, and one that
  loses its lease stops writing (``store.lease``).

(Over 400 lines on purpose: one class whose queues, workers, dead letters and triggers share
their state; split, each part would reach into the others.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, ClassVar

from pydantic import BaseModel

from ..config import UnikoConfig
from ..errors import Backpressure, ClosedError
from ..ingest.atomic import AtomicIngest, PostIngestItem, UnitResult
from ..ingest.post import PostIngest
from ..ingest.turn import Turn
from ..model import DeadLetter, Tier, make_id
from ..model.time import utcnow
from ..store.filters import Eq
from ..store.lease import (
    CYCLE_LEASE,
    LeaseLost,
    LeaseStore,
    LeaseUnavailable,
    acquire_waiting,
    hold,
    holder_id,
)
from .memory import MemoryReleaser
from .recovery import items_for_messages, observations_for_messages, pending_message_ids
from .steps import StepErrorPolicy

log = logging.getLogger(__name__)

CycleFn = Callable[[str], Awaitable[Any]]


class QueueHealth(BaseModel):
    queue_depth: int
    capacity: int
    in_flight: int
    latency_ema_ms: float


class PipelineHealth(BaseModel):
    state: str  # healthy | backpressured | degraded | stalled
    ingest: QueueHealth
    post_ingest: QueueHealth
    dead_letters_pending: int
    llm_circuit: str
    consolidations_run: int
    backpressure_events: int
    #: Times freed heap was handed back to the OS (``PipelineConfig.release_memory_when_idle``).
    memory_releases: int = 0


@dataclass
class _IngestJob:
    agent: str
    session: str
    turns: list[Turn]
    future: asyncio.Future[UnitResult]


@dataclass
class _EmbedJob:
    """A post-ingest batch between its two stages: per agent, the items and their observations."""

    batch: list[PostIngestItem]
    groups: list[tuple[str, list[PostIngestItem], list[Any]]]
    started: float


@dataclass
class _Stats:
    latency_ema_ms: float = 0.0
    in_flight: int = 0
    last_progress: float = field(default_factory=time.monotonic)

    def record(self, ms: float, alpha: float = 0.1) -> None:
        self.latency_ema_ms = (
            ms if self.latency_ema_ms == 0 else alpha * ms + (1 - alpha) * self.latency_ema_ms
        )
        self.last_progress = time.monotonic()


class PipelineSystem:
    POLICIES: ClassVar[dict[str, StepErrorPolicy]] = {
        "p3_observations": StepErrorPolicy.DEAD_LETTER,
        "p7a_embeddings": StepErrorPolicy.DEAD_LETTER,
    }

    def __init__(
        self,
        config: UnikoConfig,
        ingest: AtomicIngest,
        post: PostIngest,
        *,
        consolidate: CycleFn | None = None,
        breaker: Any = None,
        cpu_slots: int = 1,
        leases: LeaseStore | None = None,
    ) -> None:
        self.config = config
        self.pc = config.pipeline
        self.store = ingest.store
        self.atomic = ingest
        self.post = post
        self.consolidate_fn = consolidate
        self.breaker = breaker
        self.cpu = asyncio.Semaphore(cpu_slots)
        self._ingest_q: asyncio.Queue[_IngestJob] = asyncio.Queue(self.pc.ingest_queue_capacity)
        self._post_q: asyncio.Queue[PostIngestItem] = asyncio.Queue(self.pc.ingest_queue_capacity)
        #: P3-done batches waiting for P7a: one waits while one is embedded (bounded memory).
        self._embed_q: asyncio.Queue[_EmbedJob] = asyncio.Queue(1)
        self._ingest_sem = asyncio.Semaphore(self.pc.ingest_concurrency)
        self._session_order: dict[tuple[str, str], tuple[asyncio.Lock, list[int]]] = {}
        self._ingest_stats = _Stats()
        self._post_stats = _Stats()
        self._pending: dict[str, int] = defaultdict(int)
        self._changed = asyncio.Condition()
        self._obs_since_cycle: dict[str, int] = defaultdict(int)
        self._cycle_locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._last_cycle: dict[str, float] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._children: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._started = False
        self.consolidations_run = 0
        self.backpressure_events = 0
        self._dead_letters_pending = 0
        #: The store's cycle leases (None: this process's locks alone); ``holder`` names us in them.
        self.leases = leases if leases is not None else self._store_leases()
        self.holder = holder_id()
        self.cycles_skipped = 0
        self._trim: asyncio.Future[None] | None = None
        self.memory = MemoryReleaser(
            self.pc.release_memory_when_idle, self.pc.release_memory_min_interval_secs
        )

    def _store_leases(self) -> LeaseStore | None:
        make = getattr(self.store, "lease_store", None)
        return make(self.config.lease) if self.config.lease.enabled and callable(make) else None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._tasks = [
            asyncio.create_task(self._ingest_worker(), name="uniko-ingest"),
            asyncio.create_task(self._post_worker(), name="uniko-post-ingest"),
            asyncio.create_task(self._embed_worker(), name="uniko-embed"),
            asyncio.create_task(self._timer(), name="uniko-timer"),
        ]

    async def shutdown(self, timeout: float | None = None) -> None:
        """Stop accepting work, drain what is queued (bounded by ``timeout``), then stop workers."""
        if self._stopping:
            return
        self._stopping = True
        limit = self.pc.shutdown_timeout_secs if timeout is None else timeout
        try:
            await asyncio.wait_for(self._drain(), limit)
        except TimeoutError:
            log.warning("pipeline shutdown: work still queued after %.1fs; cancelling", limit)
        for t in [*self._tasks, *self._children]:
            t.cancel()
        await asyncio.gather(*self._tasks, *self._children, return_exceptions=True)
        if self._trim is not None:
            await asyncio.gather(self._trim, return_exceptions=True)
        while not self._ingest_q.empty():
            job = self._ingest_q.get_nowait()
            if not job.future.done():
                job.future.set_exception(ClosedError("the pipeline shut down before this unit ran"))

    async def _drain(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: sum(self._pending.values()) == 0)

    # ------------------------------------------------------------------ accounting
    async def _add(self, agent: str, n: int) -> None:
        async with self._changed:
            self._pending[agent] += n
            if self._pending[agent] <= 0:
                del self._pending[agent]
            self._changed.notify_all()
            idle = not self._pending
        if idle and n < 0:
            self._release_memory()

    def _release_memory(self) -> None:
        """Hand freed heap back to the OS off the loop (``pipeline.memory``); rate-limited."""
        if self.memory.due() and not self._stopping and (self._trim is None or self._trim.done()):
            self._trim = asyncio.get_running_loop().run_in_executor(None, self.memory.release)

    async def flush(self, agent: str | None = None, timeout: float | None = None) -> None:
        """Wait until background work (for ``agent``, or all) is done."""

        def idle() -> bool:
            return (self._pending.get(agent, 0) if agent else sum(self._pending.values())) == 0

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(idle), timeout)

    # ------------------------------------------------------------------ streaming ingest
    async def submit_ingest(
        self, agent: str, session: str, turns: Sequence[Turn], *, wait: bool = False
    ) -> asyncio.Future[UnitResult]:
        """Queue a unit; the returned future resolves to its ``UnitResult``.

        Raises ``Backpressure`` when the queue (capacity ``ingest_queue_capacity``) is full,
        unless ``wait=True``, which waits for room instead.
        """
        if self._stopping:
            raise ClosedError("the pipeline is shutting down")
        job = _IngestJob(agent, session, list(turns), asyncio.get_running_loop().create_future())
        if wait:
            await self._ingest_q.put(job)
        else:
            try:
                self._ingest_q.put_nowait(job)
            except asyncio.QueueFull:
                self.backpressure_events += 1
                raise Backpressure(
                    f"ingest queue full ({self._ingest_q.maxsize} units); retry later or pass wait=True"
                ) from None
        await self._add(agent, 1)
        return job.future

    async def _ingest_worker(self) -> None:
        # Runs until cancelled: shutdown() drains the queue first, so the loop must outlive _stopping.
        while True:
            job = await self._ingest_q.get()
            await self._ingest_sem.acquire()
            t = asyncio.create_task(self._run_ingest(job))
            self._children.add(t)
            t.add_done_callback(self._children.discard)

    async def _run_ingest(self, job: _IngestJob) -> None:
        self._ingest_stats.in_flight += 1
        t0 = time.perf_counter()
        # Units of one session commit in submission order (seq, NEXT and transcripts follow it);
        # different sessions still run concurrently. Tasks start, and so queue on the lock, FIFO.
        key = (job.agent, job.session)
        entry = self._session_order.setdefault(key, (asyncio.Lock(), [0]))
        entry[1][0] += 1
        try:
            async with entry[0]:
                result, items = await self.atomic.ingest(job.agent, job.session, job.turns)
                if items:
                    await self.enqueue_post(items)
            if not job.future.done():
                job.future.set_result(result)
        except Exception as exc:  # the caller's future carries the error
            if not job.future.done():
                job.future.set_exception(exc)
        finally:
            entry[1][0] -= 1
            if not entry[1][0]:
                self._session_order.pop(key, None)
            self._ingest_stats.in_flight -= 1
            self._ingest_stats.record((time.perf_counter() - t0) * 1000)
            self._ingest_sem.release()
            await self._add(job.agent, -1)

    # ------------------------------------------------------------------ post-ingest
    async def enqueue_post(self, items: Sequence[PostIngestItem]) -> None:
        for it in items:
            await self._add(it.agent, 1)
            await self._post_q.put(it)

    async def _post_worker(self) -> None:
        """Stage one of post-ingest: P3 observations per batch, under the background CPU slot.

        Its batches go on to ``_embed_worker`` (P7a), so the next batch's P3 (Python, holding
        the GIL) runs while the embedder (native code, GIL released) works on this one.
        """
        batch_size = self.config.ingest.post_ingest_batch
        while True:  # until cancelled, after shutdown() has drained the queue
            first = await self._post_q.get()
            batch = [first]
            while len(batch) < batch_size and not self._post_q.empty():
                batch.append(self._post_q.get_nowait())
            self._post_stats.in_flight += len(batch)
            t0 = time.perf_counter()
            groups: list[tuple[str, list[PostIngestItem], list[Any]]] = []
            try:
                async with self.cpu:
                    groups = await self._observe_batch(batch)
            except Exception:  # e.g. the dead letter itself could not be written: keep the worker alive
                log.exception("post-ingest batch of %d messages failed outside its step policies", len(batch))
            await self._embed_q.put(_EmbedJob(batch, groups, t0))

    async def _embed_worker(self) -> None:
        """Stage two of post-ingest: P7a embeddings for a batch P3 is done with, in order."""
        while True:
            job = await self._embed_q.get()
            try:
                for agent, group, observations in job.groups:
                    try:
                        await self.post.embed(agent, group, observations)
                    except Exception as exc:
                        ids = [it.message.id for it in group]
                        await self._dead_letter(agent, "p7a_embeddings", exc, ids)
                    if observations:
                        self.note_observations(agent, len(observations))
            except Exception:
                log.exception(
                    "post-ingest batch of %d messages failed outside its step policies", len(job.batch)
                )
            finally:
                self._post_stats.in_flight -= len(job.batch)
                self._post_stats.record((time.perf_counter() - job.started) * 1000 / len(job.batch))
                for it in job.batch:
                    await self._add(it.agent, -1)

    async def _observe_batch(
        self, items: list[PostIngestItem]
    ) -> list[tuple[str, list[PostIngestItem], list[Any]]]:
        """P3 for each agent's items; a failure is dead-lettered and leaves that agent's
        observations empty (its messages still get their own vectors in P7a)."""
        by_agent: dict[str, list[PostIngestItem]] = defaultdict(list)
        for it in items:
            by_agent[it.agent].append(it)
        out: list[tuple[str, list[PostIngestItem], list[Any]]] = []
        for agent, group in by_agent.items():
            observations: list[Any] = []
            try:
                observations = await self.post.observe(agent, group)
            except Exception as exc:
                await self._dead_letter(agent, "p3_observations", exc, [it.message.id for it in group])
            out.append((agent, group, observations))
        return out

    # ------------------------------------------------------------------ dead letters
    async def _dead_letter(self, agent: str, step: str, exc: Exception, message_ids: list[str]) -> None:
        policy = self.POLICIES.get(step, StepErrorPolicy.DEAD_LETTER)
        log.warning("post-ingest step %s failed for %d messages: %r", step, len(message_ids), exc)
        if policy is not StepErrorPolicy.DEAD_LETTER:
            return
        dl = DeadLetter(
            id=make_id("dlq", agent, step, *message_ids),
            agent=agent,
            step=step,
            error=repr(exc)[:2000],
            node_ref=message_ids[0] if message_ids else None,
            payload={"message_ids": message_ids},
            max_retries=self.pc.dead_letter_max_retries,
            next_retry_at=utcnow() + timedelta(milliseconds=self.pc.retry_initial_delay_ms),
        )
        async with self.store.unit(agent) as u:
            u.put(dl)
        self._dead_letters_pending += 1

    async def retry_dead_letters(self, agent: str | None = None, *, force: bool = False) -> int:
        """Retry due dead letters (all pending ones with ``force``); returns how many succeeded."""
        agents = [agent] if agent else await self.store.agents()
        done = 0
        for a in agents:
            pending = await self.store.find(a, Tier.DEAD_LETTER, Eq("status", "pending"), limit=1000)
            for dl in pending:
                assert isinstance(dl, DeadLetter)
                if not force and dl.next_retry_at and dl.next_retry_at > utcnow():
                    continue
                done += await self._retry_one(a, dl)
        return done

    async def _retry_one(self, agent: str, dl: DeadLetter) -> int:
        ids = list(dl.payload.get("message_ids", []))
        try:
            items = await items_for_messages(self.store, agent, ids)
            async with self.cpu:
                if dl.step == "p3_observations":
                    obs = await self.post.observe(agent, items)
                    await self.post.embed(agent, items, obs)
                    if obs:
                        self.note_observations(agent, len(obs))
                else:  # P3 succeeded for these messages: their observations need vectors too
                    await self.post.embed(
                        agent, items, await observations_for_messages(self.store, agent, ids)
                    )
        except Exception as exc:
            attempts = dl.retry_count + 1
            delay_ms = min(self.pc.retry_max_delay_ms, self.pc.retry_initial_delay_ms * 2**attempts)
            update = {
                "retry_count": attempts,
                "error": repr(exc)[:2000],
                "status": "exhausted" if attempts >= dl.max_retries else "pending",
                "next_retry_at": utcnow() + timedelta(milliseconds=delay_ms),
            }
            async with self.store.unit(agent) as u:
                u.put(dl.model_copy(update=update))
            if update["status"] == "exhausted":
                self._dead_letters_pending = max(0, self._dead_letters_pending - 1)
            return 0
        async with self.store.unit(agent) as u:
            u.put(dl.model_copy(update={"status": "resolved", "retry_count": dl.retry_count + 1}))
        self._dead_letters_pending = max(0, self._dead_letters_pending - 1)
        return 1

    async def recover(self, agent: str) -> int:
        """Re-queue committed messages whose post-ingest never finished (e.g. after a crash)."""
        ids = await pending_message_ids(self.store, agent)
        items = await items_for_messages(self.store, agent, ids)
        await self.enqueue_post(items)
        # Dead letters persisted by an earlier process: count them so the timer sweep retries them.
        self._dead_letters_pending += await self.store.count(agent, Tier.DEAD_LETTER, Eq("status", "pending"))
        return len(items)

    # ------------------------------------------------------------------ consolidation
    def note_observations(self, agent: str, n: int) -> None:
        self._obs_since_cycle[agent] += n
        if self._obs_since_cycle[agent] >= self.pc.consolidation_threshold and self.consolidate_fn:
            self._spawn_cycle(agent)

    def _spawn_cycle(self, agent: str) -> None:
        if self._cycle_locks[agent].locked() or self._stopping:
            return
        t = asyncio.create_task(self.consolidate(agent))
        self._children.add(t)
        t.add_done_callback(self._children.discard)

    @contextlib.asynccontextmanager
    async def exclusive_cycle(self, agent: str) -> AsyncIterator[None]:
        """Hold ``agent``'s cycle lock: no consolidation cycle of that agent runs inside the block
        (one already running is waited for). Not reentrant: never call ``consolidate`` inside.

        With store leases it is held across processes too: another process's cycle is waited for
        up to ``lease.acquire_timeout_secs`` (then ``LeaseUnavailable``), and a write inside the
        block after the lease was lost raises ``LeaseLost`` instead of being applied."""
        async with self._cycle_locks[agent], self._leased(agent, wait=self.config.lease.acquire_timeout_secs):
            yield

    @contextlib.asynccontextmanager
    async def _leased(self, agent: str, *, wait: float) -> AsyncIterator[None]:
        if self.leases is None:
            yield
            return
        lease = await acquire_waiting(
            self.leases, self.config.lease, agent, CYCLE_LEASE, self.holder, wait=wait
        )
        if lease is None:
            raise LeaseUnavailable(
                f"another process holds the {CYCLE_LEASE!r} lease of agent {agent!r} "
                f"(waited {wait:.0f}s; lease.acquire_timeout_secs)"
            )
        async with hold(self.leases, self.config.lease, lease):
            yield

    async def consolidate(self, agent: str) -> Any:
        """Run one consolidation cycle for ``agent`` now (after its queued post-ingest work).

        Returns None without running when another process holds the agent's cycle lease (it is
        consolidating the same observations), or when the cycle failed or lost its lease."""
        if self.consolidate_fn is None:
            return None
        async with self._cycle_locks[agent]:
            self._obs_since_cycle[agent] = 0
            self._last_cycle[agent] = time.monotonic()
            try:
                async with self._leased(agent, wait=0.0), self.cpu:
                    result = await self.consolidate_fn(agent)
            except LeaseUnavailable:
                self.cycles_skipped += 1
                return None
            except LeaseLost as exc:
                log.warning("consolidation cycle for agent %s stopped: %s", agent, exc)
                return None
            except Exception:
                log.exception("consolidation cycle failed for agent %s", agent)
                return None
            self.consolidations_run += 1
            self._release_memory()
            return result

    async def _timer(self) -> None:
        tick = min(self.pc.consolidation_interval_secs, self.pc.dead_letter_check_interval_secs)
        while not self._stopping:
            await asyncio.sleep(tick)
            now = time.monotonic()
            for agent, n in list(self._obs_since_cycle.items()):
                last = self._last_cycle.get(agent, 0.0)
                if n > 0 and now - last >= self.pc.consolidation_interval_secs:
                    self._spawn_cycle(agent)
            if self._dead_letters_pending:
                try:
                    await self.retry_dead_letters()
                except Exception:
                    log.exception("dead-letter retry sweep failed")

    # ------------------------------------------------------------------ health
    def health(self) -> PipelineHealth:
        circuit = getattr(self.breaker, "state", "closed") if self.breaker is not None else "closed"
        ingest = QueueHealth(
            queue_depth=self._ingest_q.qsize(),
            capacity=self._ingest_q.maxsize,
            in_flight=self._ingest_stats.in_flight,
            latency_ema_ms=round(self._ingest_stats.latency_ema_ms, 3),
        )
        post = QueueHealth(
            queue_depth=self._post_q.qsize(),
            capacity=self._post_q.maxsize,
            in_flight=self._post_stats.in_flight,
            latency_ema_ms=round(self._post_stats.latency_ema_ms, 3),
        )
        idle = time.monotonic() - max(self._ingest_stats.last_progress, self._post_stats.last_progress)
        depth_ratio = max(ingest.queue_depth / ingest.capacity, post.queue_depth / post.capacity)
        if circuit == "open":
            state = "degraded"
        elif idle > 300 and (ingest.queue_depth or post.queue_depth):
            state = "stalled"
        elif depth_ratio > 0.8:
            state = "backpressured"
        else:
            state = "healthy"
        return PipelineHealth(
            state=state,
            ingest=ingest,
            post_ingest=post,
            dead_letters_pending=self._dead_letters_pending,
            llm_circuit=str(circuit),
            consolidations_run=self.consolidations_run,
            backpressure_events=self.backpressure_events,
            memory_releases=self.memory.releases,
        )
