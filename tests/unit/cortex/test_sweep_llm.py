"""Chat-model summaries wired into the sweep: facade (chat_model=, sweep(llm=)) → sweep → sessions.

Sessions the sweep auto-closes get an abstractive Summary written by the chat model, through the
engine's circuit breaker; a failing model leaves them with their extractive summary only.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from tests.unit.consolidation._support import AGENT, new_kb
from tests.unit.ingest._support import open_uni, turn
from uniko_memory.cortex import run_sweep
from uniko_memory.cortex.sessions import summarize_sessions
from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.model import Message, Summary, Tier, make_id, session_id
from uniko_memory.providers.chat import LangChainChat

FAKE_SUMMARY = "Caroline told Melanie she adopted a cat named Oliver."


class Down(FakeListChatModel):
    """A chat model whose every call fails (a dead endpoint)."""

    calls: int = 0

    async def _agenerate(self, *a: Any, **k: Any) -> Any:
        self.calls += 1
        raise RuntimeError("model down (injected)")


async def _summaries(uni: Uniko, agent: str, session: str) -> dict[str, str]:
    sid = session_id(agent, session)
    found = await uni.kb.store.find(agent, Tier.SUMMARY, limit=100)
    return {s.method: s.text for s in found if isinstance(s, Summary) and s.session_id == sid}


async def _chat_session(uni: Uniko, agent: str = "a", session: str = "s1") -> None:
    """Two turns in May 2023: idle for far longer than session_inactivity_secs, so the sweep closes it."""
    await (
        uni.agent(agent)
        .session(session)
        .commit_unit(
            [
                turn("Caroline", "I adopted a cat named Oliver last week.", 0),
                turn("Melanie", "Lovely! What colour is Oliver?", 1),
            ]
        )
    )
    await uni.agent(agent).session(session).finalize()


async def test_sweep_summarises_the_sessions_it_closes_with_the_chat_model() -> None:
    uni = await open_uni(chat_model=FakeListChatModel(responses=[FAKE_SUMMARY]))
    try:
        assert isinstance(uni.summary_chat, LangChainChat) and uni.summary_chat.breaker is uni.llm_breaker
        await _chat_session(uni)
        report = await uni.agent("a").sweep()
        assert report.sessions_closed == ["s1"] and report.sessions_summarized == ["s1"]
        assert not report.errors
        summaries = await _summaries(uni, "a", "s1")
        assert summaries["abstractive"] == FAKE_SUMMARY
        assert "extractive" in summaries and summaries["extractive"] != FAKE_SUMMARY  # kept beside it
    finally:
        await uni.close()


async def test_a_failing_model_falls_back_to_the_extractive_summary() -> None:
    down = Down(responses=["never"])
    uni = await open_uni(chat_model=down)
    try:
        await _chat_session(uni, session="s1")
        await _chat_session(uni, session="s2")
        report = await uni.agent("a").sweep()
        assert sorted(report.sessions_closed) == ["s1", "s2"] and report.sessions_summarized == []
        assert "summaries" not in report.errors  # per-session failures are absorbed, not a failed step
        for s in ("s1", "s2"):
            assert set(await _summaries(uni, "a", s)) == {"extractive"}
        assert down.calls == 2 and uni.llm_breaker.consecutive_failures == 2  # through the breaker
    finally:
        await uni.close()


async def test_an_open_circuit_refuses_fast_and_keeps_extractive_summaries() -> None:
    down = Down(responses=["never"])
    uni = await open_uni({"pipeline": {"circuit_failure_threshold": 1}}, chat_model=down)
    try:
        for s in ("s1", "s2", "s3"):
            await _chat_session(uni, session=s)
        report = await uni.agent("a").sweep()
        assert len(report.sessions_closed) == 3 and report.sessions_summarized == []
        assert down.calls == 1 and uni.llm_breaker.state == "open"  # the others were refused at once
        assert uni.health()["pipeline"]["llm_circuit"] == "open"
    finally:
        await uni.close()


async def test_sweep_llm_argument_overrides_and_none_means_extractive_only() -> None:
    uni = await open_uni()
    try:
        assert uni.summary_chat is None
        await _chat_session(uni, session="s1")
        report = await uni.agent("a").sweep()
        assert report.sessions_closed == ["s1"] and report.sessions_summarized == []
        assert set(await _summaries(uni, "a", "s1")) == {"extractive"}

        await _chat_session(uni, session="s2")
        report = await uni.agent("a").sweep(llm=FakeListChatModel(responses=[FAKE_SUMMARY]))
        assert report.sessions_closed == ["s2"] and report.sessions_summarized == ["s2"]
        assert (await _summaries(uni, "a", "s2"))["abstractive"] == FAKE_SUMMARY
    finally:
        await uni.close()


async def test_background_cycle_sweep_uses_the_chat_model() -> None:
    """The pipeline's consolidation cycle runs the gated sweep; its closed sessions get summaries too."""
    cfg = {"pipeline": {"cortex_cycle_every_n_consolidations": 1, "cortex_min_interval_secs": 0}}
    uni = await open_uni(cfg, chat_model=FakeListChatModel(responses=[FAKE_SUMMARY]))
    try:
        await _chat_session(uni)
        await uni.agent("a").consolidate()
        report = uni.last_sweep["a"]
        assert report.sessions_closed == ["s1"] and report.sessions_summarized == ["s1"]
        assert (await _summaries(uni, "a", "s1"))["abstractive"] == FAKE_SUMMARY
    finally:
        await uni.close()


async def test_set_chat_model_and_a_wrong_object() -> None:
    uni = await open_uni()
    try:
        assert uni.set_chat_model(FakeListChatModel(responses=["x"])) is uni
        assert isinstance(uni.summary_chat, LangChainChat)
        assert uni.set_chat_model(None).summary_chat is None
    finally:
        await uni.close()
    with pytest.raises(ConfigError, match="BaseChatModel"):
        await open_uni(chat_model=object())


async def test_run_sweep_with_chat_and_summarize_sessions_directly() -> None:
    kb = await new_kb()
    try:
        sid = make_id("ses", AGENT, "s1")
        async with kb.store.unit(AGENT) as u:
            u.put(
                Message(
                    id="msg_0",
                    agent=AGENT,
                    external_id="0",
                    session_id=sid,
                    sender_id="par_x",
                    sender_name="Caroline",
                    content="I adopted a cat named Oliver.",
                    timestamp=turn("x", "y").at,
                    seq=0,
                )
            )

        async def closes() -> list[str]:
            return ["s1", "empty"]  # "empty" has no messages: nothing to summarise

        chat = LangChainChat(FakeListChatModel(responses=[FAKE_SUMMARY]))
        report = await run_sweep(kb.store, kb.config, kb.embedder, AGENT, maintain_sessions=closes, chat=chat)
        assert report.sessions_closed == ["s1", "empty"] and report.sessions_summarized == ["s1"]
        assert await summarize_sessions(kb.store, AGENT, [], chat) == []

        class Boom:
            async def generate(self, messages: Any) -> Any:
                raise RuntimeError("boom")

        assert await summarize_sessions(kb.store, AGENT, [sid], Boom()) == []
    finally:
        await kb.close()
