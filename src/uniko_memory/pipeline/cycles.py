"""``Cycles``: what the pipeline's consolidation trigger runs for an agent, and what follows it.

P4 runs batch after batch until the agent's backlog of observations is consolidated; then the
``SweepGate`` decides whether the cortex sweep (procedures, topics, decay, closing idle sessions)
runs too. The facade hands ``Cycles.consolidate`` to ``PipelineSystem`` as its cycle, and
``Agent.sweep`` / ``Agent.maintain_sessions`` call the other two.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..consolidation import CycleStats, run_cycle
from ..cortex import SweepGate, SweepReport, run_sweep
from ..ingest.finalize import SessionFinalizer
from ..model import Session as SessionNode
from ..model import Tier
from ..model.time import utcnow
from ..store.filters import IsNull

#: Sessions one ``maintain_sessions`` call looks at (every open session of an agent, in practice).
OPEN_SESSIONS_SCAN = 100_000


class Cycles:
    """The consolidation cycle, the gated sweep and session maintenance of one knowledge base.

    ``participant_of(agent)`` names the agent's own Participant (the sweep's procedures are
    recorded by it). ``triple_source`` (a ``consolidation.TripleSource``; None = the rule triples)
    and ``summary_chat`` (a ``ChatModel`` for abstractive summaries of the sessions a sweep
    closes; None = extractive only) may be set at any time; ``last_sweep`` holds each agent's
    latest ``SweepReport``.
    """

    def __init__(self, kb: Any, finalizer: SessionFinalizer, *, participant_of: Callable[[str], str]) -> None:
        self.kb = kb
        self.finalizer = finalizer
        self.participant_of = participant_of
        self.gate = SweepGate(kb.config)
        self.triple_source: Any = None
        self.summary_chat: Any = None
        self.last_sweep: dict[str, SweepReport] = {}

    async def consolidate(self, agent: str) -> CycleStats:
        """The pipeline's cycle: P4 until the backlog is consolidated, then the gated cortex sweep."""
        config = self.kb.config
        batch = config.pipeline.consolidation_batch_size
        stats = CycleStats()
        while True:
            one = await run_cycle(
                self.kb.store, config, self.kb.embedder, agent, batch=batch, triples=self.triple_source
            )
            stats = stats + one
            if one.observations_processed < batch:
                break
        if self.gate.note_cycle(agent):
            await self.sweep(agent)
        return stats

    async def sweep(self, agent: str, *, chat: Any = None) -> SweepReport:
        """Run the cortex sweep for ``agent`` now; ``chat`` (a ``ChatModel``) overrides
        ``summary_chat`` for this sweep. The caller holds the agent's exclusive cycle."""
        report = await run_sweep(
            self.kb.store,
            self.kb.config,
            self.kb.embedder,
            agent,
            participant_id=self.participant_of(agent),
            maintain_sessions=lambda: self.maintain_sessions(agent),
            chat=chat if chat is not None else self.summary_chat,
        )
        self.last_sweep[agent] = report
        return report

    async def maintain_sessions(self, agent: str, inactivity_secs: float | None = None) -> list[str]:
        """Close and finalise ``agent``'s sessions idle longer than ``inactivity_secs`` (default
        ``ingest.session_inactivity_secs``); returns their external ids."""
        limit = (
            inactivity_secs if inactivity_secs is not None else self.kb.config.ingest.session_inactivity_secs
        )
        cutoff = utcnow() - timedelta(seconds=limit)
        closed = []
        open_sessions = await self.kb.store.find(
            agent, Tier.SESSION, IsNull("ended_at"), limit=OPEN_SESSIONS_SCAN
        )
        for node in open_sessions:
            if isinstance(node, SessionNode) and node.last_activity_at < cutoff:
                await self.finalizer.finalize(agent, node.id, close=True)
                closed.append(node.external_id)
        return closed
