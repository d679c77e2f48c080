"""Cycle leases with fencing: several processes on one store run each agent's cycles once.

A ``LeaseStore`` (offered by a store as ``store.lease_store(config)``) keeps one lease record per
(agent, name): the holder, an expiry (epoch seconds) and a fencing token that grows by one with
every new holder and never goes back. ``hold_lease`` acquires one, renews it in the background and
installs a ``Fence`` for the block: every unit, delete and redaction of that agent inside the block
(tasks it spawns included, through a context variable) first calls ``check_fence``, which refuses
the write with ``LeaseLost`` once the lease is gone: expired by the holder's own clock (less than
``safety_margin_secs`` left), taken by someone else (another token in the record), or a renewal
failed. So a process paused past its expiry, or cut off from the store, stops writing instead of
racing the process that took over.

Timing assumption (what makes it safe): clocks of the processes differ by less than
``clock_skew_secs``, and one lease write takes less than ``settle_ms`` (Weaviate) and less than
``safety_margin_secs - clock_skew_secs``. Every number is a ``LeaseConfig`` field.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..errors import UnikoError

if TYPE_CHECKING:  # config imports the store package (EmbeddedVectorOptions): no cycle at run time
    from ..config import LeaseConfig

#: The lease the pipeline's consolidation and cortex cycles (and ``exclusive_cycle``) hold.
CYCLE_LEASE = "cycle"


class LeaseLost(UnikoError):
    """This process no longer holds the lease it wrote under: the write was refused."""

    kind = "lease_lost"


class LeaseUnavailable(UnikoError):
    """Another process holds the lease and did not release it in time."""

    kind = "lease_unavailable"


class Lease(BaseModel):
    """One lease record: who holds (agent, name), with which fencing token, until when."""

    model_config = ConfigDict(frozen=True)

    agent: str
    name: str
    holder: str
    token: int
    expires_at: float

    def live(self, now: float, skew: float) -> bool:
        """Held, as another process sees it: not yet past its end plus the clock skew."""
        return bool(self.holder) and now < self.expires_at + skew


@runtime_checkable
class LeaseStore(Protocol):
    """Lease records of one store, shared by every process that opens it."""

    def now(self) -> float:
        """The wall clock leases are measured in (epoch seconds)."""
        ...

    async def acquire(self, agent: str, name: str, holder: str, ttl: float) -> Lease | None:
        """A new lease (token one above the last), or None while another holder's is live."""
        ...

    async def renew(self, lease: Lease, ttl: float) -> Lease:
        """The lease extended to ``now + ttl``; ``LeaseLost`` if it is no longer this holder's."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the lease up now (the token stays, so the next holder's is higher)."""
        ...

    async def current(self, agent: str, name: str) -> Lease | None:
        """The stored record, live or not (None: never leased)."""
        ...


def holder_id() -> str:
    """A holder name unique to this process and call: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Fence:
    """The lease a block writes under; ``check`` refuses writes once it is lost."""

    def __init__(self, leases: LeaseStore, lease: Lease, config: LeaseConfig) -> None:
        self.leases = leases
        self.lease = lease
        self.config = config
        self.lost: str | None = None

    def _lose(self, why: str) -> LeaseLost:
        self.lost = self.lost or why
        lease = self.lease
        return LeaseLost(
            f"lease {lease.name!r} of agent {lease.agent!r} (token {lease.token}) is lost: {self.lost}; "
            "the write was refused (another process may run this cycle now)"
        )

    async def check(self, agent: str) -> None:
        """Raise ``LeaseLost`` unless this process still holds the lease (writes of other agents
        pass: the fence guards its own agent)."""
        if agent != self.lease.agent:
            return
        if self.lost:
            raise self._lose(self.lost)
        left = self.lease.expires_at - self.leases.now()
        if left <= self.config.safety_margin_secs:
            raise self._lose(f"{max(left, 0.0):.1f}s left, below the safety margin")
        if self.config.verify_each_write:
            cur = await self.leases.current(self.lease.agent, self.lease.name)
            if cur is None or cur.holder != self.lease.holder or cur.token != self.lease.token:
                who = "nobody" if cur is None else f"{cur.holder!r} with token {cur.token}"
                raise self._lose(f"the record now names {who}")


_FENCE: contextvars.ContextVar[Fence | None] = contextvars.ContextVar("uniko_fence", default=None)


async def check_fence(agent: str) -> None:
    """Called by every store write: refuses it when the current block's lease is lost."""
    fence = _FENCE.get()
    if fence is not None:
        await fence.check(agent)


async def _renewer(fence: Fence) -> None:
    cfg = fence.config
    while not fence.lost:
        await asyncio.sleep(cfg.renew_every_secs)
        if fence.lease.expires_at - fence.leases.now() <= cfg.safety_margin_secs:
            fence.lost = "it expired before it could be renewed"
            return
        try:
            fence.lease = await fence.leases.renew(fence.lease, cfg.ttl_secs)
        except LeaseLost as exc:
            fence.lost = str(exc)
            return
        except Exception as exc:  # the store is unreachable: stop writing before the lease runs out
            fence.lost = f"renewal failed ({exc!r})"
            return


async def acquire_waiting(
    leases: LeaseStore, config: LeaseConfig, agent: str, name: str, holder: str, *, wait: float
) -> Lease | None:
    """Try to acquire, polling every ``poll_secs`` for up to ``wait`` seconds (0 = one try)."""
    deadline = time.monotonic() + wait
    while True:
        lease = await leases.acquire(agent, name, holder, config.ttl_secs)
        if lease is not None or time.monotonic() + config.poll_secs > deadline:
            return lease
        await asyncio.sleep(config.poll_secs)


@contextlib.asynccontextmanager
async def hold(leases: LeaseStore, config: LeaseConfig, lease: Lease) -> AsyncIterator[Fence]:
    """Hold ``lease`` for the block: renewed in the background, writes fenced, released after."""
    fence = Fence(leases, lease, config)
    renew = asyncio.create_task(_renewer(fence), name=f"uniko-lease-{lease.agent}-{lease.name}")
    token = _FENCE.set(fence)
    try:
        yield fence
    finally:
        _FENCE.reset(token)
        renew.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renew
        if not fence.lost:
            with contextlib.suppress(Exception):  # an unreleased lease only expires later
                await leases.release(fence.lease)
