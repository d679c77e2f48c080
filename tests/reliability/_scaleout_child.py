"""Children for ``test_scaleout.py``: application processes on one Weaviate (the double, served by
the test process), each with its own real weaviate-client. Run by ``multiprocessing`` (spawn), so
every function here takes plain arguments and reports through a queue."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.reliability._faults_support import CONFIG, HashEmbedder, turns
from uniko_memory.config import LeaseConfig, UnikoConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.nlp.pipeline import NlpPipeline
from uniko_memory.store.lease import CYCLE_LEASE, holder_id
from uniko_memory.store.weaviate import WeaviateStore

AGENT = "scaleout"
SESSION = "shared"
#: Short enough for a test, with the margins the lease protocol needs (``LeaseConfig`` checks them).
LEASE = LeaseConfig(
    ttl_secs=5, renew_every_secs=1, safety_margin_secs=2, clock_skew_secs=0.5, settle_ms=150, poll_secs=0.02
)


def _client(http_port: int, grpc_port: int) -> Any:
    import weaviate

    return weaviate.use_async_with_local(
        host="127.0.0.1", port=http_port, grpc_port=grpc_port, skip_init_checks=True
    )


async def open_uni(http_port: int, grpc_port: int, prefix: str) -> Uniko:
    cfg = UnikoConfig.build({**CONFIG, "store": {"collection_prefix": prefix}, "lease": LEASE.model_dump()})
    return await Uniko.open(
        "ignored.db",
        cfg,
        embedder=HashEmbedder(),
        nlp=NlpPipeline(mode="rules"),
        weaviate=_client(http_port, grpc_port),
    )


async def ingest(http_port: int, grpc_port: int, prefix: str, count: int, start_at: float) -> list[bool]:
    """Ingest the corpus' first ``count`` turns one unit each; returns each unit's ``was_replay``."""
    uni = await open_uni(http_port, grpc_port, prefix)
    try:
        await asyncio.sleep(max(0.0, start_at - time.time()))  # start with the other process
        session = uni.agent(AGENT).session(SESSION)
        replays = []
        for item in turns(0, count, SESSION):
            fields = {k: v for k, v in item.items() if k != "session"}
            result = await session.observe(Turn(**fields))
            replays.append(bool(result.was_replay))
        await uni.agent(AGENT).flush(timeout=60)
        return replays
    finally:
        await uni.close()


async def hold_leases(http_port: int, grpc_port: int, prefix: str, rounds: int, start_at: float) -> list[Any]:
    """Acquire the agent's cycle lease ``rounds`` times, holding it ~50 ms each; returns
    ``(token, held_from, held_until)`` per round, wall clock."""
    store = await WeaviateStore.open(_client(http_port, grpc_port), prefix=prefix, owns_client=True)
    leases = store.lease_store(LEASE)
    holder = holder_id()
    held: list[Any] = []
    try:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        while len(held) < rounds:
            lease = await leases.acquire(AGENT, CYCLE_LEASE, holder, LEASE.ttl_secs)
            if lease is None:
                await asyncio.sleep(LEASE.poll_secs)
                continue
            since = time.time()
            await asyncio.sleep(0.05)
            held.append((lease.token, since, time.time()))
            await leases.release(lease)
            await asyncio.sleep(0.01)  # let the other process claim too
        return held
    finally:
        await store.close()


def run(kind: str, queue: Any, *args: Any) -> None:
    """The ``multiprocessing`` target: runs ``ingest`` or ``hold_leases`` and queues the result."""
    fn = {"ingest": ingest, "leases": hold_leases}[kind]
    try:
        queue.put(("ok", asyncio.run(fn(*args))))
    except BaseException as exc:  # report, so the test fails with the child's error
        queue.put(("error", repr(exc)))
