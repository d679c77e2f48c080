"""Optional LLM triple refinement: used when it parses, the rule triples on any failure."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from uniko_memory.consolidation import LlmTripleSource, parse_reply, run_cycle
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.providers.chat import CircuitBreaker, LangChainChat

from ._support import AGENT, Writer, day, facts, new_kb


@pytest.fixture
async def kb() -> AsyncIterator[KnowledgeBase]:
    k = await new_kb()
    try:
        yield k
    finally:
        await k.close()


def test_reply_parsing() -> None:
    assert parse_reply("1. Caroline|works at|Google\n2. SKIP", 2) == [
        ("Caroline", "works_at", "Google"),
        None,
    ]
    assert parse_reply("Caroline|adopt|a cat", 1) == [("Caroline", "adopt", "a cat")]
    assert parse_reply("2) A|b|C\n1) nonsense", 2) == [False, ("A", "b", "C")]  # unparseable line → rules
    with pytest.raises(ValueError):
        parse_reply("one\ntwo\nthree", 2)


async def test_refined_triples_replace_the_rule_triples(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("she", "be", "there", day(1))
    await w.say("Tomas", "run", "18 km", day(2))
    model = FakeListChatModel(responses=["1. Caroline|works at|Google\n2. SKIP"])
    source = LlmTripleSource(LangChainChat(model))
    stats = await run_cycle(kb.store, kb.config, kb.embedder, AGENT, triples=source)
    assert stats.observations_processed == 2 and source.fallbacks == 0
    assert [(f.subject, f.predicate, f.object) for f in await facts(kb)] == [
        ("Caroline", "works_at", "Google")
    ]


class Broken(FakeListChatModel):
    async def _agenerate(self, *args: object, **kwargs: object):  # type: ignore[override]
        raise RuntimeError("provider down")


async def test_any_failure_falls_back_to_rule_triples(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Tomas", "run", "18 km", day(1))
    breaker = CircuitBreaker(failure_threshold=1, recovery_seconds=3600)
    source = LlmTripleSource(LangChainChat(Broken(responses=["x"]), breaker))
    await run_cycle(kb.store, kb.config, kb.embedder, AGENT, triples=source)
    assert breaker.state == "open" and source.fallbacks == 1
    assert [f.statement() for f in await facts(kb)] == ["Tomas run 18 km"]
    # With the circuit open the model is not even called, and the rules still work.
    await w.say("Tomas", "run", "21 km", day(2))
    await run_cycle(kb.store, kb.config, kb.embedder, AGENT, triples=source)
    assert source.fallbacks == 2 and len(await facts(kb)) == 2


async def test_an_unparseable_reply_falls_back(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Tomas", "run", "18 km", day(1))
    await w.say("Tomas", "swim", "2 km", day(2))
    source = LlmTripleSource(LangChainChat(FakeListChatModel(responses=["I cannot help with that."] * 3)))
    await run_cycle(kb.store, kb.config, kb.embedder, AGENT, triples=source)
    assert source.fallbacks == 1 and sorted(f.object for f in await facts(kb)) == ["18 km", "2 km"]
