"""Exact cosine search over a matrix held in RAM, one per (agent, tier) below the ANN size.

SQLite is the source of truth; a matrix is loaded lazily on the first search of its (agent, tier)
and then kept in sync by every commit (never rebuilt on read). Each row carries its node's rowid
(the key an ANN index takes over when the matrix outgrows ``EmbeddedVectorOptions.exact_below``).

The matrix holds what the store writes at rest: int8 codes with one float32 scale per row when
``storage`` is int8 (the default: a quarter of float32's RAM, and a load is a copy of the blobs),
float32 otherwise.

Score contract: a score is the dot product of the query with the row as ``vector_codec.decode``
gives it, a cosine for a unit query. For an int8 row that is ``(codes @ query) * scale`` with
``scale = 1 / |codes|``, the same number (up to float32 rounding, ~1e-7) as the float32 matrix
decoded from the same int8 blobs that this index held before; against the vector as first embedded
it is an approximation (int8 moves a cosine by ~1e-3, see ``vector_codec``). An int8 matrix is
scored in blocks of ``SCORE_BLOCK`` rows converted to float32 into one reused buffer, so a search
never holds a float32 copy of the tier.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from .vector_codec import decode_many, int8_rows, quantise_rows, row_scales

#: ``(node id, score)``, best first.
Scored = list[tuple[str, float]]

#: Rows of an int8 matrix converted to float32 at a time while scoring: ~1.5 MB at 384
#: dimensions, cache-sized (measured fastest of 256-4096 rows; at 20,000 rows the blocked int8
#: scan is as fast as one float32 matrix-vector product, which reads four times the bytes).
SCORE_BLOCK = 1024


class VectorIndex:
    """Rows of unit vectors with their ids and keys; removal swaps the last row into the hole.

    ``int8``: hold int8 codes and per-row scales (``vector_codec.int8_rows``) instead of float32.
    """

    exact = True

    def __init__(self, dim: int, *, int8: bool = False, capacity: int = 64) -> None:
        self.dim = dim
        self.int8 = int8
        self._lock = threading.RLock()
        cap = max(64, capacity)
        self._m = np.zeros((cap, dim), dtype=np.int8 if int8 else np.float32)
        #: ``1 / |codes|`` of each int8 row (ones for float32 rows, never read).
        self._scale = np.ones(cap, dtype=np.float32)
        self._ids: list[str] = []
        self._keys: list[int] = []
        self._row: dict[str, int] = {}

    @classmethod
    def load(
        cls,
        dim: int,
        rows: Iterable[Sequence[tuple[int, str, bytes]]],
        expected: int = 0,
        *,
        int8: bool = False,
    ) -> VectorIndex:
        """An index from ``(key, id, blob)`` batches copied (int8) or decoded (float32) straight
        into its matrix: a large tier never holds its blobs, a decoded copy and the matrix at once
        (``expected``: the row count, to size the matrix once)."""
        idx = cls(dim, int8=int8, capacity=expected + expected // 8)
        n = 0
        for batch in rows:
            if not batch:
                continue
            blobs = [b for _, _, b in batch]
            idx._reserve(n + len(batch))
            if int8:
                codes, scale = int8_rows(blobs, dim)
                idx._m[n : n + len(batch)] = codes
                idx._scale[n : n + len(batch)] = scale
            else:
                idx._m[n : n + len(batch)] = decode_many(blobs, dim)
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
        new_cap = max(cap + cap // 2, rows)
        grown = np.zeros((new_cap, self.dim), dtype=self._m.dtype)
        scale = np.ones(new_cap, dtype=np.float32)
        n = len(self._ids)
        grown[:n] = self._m[:n]
        scale[:n] = self._scale[:n]
        self._m, self._scale = grown, scale

    def upsert(self, node_id: str, vec: np.ndarray, key: int = -1) -> None:
        """Set a row; an int8 index quantises ``vec`` as ``vector_codec.encode`` does (a vector
        decoded from an int8 blob gets its blob's codes back)."""
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
            if self.int8:
                codes = quantise_rows(np.asarray(vec, dtype=np.float32)[None, :])
                self._m[row] = codes[0]
                self._scale[row] = row_scales(codes)[0]
            else:
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
                self._scale[row] = self._scale[last]
                self._ids[row] = moved
                self._keys[row] = self._keys[last]
                self._row[moved] = row
            self._ids.pop()
            self._keys.pop()

    def _scores(self, query: np.ndarray, count: int) -> np.ndarray:
        """Scores of the first ``count`` rows (the caller holds the lock)."""
        q = np.asarray(query, dtype=np.float32)
        if not self.int8:
            return self._m[:count] @ q
        out = np.empty(count, dtype=np.float32)
        buf = np.empty((min(SCORE_BLOCK, count), self.dim), dtype=np.float32)
        for s in range(0, count, SCORE_BLOCK):
            e = min(count, s + SCORE_BLOCK)
            block = buf[: e - s]
            block[...] = self._m[s:e]
            np.matmul(block, q, out=out[s:e])
        out *= self._scale[:count]
        return out

    def search(self, query: np.ndarray, n: int) -> Scored:
        """The n best rows by cosine, best first (ties by row order)."""
        with self._lock:
            count = len(self._ids)
            if count == 0:
                return []
            scores = self._scores(query, count)
            return [(self._ids[r], float(scores[r])) for r in top_k(scores, n)]

    def scores_within(self, query: np.ndarray, allowed: set[str]) -> tuple[np.ndarray, list[str]]:
        """Cosine for the allowed ids only: cost follows the filter's size, not the index's."""
        with self._lock:
            pairs = [(self._row[i], i) for i in allowed if i in self._row]
            if not pairs:
                return np.zeros(0, dtype=np.float32), []
            pairs.sort()
            rows = np.fromiter((r for r, _ in pairs), dtype=np.int64, count=len(pairs))
            q = np.asarray(query, dtype=np.float32)
            if not self.int8:
                return self._m[rows] @ q, [i for _, i in pairs]
            return (self._m[rows].astype(np.float32) @ q) * self._scale[rows], [i for _, i in pairs]

    def get(self, node_id: str) -> np.ndarray | None:
        """A float32 copy of a row (an int8 row decoded: its codes times its scale)."""
        with self._lock:
            row = self._row.get(node_id)
            if row is None:
                return None
            return self._decoded(row, row + 1)[0]

    def _decoded(self, start: int, end: int) -> np.ndarray:
        """A float32 copy of rows ``start:end`` (the caller holds the lock or owns a snapshot)."""
        if not self.int8:
            return self._m[start:end].copy()
        return self._m[start:end].astype(np.float32) * self._scale[start:end, None]

    def rows(self, batch: int = 4096) -> Iterator[tuple[list[int], list[str], np.ndarray]]:
        """(keys, ids, float32 vectors) in batches: what an ANN index is built from when this one
        outgrows the exact size. A snapshot (of the stored codes, not a float32 copy) taken under
        the lock, decoded a batch at a time."""
        with self._lock:
            n = len(self._ids)
            keys, ids = list(self._keys), list(self._ids)
            snap = VectorIndex(self.dim, int8=self.int8, capacity=0)
            snap._m, snap._scale = self._m[:n].copy(), self._scale[:n].copy()
        for s in range(0, n, batch):
            yield keys[s : s + batch], ids[s : s + batch], snap._decoded(s, min(n, s + batch))


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
