"""The reranker seam and the "never fail recall because of a reranker" helper.

Reranking is an optional refinement of an already good fused order, so a broken, slow or
misbehaving reranker must degrade to that order instead of raising to the user.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from uniko_memory.errors import ValidationError

__all__ = ["RerankResult", "Reranker", "rerank_with_fallback", "sort_results", "validate_rerank_input"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RerankResult:
    """``index`` into the documents passed in; higher ``score`` is more relevant."""

    index: int
    score: float


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs; results are sorted best first, ``top_n`` kept."""

    model_id: str

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]: ...


def validate_rerank_input(query: str, documents: Sequence[str], top_n: int | None) -> list[str]:
    """Shared argument checks; returns the documents as a list."""
    if not isinstance(query, str):
        raise ValidationError(f"query is {type(query).__name__}, expected str")
    if isinstance(documents, str | bytes):
        raise ValidationError("documents must be a sequence of strings, got a single string")
    docs = list(documents)
    for i, doc in enumerate(docs):
        if not isinstance(doc, str):
            raise ValidationError(f"documents[{i}] is {type(doc).__name__}, expected str")
    if top_n is not None and top_n < 0:
        raise ValidationError("top_n must be >= 0")
    return docs


def sort_results(results: Sequence[RerankResult], top_n: int | None) -> list[RerankResult]:
    """Best first; ties keep the original (fused) order."""
    ranked = sorted(results, key=lambda r: (-r.score, r.index))
    return ranked if top_n is None else ranked[:top_n]


async def rerank_with_fallback(
    reranker: Reranker | None,
    query: str,
    documents: Sequence[str],
    top_n: int | None = None,
    *,
    time_limit: float | None = None,
) -> list[RerankResult] | None:
    """Rerank, or return ``None`` (caller keeps its fused order) on any failure or ``time_limit``.

    Also returns ``None`` when the reranker's answer is unusable (index out of range,
    duplicates, non-finite scores), so a buggy backend cannot corrupt the result list.
    Cancellation is not swallowed.
    """
    if reranker is None:
        return None
    docs = list(documents)
    if not docs:
        return []
    try:
        coro = reranker.rerank(query, docs, top_n)
        results = await (asyncio.wait_for(coro, time_limit) if time_limit is not None else coro)
    except Exception as exc:
        name = getattr(reranker, "model_id", type(reranker).__name__)
        log.warning("reranker %s failed (%s: %s); keeping the fused order", name, type(exc).__name__, exc)
        return None
    if not _usable(results, len(docs)):
        log.warning("reranker returned an invalid result list; keeping the fused order")
        return None
    return list(results) if top_n is None else list(results)[:top_n]


def _usable(results: object, n_docs: int) -> bool:
    """Indices unique and in range, scores finite numbers."""
    if not isinstance(results, list):
        return False
    seen: set[int] = set()
    for r in results:
        if not isinstance(r, RerankResult) or not 0 <= r.index < n_docs or r.index in seen:
            return False
        if not isinstance(r.score, int | float) or not math.isfinite(r.score):
            return False
        seen.add(r.index)
    return True
