"""A tiny knowledge base for the consolidation and cortex tests: observations written directly.

``SynonymEmbedder`` is a bag of words after mapping synonyms to one word, so "Google" and
"Google LLC" are the same object (cosine 1) and "Google" vs "Northwind" are orthogonal — the
clustering threshold behaves exactly as the tests say.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from uniko_memory.config import UnikoConfig
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import (
    Edge,
    EdgeType,
    Entity,
    Fact,
    Message,
    Observation,
    Participant,
    Tier,
    entity_id,
    make_id,
    participant_id,
)
from uniko_memory.model.nodes import LIST_SOURCE_RULE
from uniko_memory.store.filters import Eq

AGENT = "a"
T0 = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
SYNONYMS = {"llc": "", "inc": "", "the": "", "company": ""}


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


class SynonymEmbedder:
    model_id = "tests/synonym-bag-of-words"
    dim = 256

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            w = SYNONYMS.get(w, w)
            if w:
                v[zlib.crc32(w.encode()) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else np.full(self.dim, 1 / np.sqrt(self.dim), np.float32)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vec(t) for t in texts])

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed_documents(texts)


async def new_kb(**config: Any) -> KnowledgeBase:
    return await KnowledgeBase.in_memory(UnikoConfig.build(config), embedder=SynonymEmbedder())


class Writer:
    """Writes messages with one observation each, ABOUT the subject's entity."""

    def __init__(self, kb: KnowledgeBase, agent: str = AGENT) -> None:
        self.kb = kb
        self.agent = agent
        self.n = 0

    async def entity(self, name: str, etype: str = "person") -> str:
        eid = entity_id(self.agent, name, etype)
        async with self.kb.store.unit(self.agent) as u:
            if await u.get(eid) is None:
                u.put(
                    Entity(
                        id=eid, agent=self.agent, name=name, entity_type=etype, first_seen=T0, last_seen=T0
                    )
                )
        return eid

    async def say(
        self, subject: str, predicate: str, obj: str, at: datetime, *, about: Sequence[str] = (), **extra: Any
    ) -> Observation:
        self.n += 1
        pid = participant_id(self.agent, "speaker")
        mid = make_id("msg", self.agent, f"m{self.n}")
        content = f"{subject} {predicate.replace('_', ' ')} {obj}"
        msg = Message(
            id=mid,
            agent=self.agent,
            external_id=f"m{self.n}",
            session_id=make_id("ses", self.agent, "s"),
            sender_id=pid,
            sender_name="Speaker",
            content=content,
            timestamp=at,
        )
        obs = Observation(
            id=make_id("obs", self.agent, mid, "0"),
            agent=self.agent,
            content=content,
            subject=subject,
            predicate=predicate,
            object=obj,
            observed_at=at,
            message_id=mid,
            speaker_id=pid,
            **extra,
        )
        emb = self.kb.embedder
        vec = (await emb.embed_documents([content]))[0]
        async with self.kb.store.unit(self.agent) as u:
            if await u.get(pid) is None:
                u.put(Participant(id=pid, agent=self.agent, external_id="speaker", name="Speaker"))
            u.put(msg)
            u.put(obs, vec)
            u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=mid))
            for target in about:
                u.put_edge(Edge(type=EdgeType.ABOUT, src=obs.id, dst=target))
        return obs


async def facts(kb: KnowledgeBase, agent: str = AGENT, **eq: Any) -> list[Fact]:
    """The voted Facts (compiled lists, ``test_lists``, are Facts of another kind)."""
    flt = None
    for k, v in eq.items():
        flt = Eq(k, v) if flt is None else flt & Eq(k, v)
    found = await kb.store.find(
        agent, Tier.FACT, flt, limit=10_000, order_by="valid_from", include_redacted=True
    )
    return [f for f in found if isinstance(f, Fact) and f.source_rule != LIST_SOURCE_RULE]


async def edges(kb: KnowledgeBase, ids: Sequence[str], typ: EdgeType, direction: str = "out") -> list[Edge]:
    from uniko_memory.model import Direction

    return await kb.store.neighbors(AGENT, list(ids), [typ], Direction(direction))
