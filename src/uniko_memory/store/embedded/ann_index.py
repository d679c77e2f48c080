"""An approximate (HNSW) cosine index for one (agent, tier), on usearch, keyed by node rowid.

It holds float16 (or float32) vectors in its own graph and no id strings: a search returns node
rowids with scores and the caller resolves them through ``nodes`` (agent, tier, not redacted), so
a deleted or redacted node can never come back even from a stale graph. SQLite stays the source of
truth: ``ann_cache`` decides when a saved graph may be reused and when it is rebuilt.

usearch is an optional import: ``load_usearch`` answers None (and logs one warning per process)
when it is missing, and the store then searches exactly at every size.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .vector_codec import ann_dtype
from .vector_options import EmbeddedVectorOptions

_log = logging.getLogger(__name__)
_warned = False

#: ``(node rowid, score)``, best first.
KeyScores = list[tuple[int, float]]


def load_usearch() -> Any | None:
    """The ``usearch.index`` module, or None with one warning per process when it is missing."""
    global _warned
    try:
        from usearch import index as usearch_index
    except ImportError:  # the dependency is declared; a trimmed install falls back, never crashes
        if not _warned:
            _warned = True
            _log.warning(
                "usearch is not installed: the embedded store searches its vectors exactly at "
                "every size (slower past ~50,000 rows a tier); install uniko-memory's dependencies"
            )
        return None
    return usearch_index


class AnnIndex:
    """A usearch HNSW graph; every call holds one lock (usearch adds and searches are not mixed)."""

    exact = False

    def __init__(self, dim: int, options: EmbeddedVectorOptions, graph: Any | None = None) -> None:
        mod = load_usearch()
        if mod is None:
            raise RuntimeError("usearch is not installed")
        self.dim = dim
        self.options = options
        #: A deleted or redacted node's vector left the graph: usearch keeps a removed vector's
        #: bytes in its slot (and in a saved file), so this graph is never saved (see ann_cache).
        self.forgot = False
        self._lock = threading.RLock()
        self._g = graph or mod.Index(
            ndim=dim,
            metric="ip",  # the vectors are unit: inner product is the cosine
            dtype=ann_dtype(options.storage),
            connectivity=options.ann_connectivity,
            expansion_add=options.ann_expansion_add,
            expansion_search=options.ann_expansion_search,
        )

    def __len__(self) -> int:
        with self._lock:
            return len(self._g)

    def add_many(self, keys: Iterable[int], vectors: np.ndarray, *, threads: int = 1) -> None:
        """Bulk insert of new keys (a build): one call per batch, ``threads`` 0 = every core."""
        arr = np.fromiter(keys, dtype=np.uint64)
        if arr.size:
            with self._lock:
                self._g.add(arr, np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)

    def upsert(self, node_id: str, vec: np.ndarray, key: int) -> None:
        with self._lock:
            if key in self._g:
                self._g.remove(key)
            self._g.add(key, np.asarray(vec, dtype=np.float32), threads=1)

    def remove_key(self, key: int) -> None:
        with self._lock:
            if key in self._g:
                self._g.remove(key)
                self.forgot = True

    def search(self, query: np.ndarray, n: int) -> KeyScores:
        """Up to n (rowid, cosine) pairs, best first; the graph is searched with ef >= n."""
        with self._lock:
            if len(self._g) == 0 or n <= 0:
                return []
            self._g.expansion_search = max(self.options.ann_expansion_search, n)
            found = self._g.search(np.asarray(query, dtype=np.float32), n, threads=1)
            return [(int(k), 1.0 - float(d)) for k, d in zip(found.keys, found.distances, strict=True)]

    def vectors(self, keys: list[int]) -> tuple[list[int], np.ndarray]:
        """The graph's copies (float32) of the keys it holds, with those keys: what an exact
        filtered scan scores without reading SQLite."""
        if not keys:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            got = self._g.get(np.asarray(keys, dtype=np.uint64), dtype=np.float32)
        pairs = [(k, v) for k, v in zip(keys, got, strict=True) if v is not None]
        if not pairs:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        return [k for k, _ in pairs], np.vstack([v for _, v in pairs])

    def keys(self) -> np.ndarray:
        with self._lock:
            return np.asarray(self._g.keys, dtype=np.uint64)

    def save(self, path: Path) -> None:
        with self._lock:
            self._g.save(str(path))

    @classmethod
    def restore(cls, path: Path, dim: int, options: EmbeddedVectorOptions) -> AnnIndex | None:
        """The graph saved at ``path`` if it is a readable index of this shape, else None."""
        mod = load_usearch()
        if mod is None or not path.is_file():
            return None
        try:
            graph = mod.Index.restore(str(path))
        except (ValueError, RuntimeError, OSError):
            return None
        want_dtype = ann_dtype(options.storage)
        if (
            graph is None
            or graph.ndim != dim
            or graph.connectivity != options.ann_connectivity
            or str(graph.dtype).lower().rsplit(".", 1)[-1] != want_dtype
        ):
            return None
        graph.expansion_add = options.ann_expansion_add
        graph.expansion_search = options.ann_expansion_search
        return cls(dim, options, graph)
