"""Cycle leases: two pipelines on one store run an agent's cycle once, tokens only grow, and a
cycle that lost its lease writes nothing (fencing). The pipelines stand for two processes: each
has its own holder id and in-process locks, and they share only the store's lease records."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest

from tests.unit.ingest._support import turn
from uniko_memory.config import LeaseConfig, UnikoConfig
from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.model import Tier
from uniko_memory.pipeline import PipelineSystem
from uniko_memory.store.embedded.leases import EmbeddedLeases
from uniko_memory.store.lease import CYCLE_LEASE, LeaseLost, LeaseUnavailable

AGENT = "lease"
CFG = LeaseConfig(ttl_secs=30, renew_every_secs=5, safety_margin_secs=5, clock_skew_secs=1, poll_secs=0.01)


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def twin(uni: Uniko, leases: Any, cycle: Any = None, lease: LeaseConfig = CFG) -> PipelineSystem:
    """A second pipeline on the same store, as another process would build it."""
    ps = uni._pipeline
    config = ps.config.model_copy(update={"lease": lease})
    return PipelineSystem(config, ps.atomic, ps.post, consolidate=cycle, leases=leases)


async def test_embedded_leases_exclude_expire_and_grow_the_token(uni: Uniko) -> None:
    clock = Clock()
    leases = EmbeddedLeases(uni.kb.store, CFG, clock, single_process=False)
    a = await leases.acquire(AGENT, CYCLE_LEASE, "A", 30)
    assert a is not None and a.token == 1
    assert await leases.acquire(AGENT, CYCLE_LEASE, "B", 30) is None  # live: refused
    clock.t += 30.5  # expired, but within the clock skew: still A's
    assert await leases.acquire(AGENT, CYCLE_LEASE, "B", 30) is None
    clock.t += 1
    b = await leases.acquire(AGENT, CYCLE_LEASE, "B", 30)
    assert b is not None and b.token == 2
    with pytest.raises(LeaseLost, match="taken over"):
        await leases.renew(a, 30)
    await leases.release(a)  # a stale holder's release leaves the new holder's lease alone
    assert (await leases.current(AGENT, CYCLE_LEASE)) == b
    await leases.release(b)
    c = await leases.acquire(AGENT, CYCLE_LEASE, "A", 30)
    assert c is not None and c.token == 3  # released, and the token still grows
    assert await leases.acquire("other-agent", CYCLE_LEASE, "B", 30) is not None  # per agent


async def test_a_cycle_runs_in_one_of_two_processes(uni: Uniko) -> None:
    leases = EmbeddedLeases(uni.kb.store, CFG)
    ran: list[str] = []
    gate, started = asyncio.Event(), asyncio.Event()

    async def cycle_a(agent: str) -> str:
        ran.append("A")
        started.set()
        await gate.wait()
        return "A"

    async def cycle_b(agent: str) -> str:
        ran.append("B")
        return "B"

    a, b = twin(uni, leases, cycle_a), twin(uni, leases, cycle_b)
    first = asyncio.create_task(a.consolidate(AGENT))
    await asyncio.wait_for(started.wait(), 10)
    assert await b.consolidate(AGENT) is None  # A holds the lease: B skips, it doesn't queue
    assert b.cycles_skipped == 1 and b.consolidations_run == 0
    gate.set()
    assert await first == "A"
    assert await b.consolidate(AGENT) == "B"  # released at the end of A's cycle
    assert ran == ["A", "B"]


async def test_exclusive_cycle_waits_for_the_other_process_then_gives_up(uni: Uniko) -> None:
    leases = EmbeddedLeases(uni.kb.store, CFG)
    a = twin(uni, leases)
    b = twin(uni, leases, lease=CFG.model_copy(update={"acquire_timeout_secs": 0.2}))
    async with a.exclusive_cycle(AGENT):
        with pytest.raises(LeaseUnavailable, match="another process holds"):
            async with b.exclusive_cycle(AGENT):
                pass
    async with b.exclusive_cycle(AGENT):  # free again
        assert (await leases.current(AGENT, CYCLE_LEASE)).holder == b.holder  # type: ignore[union-attr]


async def test_a_process_that_lost_its_lease_mid_cycle_stops_writing(uni: Uniko) -> None:
    clock = Clock()
    leases = EmbeddedLeases(uni.kb.store, CFG, clock)
    store = uni.kb.store
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.agent(AGENT).flush(timeout=30)
    before = await store.count(AGENT, Tier.MESSAGE)
    (msg,) = await store.find(AGENT, Tier.MESSAGE)
    a = twin(uni, leases)
    async with a.exclusive_cycle(AGENT):
        async with store.unit(AGENT) as u:  # holding the lease: writes pass
            u.put(msg.model_copy(update={"content": "edited under the lease"}))
        clock.t += CFG.ttl_secs + CFG.clock_skew_secs + 1  # a long pause: the lease ran out
        taken = await leases.acquire(AGENT, CYCLE_LEASE, "process-B", CFG.ttl_secs)
        assert taken is not None
        with pytest.raises(LeaseLost, match="safety margin"):
            async with store.unit(AGENT) as u:
                u.put(msg.model_copy(update={"content": "stale writer"}))
        with pytest.raises(LeaseLost):
            await store.delete(AGENT, [msg.id])
    assert (await store.get(AGENT, msg.id)).content == "edited under the lease"  # type: ignore[union-attr]
    assert await store.count(AGENT, Tier.MESSAGE) == before
    assert (await leases.current(AGENT, CYCLE_LEASE)) == taken  # the loser did not release it
    async with store.unit(AGENT) as u:  # outside the block nothing is fenced
        u.put(msg.model_copy(update={"content": "ingest goes on"}))


async def test_a_takeover_is_seen_by_the_read_before_each_write(uni: Uniko) -> None:
    clock = Clock()
    leases = EmbeddedLeases(uni.kb.store, CFG, clock)
    store = uni.kb.store
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    await uni.agent(AGENT).flush(timeout=30)
    (msg,) = await store.find(AGENT, Tier.MESSAGE)
    a = twin(uni, leases)
    async with a.exclusive_cycle(AGENT):
        # Someone rewrote the record (e.g. an operator or a process with a skewed clock): our
        # clock still says there is time, the record says otherwise.
        lease = await leases.current(AGENT, CYCLE_LEASE)
        assert lease is not None
        await store._write(
            lambda conn: conn.execute(
                "UPDATE cycle_leases SET holder='intruder', token=token+1 WHERE agent=?", (AGENT,)
            )
        )
        with pytest.raises(LeaseLost, match="'intruder' with token 2"):
            async with store.unit(AGENT) as u:
                u.put(msg.model_copy(update={"content": "stale writer"}))


async def test_renewal_keeps_a_long_cycle_alive_and_a_failed_one_fences(uni: Uniko) -> None:
    fast = LeaseConfig(
        ttl_secs=0.6, renew_every_secs=0.1, safety_margin_secs=0.3, clock_skew_secs=0.05, settle_ms=50
    )
    leases = EmbeddedLeases(uni.kb.store, fast)
    a = twin(uni, leases, lease=fast)
    async with a.exclusive_cycle(AGENT):
        first = await leases.current(AGENT, CYCLE_LEASE)
        await asyncio.sleep(1.0)  # longer than the ttl: renewals kept it
        now = await leases.current(AGENT, CYCLE_LEASE)
        assert first is not None and now is not None
        assert now.token == first.token and now.expires_at > first.expires_at + 0.5
        async with uni.kb.store.unit(AGENT) as u:
            u.put_blob(hashlib.sha256(b"x").hexdigest(), b"x")


async def test_a_lease_left_by_a_dead_process_does_not_block_the_next_one(uni: Uniko) -> None:
    """The embedded store's file lock admits one process: another process's record is stale."""
    leases = EmbeddedLeases(uni.kb.store, CFG)
    dead = await EmbeddedLeases(uni.kb.store, CFG, single_process=False).acquire(
        AGENT, CYCLE_LEASE, "otherhost:4242:deadbeef", 30
    )
    assert dead is not None
    ran: list[str] = []

    async def cycle(agent: str) -> str:
        ran.append(agent)
        return "ran"

    a = twin(uni, leases, cycle)
    assert await a.consolidate(AGENT) == "ran"
    after = await leases.current(AGENT, CYCLE_LEASE)
    assert after is not None and after.token == dead.token + 1 and after.holder == ""
    held = await leases.acquire(AGENT, CYCLE_LEASE, a.holder, 30)
    assert held is not None  # ... while one of this process's own live leases still excludes:
    assert await twin(uni, leases, cycle).consolidate(AGENT) is None


def test_lease_timings_are_checked() -> None:
    with pytest.raises(ConfigError, match="safety_margin_secs must exceed"):
        UnikoConfig.build({"lease": {"safety_margin_secs": 1, "clock_skew_secs": 2}})
    with pytest.raises(ConfigError, match="renew_every_secs"):
        UnikoConfig.build({"lease": {"ttl_secs": 20, "renew_every_secs": 15}})
