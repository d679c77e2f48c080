"""The cortex sweep and its cadence.

After a successful consolidation cycle the sweep runs when both throttles allow: at least
``cortex_cycle_every_n_consolidations`` cycles of that agent since its last sweep, and at least
``cortex_min_interval_secs`` since then. Order: P5 procedures → P6 topics → F50 decay → session
maintenance (auto-close idle sessions, which finalises them with an extractive summary) → with a
chat model (``chat``, a ``ChatModel`` such as ``LangChainChat`` behind the engine's circuit breaker),
abstractive summaries of the sessions just closed; a session whose model call fails keeps its
extractive summary. Each step's failure is logged and dropped; the others still run.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..config import UnikoConfig
from ..model import session_id
from ..store.protocol import Store
from .decay import decay_episodes
from .procedures import PromotionStats, promote_procedures
from .sessions import summarize_sessions
from .topics import TopicStats, detect_topics

log = logging.getLogger(__name__)


class SweepReport(BaseModel):
    procedures: PromotionStats | None = None
    topics: TopicStats | None = None
    episodes_pruned: int = 0
    sessions_closed: list[str] = Field(default_factory=list)
    #: External ids of the closed sessions that got an abstractive summary (with a chat model).
    sessions_summarized: list[str] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)
    elapsed_ms: float = 0.0


class SweepGate:
    """Per-agent cycle counter plus a wall-clock minimum between sweeps."""

    def __init__(self, config: UnikoConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = config.pipeline.cortex_cycle_every_n_consolidations
        self.min_interval = config.pipeline.cortex_min_interval_secs
        self.clock = clock
        self._cycles: dict[str, int] = defaultdict(int)
        self._last: dict[str, float] = {}

    def note_cycle(self, agent: str) -> bool:
        """Count one successful cycle; True when the sweep should run now (and the gate resets)."""
        self._cycles[agent] += 1
        if self._cycles[agent] < self.every:
            return False
        last = self._last.get(agent)
        now = self.clock()
        if last is not None and now - last < self.min_interval:
            return False
        self._cycles[agent] = 0
        self._last[agent] = now
        return True


async def run_sweep(
    store: Store,
    config: UnikoConfig,
    embedder: Any,
    agent: str,
    *,
    participant_id: str | None = None,
    maintain_sessions: Callable[[], Awaitable[list[str]]] | None = None,
    chat: Any = None,
    now: datetime | None = None,
) -> SweepReport:
    """One sweep for ``agent``. ``maintain_sessions`` closes idle sessions and returns their external
    ids; with ``chat`` those sessions also get abstractive summaries (``summarize_sessions``)."""
    t0 = time.perf_counter()
    report = SweepReport()

    async def step(name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await fn()
        except Exception as exc:
            log.warning("cortex sweep step %s failed for agent %s: %r", name, agent, exc)
            report.errors[name] = repr(exc)[:500]
            return None

    report.procedures = await step(
        "procedures",
        lambda: promote_procedures(store, config, embedder, agent, participant_id=participant_id, now=now),
    )
    report.topics = await step("topics", lambda: detect_topics(store, config, embedder, agent, now=now))
    report.episodes_pruned = await step("decay", lambda: decay_episodes(store, config, agent, now=now)) or 0
    if maintain_sessions is not None:
        report.sessions_closed = await step("sessions", maintain_sessions) or []
    if chat is not None and report.sessions_closed:
        by_node = {session_id(agent, ext): ext for ext in report.sessions_closed}
        done = await step("summaries", lambda: summarize_sessions(store, agent, list(by_node), chat)) or []
        report.sessions_summarized = [by_node[sid] for sid in done]
    report.elapsed_ms = round((time.perf_counter() - t0) * 1000, 3)
    return report
