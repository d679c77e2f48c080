"""Adapter: any LangChain ``Embeddings`` as an :class:`Embedder`.

LangChain returns ``list[list[float]]`` with no normalisation guarantee, so outputs are
validated and L2-normalised here. The width is discovered on the first call when not given;
reading ``dim`` before that probes the model synchronously once (pass ``dim=`` or
``await ensure_dim()`` to avoid the blocking probe inside an event loop). On Python 3.11,
``isinstance(x, Embedder)`` reads ``dim`` too, so it may trigger that probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from uniko_memory.errors import ConfigError, ProviderError
from uniko_memory.providers._onnx import require
from uniko_memory.providers.embed.base import finalize_vectors, validate_query, validate_texts

__all__ = ["LangChainEmbedder"]

_PROBE = "dimension probe"


class LangChainEmbedder:
    """Wraps ``aembed_documents`` / ``aembed_query``; failures surface as ``ProviderError``."""

    def __init__(self, embeddings: Any, model_id: str | None = None, dim: int | None = None) -> None:
        lc = require("langchain_core.embeddings", package="langchain-core", extra="langchain")
        if not isinstance(embeddings, lc.Embeddings):
            raise ConfigError(f"expected a langchain_core Embeddings, got {type(embeddings).__name__}")
        if dim is not None and dim < 1:
            raise ConfigError("dim must be >= 1")
        self._embeddings = embeddings
        self._dim = dim
        name = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        self.model_id = model_id or f"langchain/{type(embeddings).__name__}" + (f":{name}" if name else "")

    @property
    def dim(self) -> int:
        if self._dim is None:
            try:
                probe = self._embeddings.embed_query(_PROBE)
            except Exception as exc:
                raise ProviderError(f"{self.model_id}: dimension probe failed: {exc}") from exc
            self._learn_dim(len(probe))
        assert self._dim is not None
        return self._dim

    async def ensure_dim(self) -> int:
        """Discover the width without blocking the event loop."""
        if self._dim is None:
            await self._call_query(_PROBE)
        assert self._dim is not None
        return self._dim

    def _learn_dim(self, width: int) -> None:
        if width < 1:
            raise ProviderError(f"{self.model_id} returned empty vectors")
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise ProviderError(f"{self.model_id} returned {width}-d vectors, expected {self._dim}")

    async def _call_query(self, text: str) -> np.ndarray:
        try:
            raw = await self._embeddings.aembed_query(text)
        except Exception as exc:
            raise ProviderError(f"{self.model_id} embed_query failed: {exc}") from exc
        arr = finalize_vectors([raw], 1, self._dim, self.model_id)
        self._learn_dim(arr.shape[1])
        return arr[0]

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        items = validate_texts(texts)
        if not items:
            return np.empty((0, await self.ensure_dim()), dtype=np.float32)
        try:
            raw = await self._embeddings.aembed_documents(items)
        except Exception as exc:
            raise ProviderError(f"{self.model_id} embed_documents failed: {exc}") from exc
        arr = finalize_vectors(raw, len(items), self._dim, self.model_id)
        self._learn_dim(arr.shape[1])
        return arr

    async def embed_query(self, text: str) -> np.ndarray:
        return await self._call_query(validate_query(text))

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        items = validate_texts(texts)
        if not items:
            return np.empty((0, await self.ensure_dim()), dtype=np.float32)
        rows = await asyncio.gather(*(self._call_query(t) for t in items))
        return np.stack(rows)

    def __repr__(self) -> str:
        return f"LangChainEmbedder(model_id={self.model_id!r}, dim={self._dim})"
