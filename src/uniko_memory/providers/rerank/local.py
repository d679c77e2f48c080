"""Optional local cross-encoder from a user-supplied folder (``model.onnx`` + ``tokenizer.json``).

No wheel ships cross-encoder weights (see models-and-stores.md §2), so this runs only when
the user provisions a model, e.g. an ONNX export of ms-marco-MiniLM-L-6-v2. Pairs are encoded
as ``[CLS] query [SEP] passage [SEP]`` by the folder's own tokenizer; the first output is the
relevance logit, optionally squashed with a sigmoid. Inference runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.errors import ConfigError, MissingDependency, ProviderError
from uniko_memory.providers._onnx import default_threads, load_tokenizer, make_session, pad_encodings
from uniko_memory.providers.rerank.base import RerankResult, sort_results, validate_rerank_input

__all__ = ["LocalCrossEncoderReranker"]

REQUIRED_FILES = ("model.onnx", "tokenizer.json")


class LocalCrossEncoderReranker:
    """Cross-encoder ``Reranker`` on onnxruntime; the model loads on first use."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        max_length: int = 512,
        sigmoid: bool = True,
        batch_size: int = 16,
        threads: int | None = None,
    ) -> None:
        folder = Path(model_dir).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"cross-encoder folder not found: {folder}")
        missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
        if missing:
            raise ConfigError(f"cross-encoder folder {folder} lacks {', '.join(missing)}")
        if max_length < 8 or batch_size < 1 or (threads is not None and threads < 1):
            raise ConfigError("max_length must be >= 8, batch_size and threads >= 1")
        for module in ("onnxruntime", "tokenizers"):
            if importlib.util.find_spec(module) is None:
                raise MissingDependency(module, "local", "the local cross-encoder")
        self.model_dir = folder
        self.model_id = f"local-cross-encoder/{folder.name}"
        self.max_length = max_length
        self.sigmoid = sigmoid
        self.batch_size = batch_size
        self.threads = threads or default_threads()
        self._loaded: tuple[Any, Any, frozenset[str]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any, frozenset[str]]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    session = make_session(self.model_dir / "model.onnx", self.threads)
                    tokenizer = load_tokenizer(self.model_dir / "tokenizer.json", max_length=self.max_length)
                    names = frozenset(i.name for i in session.get_inputs())
                    self._loaded = (session, tokenizer, names)
        return self._loaded

    def score_sync(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """Blocking relevance scores, one per document, in input order."""
        session, tokenizer, names = self._load()
        docs = list(documents)
        try:
            encodings = tokenizer.encode_batch([(query, d) for d in docs])
            scores = np.empty(len(docs), dtype=np.float32)
            for start in range(0, len(docs), self.batch_size):
                feed = pad_encodings(encodings[start : start + self.batch_size])
                logits = session.run(None, {k: v for k, v in feed.items() if k in names})[0]
                scores[start : start + len(feed["input_ids"])] = _relevance(np.asarray(logits))
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"cross-encoder failed: {type(exc).__name__}: {exc}") from exc
        if self.sigmoid:
            scores = (0.5 * (1.0 + np.tanh(scores / 2))).astype(np.float32)  # overflow-free sigmoid
        return scores

    async def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[RerankResult]:
        docs = validate_rerank_input(query, documents, top_n)
        if not docs or top_n == 0:
            return []
        scores = await asyncio.to_thread(self.score_sync, query, docs)
        return sort_results([RerankResult(i, float(s)) for i, s in enumerate(scores)], top_n)

    def __repr__(self) -> str:
        return f"LocalCrossEncoderReranker({str(self.model_dir)!r})"


def _relevance(logits: np.ndarray) -> np.ndarray:
    """One logit per pair from shapes (n,), (n, 1) or (n, 2) (two-class: log-odds of class 1)."""
    if logits.ndim == 1:
        return logits.astype(np.float32)
    if logits.ndim == 2 and logits.shape[1] == 1:
        return logits[:, 0].astype(np.float32)
    if logits.ndim == 2 and logits.shape[1] == 2:
        return (logits[:, 1] - logits[:, 0]).astype(np.float32)
    raise ProviderError(f"cross-encoder output has unsupported shape {logits.shape}")
