"""The pool of one recall: every candidate with the ranked lists that found it, fused by RRF.

Lists are grouped into channel families (``family_of``): lists of one family are alternatives (a
node counts once, by its best rank), families add up, so correlated lists do not pile up. The sum
is ``store.fusion.rrf_scores`` (the one RRF), weighted by ``RecallFusion.channel_weights``, then
multiplied by the candidate's tier weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Node
from ..store.fusion import rrf_scores
from ..store.protocol import Hit
from .config import RecallConfig


@dataclass
class Candidate:
    node: Node
    channels: dict[str, tuple[int, float]] = field(default_factory=dict)
    fused: float = 0.0
    relevance: float = 0.0
    _chars: tuple[Node, int] | None = field(default=None, repr=False, compare=False)

    def text_chars(self) -> int:
        """Characters of the node's search text, kept for this node (the gates weigh the pool
        after each phase; a Fact's text is built each time it is asked for)."""
        held = self._chars
        if held is None or held[0] is not self.node:
            held = self._chars = (self.node, len(self.node.search_text() or ""))
        return held[1]


def family_of(channel: str) -> str:
    """The fusion family of a channel's list (its weight in ``RecallFusion.channel_weights``)."""
    name = channel.split(":", 1)[0]
    if name.endswith("_vec") and name.split("_")[0] in ("fact", "procedure", "topic"):
        return "phase1"
    if name.endswith("_vec"):
        return "vector"
    if name.endswith("_bm25"):
        return "bm25"
    if name == "chunk_messages":
        return name
    if name == "fact_slot":
        return "slots"
    if name == "message_prf":
        return "prf"
    if "chunks" in name:
        return "chunks"
    return name  # graph, temporal, neighbours


def by_fused(cands: list[Candidate]) -> list[Candidate]:
    """Best fused score first, ties by node id (deterministic)."""
    return sorted(cands, key=lambda c: (-c.fused, c.node.id))


@dataclass
class Pool:
    """Every candidate of this recall with the ranked lists that found it (ranks may tie)."""

    cands: dict[str, Candidate] = field(default_factory=dict)
    lists: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def add(self, channel: str, hits: list[Hit]) -> None:
        """A ranked list: each hit's rank is its position."""
        self.add_at(channel, hits, list(range(1, len(hits) + 1)))

    def add_at(self, channel: str, hits: list[Hit], ranks: list[int]) -> None:
        """A list whose hits carry given (possibly tied) ranks, e.g. the rank of what led to them."""
        if not hits:
            return
        self.lists[channel] = [(h.id, r) for h, r in zip(hits, ranks, strict=True)]
        for h, r in zip(hits, ranks, strict=True):
            c = self.cands.get(h.id)
            if c is None:
                c = self.cands[h.id] = Candidate(h.node)
            c.channels[channel] = (r, h.score)

    def add_ranked(self, channel: str, ranked: list[tuple[str, int]]) -> None:
        """A list with explicit (possibly tied) ranks over nodes already in the pool."""
        kept = [(nid, r) for nid, r in ranked if nid in self.cands]
        if kept:
            self.lists[channel] = kept

    def fuse(self, cfg: RecallConfig) -> list[Candidate]:
        """Σ over channel families of the family's best ``weight / (k + rank)``, times the tier weight."""
        f = cfg.fusion
        families = [family_of(ch) for ch in self.lists]
        weights = [f.channel_weights.get(fam, f.default_channel_weight) for fam in families]
        scores = rrf_scores(list(self.lists.values()), f.rrf_k, weights, families)
        for nid, c in self.cands.items():
            c.fused = scores.get(nid, 0.0) * f.tier_weights.get(c.node.tier.value, f.default_tier_weight)
        return by_fused(list(self.cands.values()))

    def sizes(self) -> dict[str, int]:
        """Each list's length (the trace's view of the pool)."""
        return {name: len(ids) for name, ids in self.lists.items()}
