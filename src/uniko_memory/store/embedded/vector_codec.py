"""Vector blobs at rest: int8, float16 or float32 (stores written before issue 20).

A blob's length tells its format (``dim``, ``2 * dim`` or ``4 * dim`` bytes), so rows of every
format can sit side by side in one table and every reader decodes them all. The exact RAM index
(``vectors``) holds int8 codes with one scale per row when the store writes int8 (``int8_rows``:
the blobs are copied, never decoded to float32), else float32. A compact vector is renormalised as
it is decoded, so the dot products the score contract promises stay cosines: float16 rounding moves
a unit vector's direction by ~1e-8 (cosine with the original), int8 (each component scaled by the
vector's largest and rounded to 1/127 of it) by ~1e-5, which moves a cosine score by ~1e-3.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Storage = Literal["int8", "float16", "float32"]

#: The int8 code of a vector's largest component (its sign kept).
_INT8_SCALE = 127.0


def encode(vec: np.ndarray, storage: Storage) -> bytes:
    """The blob of a unit vector in the configured at-rest precision."""
    if storage == "int8":
        return quantise_rows(np.asarray(vec, dtype=np.float32)[None, :])[0].tobytes()
    return np.asarray(vec, dtype=np.float16 if storage == "float16" else np.float32).tobytes()


def decode(blob: bytes, dim: int) -> np.ndarray:
    """A float32 copy of an int8, float16 or float32 blob of ``dim`` components."""
    if len(blob) == dim:
        return _unit_rows(np.frombuffer(blob, dtype=np.int8).astype(np.float32)[None, :])[0]
    if len(blob) == 2 * dim:
        return _unit_rows(np.frombuffer(blob, dtype=np.float16).astype(np.float32)[None, :])[0]
    if len(blob) == 4 * dim:
        return np.frombuffer(blob, dtype=np.float32).copy()
    raise ValueError(
        f"a vector blob of {len(blob)} bytes is not an int8, float16 or float32 vector of {dim} dimensions"
    )


def decode_many(blobs: list[bytes], dim: int) -> np.ndarray:
    """A (len(blobs), dim) float32 matrix; one conversion when every blob has the same format."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    size = len(blobs[0])
    if all(len(b) == size for b in blobs) and size in (dim, 2 * dim, 4 * dim):
        if size == 4 * dim:
            return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim).copy()
        dtype = np.int8 if size == dim else np.float16
        return _unit_rows(
            np.frombuffer(b"".join(blobs), dtype=dtype).reshape(len(blobs), dim).astype(np.float32)
        )
    return np.stack([decode(b, dim) for b in blobs])


def int8_rows(blobs: list[bytes], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The int8 codes of ``blobs`` (a (len, dim) int8 matrix) and each row's ``1 / |codes|``
    (float32): ``codes[r] * scale[r]`` is exactly what ``decode`` gives, so a cosine computed as
    ``(codes @ q) * scale`` equals the decoded row's up to float rounding. int8 blobs are copied as
    they are; float16 and float32 ones (older rows) are quantised as ``encode`` would."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.int8), np.zeros(0, dtype=np.float32)
    if all(len(b) == dim for b in blobs):
        codes = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(blobs), dim).copy()
    else:
        codes = quantise_rows(decode_many(blobs, dim))
    return codes, row_scales(codes)


def quantise_rows(m: np.ndarray) -> np.ndarray:
    """The int8 codes ``encode`` gives each row of a float32 matrix (each row scaled by its largest
    component, rounded to 1/127 of it); a row decoded from int8 gets its own codes back."""
    m = np.asarray(m, dtype=np.float32).reshape(-1, m.shape[-1])
    top = np.max(np.abs(m), axis=1, keepdims=True)
    return np.rint(m * (_INT8_SCALE / top)).astype(np.int8)


def row_scales(codes: np.ndarray) -> np.ndarray:
    """``1 / |row|`` of int8 codes (float32), one batch at a time (no float32 copy of a tier)."""
    return (1.0 / np.linalg.norm(codes.astype(np.float32), axis=1)).astype(np.float32)


def ann_dtype(storage: Storage) -> str:
    """The usearch scalar type of an ANN graph for this at-rest format (int8 rows: a float16 graph)."""
    return "f32" if storage == "float32" else "f16"


def _unit_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 in place (a stored vector is never zero: ``as_unit_vector``, and
    an int8 row keeps its largest component at +-127)."""
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m
