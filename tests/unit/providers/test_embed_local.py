from __future__ import annotations

import asyncio
import hashlib
import sys
from typing import Any

import numpy as np
import pytest

from uniko_memory.errors import ConfigError, MissingDependency, ValidationError
from uniko_memory.providers._onnx import MINILM_TOKENIZER_PATH, MINILM_TOKENIZER_SHA256
from uniko_memory.providers.embed.base import Embedder, finalize_vectors, l2_normalize

CHAT = [
    f"message {i}: we talked about {topic} on day {i % 7}"
    for i, topic in enumerate(
        ["hiking", "painting", "adoption", "the beach", "school", "a concert", "dogs"] * 10
    )
]


def test_vendored_tokenizer_asset_and_notice() -> None:
    assert hashlib.sha256(MINILM_TOKENIZER_PATH.read_bytes()).hexdigest() == MINILM_TOKENIZER_SHA256
    notice = (MINILM_TOKENIZER_PATH.parent / "NOTICE").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice and "Apache License" in notice
    assert "Apache License" in (MINILM_TOKENIZER_PATH.parent / "LICENSE-APACHE-2.0").read_text()


async def test_shape_dtype_norm_and_protocol(local_embedder: Any) -> None:
    assert isinstance(local_embedder, Embedder)
    assert local_embedder.dim == 384
    assert local_embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2:int8-onnx"
    vecs = await local_embedder.embed_documents(["hello there", "I adopted a puppy", ""])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = await local_embedder.embed_query("who adopted a puppy?")
    assert q.shape == (384,) and q.dtype == np.float32
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5


async def test_deterministic_and_sync_matches_async(local_embedder: Any) -> None:
    texts = ["Melanie ran a charity race", "Caroline went to a support group"]
    a = await local_embedder.embed_documents(texts)
    b = await local_embedder.embed_documents(texts)
    c = local_embedder.embed_documents_sync(texts)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


async def test_paraphrase_closer_than_unrelated(local_embedder: Any) -> None:
    a, para, other = await local_embedder.embed_documents(
        [
            "Melanie has a dog named Max.",
            "Max is Melanie's pet dog.",
            "The stock market fell sharply on Tuesday.",
        ]
    )
    assert float(a @ para) > float(a @ other) + 0.3


async def test_batching_equals_one_by_one(local_embedder: Any) -> None:
    assert len(CHAT) == 70
    batched = await local_embedder.embed_documents(CHAT)  # 9 batches of <= 8, length-sorted
    singles = np.stack([local_embedder.embed_documents_sync([t])[0] for t in CHAT])
    np.testing.assert_allclose(batched, singles, atol=1e-5)


async def test_long_texts_go_in_token_bounded_batches_with_the_same_vectors(local_embedder: Any) -> None:
    """Issue 16.7: 32 passages of 256 tokens at once grew the runtime's memory pool by ~1 GB; a
    batch now holds at most ``max_batch_tokens`` padded tokens, whatever its row count."""
    texts = [f"passage {i} " + "word " * (40 * (i % 7)) for i in range(40)]
    lengths = [len(e.ids) for e in local_embedder._runtime().tokenizer.encode_batch(texts)]
    order = np.argsort(lengths, kind="stable")
    batches = local_embedder._batches(order, lengths)
    assert sorted(int(i) for b in batches for i in b) == list(range(40))  # every row once
    for rows in batches:
        assert len(rows) <= local_embedder.batch_size
        assert len(rows) == 1 or len(rows) * max(lengths[i] for i in rows) <= local_embedder.max_batch_tokens
    assert (
        len(batches) > 40 * max(lengths) // local_embedder.max_batch_tokens // 2
    )  # long rows go few at a time
    batched = await local_embedder.embed_documents(texts)
    singles = np.stack([local_embedder.embed_documents_sync([t])[0] for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)


async def test_long_text_is_truncated_not_rejected(local_embedder: Any) -> None:
    vec = await local_embedder.embed_documents(["word " * 2000])
    assert vec.shape == (1, 384) and np.isfinite(vec).all()


async def test_query_cache_hits_and_isolation(local_embedder: Any) -> None:
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    emb = LocalOnnxEmbedder(cache_size=2)
    q1 = await emb.embed_query("what did Caroline research?")
    assert emb.cache_info() == {"hits": 0, "misses": 1, "size": 1}
    q1[:] = 0  # mutating a returned vector must not poison the cache
    q2 = await emb.embed_query("what did Caroline research?")
    assert emb.cache_info()["hits"] == 1
    assert abs(float(np.linalg.norm(q2)) - 1.0) < 1e-5
    doc = (await local_embedder.embed_documents(["what did Caroline research?"]))[0]
    np.testing.assert_allclose(q2, doc, atol=1e-6)  # symmetric model: query == document vector
    many = await emb.embed_queries(["a", "b", "what did Caroline research?", "a"])
    assert many.shape == (4, 384)
    np.testing.assert_array_equal(many[0], many[3])
    assert emb.cache_info()["size"] == 2  # LRU bound respected


async def test_runtime_shared_across_instances(local_embedder: Any) -> None:
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    other = LocalOnnxEmbedder(batch_size=32, threads=local_embedder.threads)
    assert other._runtime() is local_embedder._runtime()


async def test_concurrent_calls(local_embedder: Any) -> None:
    results = await asyncio.gather(*(local_embedder.embed_query(f"question {i}") for i in range(8)))
    assert all(r.shape == (384,) for r in results)


async def test_input_validation(local_embedder: Any) -> None:
    empty = await local_embedder.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    assert (await local_embedder.embed_queries([])).shape == (0, 384)
    with pytest.raises(ValidationError):
        await local_embedder.embed_documents("a bare string")
    with pytest.raises(ValidationError):
        await local_embedder.embed_documents(["ok", 3])
    with pytest.raises(ValidationError):
        await local_embedder.embed_query(None)


def test_config_errors() -> None:
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    with pytest.raises(ConfigError):
        LocalOnnxEmbedder(batch_size=0)
    with pytest.raises(ConfigError, match="max_batch_tokens"):
        LocalOnnxEmbedder(max_batch_tokens=0)
    with pytest.raises(ConfigError):
        LocalOnnxEmbedder(max_length=1000)
    with pytest.raises(ConfigError, match="not found"):
        LocalOnnxEmbedder(model_path="/nonexistent/model.onnx")


def test_missing_onnxruntime_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependency) as info:
        LocalOnnxEmbedder()
    assert info.value.extra == "local" and "uniko-memory[local]" in str(info.value)


def test_helpers() -> None:
    out = l2_normalize([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert l2_normalize([0.0, 2.0]).tolist() == [0.0, 1.0]
    from uniko_memory.errors import ProviderError

    with pytest.raises(ProviderError, match="NaN"):
        finalize_vectors([[1.0, float("nan")]], 1, 2, "x")
    with pytest.raises(ProviderError, match="shape"):
        finalize_vectors([[1.0, 2.0]], 2, 2, "x")
    with pytest.raises(ProviderError, match="3-d"):
        finalize_vectors([[1.0, 2.0, 3.0]], 1, 2, "x")
