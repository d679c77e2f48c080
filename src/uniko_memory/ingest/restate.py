"""Write-time near-duplicates (issue 21.5): an Observation that restates a stored one reinforces it.

A person says the same thing in many turns ("I love hiking", a week later "hiking is my thing, I
love it"); each turn used to add its own Observation, and recall then spent its budget on copies.
With ``IngestConfig.observation_restate_threshold`` set, P3 compares each new Observation with the
nearest stored ones of the agent (by vector) and with those written earlier in the same batch: one
of the same speaker, subject, visibility and stance (``nlp.polarity``: "no longer" is never a
restatement) whose vectors' cosine reaches the threshold is reinforced instead of copied.

Provenance stays truthful: the reinforced Observation keeps its words and its one source turn
(``message_id``, the OBSERVED_IN edge). The later turn is recorded by a RESTATED_IN edge and a
count (``restatements``), which recall never reads as a source, so no item claims to carry a turn
whose words it does not hold; the later turn itself stays in memory as its own Message.
Replaying a batch (recovery, a dead letter) counts a restatement once: the edge is its identity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..config import IngestConfig
from ..model import Edge, EdgeType, Observation, Tier
from ..nlp.ner import canonical_key
from ..nlp.polarity import same_stance
from ..store.protocol import Store, UnitOfWork


@dataclass(frozen=True)
class RestatePolicy:
    """``IngestConfig.observation_restate_*`` (see there)."""

    threshold: float
    confidence_step: float
    confidence_max: float
    candidates: int

    @classmethod
    def of(cls, cfg: IngestConfig) -> RestatePolicy | None:
        if cfg.observation_restate_threshold is None:
            return None
        return cls(
            cfg.observation_restate_threshold,
            cfg.observation_restate_confidence_step,
            cfg.observation_restate_confidence_max,
            cfg.observation_restate_candidates,
        )


#: The RESTATED_IN edge's property: the confidence that restatement added.
RESTATE_GAIN = "confidence_gain"


async def take_back(u: UnitOfWork, edges: Sequence[Edge]) -> None:
    """Forgetting turns that restated Observations: each loses that count and confidence gain,
    and the edge goes (the forget cascade calls this in its unit; a replay finds no edge)."""
    for e in edges:
        node = await u.get(e.src)
        if isinstance(node, Observation) and not node.redacted:
            gain = float(e.props.get(RESTATE_GAIN, 0.0))
            update = {
                "restatements": max(0, node.restatements - 1),
                "confidence": max(0.0, node.confidence - gain),
            }
            u.put(node.model_copy(update=update))
        u.delete_edge(EdgeType.RESTATED_IN, e.src, e.dst)


def restates(new: Observation, old: Observation, cosine: float, threshold: float) -> bool:
    """Whether ``new`` says again what ``old`` says: same speaker, subject and visibility, the
    same stance, a different turn, vectors at least ``threshold`` alike."""
    return (
        cosine >= threshold
        and not old.redacted
        and old.message_id != new.message_id
        and old.speaker_id == new.speaker_id
        and old.visibility == new.visibility
        and new.subject is not None
        and old.subject is not None
        and canonical_key(new.subject) == canonical_key(old.subject)
        and same_stance(new.content, old.content)
    )


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


@dataclass
class Restatements:
    """One P3 batch's look-up: the stored candidates are read before the write unit (searches
    are not part of it); each decision is taken inside it, on the node as it is then."""

    policy: RestatePolicy
    vectors: list[np.ndarray]
    #: Per new Observation (in draft order): ids of the nearest stored Observations.
    nearest: list[list[str]]
    stored_vectors: dict[str, np.ndarray]
    #: (Observation, Message) pairs already recorded: a replay does not count them again.
    recorded: set[tuple[str, str]]
    #: Observations written earlier in this batch, with their vectors.
    batch: list[tuple[Observation, np.ndarray]] = field(default_factory=list)
    #: Observations reinforced in this batch, as last written (a unit need not read its own writes).
    written: dict[str, Observation] = field(default_factory=dict)

    @classmethod
    async def prepare(
        cls, store: Store, embedder: object, agent: str, texts: Sequence[str], policy: RestatePolicy
    ) -> Restatements:
        raw = await embedder.embed_documents(list(texts)) if texts else []  # type: ignore[attr-defined]
        vectors = [_unit(np.asarray(v, dtype=np.float32)) for v in raw]
        nearest = []
        for v in vectors:
            hits = await store.vector_search(agent, Tier.OBSERVATION, v, k=policy.candidates)
            nearest.append([h.id for h in hits])
        ids = sorted({i for ids in nearest for i in ids})
        stored = {
            k: _unit(np.asarray(v, dtype=np.float32))
            for k, v in (await store.get_vectors(agent, ids)).items()
        }
        recorded = (
            {(s, d) for s, _, d in await store.neighbor_keys(agent, ids, [EdgeType.RESTATED_IN])}
            if ids
            else set()
        )
        return cls(policy, vectors, nearest, stored, recorded)

    async def absorb(self, u: UnitOfWork, index: int, new: Observation) -> bool:
        """Reinforce the Observation ``new`` (the ``index``-th draft) restates, if any, and say so;
        otherwise remember ``new`` for the rest of the batch (the caller writes it)."""
        vec = self.vectors[index]
        best: tuple[float, Observation, bool] | None = None  # (cosine, old, stored)
        for oid in self.nearest[index]:
            old_vec = self.stored_vectors.get(oid)
            old = await u.get(oid) if old_vec is not None else None
            if isinstance(old, Observation) and old_vec is not None:
                cos = float(vec @ old_vec)
                if restates(new, old, cos, self.policy.threshold) and (best is None or cos > best[0]):
                    best = (cos, old, True)
        for old, old_vec in self.batch:
            cos = float(vec @ old_vec)
            if restates(new, old, cos, self.policy.threshold) and (best is None or cos > best[0]):
                best = (cos, old, False)
        if best is None:
            self.batch.append((new, vec))
            return False
        old = best[1]
        assert new.message_id is not None  # P3 Observations always come from a turn
        if (old.id, new.message_id) in self.recorded:
            return True  # a replay: counted already
        self.recorded.add((old.id, new.message_id))
        current = self.written.get(old.id) or await u.get(old.id)
        base = current if isinstance(current, Observation) else old
        raised = max(
            base.confidence,
            min(self.policy.confidence_max, base.confidence + self.policy.confidence_step),
        )
        bumped = base.model_copy(update={"restatements": base.restatements + 1, "confidence": raised})
        u.put(bumped)
        self.written[old.id] = bumped
        # The gain rides on the edge: forgetting the later turn takes back exactly what it gave.
        gain = {RESTATE_GAIN: raised - base.confidence}
        u.put_edge(Edge(type=EdgeType.RESTATED_IN, src=old.id, dst=new.message_id, props=gain))
        self.batch = [(bumped if o.id == old.id else o, v) for o, v in self.batch]
        return True
