"""Many concurrent writer and reader tasks on one store: no errors, no lost writes."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from uniko_memory.errors import ClosedError
from uniko_memory.model import Edge, EdgeType, Tier
from uniko_memory.store.protocol import Store

from .corpus import AGENT, OTHER, ids, message, unit

WRITERS = 20
UNITS_PER_WRITER = 5


def _vec(w: int, j: int) -> np.ndarray:
    v = np.full(8, 0.05, dtype=np.float32)
    v[w % 8] += 1.0
    v[(w + j + 1) % 8] += 0.3 + 0.01 * j
    return unit(v)


async def test_concurrent_writers_and_readers(store: Store) -> None:
    agents = {w: (AGENT if w % 2 == 0 else OTHER) for w in range(WRITERS)}
    g0 = {a: store.generation(a) for a in (AGENT, OTHER)}
    done = asyncio.Event()
    reads = 0

    async def writer(w: int) -> None:
        agent = agents[w]
        for j in range(UNITS_PER_WRITER):
            a = message(agent, f"w{w}-u{j}-a", f"writer{w} unit{j} token w{w}x{j} first")
            b = message(agent, f"w{w}-u{j}-b", f"writer{w} unit{j} second")
            async with store.unit(agent) as u:
                u.put(a, vector=_vec(w, j))
                u.put(b)
                u.put_edge(Edge(type=EdgeType.NEXT, src=a.id, dst=b.id, props={"w": w, "j": j}))
            await asyncio.sleep(0)

    async def reader(r: int) -> None:
        nonlocal reads
        q = unit(np.arange(1, 9, dtype=np.float32))
        while not done.is_set():
            agent = AGENT if r % 2 == 0 else OTHER
            await store.text_search(agent, Tier.MESSAGE, f"writer{r} second", k=5)
            await store.vector_search(agent, Tier.MESSAGE, q, k=5)
            await store.hybrid_search(agent, Tier.MESSAGE, "unit1", q, k=5)
            await store.find(agent, Tier.MESSAGE, limit=10)
            await store.count(agent, Tier.MESSAGE)
            reads += 1
            await asyncio.sleep(0)

    readers = [asyncio.create_task(reader(r)) for r in range(4)]
    try:
        await asyncio.wait_for(asyncio.gather(*(writer(w) for w in range(WRITERS))), timeout=60)
    finally:
        done.set()
        await asyncio.gather(*readers)
    assert reads > 0

    per_agent = WRITERS // 2 * UNITS_PER_WRITER * 2
    assert await store.count(AGENT, Tier.MESSAGE) == per_agent
    assert await store.count(OTHER, Tier.MESSAGE) == per_agent
    for a in (AGENT, OTHER):
        assert store.generation(a) == g0[a] + WRITERS // 2 * UNITS_PER_WRITER
    for w in range(WRITERS):
        agent = agents[w]
        want = [message(agent, f"w{w}-u{j}-{s}", "x").id for j in range(UNITS_PER_WRITER) for s in "ab"]
        got = await store.get_many(agent, want)
        assert set(got) == set(want), f"writer {w} lost writes"
        a_ids = want[::2]
        assert set(await store.get_vectors(agent, a_ids)) == set(a_ids)
        edges = await store.neighbors(agent, a_ids, [EdgeType.NEXT])
        assert len(edges) == UNITS_PER_WRITER
        assert ids(await store.text_search(agent, Tier.MESSAGE, f"w{w}x3")) == [a_ids[3]]


async def test_concurrent_upserts_of_same_node_converge(store: Store) -> None:
    base = message(AGENT, "hot", "version 0")

    async def bump(i: int) -> None:
        async with store.unit(AGENT) as u:
            u.put(base.model_copy(update={"content": f"version {i}", "seq": i}))

    await asyncio.gather(*(bump(i) for i in range(20)))
    assert await store.count(AGENT, Tier.MESSAGE) == 1
    got = await store.get(AGENT, base.id)
    assert got is not None and got.content == f"version {got.seq}"
    assert len(await store.text_search(AGENT, Tier.MESSAGE, "version", k=50)) == 1


async def test_concurrent_failing_and_succeeding_units(store: Store) -> None:
    async def work(i: int) -> None:
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, f"mix-{i}", f"mixed unit {i}"))
            await asyncio.sleep(0)
            if i % 3 == 0:
                raise ValueError(f"fail {i}")

    results = await asyncio.gather(*(work(i) for i in range(21)), return_exceptions=True)
    failed = {i for i, r in enumerate(results) if isinstance(r, ValueError)}
    assert failed == {i for i in range(21) if i % 3 == 0}
    assert all(r is None for i, r in enumerate(results) if i not in failed)
    found = {n.id for n in await store.find(AGENT, Tier.MESSAGE, limit=100)}
    assert found == {message(AGENT, f"mix-{i}", "x").id for i in range(21) if i % 3}


async def test_close_while_reads_are_in_flight(harness) -> None:
    """Reads racing a close finish or raise ClosedError: no connection is closed under a query.

    The embedded store runs short reads on the caller's thread, where they cannot overlap a close
    on the same loop; the race is between a close and reads in worker threads, so they go there."""

    async def open_racing() -> Any:
        opened = await harness.open()
        if hasattr(opened, "inline_reads"):
            opened.inline_reads = False
        return opened

    store = await open_racing()
    async with store.unit(AGENT) as u:
        for i in range(200):
            u.put(message(AGENT, f"c{i}", f"closing race turn {i} token{i % 7}"), vector=_vec(i, 1))
    q = unit(np.arange(1, 9, dtype=np.float32))

    async def read(i: int) -> str:
        try:
            await store.text_search(AGENT, Tier.MESSAGE, f"turn token{i % 7}", k=50)
            await store.vector_search(AGENT, Tier.MESSAGE, q, k=50)
            await store.find(AGENT, Tier.MESSAGE, limit=200)
        except ClosedError:
            return "closed"
        return "done"

    for _ in range(5):  # the race is timing-dependent: several rounds
        tasks = [asyncio.create_task(read(i)) for i in range(40)]
        await asyncio.sleep(0)
        await store.close()
        outcomes = await asyncio.gather(*tasks)
        assert set(outcomes) <= {"closed", "done"} and "closed" in outcomes
        store = await open_racing()
    await store.close()
