"""Cohere embeddings (v2 API) behind the :class:`Embedder` seam.

Cohere models are asymmetric: documents are sent with ``input_type="search_document"`` and
queries with ``"search_query"``. Requests are split at the API limit of 96 texts per call and
each call runs under the shared retry policy (transient errors only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from uniko_memory.errors import ConfigError, ProviderError
from uniko_memory.providers._cohere import CohereCaller
from uniko_memory.providers.embed.base import finalize_vectors, validate_query, validate_texts
from uniko_memory.providers.retry import RetryPolicy

__all__ = ["CohereEmbedder"]

MAX_TEXTS_PER_CALL = 96

#: Native widths; embed-v4 models also accept ``output_dimension`` (Matryoshka truncation).
_KNOWN_DIMS = {
    "embed-v4.0": 1536,
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
}
_V4_DIMS = (256, 512, 1024, 1536)


class CohereEmbedder:
    """``Embedder`` over Cohere ``/v2/embed``. Pass ``client=`` to inject a (Async)ClientV2."""

    def __init__(
        self,
        model: str = "embed-v4.0",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dim: int | None = None,
        client: Any = None,
        batch_size: int = MAX_TEXTS_PER_CALL,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self._output_dimension: int | None = None
        native = _KNOWN_DIMS.get(model)
        if model.startswith("embed-v4"):
            chosen = dim or native or 1536
            if chosen not in _V4_DIMS:
                raise ConfigError(f"{model} supports dim in {_V4_DIMS}, got {dim}")
            self._output_dimension = chosen
            self.dim = chosen
        elif native is not None:
            if dim is not None and dim != native:
                raise ConfigError(f"{model} produces {native}-d vectors; dim={dim} is not supported")
            self.dim = native
        elif dim is None:
            raise ConfigError(f"unknown Cohere model {model!r}: pass dim= explicitly")
        else:
            self.dim = dim
        if not 1 <= batch_size <= MAX_TEXTS_PER_CALL:
            raise ConfigError(f"batch_size must be in 1..{MAX_TEXTS_PER_CALL}")
        self.batch_size = batch_size
        self.model_id = f"cohere/{model}:{self.dim}"
        self._caller = CohereCaller(
            api_key=api_key, base_url=base_url, client=client, retry=retry, purpose="Cohere embeddings"
        )

    async def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            kwargs: dict[str, Any] = {
                "model": self.model,
                "texts": chunk,
                "input_type": input_type,
                "embedding_types": ["float"],
            }
            if self._output_dimension is not None:
                kwargs["output_dimension"] = self._output_dimension
            response = await self._caller.call("embed", f"Cohere embed ({self.model})", **kwargs)
            parts.append(finalize_vectors(_float_embeddings(response), len(chunk), self.dim, "Cohere embed"))
        return np.concatenate(parts, axis=0)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(validate_texts(texts), "search_document")

    async def embed_query(self, text: str) -> np.ndarray:
        return (await self._embed([validate_query(text)], "search_query"))[0]

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._embed(validate_texts(texts), "search_query")

    async def aclose(self) -> None:
        """Release the HTTP connections of a client built here (not of an injected one)."""
        await self._caller.aclose()

    def __repr__(self) -> str:
        return f"CohereEmbedder(model={self.model!r}, dim={self.dim})"


def _float_embeddings(response: Any) -> Any:
    embeddings = getattr(response, "embeddings", None)
    floats = getattr(embeddings, "float_", None)
    if floats is None:
        floats = getattr(embeddings, "float", None)
    if floats is None:
        raise ProviderError("Cohere embed response has no float embeddings")
    return floats
