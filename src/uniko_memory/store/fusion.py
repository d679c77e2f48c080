"""The one fusion implementation, shared by every backend so ``alpha`` means the same everywhere.

``relative_score`` mirrors Weaviate's relativeScore hybrid fusion: each leg is min-max normalised
to [0, 1] over its own candidates, then ``alpha * vector + (1 - alpha) * keyword``; a candidate
missing from a leg gets 0 from it. ``rrf`` is reciprocal-rank fusion used by recall.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def min_max(scores: Mapping[K, float]) -> dict[K, float]:
    """Scale to [0, 1]; a leg whose scores are all equal maps every candidate to 1.0."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    span = hi - lo
    return {k: (v - lo) / span for k, v in scores.items()}


def relative_score(
    vector_scores: Mapping[K, float], keyword_scores: Mapping[K, float], alpha: float
) -> list[tuple[K, float]]:
    """Fused (key, score) pairs, best first; ties broken by key for determinism."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be within [0, 1]")
    v = min_max(vector_scores)
    b = min_max(keyword_scores)
    fused = {k: alpha * v.get(k, 0.0) + (1.0 - alpha) * b.get(k, 0.0) for k in set(v) | set(b)}
    return sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))


def rrf(
    ranked_lists: Sequence[Sequence[K]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion, ranks 1-based: ``sum_i w_i / (k + rank_i)``; best first."""
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    if weights is not None and len(weights) != len(ranked_lists):
        raise ValueError("one weight per ranked list")
    scores: dict[K, float] = {}
    for li, ranked in enumerate(ranked_lists):
        w = 1.0 if weights is None else weights[li]
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))
