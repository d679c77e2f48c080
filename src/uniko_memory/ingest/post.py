"""Post-ingest, off the hot path: P3 rule-based observations and P7a embeddings, in batches.

Both steps re-check their source under the write unit: a turn deleted or redacted while its
post-ingest work was queued never gets observations or an embedding (nothing resurfaces).

A long turn (one with passages: its ``message`` chunks) is worked on per passage: observations are
drawn from each passage's analysis in order (one pronoun state across them), and only the
passages are embedded; the Message's vector is the normalised mean of its passages' vectors, so
no model ever reads the whole text and the cost stays linear in its length. A document turn
(``document.py``) is read only in its first passages and keeps at most
``IngestConfig.document_turn_statements`` Observations; every passage of it is still embedded.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Chunk, Edge, EdgeType, Message, Observation, Tier, make_id
from ..store.protocol import Store
from .atomic import PostIngestItem
from .chunking import passage_spans
from .document import DocumentTurns
from .restate import Restatements, RestatePolicy


@dataclass
class PostIngestReport:
    messages: int = 0
    observations: int = 0
    embedded: int = 0


def observation_id(agent: str, message_node_id: str, index: int) -> str:
    return make_id("obs", agent, message_node_id, str(index))


class PostIngest:
    """P3 + P7a for batches of committed messages of one agent."""

    def __init__(
        self,
        store: Store,
        nlp: Any,
        embedder: Any,
        extractor: Any = None,
        *,
        filler_phrases: Any = (),
        restate: RestatePolicy | None = None,
        documents: DocumentTurns | None = None,
    ) -> None:
        from ..nlp.observation.filler import Filler

        self.store = store
        self.nlp = nlp
        self.embedder = embedder
        self.extractor = extractor  # an async ObservationExtractor; None = the rule templates
        self.filler = Filler(tuple(filler_phrases))  # the rule templates' write gate
        self._pronouns: dict[tuple[str, str], Any] = {}
        #: Write-time near-duplicates (``ingest.restate``); None: off (needs an embedder).
        self.restate = restate
        #: How much of a document turn P3 reads and keeps (``IngestConfig.document_turn_*``).
        self.documents = documents or DocumentTurns()

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
        seen: Restatements | None = None
        if self.restate is not None and self.embedder is not None:
            texts = [d.content for found in drafts for d in found]
            seen = await Restatements.prepare(self.store, self.embedder, agent, texts, self.restate)
        index = -1  # the draft's position in ``texts``
        async with self.store.unit(agent) as u:
            for it, found in zip(items, drafts, strict=True):
                current = await u.get(it.message.id)
                if not isinstance(current, Message) or current.redacted:
                    index += len(found)
                    continue
                for i, d in enumerate(found):
                    index += 1
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
                    if seen is not None and await seen.absorb(u, index, obs):
                        continue  # a restatement: the stored one was reinforced, no copy
                    # With restatements on, its vector is written now: the next batch's look-up
                    # finds it even before P7a has run (P7a writes the same vector again).
                    u.put(obs, seen.vectors[index] if seen is not None else None)
                    out.append(obs)
                    u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=it.message.id))
                    for target in self._about_targets(it, d.entities, d.subject):
                        u.put_edge(Edge(type=EdgeType.ABOUT, src=obs.id, dst=target))
        return out

    async def _drafts(self, items: Sequence[PostIngestItem]) -> list[list[Any]]:
        from ..nlp.observations import PronounState, extract_observations

        await self._passages(items)
        if self.extractor is not None:
            results = []
            for it in items:
                state = self._state(it, PronounState)
                found: list[Any] = []
                for text in _unit_texts(it):
                    if self._enough(it, found):
                        break
                    found.extend(
                        await self.extractor.extract(
                            text, it.speaker, it.addressee, it.message.timestamp, state
                        )
                    )
                results.append(self.documents.kept(it.message.content, found))
            return results

        def run() -> list[list[Any]]:
            self._complete_analyses(items)
            out = []
            for it in items:
                state = self._state(it, PronounState)
                found: list[Any] = []
                for analysis in it.passage_analyses if it.passage_spans else [it.analysis]:
                    if self._enough(it, found):
                        break
                    found.extend(
                        extract_observations(
                            analysis,
                            speaker=it.speaker,
                            addressee=it.addressee,
                            timestamp=it.message.timestamp,
                            state=state,
                            filler=self.filler,
                        )
                    )
                out.append(self.documents.kept(it.message.content, found))
            return out

        return await asyncio.to_thread(run)

    def _enough(self, it: PostIngestItem, found: Sequence[Any]) -> bool:
        """A document turn that has its statements reads no further passage."""
        return self.documents.is_document(it.message.content) and len(found) >= self.documents.statements

    async def _passages(self, items: Sequence[PostIngestItem]) -> None:
        """Passage spans for long turns rebuilt from the store (recovery, dead-letter retries):
        an item with chunks but no spans gets them from its stored ``message`` chunks (a document
        turn's first ones only, as P2 gave them)."""
        todo = [it for it in items if it.chunk_ids and not it.passage_spans]
        if not todo:
            return
        agent = todo[0].agent
        nodes = await self.store.get_many(agent, [cid for it in todo for cid in it.chunk_ids])
        for it in todo:
            chunks = [
                n
                for cid in it.chunk_ids
                if isinstance(n := nodes.get(cid), Chunk) and n.chunk_type == "message" and not n.redacted
            ]
            it.passage_spans = self.documents.read_spans(it.message.content, passage_spans(chunks))
            it.passage_analyses = []

    def _complete_analyses(self, items: Sequence[PostIngestItem]) -> None:
        """Give every item a full analysis (with the dependency parse the rules need), in batches;
        a long turn one per passage.

        P2 keeps shallow analyses (``NlpPipeline.analyze_shallow``): they are completed here on
        their kept ``Doc``s. Items without them (recovery after a restart) are analysed afresh.
        """
        units: list[tuple[PostIngestItem, int]] = []  # (item, passage index; -1: the whole turn)
        for it in items:
            if it.passage_spans:
                if len(it.passage_analyses) != len(it.passage_spans):
                    it.passage_analyses = [None] * len(it.passage_spans)
                units.extend((it, j) for j in range(len(it.passage_spans)))
            else:
                units.append((it, -1))
        missing = [u for u in units if _unit_analysis(*u) is None]
        if missing:
            fresh = self.nlp.analyze([_unit_text(*u) for u in missing])
            for u, a in zip(missing, fresh, strict=True):
                _set_unit_analysis(*u, a)
        shallow = [u for u in units if getattr(_unit_analysis(*u), "shallow", False)]
        if not shallow:
            return
        complete = getattr(self.nlp, "complete", None)
        if complete is not None:
            done = complete([_unit_analysis(*u) for u in shallow])
        else:  # an NLP backend without two stages: analyse again
            done = self.nlp.analyze([_unit_text(*u) for u in shallow])
        for u, a in zip(shallow, done, strict=True):
            _set_unit_analysis(*u, a)

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
        # A long turn's own vector is its passages' mean (below): its text is never embedded whole.
        wanted: list[tuple[str, Tier]] = [(it.message.id, Tier.MESSAGE) for it in items if not it.chunk_ids]
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
        by_id = {nid: vec for (nid, _), vec in zip(todo, vectors, strict=True)}
        means = {}
        for it in items:
            passages = [by_id[cid] for cid in it.chunk_ids if cid in by_id]
            if passages:
                mean = np.mean(np.stack(passages), axis=0)
                norm = float(np.linalg.norm(mean))
                if norm > 1e-12:
                    means[it.message.id] = (mean / norm).astype(np.float32)
        async with self.store.unit(agent) as u:
            for (nid, tier), vec in zip(todo, vectors, strict=True):
                u.set_vector(nid, tier, vec)  # skipped by the store if the node is gone or redacted
            for nid, vec in means.items():
                u.set_vector(nid, Tier.MESSAGE, vec)
            for it in items:
                current = await u.get(it.message.id)
                if isinstance(current, Message) and not current.redacted and not current.post_ingest_done:
                    u.put(current.model_copy(update={"post_ingest_done": True}))
        return len(todo) + len(means)


def _unit_texts(it: PostIngestItem) -> list[str]:
    """The texts a turn is worked on in: its passages, or its whole content."""
    if not it.passage_spans:
        return [it.message.content]
    return [it.message.content[a:b] for a, b in it.passage_spans]


def _unit_text(it: PostIngestItem, j: int) -> str:
    if j < 0:
        return it.message.content
    a, b = it.passage_spans[j]
    return it.message.content[a:b]


def _unit_analysis(it: PostIngestItem, j: int) -> Any:
    return it.analysis if j < 0 else it.passage_analyses[j]


def _set_unit_analysis(it: PostIngestItem, j: int, analysis: Any) -> None:
    if j < 0:
        it.analysis = analysis
    else:
        it.passage_analyses[j] = analysis
