"""Calibrated coverage: ``0.4·facet + 0.3·relevance + 0.3·diversity``, each input in [0, 1]
(the weights are ``RecallPhases.coverage_*_weight``).

Upstream fed RRF-scale scores (~0.01) into ``mean_score`` and counted tiers out of 5, so its
Phase-2 coverage could never pass its own 0.65 gate. Here:
- ``facet``: the share of the question's facets (entity references, else its top keywords) that
  some item's text actually mentions;
- ``relevance``: the mean cosine between the query and the items (a calibrated similarity);
- ``diversity``: distinct tiers among the items out of the tiers the phase can return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config import RecallPhases
from .intent import IntentProfile

_REFERENCE = RecallPhases()


def compute_coverage(
    cands: Sequence[Any], intent: IntentProfile, *, tiers_in_phase: int, weights: RecallPhases = _REFERENCE
) -> float:
    if not cands:
        return 0.0
    texts = [(c.node.search_text() or "").lower() for c in cands]
    facets = [f.lower() for f in intent.facets if f]
    facet = sum(1 for f in facets if any(f in t for t in texts)) / len(facets) if facets else 0.0
    relevance = sum(max(0.0, min(1.0, c.relevance)) for c in cands) / len(cands)
    diversity = min(1.0, len({c.node.tier for c in cands}) / max(1, tiers_in_phase))
    w = weights
    return (
        w.coverage_facet_weight * facet
        + w.coverage_relevance_weight * relevance
        + w.coverage_diversity_weight * diversity
    )
