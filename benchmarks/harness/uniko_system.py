"""uniko-memory as a ``MemorySystem`` for the harness: ingest through the facade, recall per budget.

Per conversation: a fresh in-memory store; each session's turns committed as one unit (as a user
importing a transcript would); post-ingest flushed; every session finalised; a consolidation
cycle run. Questions go through ``agent.recall`` with ``reference_ts`` = the question time.
An item covers exactly the turns its provenance reaches (Message, transcript chunk members,
the source Message of an Observation / Fact); Topics and Summaries cover nothing.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import message_id
from uniko_memory.recall import RecallConfig

from .format import Conversation, Question
from .metrics import RetrievalResult, RetrievedItem

AGENT = "bench"
#: Item-limit metrics are asked with a budget large enough never to bind.
UNBOUNDED_TOKENS = 1_000_000


class UnikoSystem:
    """The shipped defaults, offline: local embedder, spaCy, no reranker, no LLM."""

    recall_per_budget = True

    def __init__(self, config: RecallConfig | None = None, **overrides: Any) -> None:
        self._base = config
        self._overrides = overrides
        self.uni: Uniko | None = None
        self.turn_of: dict[str, str] = {}
        self.session_of: dict[str, str] = {}
        self.setup_stats: dict[str, Any] = {}

    async def setup(self, conversation: Conversation) -> None:
        t0 = time.perf_counter()
        self.uni = await Uniko.in_memory()
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
        await agent.flush()
        for session in conversation.sessions:
            await agent.session(session.id).finalize()
        await agent.consolidate()
        self.setup_stats = {"setup_s": time.perf_counter() - t0, "nodes": await agent.stats()}

    def _config(self, limit: int | None, token_budget: int | None, reference_ts: datetime) -> RecallConfig:
        assert self.uni is not None
        base = self._base or self.uni.recall_config
        data = {
            **base.model_dump(),
            **self._overrides,
            "limit": limit or 200,
            "token_budget": token_budget or UNBOUNDED_TOKENS,
            "reference_ts": reference_ts,
            "use_cache": False,
        }
        return RecallConfig.build(data)

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        assert self.uni is not None
        t0 = time.perf_counter()
        bundle = await self.uni.agent(AGENT).recall(
            question.text, self._config(limit, token_budget, reference_ts)
        )
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
                    tokens=it.tokens,
                )
            )
        extra = {
            "phase1_only": bundle.phase1_only,
            "phase2_only": bundle.phase2_only,
            "coverage": bundle.coverage,
        }
        return RetrievalResult(items=items, latency_s=latency, extra=extra)

    async def close(self) -> None:
        if self.uni is not None:
            await self.uni.close()
            self.uni = None
