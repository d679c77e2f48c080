"""Shared fixtures for the harness tests: repo root on sys.path, fixture paths, a fake embedder."""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DATA = REPO_ROOT / "tests" / "data" / "harness"


class FakeEmbedder:
    """Hashed bag of words, L2-normalised: texts sharing words are close. Deterministic, no model."""

    dim = 64

    def __init__(self) -> None:
        self.document_calls = 0
        self.query_calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(word.encode()) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    async def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.document_calls += 1
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        return self._vec(text)


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()
