"""Scale-out on Weaviate with real OS processes: the double runs in this process (REST + gRPC on
local ports), and two ``multiprocessing`` children talk to it with their own weaviate-clients.

- Two processes ingesting the same turn ids at the same time end with one copy of everything: the
  same nodes, counts and sequence numbers as one process ingesting them alone.
- Two processes contending for an agent's cycle lease never hold it at the same time, and each
  new holding has a higher fencing token.
With ``WEAVIATE_URL`` set the same runs go to that server too (``test_*_on_a_real_server``).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.reliability import _scaleout_child as child
from tests.weaviate_double import WeaviateDouble
from tests.weaviate_double.harness import REAL_URL_ENV, fresh_prefix
from uniko_memory.model import Entity, Message, Session, Tier
from uniko_memory.store.weaviate import WeaviateStore, connect_url

TURNS = 24
#: The second process starts this much later: between the first one's message and session writes
#: of its first unit (both slowed in the double, below).
STAGGER = 0.32


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, int, Any]]:
    """(http port, grpc port, cleanup) of a double only these tests use."""
    double = WeaviateDouble().start()
    try:
        yield double.http_port, double.grpc_port, double
    finally:
        double.stop()


def _real() -> tuple[int, int] | None:
    url = os.environ.get(REAL_URL_ENV)
    if not url or os.environ.get("WEAVIATE_API_KEY"):
        return None
    http = urlparse(url if "://" in url else f"http://{url}")
    grpc = urlparse(os.environ.get("WEAVIATE_GRPC_URL") or f"http://{http.hostname}:50051")
    if http.hostname not in ("localhost", "127.0.0.1") or grpc.hostname not in ("localhost", "127.0.0.1"):
        return None  # the children connect to 127.0.0.1 (use_async_with_local)
    return http.port or 8080, grpc.port or 50051


def in_children(kind: str, *args: Any, n: int = 2, timeout: float = 240, stagger: float = 0.0) -> list[Any]:
    """Run ``child.run(kind, ...)`` in ``n`` spawned processes starting together (child ``i``
    ``i * stagger`` seconds after the first); their results."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start_at = time.time() + 8  # after both children imported everything and connected
    procs = [
        ctx.Process(target=child.run, args=(kind, queue, *args, start_at + i * stagger)) for i in range(n)
    ]
    for p in procs:
        p.start()
    try:
        results = [queue.get(timeout=timeout) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r for status, r in results if status != "ok"]
    assert not errors, errors
    return [r for _, r in results]


async def _snapshot(http_port: int, grpc_port: int, prefix: str) -> dict[str, Any]:
    store = await WeaviateStore.open(child._client(http_port, grpc_port), prefix=prefix, owns_client=True)
    try:
        counts = {t.value: await store.count(child.AGENT, t) for t in Tier}
        messages = await store.find(child.AGENT, Tier.MESSAGE, limit=1000)
        sessions = await store.find(child.AGENT, Tier.SESSION, limit=10)
        entities = await store.find(child.AGENT, Tier.ENTITY, limit=1000)
        return {
            "counts": counts,
            "seqs": sorted((m.external_id, m.seq) for m in messages if isinstance(m, Message)),
            "sessions": [(s.message_count, s.last_message_id) for s in sessions if isinstance(s, Session)],
            "entities": sorted((e.id, e.frequency) for e in entities if isinstance(e, Entity)),
        }
    finally:
        await store.close()


async def _ingest_twice_concurrently(
    http_port: int,
    grpc_port: int,
    alone: str,
    raced: str,
    double: WeaviateDouble | None = None,
    stagger: float = 0.0,
) -> None:
    await child.ingest(http_port, grpc_port, alone, TURNS, 0.0)
    if double is not None:
        # Slow message writes: a unit's other nodes and its messages land far apart, so the other
        # process often reads between them (where a wrong write or read order double-applies it).
        double.engine.delays[("BatchObjects", f"{raced}Message")] = 0.25
        # ... and slow session writes: a unit another process sees as a replay (its messages
        # stored) is still being written, so a process that moved on too early extends the session
        # from a stale pre-image.
        double.engine.delays[("BatchObjects", f"{raced}Session")] = 0.15
    try:
        # The second process starts while the first one's first unit is half written.
        replays = in_children("ingest", http_port, grpc_port, raced, TURNS, stagger=stagger)
    finally:
        if double is not None:
            double.engine.delays.clear()
    expected = await _snapshot(http_port, grpc_port, alone)
    got = await _snapshot(http_port, grpc_port, raced)
    assert expected["counts"]["message"] == TURNS
    assert expected["sessions"] == [(TURNS, expected["sessions"][0][1])]
    assert got == expected
    # Every unit was applied once: by one process, or by both from the same pre-image (the same
    # objects, written twice); the other process saw a replay for the rest.
    assert all(len(r) == TURNS for r in replays)


async def test_two_processes_ingesting_the_same_turns_store_one_copy(server: Any) -> None:
    http_port, grpc_port, double = server
    await _ingest_twice_concurrently(http_port, grpc_port, fresh_prefix(), fresh_prefix(), double, STAGGER)


async def test_two_processes_never_hold_the_cycle_lease_together(server: Any) -> None:
    http_port, grpc_port, _ = server
    rounds = 8
    held = in_children("leases", http_port, grpc_port, fresh_prefix(), rounds)
    intervals = sorted((since, until, token) for one in held for token, since, until in one)
    assert len(intervals) == 2 * rounds
    for (_, until, token), (since, _, next_token) in itertools.pairwise(intervals):
        assert until <= since, "two processes held the lease at once"
        assert next_token > token  # fencing tokens grow with every new holder
    assert {len(one) for one in held} == {rounds}  # both processes got their turns


async def test_ingest_and_leases_on_a_real_server() -> None:
    real = _real()
    if real is None:
        pytest.skip(f"set {REAL_URL_ENV} to a local server without auth to run the two-process tests on it")
    prefixes = [fresh_prefix() for _ in range(3)]
    try:
        await _ingest_twice_concurrently(*real, prefixes[0], prefixes[1])
        held = in_children("leases", *real, prefixes[2], 4)
        intervals = sorted((since, until) for one in held for _, since, until in one)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(intervals))
    finally:
        client = await connect_url(os.environ[REAL_URL_ENV], skip_init_checks=True)
        try:
            for name in await client.collections.list_all(simple=True):
                if name.startswith(tuple(prefixes)):
                    await client.collections.delete(name)
        finally:
            await client.close()
