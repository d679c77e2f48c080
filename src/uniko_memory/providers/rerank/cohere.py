"""Cohere rerank (v2 API) behind the :class:`Reranker` seam, with the shared retry policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uniko_memory.errors import ConfigError, ProviderError
from uniko_memory.providers._cohere import CohereCaller
from uniko_memory.providers.rerank.base import RerankResult, sort_results, validate_rerank_input
from uniko_memory.providers.retry import RetryPolicy

__all__ = ["CohereReranker"]

#: Cohere's recommended ceiling per request; longer lists are split (scores are absolute
#: relevance probabilities, so results from different requests can be merged).
MAX_DOCS_PER_CALL = 1000


class CohereReranker:
    """``Reranker`` over Cohere ``/v2/rerank``. Pass ``client=`` to inject a (Async)ClientV2."""

    def __init__(
        self,
        model: str = "rerank-v3.5",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        max_tokens_per_doc: int | None = None,
        batch_size: int = MAX_DOCS_PER_CALL,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_DOCS_PER_CALL:
            raise ConfigError(f"batch_size must be in 1..{MAX_DOCS_PER_CALL}")
        self.model = model
        self.model_id = f"cohere/{model}"
        self.batch_size = batch_size
        self.max_tokens_per_doc = max_tokens_per_doc
        self._caller = CohereCaller(
            api_key=api_key, base_url=base_url, client=client, retry=retry, purpose="Cohere rerank"
        )

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        docs = validate_rerank_input(query, documents, top_n)
        if not docs or top_n == 0:
            return []
        results: list[RerankResult] = []
        for start in range(0, len(docs), self.batch_size):
            chunk = docs[start : start + self.batch_size]
            kwargs: dict[str, Any] = {"model": self.model, "query": query, "documents": chunk}
            if top_n is not None and len(docs) <= self.batch_size:
                kwargs["top_n"] = min(top_n, len(chunk))
            if self.max_tokens_per_doc is not None:
                kwargs["max_tokens_per_doc"] = self.max_tokens_per_doc
            response = await self._caller.call("rerank", f"Cohere rerank ({self.model})", **kwargs)
            results.extend(_parse(response, start, len(chunk)))
        return sort_results(results, top_n)

    async def aclose(self) -> None:
        """Release the HTTP connections of a client built here (not of an injected one)."""
        await self._caller.aclose()

    def __repr__(self) -> str:
        return f"CohereReranker(model={self.model!r})"


def _parse(response: Any, offset: int, n: int) -> list[RerankResult]:
    out = []
    for item in getattr(response, "results", None) or []:
        index, score = getattr(item, "index", None), getattr(item, "relevance_score", None)
        if not isinstance(index, int) or not 0 <= index < n or not isinstance(score, int | float):
            raise ProviderError(f"Cohere rerank returned a malformed result: {item!r}")
        out.append(RerankResult(index=offset + index, score=float(score)))
    return out
