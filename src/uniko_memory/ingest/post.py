"""Post-ingest, off the hot path: P3 rule-based observations and P7a embeddings, in batches.

Both steps re-check their source under the write unit: a turn deleted or redacted while its
post-ingest work was queued never gets observations or an embedding (nothing resurfaces).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Edge, EdgeType, Message, Observation, Tier, make_id
from ..store.protocol import Store
from .atomic import PostIngestItem


@dataclass
class PostIngestReport:
    messages: int = 0
    observations: int = 0
    embedded: int = 0


def observation_id(agent: str, message_node_id: str, index: int) -> str:
    return make_id("obs", agent, message_node_id, str(index))


class PostIngest:
    """P3 + P7a for batches of committed messages of one agent."""

    def __init__(self, store: Store, nlp: Any, embedder: Any, extractor: Any = None) -> None:
        self.store = store
        self.nlp = nlp
        self.embedder = embedder
        self.extractor = extractor  # an async ObservationExtractor; None = the rule templates
        self._pronouns: dict[tuple[str, str], Any] = {}

    async def run(self, items: Sequence[PostIngestItem]) -> PostIngestReport:
        report = PostIngestReport(messages=len(items))
        by_agent: dict[str, list[PostIngestItem]] = defaultdict(list)
        for it in items:
            by_agent[it.agent].append(it)
        for agent, group in by_agent.items():
            observations = await self.observe(agent, group)
            report.observations += len(observations)
            report.embedded += await self.embed(agent, group, observations)
        return report

    # ------------------------------------------------------------------ P3
    async def observe(self, agent: str, items: Sequence[PostIngestItem]) -> list[Observation]:
        drafts = await self._drafts(items)
        out: list[Observation] = []
        async with self.store.unit(agent) as u:
            for it, found in zip(items, drafts, strict=True):
                current = await u.get(it.message.id)
                if not isinstance(current, Message) or current.redacted:
                    continue
                for i, d in enumerate(found):
                    obs = Observation(
                        id=observation_id(agent, it.message.id, i),
                        agent=agent,
                        content=d.content,
                        subject=d.subject,
                        predicate=d.predicate,
                        object=d.object,
                        temporal_phrase=d.temporal_phrase,
                        anchor_lo=d.anchor.lo if d.anchor else None,
                        anchor_hi=d.anchor.hi if d.anchor else None,
                        anchor_granularity=d.anchor.granularity if d.anchor else None,
                        observed_at=it.message.timestamp,
                        confidence=d.confidence,
                        message_id=it.message.id,
                        session_id=it.message.session_id,
                        speaker_id=it.message.sender_id,
                        extractor="rules" if self.extractor is None else "custom",
                        visibility=it.message.visibility,
                    )
                    u.put(obs)
                    out.append(obs)
                    u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=it.message.id))
                    for target in self._about_targets(it, d.entities, d.subject):
                        u.put_edge(Edge(type=EdgeType.ABOUT, src=obs.id, dst=target))
        return out

    async def _drafts(self, items: Sequence[PostIngestItem]) -> list[list[Any]]:
        from ..nlp.observations import PronounState, extract_observations

        if self.extractor is not None:
            results = []
            for it in items:
                state = self._state(it, PronounState)
                results.append(
                    await self.extractor.extract(
                        it.message.content, it.speaker, it.addressee, it.message.timestamp, state
                    )
                )
            return results

        def run() -> list[list[Any]]:
            self._complete_analyses(items)
            return [
                extract_observations(
                    it.analysis,
                    speaker=it.speaker,
                    addressee=it.addressee,
                    timestamp=it.message.timestamp,
                    state=self._state(it, PronounState),
                )
                for it in items
            ]

        return await asyncio.to_thread(run)

    def _complete_analyses(self, items: Sequence[PostIngestItem]) -> None:
        """Give every item a full analysis (with the dependency parse the rules need), in batches.

        P2 keeps a shallow analysis (``NlpPipeline.analyze_shallow``): it is completed here on its
        kept ``Doc``. Items without one (recovery after a restart) are analysed from scratch.
        """
        missing = [it for it in items if it.analysis is None]
        if missing:
            for it, a in zip(missing, self.nlp.analyze([it.message.content for it in missing]), strict=True):
                it.analysis = a
        shallow = [it for it in items if getattr(it.analysis, "shallow", False)]
        if not shallow:
            return
        complete = getattr(self.nlp, "complete", None)
        if complete is not None:
            done = complete([it.analysis for it in shallow])
        else:  # an NLP backend without two stages: analyse again
            done = self.nlp.analyze([it.message.content for it in shallow])
        for it, a in zip(shallow, done, strict=True):
            it.analysis = a

    def _state(self, it: PostIngestItem, factory: Any) -> Any:
        key = (it.agent, it.message.session_id)
        state = self._pronouns.get(key)
        if state is None:
            state = self._pronouns[key] = factory()
        return state

    def forget_session(self, agent: str, session_node_id: str) -> None:
        self._pronouns.pop((agent, session_node_id), None)

    @staticmethod
    def _about_targets(it: PostIngestItem, names: Sequence[str], subject: str | None) -> list[str]:
        from ..nlp.ner import canonical_key

        targets: dict[str, None] = {}
        for name in [*(names or []), *([subject] if subject else [])]:
            key = canonical_key(name)
            for table in (it.participant_ids, it.entity_ids):
                if key in table:
                    targets.setdefault(table[key], None)
        return list(targets)

    # ------------------------------------------------------------------ P7a
    async def embed(
        self, agent: str, items: Sequence[PostIngestItem], observations: Sequence[Observation]
    ) -> int:
        if self.embedder is None:
            return 0
        wanted: list[tuple[str, Tier]] = [(it.message.id, Tier.MESSAGE) for it in items]
        wanted += [(o.id, Tier.OBSERVATION) for o in observations]
        wanted += [(cid, Tier.CHUNK) for it in items for cid in it.chunk_ids]
        entity_ids = sorted({eid for it in items for eid in it.entity_ids.values()})
        have = await self.store.get_vectors(agent, entity_ids)
        wanted += [(eid, Tier.ENTITY) for eid in entity_ids if eid not in have]
        nodes = await self.store.get_many(agent, [i for i, _ in wanted])
        todo = [(i, t) for i, t in wanted if i in nodes and nodes[i].search_text()]
        if todo:
            texts = [nodes[i].search_text() or "" for i, _ in todo]
            vectors = await self.embedder.embed_documents(texts)
        else:
            vectors = np.zeros((0, 0), dtype=np.float32)
        async with self.store.unit(agent) as u:
            for (nid, tier), vec in zip(todo, vectors, strict=True):
                u.set_vector(nid, tier, vec)  # skipped by the store if the node is gone or redacted
            for it in items:
                current = await u.get(it.message.id)
                if isinstance(current, Message) and not current.redacted and not current.post_ingest_done:
                    u.put(current.model_copy(update={"post_ingest_done": True}))
        return len(todo)
