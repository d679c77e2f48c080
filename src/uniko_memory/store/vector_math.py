"""Vector rules every backend shares: what a stored or query vector must be, and its unit form.

Every backend keeps unit vectors, so a dot product is the cosine the score contract promises.
"""

from __future__ import annotations

import numpy as np


def as_unit_vector(vec: object, dim: int | None) -> np.ndarray:
    """Validate and L2-normalise; raises ValueError with a readable reason."""
    arr = np.asarray(vec, dtype=np.float32)
    if arr.ndim != 1:
        raise ValueError(f"a vector must be one-dimensional, got shape {arr.shape}")
    if dim is not None and arr.shape[0] != dim:
        raise ValueError(f"vector has {arr.shape[0]} dimensions, the store uses {dim}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("vector contains NaN or infinite values")
    norm = float(np.linalg.norm(arr))
    if norm <= 1e-12:
        raise ValueError("vector has zero length")
    return (arr / norm).astype(np.float32)
