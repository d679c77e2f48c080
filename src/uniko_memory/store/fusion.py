"""The one fusion implementation, shared by every backend so ``alpha`` means the same everywhere.

``relative_score`` mirrors Weaviate's relativeScore hybrid fusion: each leg is min-max normalised
to [0, 1] over its own candidates, then ``alpha * vector + (1 - alpha) * keyword``; a candidate
missing from a leg gets 0 from it. ``rrf_scores`` is the one reciprocal-rank fusion: recall's
pool (``recall.fusion``, channel families) and the benchmark harness's hybrid baseline (``rrf``)
both call it, so RRF is computed, summed and tie-broken the same way everywhere.
"""

from __future__ import annotations

from collections import defaultdict
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


def rrf_scores(
    ranked_lists: Sequence[Sequence[tuple[K, int]]],
    k: int = 60,
    weights: Sequence[float] | None = None,
    families: Sequence[Hashable] | None = None,
) -> dict[K, float]:
    """Weighted reciprocal-rank fusion over lists of ``(key, rank)``, ranks 1-based (ties allowed).

    A key scores, summed over families, its best ``w / (k + rank)`` among the family's lists; by
    default every list is its own family. Lists of one family are alternatives (correlated lists
    must not pile up: recall's vector searches of several tiers are one family). A key listed
    twice in one family counts once, by its best rank; a list of weight <= 0 adds nothing. Terms
    are added in list order, so the same lists give bit-identical scores everywhere.
    """
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    if weights is not None and len(weights) != len(ranked_lists):
        raise ValueError("one weight per ranked list")
    if families is not None and len(families) != len(ranked_lists):
        raise ValueError("one family per ranked list")
    best: dict[tuple[K, Hashable], float] = {}
    for li, ranked in enumerate(ranked_lists):
        w = 1.0 if weights is None else weights[li]
        family = li if families is None else families[li]
        for key, rank in ranked:
            v = w / (k + rank)
            if v > best.get((key, family), 0.0):
                best[(key, family)] = v
    scores: dict[K, float] = defaultdict(float)
    for (key, _), v in best.items():
        scores[key] += v
    return dict(scores)


def ranks(keys: Sequence[K], depth: int | None = None) -> list[tuple[K, int]]:
    """``keys`` (best first) as ``(key, rank)`` pairs, 1-based, cut to the first ``depth``."""
    return [(key, rank) for rank, key in enumerate(keys[:depth] if depth is not None else keys, start=1)]


def rrf(
    ranked_lists: Sequence[Sequence[K]],
    k: int = 60,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> list[tuple[K, float]]:
    """``rrf_scores`` of plain best-first lists (each cut to ``depth``): (key, score), best first,
    ties broken by key (keys must be orderable)."""
    scores = rrf_scores([ranks(r, depth) for r in ranked_lists], k, weights)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
