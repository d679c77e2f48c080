"""Read tracking: what recall returned, recorded as usage (access count, last access) off the
read path.

``note`` is synchronous and only adds to a per-agent buffer; once ``batch`` reads are pending a
background task writes them with one ``Store.record_usage`` (patch-only: usage is beside the
node, and read tracking bumps no generation, so cached recalls stay valid and may be slightly
stale on recency by design). A failed write is logged and dropped: tracking never blocks or
fails a recall. ``flush`` writes what is pending (``Agent.flush`` and ``Uniko.close`` call it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..model import UsageDelta

log = logging.getLogger(__name__)


class AccessTracker:
    def __init__(self, store: Any, batch: int) -> None:
        self.store = store
        self.batch = batch
        self._pending: dict[str, dict[str, tuple[int, datetime]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def note(self, agent: str, node_ids: Sequence[str], at: datetime) -> None:
        if getattr(self.store, "read_only", False):
            return  # a read-only reader (issue 23.2) leaves the store as it is; the writer tracks its own
        reads = self._pending.setdefault(agent, {})
        for nid in node_ids:
            count, last = reads.get(nid, (0, at))
            reads[nid] = (count + 1, max(last, at))
        if len(reads) >= self.batch:
            task = asyncio.get_running_loop().create_task(self._write(agent))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _write(self, agent: str) -> None:
        reads = self._pending.pop(agent, {})
        if not reads:
            return
        deltas = {nid: UsageDelta(access_count=n, accessed_at=at) for nid, (n, at) in reads.items()}
        try:
            await self.store.record_usage(agent, deltas)
        except Exception as exc:  # tracking must never fail anything: the reads are dropped
            log.warning("read tracking for agent %s dropped %d reads: %s", agent, len(deltas), exc)

    async def flush(self, agent: str | None = None) -> None:
        """Write every pending read (of ``agent``, or of all) and wait for writes in flight."""
        for a in [agent] if agent is not None else list(self._pending):
            await self._write(a)
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
