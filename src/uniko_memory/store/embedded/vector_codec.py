"""Vector blobs at rest: float16 (the default) or float32 (stores written before issue 20).

A blob's length tells its format, so old and new rows can sit side by side in one table and every
reader decodes both; the RAM indexes always hold float32. A float16 vector is renormalised as it is
decoded: rounding moves its length by ~1e-4 but its direction by ~1e-8 (cosine with the original),
so the dot products the score contract promises stay cosines.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Storage = Literal["float16", "float32"]


def encode(vec: np.ndarray, storage: Storage) -> bytes:
    """The blob of a unit vector in the configured at-rest precision."""
    return np.asarray(vec, dtype=np.float16 if storage == "float16" else np.float32).tobytes()


def decode(blob: bytes, dim: int) -> np.ndarray:
    """A float32 copy of a float16 or float32 blob of ``dim`` components."""
    if len(blob) == 2 * dim:
        return _unit_rows(np.frombuffer(blob, dtype=np.float16).astype(np.float32)[None, :])[0]
    if len(blob) == 4 * dim:
        return np.frombuffer(blob, dtype=np.float32).copy()
    raise ValueError(f"a vector blob of {len(blob)} bytes is neither float16 nor float32 of {dim} dimensions")


def decode_many(blobs: list[bytes], dim: int) -> np.ndarray:
    """A (len(blobs), dim) float32 matrix; one conversion when every blob has the same format."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    size = len(blobs[0])
    if all(len(b) == size for b in blobs) and size in (2 * dim, 4 * dim):
        if size == 4 * dim:
            return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim).copy()
        return _unit_rows(
            np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), dim).astype(np.float32)
        )
    return np.stack([decode(b, dim) for b in blobs])


def _unit_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 in place (a stored vector is never zero: ``as_unit_vector``)."""
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m
