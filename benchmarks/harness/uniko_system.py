"""uniko-memory as a ``MemorySystem`` for the harness: ingest through the facade, recall per budget.

Per conversation: a fresh in-memory store; each session's turns committed as one unit (as a user
importing a transcript would) and its post-ingest work (P3 observations, P7a embeddings) flushed
before the next session; every session finalised; then (``consolidate``) one consolidation run over
the whole backlog and (``sweep``) one cortex sweep (procedures, topics, decay, session maintenance).

Questions go through the default call path a user gets, nothing else:
``agent.recall(question, token_budget=N, reference_ts=question_time, use_cache=False)`` per budget,
and ``agent.recall(question, limit=k, reference_ts=question_time, use_cache=False)`` (the default
budget) for the item-limit diagnostics. The prompt text is ``bundle.render()``; the items in it are
``bundle.items``. An item covers exactly the turns its provenance reaches (Message, transcript chunk
members, the source Message of an Observation / Fact); Topics and Summaries cover nothing.

Determinism. The engine's background triggers fire on timing: a consolidation cycle starts once
``consolidation_threshold`` observations are waiting (while ingest goes on), on a wall-clock timer,
and the cortex sweep after every n-th cycle but at most once per ``cortex_min_interval_secs``. Which
turns a cycle sees would then depend on the machine's speed. The harness turns those triggers off
(``DETERMINISTIC_PIPELINE``) and runs the same steps explicitly at fixed points, and flushes the
post-ingest queue after every session so its batches are always the same. Two runs on the same data
give the same metrics (``benchmarks/determinism_check.py`` checks it).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from uniko_memory.config import UnikoConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import message_id

from .format import Conversation, Question
from .metrics import RetrievalResult, RetrievedItem

AGENT = "bench"
_NEVER = 10**9
#: Pipeline settings that keep every timing-driven background step from firing (see the module docstring).
DETERMINISTIC_PIPELINE: dict[str, Any] = {
    "consolidation_threshold": _NEVER,
    "consolidation_interval_secs": float(_NEVER),
    "cortex_cycle_every_n_consolidations": _NEVER,
}


def bench_config(overrides: dict[str, Any] | None = None) -> UnikoConfig:
    """The shipped defaults with the background triggers off (``DETERMINISTIC_PIPELINE``)."""
    data: dict[str, Any] = dict(overrides or {})
    data["pipeline"] = {**DETERMINISTIC_PIPELINE, **data.get("pipeline", {})}
    return UnikoConfig.build(data)


class UnikoSystem:
    """The shipped defaults, offline: local embedder, spaCy, no reranker, no LLM.

    ``consolidate=False`` skips consolidation (and with it the sweep): recall then runs over the raw
    tiers (messages, observations, transcript chunks, summaries) only. ``sweep=False`` keeps
    consolidation but skips the cortex sweep. ``embedder`` / ``nlp`` replace the default models
    (tests); ``uniko_config`` is a ``UnikoConfig`` as a user would pass it to ``Uniko.open``. There
    are no recall settings of the harness's own: every question takes the default call path.
    """

    call_path = (
        "agent.recall(question, token_budget=N, reference_ts=question time, use_cache=False); "
        "text = bundle.render()"
    )

    def __init__(
        self,
        *,
        consolidate: bool = True,
        sweep: bool = True,
        uniko_config: dict[str, Any] | None = None,
        embedder: Any = None,
        nlp: Any = None,
    ) -> None:
        self.consolidate = consolidate
        self.sweep = sweep and consolidate
        self._uniko_config = uniko_config
        self._embedder = embedder
        self._nlp = nlp
        self.uni: Uniko | None = None
        self.turn_of: dict[str, str] = {}
        self.session_of: dict[str, str] = {}
        self.setup_stats: dict[str, Any] = {}

    async def setup(self, conversation: Conversation) -> None:
        t0 = time.perf_counter()
        self.uni = await Uniko.in_memory(
            bench_config(self._uniko_config), embedder=self._embedder, nlp=self._nlp
        )
        agent = self.uni.agent(AGENT)
        for session in conversation.sessions:
            turns = []
            for t in session.turns:
                self.turn_of[message_id(AGENT, t.id)] = t.id
                self.session_of[t.id] = session.id
                to = t.addressed_to or next((s for s in conversation.speakers if s != t.speaker), None)
                turns.append(Turn(id=t.id, sender=t.speaker, content=t.text, at=t.timestamp, addressed_to=to))
            if turns:
                await agent.session(session.id).commit_unit(turns)
                await agent.flush()  # same post-ingest batches every run
        for session in conversation.sessions:
            await agent.session(session.id).finalize()
        stats: dict[str, Any] = {}
        if self.consolidate:
            cycle = await agent.consolidate()
            stats["consolidation_failed"] = cycle is None
            if self.sweep:
                report = await agent.sweep()
                stats["sweep_errors"] = dict(report.errors)
        self.setup_stats = {"setup_s": time.perf_counter() - t0, "nodes": await agent.stats(), **stats}

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        """``token_budget`` / ``limit`` None: the library's default (a user who does not say)."""
        assert self.uni is not None
        options: dict[str, Any] = {}
        if token_budget is not None:
            options["token_budget"] = token_budget
        if limit is not None:
            options["limit"] = limit
        t0 = time.perf_counter()
        bundle = await self.uni.agent(AGENT).recall(
            question.text, **options, reference_ts=reference_ts, use_cache=False
        )
        text = bundle.render()
        latency = time.perf_counter() - t0
        items = []
        for it in bundle.items:
            covers: frozenset[str] = frozenset()
            if it.kind not in ("topic", "summary"):
                covers = frozenset(self.turn_of[m] for m in it.message_ids() if m in self.turn_of)
            items.append(
                RetrievedItem(
                    content=it.rendered or it.content,
                    covered_turn_ids=covers,
                    session_ids=frozenset(self.session_of[t] for t in covers),
                    kind=it.kind,
                )
            )
        extra = {
            "phase1_only": bundle.phase1_only,
            "phase2_only": bundle.phase2_only,
            "coverage": bundle.coverage,
            "degraded": list(bundle.degraded),
        }
        return RetrievalResult(
            items=items, text=text, latency_s=latency, reported_tokens=bundle.total_tokens, extra=extra
        )

    async def close(self) -> None:
        if self.uni is not None:
            await self.uni.close()
            self.uni = None
