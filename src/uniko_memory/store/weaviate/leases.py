"""Cycle leases and shared generations on Weaviate, both kept as ``{prefix}_Meta`` objects.

Weaviate has no compare-and-set (an insert with a fixed uuid checks existence and writes in two
steps, and batch inserts overwrite), so a lease is claimed with Fischer's timed mutual exclusion:
read the record; if it is free or expired, write a claim (token + 1); wait ``settle_ms``, longer
than any lease write may take; read it back: the claim is won if it still names this holder and
token. Two processes that both saw the lease free both write within ``settle_ms`` of their reads,
so the later write is the one both read back, and only its writer proceeds. A claim whose write
took longer than ``settle_ms`` is abandoned (its safety would not hold). The fencing token is the
record's counter; the record is never deleted, so tokens only grow. Safety also needs the lease
record on one replica or written and read at consistency ALL (docs/deploy-weaviate.md).

The generation record of an agent, ``{"c": counter, "w": writer}``, is rewritten after every
committed unit with ``counter = max(stored, own) + 1`` and the writer's random id: a lost update
between two writers still changes the record (the writer ids differ), so a process that compares
the whole record never misses a write. ``as_int`` folds it into the ``int`` the caches compare.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...config import LeaseConfig
from ..lease import Lease, LeaseLost
from .core import tenant_name

if TYPE_CHECKING:
    from .core import WeaviateCore

LEASE_KIND = "lease"
GENERATION_KIND = "gen"


def _key(agent: str, name: str) -> str:
    return f"{tenant_name(agent)}\0{name}"


class WeaviateLeases:
    """The ``LeaseStore`` of a ``WeaviateStore`` (see the module docstring for the protocol)."""

    def __init__(self, store: WeaviateCore, config: LeaseConfig, clock: Callable[[], float] = time.time):
        self.store = store
        self.config = config
        self._clock = clock

    def now(self) -> float:
        return self._clock()

    async def current(self, agent: str, name: str) -> Lease | None:
        raw = await self.store._meta_get(LEASE_KIND, _key(agent, name))
        if raw is None:
            return None
        d = json.loads(raw)
        return Lease(agent=agent, name=name, holder=d["holder"], token=d["token"], expires_at=d["expires_at"])

    async def _write(self, lease: Lease) -> None:
        value = json.dumps({"holder": lease.holder, "token": lease.token, "expires_at": lease.expires_at})
        await self.store._meta_put(LEASE_KIND, _key(lease.agent, lease.name), value)

    async def acquire(self, agent: str, name: str, holder: str, ttl: float) -> Lease | None:
        started = time.monotonic()
        cur = await self.current(agent, name)
        now = self.now()
        if cur is not None and cur.holder != holder and cur.live(now, self.config.clock_skew_secs):
            return None
        claim = Lease(
            agent=agent,
            name=name,
            holder=holder,
            token=(cur.token if cur else 0) + 1,
            expires_at=now + ttl,
        )
        await self._write(claim)
        settle = self.config.settle_ms / 1000
        if time.monotonic() - started > settle:
            await self._abandon(claim)  # too slow: a rival's claim may have landed before ours
            return None
        await asyncio.sleep(settle)
        back = await self.current(agent, name)
        if back is None or back.holder != holder or back.token != claim.token:
            return None
        return claim

    async def _abandon(self, claim: Lease) -> None:
        back = await self.current(claim.agent, claim.name)
        if back is not None and back.holder == claim.holder and back.token == claim.token:
            await self._write(claim.model_copy(update={"holder": "", "expires_at": 0.0}))

    async def renew(self, lease: Lease, ttl: float) -> Lease:
        cur = await self.current(lease.agent, lease.name)
        if cur is None or cur.holder != lease.holder or cur.token != lease.token:
            raise LeaseLost(f"lease {lease.name!r} of agent {lease.agent!r} was taken over")
        if lease.expires_at - self.now() <= self.config.safety_margin_secs:
            raise LeaseLost(f"lease {lease.name!r} of agent {lease.agent!r} ran out before renewal")
        renewed = lease.model_copy(update={"expires_at": self.now() + ttl})
        await self._write(renewed)
        return renewed

    async def release(self, lease: Lease) -> None:
        await self._abandon(lease)


def as_int(raw: str | None) -> int:
    """The generation record as one int: the counter above, the writer's crc32 below."""
    if raw is None:
        return 0
    d = json.loads(raw)
    return (int(d["c"]) << 32) | zlib.crc32(str(d["w"]).encode())


def next_record(raw: str | None, own: int, writer: str) -> tuple[int, str]:
    """The counter and record a writer stores after a commit (see the module docstring)."""
    stored = int(json.loads(raw)["c"]) if raw is not None else 0
    counter = max(stored, own) + 1
    return counter, json.dumps({"c": counter, "w": writer})
