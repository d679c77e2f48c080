"""Exact cosine search over a float32 matrix held in RAM, one per (agent, tier) below the ANN size.

SQLite is the source of truth; a matrix is loaded lazily on the first search of its (agent, tier)
and then kept in sync by every commit (never rebuilt on read). Each row carries its node's rowid
(the key an ANN index takes over when the matrix outgrows ``EmbeddedVectorOptions.exact_below``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from .vector_codec import decode_many

#: ``(node id, score)``, best first.
Scored = list[tuple[str, float]]


class VectorIndex:
    """Rows of unit vectors with their ids and keys; removal swaps the last row into the hole."""

    exact = True

    def __init__(
        self,
        dim: int,
        ids: list[str] | None = None,
        matrix: np.ndarray | None = None,
        keys: list[int] | None = None,
    ) -> None:
        self.dim = dim
        self._lock = threading.RLock()
        n = len(ids or [])
        cap = max(64, n + n // 4)
        self._m = np.zeros((cap, dim), dtype=np.float32)
        if n and matrix is not None:
            self._m[:n] = matrix
        self._ids: list[str] = list(ids or [])
        self._keys: list[int] = list(keys) if keys is not None else [-1] * n
        self._row: dict[str, int] = {i: r for r, i in enumerate(self._ids)}

    @classmethod
    def load(
        cls, dim: int, rows: Iterable[Sequence[tuple[int, str, bytes]]], expected: int = 0
    ) -> VectorIndex:
        """An index from ``(key, id, blob)`` batches decoded straight into its matrix: a large
        tier never holds its blobs, a decoded copy and the matrix at once (``expected``: the row
        count, to size the matrix once)."""
        idx = cls(dim)
        cap = max(64, expected + expected // 8)
        idx._m = np.zeros((cap, dim), dtype=np.float32)
        n = 0
        for batch in rows:
            if not batch:
                continue
            m = decode_many([b for _, _, b in batch], dim)
            idx._reserve(n + len(batch))
            idx._m[n : n + len(batch)] = m
            for key, node_id, _ in batch:
                idx._row[node_id] = len(idx._ids)
                idx._ids.append(node_id)
                idx._keys.append(key)
            n += len(batch)
        return idx

    def __len__(self) -> int:
        return len(self._ids)

    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` rows: the matrix grows by half (at least to ``rows``), rows kept."""
        cap = self._m.shape[0]
        if rows <= cap:
            return
        grown = np.zeros((max(cap + cap // 2, rows), self.dim), dtype=np.float32)
        n = len(self._ids)
        grown[:n] = self._m[:n]
        self._m = grown

    def upsert(self, node_id: str, vec: np.ndarray, key: int = -1) -> None:
        with self._lock:
            row = self._row.get(node_id)
            if row is None:
                row = len(self._ids)
                self._reserve(row + 1)
                self._ids.append(node_id)
                self._keys.append(key)
                self._row[node_id] = row
            else:
                self._keys[row] = key
            self._m[row] = vec

    def remove(self, node_id: str) -> None:
        with self._lock:
            row = self._row.pop(node_id, None)
            if row is None:
                return
            last = len(self._ids) - 1
            if row != last:
                moved = self._ids[last]
                self._m[row] = self._m[last]
                self._ids[row] = moved
                self._keys[row] = self._keys[last]
                self._row[moved] = row
            self._ids.pop()
            self._keys.pop()

    def search(self, query: np.ndarray, n: int) -> Scored:
        """The n best rows by cosine, best first (ties by row order)."""
        with self._lock:
            count = len(self._ids)
            if count == 0:
                return []
            scores = self._m[:count] @ query
            return [(self._ids[r], float(scores[r])) for r in top_k(scores, n)]

    def scores_within(self, query: np.ndarray, allowed: set[str]) -> tuple[np.ndarray, list[str]]:
        """Cosine for the allowed ids only: cost follows the filter's size, not the index's."""
        with self._lock:
            pairs = [(self._row[i], i) for i in allowed if i in self._row]
            if not pairs:
                return np.zeros(0, dtype=np.float32), []
            pairs.sort()
            rows = np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))
            return self._m[rows] @ query, [i for _, i in pairs]

    def get(self, node_id: str) -> np.ndarray | None:
        with self._lock:
            row = self._row.get(node_id)
            return None if row is None else self._m[row].copy()

    def rows(self, batch: int = 4096) -> Iterator[tuple[list[int], list[str], np.ndarray]]:
        """(keys, ids, vectors) in batches: what an ANN index is built from when this one outgrows
        the exact size. A snapshot taken under the lock."""
        with self._lock:
            n = len(self._ids)
            keys, ids, m = list(self._keys), list(self._ids), self._m[:n].copy()
        for s in range(0, n, batch):
            yield keys[s : s + batch], ids[s : s + batch], m[s : s + batch]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the k best scores, best first, ties by row order (deterministic)."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    order = np.lexsort((part, -scores[part]))
    return part[order]
