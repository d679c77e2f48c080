"""Cycle leases of the embedded store: one SQLite row per (agent, name), changed in one
``BEGIN IMMEDIATE`` transaction each, so acquiring is a real compare-and-set (no settle delay).

The table lives in the store's own file and is created on first use (no schema migration), so it
also serves several processes on one SQLite file once the store allows that. Today the store's file
lock admits one process per file, where the pipeline's in-process lock is already exact: so
``EmbeddedStore`` does not offer these leases by itself (no ``lease_store``), and a caller that wants
them passes ``PipelineSystem(..., leases=EmbeddedLeases(store, config.lease))``. With
``single_process`` (the default, true under the file lock) a record held by another process was left
by one that died holding it, so it does not block this one: a restart after a crash runs its cycles
at once instead of waiting out the dead process's ttl.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...config import LeaseConfig
from ..lease import Lease, LeaseLost

if TYPE_CHECKING:
    from .core import EmbeddedCore

_TABLE = """CREATE TABLE IF NOT EXISTS cycle_leases(
    agent TEXT NOT NULL, name TEXT NOT NULL, holder TEXT NOT NULL,
    token INTEGER NOT NULL, expires_at REAL NOT NULL, PRIMARY KEY(agent, name))"""


def _row(agent: str, name: str, row: tuple[str, int, float] | None) -> Lease | None:
    if row is None:
        return None
    return Lease(agent=agent, name=name, holder=row[0], token=row[1], expires_at=row[2])


def _select(conn: sqlite3.Connection, agent: str, name: str) -> Lease | None:
    conn.execute(_TABLE)
    row = conn.execute(
        "SELECT holder, token, expires_at FROM cycle_leases WHERE agent=? AND name=?", (agent, name)
    ).fetchone()
    return _row(agent, name, row)


def _store(conn: sqlite3.Connection, lease: Lease) -> None:
    conn.execute(
        "INSERT INTO cycle_leases(agent, name, holder, token, expires_at) VALUES(?,?,?,?,?) "
        "ON CONFLICT(agent, name) DO UPDATE SET holder=excluded.holder, token=excluded.token, "
        "expires_at=excluded.expires_at",
        (lease.agent, lease.name, lease.holder, lease.token, lease.expires_at),
    )


class EmbeddedLeases:
    """The ``LeaseStore`` of an ``EmbeddedStore``."""

    def __init__(
        self,
        store: EmbeddedCore,
        config: LeaseConfig,
        clock: Callable[[], float] = time.time,
        *,
        single_process: bool = True,
    ):
        self.store = store
        self.config = config
        self._clock = clock
        self._single = single_process
        self._ours = f"{socket.gethostname()}:{os.getpid()}:"  # how ``lease.holder_id`` starts here

    def _blocks(self, cur: Lease | None, holder: str, now: float) -> bool:
        """Whether ``cur`` keeps ``holder`` out: someone else's live lease (of this process, when
        the file lock admits only this one)."""
        if cur is None or cur.holder == holder or not cur.live(now, self.config.clock_skew_secs):
            return False
        return not self._single or cur.holder.startswith(self._ours)

    def now(self) -> float:
        return self._clock()

    async def current(self, agent: str, name: str) -> Lease | None:
        # On the writer: the table may not exist yet, and CREATE needs the write connection.
        return await self.store._write(lambda conn: _select(conn, agent, name))

    async def acquire(self, agent: str, name: str, holder: str, ttl: float) -> Lease | None:
        def run(conn: sqlite3.Connection) -> Lease | None:
            cur = _select(conn, agent, name)
            now = self.now()
            if self._blocks(cur, holder, now):
                return None
            lease = Lease(
                agent=agent,
                name=name,
                holder=holder,
                token=(cur.token if cur else 0) + 1,
                expires_at=now + ttl,
            )
            _store(conn, lease)
            return lease

        return await self.store._write(run)

    async def renew(self, lease: Lease, ttl: float) -> Lease:
        def run(conn: sqlite3.Connection) -> Lease:
            cur = _select(conn, lease.agent, lease.name)
            if cur is None or cur.holder != lease.holder or cur.token != lease.token:
                raise LeaseLost(f"lease {lease.name!r} of agent {lease.agent!r} was taken over")
            if lease.expires_at - self.now() <= self.config.safety_margin_secs:
                raise LeaseLost(f"lease {lease.name!r} of agent {lease.agent!r} ran out before renewal")
            renewed = lease.model_copy(update={"expires_at": self.now() + ttl})
            _store(conn, renewed)
            return renewed

        return await self.store._write(run)

    async def release(self, lease: Lease) -> None:
        def run(conn: sqlite3.Connection) -> None:
            cur = _select(conn, lease.agent, lease.name)
            if cur is not None and cur.holder == lease.holder and cur.token == lease.token:
                _store(conn, lease.model_copy(update={"holder": "", "expires_at": 0.0}))

        await self.store._write(run)
