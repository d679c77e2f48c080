"""The embedder seam: every backend returns float32, L2-normalised rows, so dot product = cosine.

Documents and queries are separate calls because asymmetric models (Cohere ``input_type``,
E5-style prefixes) embed them differently; symmetric models simply share one path.

Input policy, identical for every backend: the input must be a sequence of ``str`` (a bare
``str`` is rejected — it would be embedded character by character); an empty sequence
returns a ``(0, dim)`` array without calling the model; empty or whitespace-only strings are
passed to the model as-is (local MiniLM maps them to its "no content" vector; a remote API
may refuse them, which surfaces as ``ProviderError``). Callers that want to skip blank
texts filter them first. Non-finite model output is a ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from uniko_memory.errors import ProviderError, ValidationError

__all__ = ["Embedder", "finalize_vectors", "l2_normalize", "validate_query", "validate_texts"]


@runtime_checkable
class Embedder(Protocol):
    """Text → unit vectors. ``model_id`` is stored with the index to detect model changes."""

    model_id: str
    dim: int

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts to store: float32 array of shape ``(len(texts), dim)``, unit rows."""
        ...

    async def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: float32 array of shape ``(dim,)``, unit norm."""
        ...

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several search queries at once: shape ``(len(texts), dim)``."""
        ...


def l2_normalize(x: Any, eps: float = 1e-12) -> np.ndarray:
    """Unit-normalise a vector or each row of a matrix (float32); zero rows stay zero."""
    arr = np.asarray(x, dtype=np.float32)
    if arr.ndim not in (1, 2):
        raise ValidationError(f"expected a 1-D or 2-D array, got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    return (arr / np.maximum(norms, eps)).astype(np.float32, copy=False)


def validate_texts(texts: Sequence[str]) -> list[str]:
    """Check the input policy above and return a plain list."""
    if isinstance(texts, str | bytes):
        raise ValidationError("expected a sequence of strings, got a single string")
    try:
        items = list(texts)
    except TypeError as exc:
        raise ValidationError(f"expected a sequence of strings, got {type(texts).__name__}") from exc
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise ValidationError(f"texts[{i}] is {type(text).__name__}, expected str")
    return items


def validate_query(text: str) -> str:
    """A query must be a ``str`` (blank is allowed, as for documents)."""
    if not isinstance(text, str):
        raise ValidationError(f"query is {type(text).__name__}, expected str")
    return text


def finalize_vectors(raw: Any, n: int, dim: int | None, source: str) -> np.ndarray:
    """Validate a backend's output (count, width, finiteness) and L2-normalise it."""
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ProviderError(f"{source} returned a malformed embedding batch: {exc}") from exc
    if arr.ndim != 2 or arr.shape[0] != n:
        raise ProviderError(f"{source} returned shape {arr.shape}, expected ({n}, {dim or 'dim'})")
    if dim is not None and arr.shape[1] != dim:
        raise ProviderError(f"{source} returned {arr.shape[1]}-d vectors, expected {dim}")
    if not np.isfinite(arr).all():
        raise ProviderError(f"{source} returned NaN or infinite values")
    return l2_normalize(arr)
