"""No secret reaches a log record or an exception: ingest, recall, a failing provider, a Cohere key."""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

from tests.unit.ingest._support import turn
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import ProviderError
from uniko_memory.facade import Uniko
from uniko_memory.model import DeadLetter, Tier
from uniko_memory.providers.retry import RetryPolicy

from .conftest import POSITIVE, CapturingEmbedder, all_secrets, stored_text

AGENT = "logs"
#: Shaped like a real Cohere key (40 alphanumerics) but fabricated; the test double accepts only "test-key".
COHERE_KEY = "FAKEcohere0key0for0tests0only0AbCdEf0123"
FAST_RETRY = RetryPolicy(max_attempts=3, initial=0.001, max_delay=0.005, timeout=5.0)


def _record_text(record: logging.LogRecord) -> str:
    parts = [record.getMessage(), repr(record.args), record.exc_text or ""]
    if record.exc_info and record.exc_info[1] is not None:
        parts += traceback.format_exception(record.exc_info[1])
    return "\n".join(parts)


def _assert_no_leak(records: list[logging.LogRecord], secrets: list[str]) -> None:
    for record in records:
        text = _record_text(record)
        for secret in secrets:
            assert secret not in text, f"{secret!r} leaked into a {record.levelname} log of {record.name}"


class EchoingFailingEmbedder(CapturingEmbedder):
    """While ``failing``, document embedding fails with an error quoting its input, as careless SDKs do."""

    failing = True

    async def embed_documents(self, texts: Any) -> Any:
        if not self.failing:
            return await super().embed_documents(texts)
        self.seen += list(texts)
        raise ConnectionError(f"embedding service rejected the batch {list(texts)!r}")


async def test_ingest_recall_and_a_provider_failure_log_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    embedder = EchoingFailingEmbedder()
    uni = await Uniko.in_memory(UnikoConfig(), embedder=embedder)
    try:
        s = uni.agent(AGENT).session("s1")
        for i, case in enumerate(POSITIVE):
            await s.observe(turn("Caroline", case["text"], i, id=f"t{i}", metadata={"raw": case["text"]}))
        await uni.agent(AGENT).flush(timeout=60)
        await uni.agent(AGENT).recall("What keys and passwords did Caroline share?")
        # The failure path ran: the embedder raised, the pipeline logged it and wrote dead letters.
        dead = await uni.kb.store.find(AGENT, Tier.DEAD_LETTER, limit=1000)
        assert dead and all(isinstance(d, DeadLetter) and "rejected" in d.error for d in dead)
        assert any(r.levelno >= logging.WARNING and "p7a" in r.getMessage() for r in caplog.records)
        embedder.failing = False  # the provider recovers: retries and session finalisation embed
        assert await uni._pipeline.retry_dead_letters(force=True) >= 1
        await s.finalize()
        secrets = all_secrets()
        _assert_no_leak(caplog.records, secrets)
        stored = await stored_text(uni, AGENT)
        assert not [x for x in secrets if x in stored]
        assert not [x for x in secrets if x in "\n".join(embedder.seen)]
    finally:
        await uni.close()
    masked = [r for r in caplog.records if r.levelno == logging.INFO and "masked" in r.getMessage()]
    assert len(masked) == len(POSITIVE)  # one INFO line per turn: kinds and counts only
    assert "aws_access_key=" in "\n".join(r.getMessage() for r in masked)


async def test_cohere_key_never_reaches_logs_or_errors(
    cohere_double: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from uniko_memory.providers.embed.cohere import CohereEmbedder
    from uniko_memory.providers.rerank.base import rerank_with_fallback
    from uniko_memory.providers.rerank.cohere import CohereReranker

    pytest.importorskip("cohere")
    caplog.set_level(logging.DEBUG)
    emb = CohereEmbedder(api_key=COHERE_KEY, base_url=cohere_double.url, retry=FAST_RETRY)
    reranker = CohereReranker(api_key=COHERE_KEY, base_url=cohere_double.url, retry=FAST_RETRY)
    try:
        for obj in (emb, reranker, emb._caller, reranker._caller):
            assert COHERE_KEY not in repr(obj) and COHERE_KEY not in str(obj)
        cohere_double.script = [503]  # one transient failure (logged, retried), then 401 for the wrong key
        with pytest.raises(ProviderError) as info:
            await emb.embed_documents(["hello"])
        assert cohere_double.requests[-1]["headers"]["authorization"] == f"Bearer {COHERE_KEY}"  # it was sent
        error_text = "".join(traceback.format_exception(info.value)) + repr(info.value) + str(info.value)
        assert "401" in error_text and COHERE_KEY not in error_text
        assert await rerank_with_fallback(reranker, "query", ["a doc"]) is None  # logs the failure
    finally:
        await emb.aclose()
        await reranker.aclose()
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert any("reranker" in r.getMessage() for r in caplog.records)
    _assert_no_leak(caplog.records, [COHERE_KEY])
