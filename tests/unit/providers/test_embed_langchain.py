from __future__ import annotations

import numpy as np
import pytest

from uniko_memory.errors import ConfigError, ProviderError, ValidationError
from uniko_memory.providers.embed.base import Embedder

pytest.importorskip("langchain_core")

from langchain_core.embeddings import Embeddings
from langchain_core.embeddings.fake import DeterministicFakeEmbedding

from uniko_memory.providers.embed.langchain import LangChainEmbedder


class Broken(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("backend down")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("backend down")


class NaNs(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float("nan"), 1.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 2.0, 3.0]


async def test_adapter_normalises_and_discovers_dim() -> None:
    emb = LangChainEmbedder(DeterministicFakeEmbedding(size=16))
    assert isinstance(emb, Embedder)
    assert emb.model_id == "langchain/DeterministicFakeEmbedding"
    vecs = await emb.embed_documents(["a", "b", "a"])
    assert vecs.shape == (3, 16) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vecs[0], vecs[2])  # deterministic per text
    assert emb.dim == 16
    q = await emb.embed_query("a")
    np.testing.assert_allclose(q, vecs[0], atol=1e-6)
    assert (await emb.embed_queries(["a", "b"])).shape == (2, 16)


async def test_dim_discovery_paths() -> None:
    lazy = LangChainEmbedder(DeterministicFakeEmbedding(size=8), model_id="fake:8")
    assert lazy.model_id == "fake:8"
    assert await lazy.ensure_dim() == 8
    sync_probe = LangChainEmbedder(DeterministicFakeEmbedding(size=12))
    assert sync_probe.dim == 12  # synchronous probe when read before any call
    empty = LangChainEmbedder(DeterministicFakeEmbedding(size=5))
    assert (await empty.embed_documents([])).shape == (0, 5)


async def test_declared_dim_mismatch_is_provider_error() -> None:
    emb = LangChainEmbedder(DeterministicFakeEmbedding(size=16), dim=32)
    with pytest.raises(ProviderError, match="expected 32"):
        await emb.embed_documents(["a"])


async def test_failures_and_bad_output() -> None:
    with pytest.raises(ProviderError, match="backend down"):
        await LangChainEmbedder(Broken()).embed_documents(["a"])
    with pytest.raises(ProviderError, match="backend down"):
        await LangChainEmbedder(Broken(), dim=3).embed_query("a")
    with pytest.raises(ProviderError, match="NaN"):
        await LangChainEmbedder(NaNs()).embed_documents(["a"])
    with pytest.raises(ValidationError):
        await LangChainEmbedder(NaNs()).embed_documents("abc")


def test_rejects_non_embeddings() -> None:
    with pytest.raises(ConfigError):
        LangChainEmbedder(object())
