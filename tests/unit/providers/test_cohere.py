"""Cohere embedder and reranker against a local HTTP double (real SDK, real HTTP, no network)."""

from __future__ import annotations

import itertools
import logging
import socket
import sys
from typing import Any

import numpy as np
import pytest

from uniko_memory.errors import ConfigError, MissingDependency, ProviderError
from uniko_memory.providers.embed.base import Embedder
from uniko_memory.providers.embed.cohere import CohereEmbedder
from uniko_memory.providers.rerank.base import Reranker, rerank_with_fallback
from uniko_memory.providers.rerank.cohere import CohereReranker
from uniko_memory.providers.retry import ProviderHTTPError, RetryPolicy

pytest.importorskip("cohere")

FAST_RETRY = RetryPolicy(max_attempts=4, initial=0.001, max_delay=0.005, timeout=5.0)


def embedder(double: Any, **kw: object) -> CohereEmbedder:
    return CohereEmbedder(api_key="test-key", base_url=double.url, retry=FAST_RETRY, **kw)  # type: ignore[arg-type]


def reranker(double: Any, **kw: object) -> CohereReranker:
    return CohereReranker(api_key="test-key", base_url=double.url, retry=FAST_RETRY, **kw)  # type: ignore[arg-type]


async def test_embed_documents_request_shape(cohere_double: Any) -> None:
    emb = embedder(cohere_double)
    assert isinstance(emb, Embedder) and emb.dim == 1536 and emb.model_id == "cohere/embed-v4.0:1536"
    vecs = await emb.embed_documents(["alpha", "beta"])
    assert vecs.shape == (2, 1536) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(cohere_double.vector("alpha", 1536), dtype=np.float32)
    np.testing.assert_allclose(vecs[0], expected / np.linalg.norm(expected), atol=1e-6)
    (req,) = cohere_double.requests
    assert req["path"] == "/v2/embed"
    assert req["headers"]["authorization"] == "Bearer test-key"
    body = req["body"]
    assert body["model"] == "embed-v4.0" and body["texts"] == ["alpha", "beta"]
    assert body["input_type"] == "search_document" and body["embedding_types"] == ["float"]
    assert body["output_dimension"] == 1536
    await emb.aclose()
    await emb.aclose()  # idempotent


async def test_query_input_type_and_v3_dims(cohere_double: Any) -> None:
    cohere_double.dim = 1024
    emb = embedder(cohere_double, model="embed-english-v3.0")
    assert emb.dim == 1024
    q = await emb.embed_query("who?")
    assert q.shape == (1024,)
    qs = await emb.embed_queries(["a", "b"])
    assert qs.shape == (2, 1024)
    assert [r["body"]["input_type"] for r in cohere_double.requests] == ["search_query"] * 2
    assert "output_dimension" not in cohere_double.requests[0]["body"]


async def test_v4_output_dimension(cohere_double: Any) -> None:
    emb = embedder(cohere_double, dim=256)
    assert (await emb.embed_documents(["x"])).shape == (1, 256)
    assert cohere_double.requests[0]["body"]["output_dimension"] == 256


async def test_batches_at_96(cohere_double: Any) -> None:
    texts = [f"text {i}" for i in range(200)]
    vecs = await embedder(cohere_double, dim=256).embed_documents(texts)
    assert [len(r["body"]["texts"]) for r in cohere_double.requests] == [96, 96, 8]
    assert vecs.shape == (200, 256)
    ref = np.asarray(cohere_double.vector("text 150", 256))
    np.testing.assert_allclose(vecs[150], ref / np.linalg.norm(ref), atol=1e-6)  # order kept
    assert (await embedder(cohere_double).embed_documents([])).shape == (0, 1536)
    assert len(cohere_double.requests) == 3  # empty input: no request


@pytest.mark.parametrize("script", [[429], [503], [429, 503, 500]])
async def test_transient_errors_are_retried(cohere_double: Any, script: list[int]) -> None:
    cohere_double.script = list(script)
    vecs = await embedder(cohere_double).embed_documents(["hello"])
    assert vecs.shape == (1, 1536)
    assert len(cohere_double.requests) == len(script) + 1


async def test_retry_after_header_is_honoured(cohere_double: Any, caplog: pytest.LogCaptureFixture) -> None:
    cohere_double.script = [429]
    cohere_double.retry_after = "0"
    with caplog.at_level(logging.WARNING, logger="uniko_memory.providers.retry"):
        await embedder(cohere_double).embed_query("hello")
    assert len(cohere_double.requests) == 2
    assert "retrying in 0.00s" in caplog.text


async def test_client_error_fails_fast(cohere_double: Any) -> None:
    cohere_double.script = [400]
    with pytest.raises(ProviderHTTPError) as info:
        await embedder(cohere_double).embed_documents(["hello"])
    assert info.value.status_code == 400 and "scripted 400" in str(info.value)
    assert len(cohere_double.requests) == 1


async def test_bad_key_is_401_without_retry(cohere_double: Any) -> None:
    emb = CohereEmbedder(api_key="wrong", base_url=cohere_double.url, retry=FAST_RETRY)
    with pytest.raises(ProviderHTTPError) as info:
        await emb.embed_documents(["x"])
    assert info.value.status_code == 401 and "wrong" not in str(info.value)
    assert len(cohere_double.requests) == 1


async def test_gives_up_after_max_attempts(cohere_double: Any) -> None:
    cohere_double.script = [503] * 10
    with pytest.raises(ProviderHTTPError) as info:
        await embedder(cohere_double).embed_documents(["x"])
    assert info.value.status_code == 503
    assert len(cohere_double.requests) == FAST_RETRY.max_attempts


async def test_sdk_retries_are_disabled(cohere_double: Any) -> None:
    cohere_double.script = [503, 503]
    policy = RetryPolicy(max_attempts=1, initial=0.001, max_delay=0.001, timeout=5.0)
    emb = CohereEmbedder(api_key="test-key", base_url=cohere_double.url, retry=policy)
    with pytest.raises(ProviderError):
        await emb.embed_documents(["x"])
    assert len(cohere_double.requests) == 1  # the SDK's own 2 retries would make it 3


async def test_connection_errors_are_retried_then_wrapped() -> None:
    with socket.socket() as s:  # a port that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = CohereEmbedder(api_key="test-key", base_url=f"http://127.0.0.1:{port}", retry=FAST_RETRY)
    with pytest.raises(ProviderHTTPError) as info:
        await emb.embed_documents(["x"])
    assert info.value.status_code is None and "ConnectError" in str(info.value)


def test_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="COHERE_API_KEY"):
        CohereEmbedder()
    monkeypatch.setenv("COHERE_API_KEY", "from-env")
    assert CohereEmbedder().dim == 1536
    with pytest.raises(ConfigError):
        CohereEmbedder(model="embed-english-v3.0", dim=512)
    with pytest.raises(ConfigError):
        CohereEmbedder(dim=300)
    with pytest.raises(ConfigError, match="dim="):
        CohereEmbedder(model="embed-someday-v9")
    assert CohereEmbedder(model="embed-someday-v9", dim=64).dim == 64


def test_missing_sdk_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cohere", None)
    with pytest.raises(MissingDependency) as info:
        CohereReranker(api_key="k")
    assert info.value.extra == "cohere"


# -- rerank -----------------------------------------------------------------------------------


DOCS = ["a dog named Max", "the weather today", "Melanie has a dog", "stock prices"]


async def test_rerank_request_and_sorting(cohere_double: Any) -> None:
    rr = reranker(cohere_double)
    assert isinstance(rr, Reranker)
    results = await rr.rerank("melanie dog", DOCS)
    assert [r.index for r in results][:2] == [2, 0]
    assert all(a.score >= b.score for a, b in itertools.pairwise(results))
    (req,) = cohere_double.requests
    assert req["path"] == "/v2/rerank" and req["headers"]["authorization"] == "Bearer test-key"
    assert req["body"]["model"] == "rerank-v3.5" and req["body"]["query"] == "melanie dog"
    assert req["body"]["documents"] == DOCS
    top = await rr.rerank("melanie dog", DOCS, top_n=1)
    assert [r.index for r in top] == [2] and cohere_double.requests[-1]["body"]["top_n"] == 1
    assert await rr.rerank("q", []) == []


async def test_rerank_chunks_long_lists(cohere_double: Any) -> None:
    rr = reranker(cohere_double, batch_size=3)
    results = await rr.rerank("melanie dog", DOCS, top_n=2)
    assert [len(r["body"]["documents"]) for r in cohere_double.requests] == [3, 1]
    assert [r.index for r in results] == [2, 0]


async def test_rerank_retries_and_fails_fast(cohere_double: Any) -> None:
    cohere_double.script = [429, 503]
    assert len(await reranker(cohere_double).rerank("dog", DOCS)) == 4
    assert len(cohere_double.requests) == 3
    cohere_double.requests.clear()
    cohere_double.script = [400]
    with pytest.raises(ProviderHTTPError):
        await reranker(cohere_double).rerank("dog", DOCS)
    assert len(cohere_double.requests) == 1


async def test_rerank_with_fallback_swallows_provider_errors(
    cohere_double: Any, caplog: pytest.LogCaptureFixture
) -> None:
    cohere_double.script = [400]
    with caplog.at_level(logging.WARNING):
        assert await rerank_with_fallback(reranker(cohere_double), "dog", DOCS, 2) is None
    assert "keeping the fused order" in caplog.text
    ok = await rerank_with_fallback(reranker(cohere_double), "melanie dog", DOCS, 2)
    assert ok is not None and [r.index for r in ok] == [2, 0]
