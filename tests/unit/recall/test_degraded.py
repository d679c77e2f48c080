"""Recall degrades to what still works when a provider fails, and the bundle says so."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from uniko_memory.facade import Uniko
from uniko_memory.recall import RecallCache, RecallConfig, recall

from ._corpus import AGENT, MAIN, build

pytestmark = pytest.mark.asyncio(loop_scope="module")
SECRET_DETAIL = "sk-test-do-not-log-0123456789"


class DownEmbedder:
    dim = 384
    model_id = "down"

    async def embed_queries(self, texts: object) -> object:
        raise TimeoutError(f"upstream timed out for key {SECRET_DETAIL}")

    async def embed_documents(self, texts: object) -> object:
        raise TimeoutError("upstream timed out")


class BrokenReranker:
    async def rerank(self, query: str, documents: list[str], top_n: int | None = None) -> object:
        raise ConnectionError("rerank service unavailable")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN)
    try:
        yield u
    finally:
        await u.close()


async def test_healthy_recall_is_not_degraded(uni: Uniko) -> None:
    bundle = await recall(uni.kb, "Where did Caroline adopt her cat?", RecallConfig(), agent=AGENT)
    assert bundle.items and bundle.degraded == []


async def test_embedder_down_falls_back_to_bm25_and_says_so(
    uni: Uniko, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = RecallConfig(explain=True)
    bundle = await recall(uni.kb, "Caroline cat shelter", cfg, agent=AGENT, embedder=DownEmbedder())
    assert bundle.items, "keyword search still answers"
    assert any("BM25" in d for d in bundle.degraded)
    assert bundle.trace is not None and bundle.trace["degraded"] == bundle.degraded
    # Only keyword channels ran: no vector list contributed.
    channels = {c for item in bundle.items for c in item.channels}
    assert channels and not any("vec" in c for c in channels), channels
    assert "TimeoutError" in caplog.text and SECRET_DETAIL not in caplog.text


async def test_degraded_bundle_is_not_cached(uni: Uniko) -> None:
    cache = RecallCache()
    cfg = RecallConfig()
    query = "Caroline cat shelter"
    down = await recall(uni.kb, query, cfg, agent=AGENT, embedder=DownEmbedder(), cache=cache)
    assert down.degraded
    healthy = await recall(uni.kb, query, cfg, agent=AGENT, cache=cache)
    assert healthy.degraded == [] and healthy is not down


async def test_reranker_failure_keeps_fused_order_and_says_so(uni: Uniko) -> None:
    query = "Where did Caroline adopt her cat?"
    plain = await recall(uni.kb, query, RecallConfig(), agent=AGENT)
    cfg = RecallConfig(rerank={"enabled": True})
    bundle = await recall(uni.kb, query, cfg, agent=AGENT, reranker=BrokenReranker())
    assert [i.node_id for i in bundle.items] == [i.node_id for i in plain.items]
    assert bundle.degraded == ["reranker failed: fused order kept"]
