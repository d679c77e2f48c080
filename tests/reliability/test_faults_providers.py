"""Provider faults through the facade: embedder, reranker and chat model timing out or failing 5xx.

- Embedder (the real Cohere provider against a local HTTP double): transient 5xx and timeouts are
  retried by the shared tenacity policy and nobody notices; an outage that outlasts the retries
  sends P7a to a dead letter, the turn stays stored and BM25-searchable, and the dead-letter timer
  retries it later, after which the turn is vector-searchable.
- Reranker raising: recall keeps the fused order and says so in its trace.
- Chat model: five consecutive failures open the shared circuit breaker (answers fail fast with
  ``CircuitOpen``, health says "degraded"), a probe after the recovery window closes it again; LLM
  triple refinement falls back to the rule triples meanwhile, so consolidation is unchanged.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
import pytest

from tests.reliability._faults_support import AGENT, HashEmbedder, turns
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import CircuitOpen, ProviderError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import DeadLetter, Message, Tier
from uniko_memory.nlp.pipeline import NlpPipeline
from uniko_memory.providers.retry import RetryPolicy

pytest.importorskip("cohere")
pytest.importorskip("werkzeug")

FAST_RETRY = RetryPolicy(max_attempts=3, initial=0.001, max_delay=0.005, timeout=1.0)
DIM = 256


def _turn(item: dict[str, Any]) -> Turn:
    return Turn(**{k: v for k, v in item.items() if k != "session"})


async def _wait_until(pred: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------- embedder
@dataclass
class CohereEmbedDouble:
    """``/v2/embed`` like Cohere. ``script``: responses to give first (a status, or "slow": answer
    after the client's timeout); ``down``: answer 503 to everything."""

    url: str = ""
    script: list[int | str] = field(default_factory=list)
    down: bool = False
    requests: int = 0

    def handle(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests += 1
        step = self.script.pop(0) if self.script else 200
        if step == "slow":
            time.sleep(1.5)  # past the client's 1 s timeout
        elif self.down or step != 200:
            status = 503 if self.down else int(step)
            return status, {"message": f"injected {status}"}
        texts = body["texts"]
        vecs = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM).tolist() for t in texts]
        return 200, {
            "id": "emb-1",
            "response_type": "embeddings_by_type",
            "embeddings": {"float": vecs},
            "texts": texts,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 1}},
        }


@pytest.fixture
def cohere() -> Iterator[CohereEmbedDouble]:
    from werkzeug.serving import make_server
    from werkzeug.wrappers import Request, Response

    double = CohereEmbedDouble()

    @Request.application
    def app(request: Request) -> Response:
        status, payload = double.handle(json.loads(request.get_data() or b"{}"))
        return Response(json.dumps(payload), status=status, mimetype="application/json")

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    double.url = f"http://127.0.0.1:{server.port}"
    try:
        yield double
    finally:
        server.shutdown()
        thread.join(timeout=5)


@pytest.fixture
async def cohere_uni(cohere: CohereEmbedDouble) -> AsyncIterator[Uniko]:
    from uniko_memory.providers.embed.cohere import CohereEmbedder

    embedder = CohereEmbedder(api_key="test-key", base_url=cohere.url, dim=DIM, retry=FAST_RETRY)
    config = {
        "pipeline": {
            "consolidation_threshold": 1_000_000,
            "dead_letter_check_interval_secs": 0.1,
            "retry_initial_delay_ms": 50,
            "retry_max_delay_ms": 200,
        }
    }
    uni = await Uniko.in_memory(UnikoConfig.build(config), embedder=embedder, nlp=NlpPipeline(mode="rules"))
    try:
        yield uni
    finally:
        await uni.close()
        await embedder.aclose()


async def _dead_letters(uni: Uniko) -> list[DeadLetter]:
    found = await uni.kb.store.find(AGENT, Tier.DEAD_LETTER, limit=100)
    return [d for d in found if isinstance(d, DeadLetter)]


async def _vector_top(uni: Uniko, message_node_id: str) -> str | None:
    """The top vector hit for the message's own embedded text (the double's vectors are random)."""
    node = await uni.kb.store.get(AGENT, message_node_id)
    assert node is not None
    query = await uni.kb.embedder.embed_query(node.search_text() or "")
    hits = await uni.kb.store.vector_search(AGENT, Tier.MESSAGE, query, k=1)
    return hits[0].node.id if hits else None


async def test_transient_embedder_failures_are_retried_unnoticed(
    cohere: CohereEmbedDouble, cohere_uni: Uniko
) -> None:
    agent = cohere_uni.agent(AGENT)
    cohere.script = ["slow", 503]  # a timeout, then a 5xx, then the answer: one P7a call
    item = turns(0, 1, "s0")[0]
    result = await agent.session("s0").observe(_turn(item))
    await agent.flush(timeout=30)
    assert cohere.requests == 3 and not cohere.script
    assert await _dead_letters(cohere_uni) == []
    [msg] = await cohere_uni.kb.store.find(AGENT, Tier.MESSAGE, limit=10)
    assert isinstance(msg, Message) and msg.post_ingest_done
    assert await _vector_top(cohere_uni, result.message_node_id) == result.message_node_id


async def test_embedder_outage_is_dead_lettered_and_retried_later(
    cohere: CohereEmbedDouble, cohere_uni: Uniko
) -> None:
    agent = cohere_uni.agent(AGENT)
    cohere.down = True
    items = turns(0, 3, "s0")
    result = await agent.session("s0").commit_unit([_turn(t) for t in items])  # acknowledged
    await agent.flush(timeout=30)
    [dl] = await _dead_letters(cohere_uni)
    assert dl.step == "p7a_embeddings" and dl.status == "pending"
    assert "HTTP 503" in dl.error  # the provider's failure, after FAST_RETRY's three attempts
    ids = [r.message_node_id for r in result.results]
    assert await cohere_uni.kb.store.get_vectors(AGENT, ids) == {}
    # The turns are stored and found by text while the embedder is down.
    hits = await cohere_uni.kb.store.text_search(AGENT, Tier.MESSAGE, "Paris sister")
    assert ids[2] in [h.node.id for h in hits]
    assert cohere_uni.health()["pipeline"]["dead_letters_pending"] == 1

    cohere.down = False  # the provider is back: the dead-letter timer retries on its own

    async def recovered() -> bool:
        return len(await cohere_uni.kb.store.get_vectors(AGENT, ids)) == len(ids)

    await _wait_until(recovered)
    await _wait_until(lambda: _resolved(cohere_uni))
    assert cohere_uni.health()["pipeline"]["dead_letters_pending"] == 0
    assert await _vector_top(cohere_uni, ids[2]) == ids[2]
    msgs = await cohere_uni.kb.store.get_many(AGENT, ids)
    assert all(isinstance(m, Message) and m.post_ingest_done for m in msgs.values())


async def _resolved(uni: Uniko) -> bool:
    return [d.status for d in await _dead_letters(uni)] == ["resolved"]


# ---------------------------------------------------------------------------------- reranker
class RaisingReranker:
    model_id = "tests/raising-reranker"

    def __init__(self) -> None:
        self.calls = 0

    async def rerank(self, query: str, documents: Sequence[str], top_n: int | None = None) -> Any:
        self.calls += 1
        raise TimeoutError("reranker timed out (injected)")


class ReversingReranker:
    model_id = "tests/reversing-reranker"

    async def rerank(self, query: str, documents: Sequence[str], top_n: int | None = None) -> Any:
        from uniko_memory.providers.rerank.base import RerankResult

        n = len(documents)
        return [RerankResult(index=i, score=float(i)) for i in reversed(range(n))]


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    config = {"pipeline": {"consolidation_threshold": 1_000_000}}
    u = await Uniko.in_memory(
        UnikoConfig.build(config), embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules")
    )
    try:
        yield u
    finally:
        await u.close()


async def _ids(uni: Uniko, query: str) -> tuple[list[str], dict[str, Any]]:
    bundle = await uni.agent(AGENT).recall(query, explain=True, rerank={"enabled": True}, limit=5)
    return [i.node_id for i in bundle.items], bundle.trace or {}


async def test_a_failing_reranker_leaves_the_fused_order(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    for item in turns(0, 12, "s0"):
        await agent.session("s0").observe(_turn(item))
    await agent.flush(timeout=30)
    query = "Where does Caroline work?"
    fused, _ = await _ids(uni, query)
    assert len(fused) >= 3

    uni.kb.reranker = ReversingReranker()  # type: ignore[attr-defined]
    reranked, _ = await _ids(uni, query)
    assert reranked != fused  # the reranker is consulted

    uni.kb.reranker = failing = RaisingReranker()  # type: ignore[attr-defined]
    kept, trace = await _ids(uni, query)
    assert failing.calls == 1
    assert kept == fused
    assert trace.get("rerank") == "failed; fused order kept"


# ---------------------------------------------------------------------------------- chat model
def _flaky_chat() -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class FlakyChat(BaseChatModel):
        """Times out and answers 503 in turn while ``fail``; then answers "Google"."""

        fail: bool = True
        calls: int = 0

        @property
        def _llm_type(self) -> str:
            return "flaky"

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            self.calls += 1
            if self.fail:
                if self.calls % 2:
                    raise TimeoutError("chat model timed out (injected)")
                req = httpx.Request("POST", "https://llm.invalid/v1/chat")
                raise httpx.HTTPStatusError("503", request=req, response=httpx.Response(503, request=req))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Google"))])

    return FlakyChat()


async def test_five_chat_failures_open_the_breaker_and_a_probe_closes_it() -> None:
    pytest.importorskip("langchain_core")
    config = {"pipeline": {"circuit_failure_threshold": 5, "circuit_recovery_ms": 300}}
    uni = await Uniko.in_memory(
        UnikoConfig.build(config), embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules")
    )
    try:
        agent = uni.agent(AGENT)
        await agent.session("s0").observe(_turn(turns(0, 1, "s0")[0]))
        llm = _flaky_chat()
        for _ in range(5):
            with pytest.raises(ProviderError) as info:
                await agent.answer("Where does Caroline work?", llm=llm)
            assert not isinstance(info.value, CircuitOpen)
            assert "timed out" in str(info.value) or "503" in str(info.value)
        assert llm.calls == 5
        health = uni.health()["pipeline"]
        assert health["llm_circuit"] == "open" and health["state"] == "degraded"
        with pytest.raises(CircuitOpen, match="circuit open after 5 consecutive failures"):
            await agent.answer("Where does Caroline work?", llm=llm)
        assert llm.calls == 5  # refused without calling the model

        llm.fail = False
        await asyncio.sleep(0.35)  # the recovery window passes: one probe goes through and succeeds
        answer = await agent.answer("Where does Caroline work?", llm=llm)
        assert answer.text == "Google" and llm.calls == 6
        assert uni.health()["pipeline"]["llm_circuit"] == "closed"
    finally:
        await uni.close()


@pytest.mark.slow  # the spaCy pipeline (rule observations need the parse), two consolidations
async def test_llm_triples_fall_back_to_rules_while_the_breaker_is_open() -> None:
    pytest.importorskip("langchain_core")
    from uniko_memory.consolidation import LlmTripleSource
    from uniko_memory.nlp.pipeline import default_pipeline
    from uniko_memory.providers.chat import LangChainChat

    async def facts(llm: Any) -> tuple[Uniko, set[str]]:
        config = {"pipeline": {"consolidation_threshold": 1_000_000, "circuit_recovery_ms": 60_000}}
        uni = await Uniko.in_memory(
            UnikoConfig.build(config), embedder=HashEmbedder(), nlp=default_pipeline()
        )
        if llm is not None:
            uni.triple_source = LlmTripleSource(
                LangChainChat(llm, breaker=uni.llm_breaker), batch_size=2, concurrency=1
            )
        agent = uni.agent(AGENT)
        for item in turns(0, 12, "s0"):
            await agent.session("s0").observe(_turn(item))
        stats = await agent.consolidate()
        assert stats is not None and stats.facts_created > 0
        found = await uni.kb.store.find(AGENT, Tier.FACT, limit=1000)
        return uni, {f.id for f in found}

    plain, want = await facts(None)
    await plain.close()
    llm = _flaky_chat()
    uni, got = await facts(llm)
    try:
        assert got == want  # the rule triples stood in for every failed or refused batch
        assert llm.calls == 5 and uni.triple_source.fallbacks > 5  # later batches were refused
        assert uni.health()["pipeline"]["llm_circuit"] == "open"
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- recall
class QueryOutageEmbedder(HashEmbedder):
    """Documents embed fine (ingest), queries fail while ``down``."""

    down = False

    async def embed_query(self, text: str) -> np.ndarray:
        if self.down:
            raise ConnectionError("embedding service unreachable (injected)")
        return await super().embed_query(text)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise ConnectionError("embedding service unreachable (injected)")
        return await super().embed_queries(texts)


async def test_recall_degrades_when_embedder_down() -> None:
    embedder = QueryOutageEmbedder()
    config = {"pipeline": {"consolidation_threshold": 1_000_000}}
    uni = await Uniko.in_memory(UnikoConfig.build(config), embedder=embedder, nlp=NlpPipeline(mode="rules"))
    try:
        agent = uni.agent(AGENT)
        for item in turns(0, 12, "s0"):
            await agent.session("s0").observe(_turn(item))
        await agent.flush(timeout=30)
        embedder.down = True
        bundle = await agent.recall("Where does Caroline work?", explain=True)
        assert any("Google" in i.content for i in bundle.items)  # BM25 still finds it
        assert any("BM25" in d and "embedder" in d for d in bundle.degraded), bundle.degraded
        assert bundle.trace is not None and bundle.trace["degraded"] == bundle.degraded
    finally:
        await uni.close()
