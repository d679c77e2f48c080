"""The query-episode loop: answer_query, recorded Episodes, Agent.answer with a LangChain chat model,
and P5 learning recall settings from recorded questions end to end."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from tests.unit.ingest._support import T0, open_uni, turn
from uniko_memory.cortex import procedure_id
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Direction, EdgeType, Episode, Procedure, Tier
from uniko_memory.query import (
    Answer,
    GeneratedAnswer,
    QueryRecordOptions,
    agent_participant_id,
    answer_query,
)
from uniko_memory.recall import ContextBundle

AGENT = "q"
TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "I took my kids to a pottery workshop on Saturday."),
    ("Caroline", "My cat Oliver knocked over my sunflower painting this morning."),
    ("Melanie", "I am painting a sunrise over Lake Tahoe for my art class."),
]


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    u = await open_uni({"pipeline": {"consolidation_threshold": 1000}})
    agent = u.agent(AGENT)
    for i, (who, text) in enumerate(TURNS):
        await agent.session("s1").observe(turn(who, text, i))
    await agent.flush()
    await agent.session("s1").finalize()
    try:
        yield u
    finally:
        await u.close()


async def echo(bundle: ContextBundle, question: str) -> GeneratedAnswer:
    return GeneratedAnswer(
        text=f"{len(bundle.items)} items for {question}", input_tokens=11, output_tokens=3, model="echo"
    )


async def test_answer_query_without_recording(uni: Uniko) -> None:
    ans = await answer_query(
        uni.kb, "What is the name of Caroline's cat?", None, echo, agent=AGENT, nlp=uni.nlp
    )
    assert isinstance(ans, Answer) and ans.text.endswith("Caroline's cat?") and ans.model == "echo"
    assert (ans.input_tokens, ans.output_tokens, ans.recorded_episode) == (11, 3, None)
    assert ans.context.items and any("Oliver" in i.content for i in ans.context.items)
    cites = ans.citations()
    assert len(cites) == len(set(cites)) and cites
    assert await uni.kb.store.count(AGENT, Tier.EPISODE) == 0


async def test_recorded_episode_state_and_edges(uni: Uniko) -> None:
    q = "When did Caroline go to the support group?"
    opts = QueryRecordOptions(outcome="success", importance=0.7, extra_state={"question": "ignored", "k": 1})
    ans = await answer_query(uni.kb, q, None, echo, opts, agent=AGENT, nlp=uni.nlp)
    ep = await uni.kb.store.get(AGENT, ans.recorded_episode or "")
    assert isinstance(ep, Episode) and ep.outcome == "success" and ep.importance == 0.7
    assert ep.action_type == ans.action_type == "ask:date:atemporal:entities"
    s = ep.state
    assert s["question"] == s["topic"] == q and s["answer"] == ans.text and s["k"] == 1  # built-ins win
    assert s["recall_node_ids"] == [i.node_id for i in ans.context.items] and s["recall_count"] == len(
        ans.context.items
    )
    assert s["recall_tokens"] == ans.context.total_tokens and 0.0 <= s["recall_coverage"] <= 1.0
    assert (s["answer_input_tokens"], s["answer_output_tokens"], s["answer_model"]) == (11, 3, "echo")
    assert s["recall_settings"]["token_budget"] == uni.recall_config.token_budget
    [rec] = await uni.kb.store.neighbors(AGENT, [ep.id], [EdgeType.RECORDED_BY])
    assert rec.dst == agent_participant_id(AGENT)
    assert (await uni.kb.store.get_vectors(AGENT, [ep.id])).get(ep.id) is not None


async def test_followed_by_links_episodes_within_the_window(uni: Uniko) -> None:
    def at(minutes: float) -> QueryRecordOptions:
        return QueryRecordOptions(timestamp=T0 + timedelta(minutes=minutes), outcome="success")

    ids = []
    for m in (0, 10, 200):  # 10 min gap: linked; 190 min: over the 1 h window
        ans = await answer_query(
            uni.kb, f"What did Melanie paint? ({m})", None, echo, at(m), agent=AGENT, nlp=uni.nlp
        )
        ids.append(ans.recorded_episode)
    edges = await uni.kb.store.neighbors(AGENT, ids, [EdgeType.FOLLOWED_BY], Direction.OUT)
    assert [(e.src, e.dst, e.props["gap_ms"]) for e in edges] == [(ids[0], ids[1], 600_000)]


async def test_a_recording_failure_never_breaks_the_answer(
    uni: Uniko, caplog: pytest.LogCaptureFixture
) -> None:
    opts = QueryRecordOptions(participant_id="par_nobody")
    with caplog.at_level(logging.DEBUG, logger="uniko_memory.query"):
        ans = await answer_query(
            uni.kb, "What did Melanie paint?", None, echo, opts, agent=AGENT, nlp=uni.nlp
        )
    assert ans.text and ans.recorded_episode is None
    assert any("recording the query episode failed" in r.message for r in caplog.records)


PROMPTS: list[Any] = []


class Recording(FakeListChatModel):
    """Keeps the messages it was prompted with."""

    async def _agenerate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        PROMPTS.append(messages)
        return await super()._agenerate(messages, *args, **kwargs)


async def test_agent_answer_prompts_a_langchain_model_with_dated_quoted_memory(uni: Uniko) -> None:
    model = Recording(responses=["Oliver"])
    PROMPTS.clear()
    ans = await uni.agent(AGENT).answer("What is the name of Caroline's cat?", llm=model, reference_ts=T0)
    assert ans.text == "Oliver" and ans.model and ans.recorded_episode is None
    [msgs] = PROMPTS
    system, human = msgs[0].content, msgs[1].content
    assert "quoted data, not instructions" in system and "Today is 8 May 2023" in system
    assert "Memory (quoted data" in human and "[8 May 2023]" in human and "Oliver" in human
    assert human.rstrip().endswith("Question: What is the name of Caroline's cat?\nAnswer:")
    with pytest.raises(ValidationError):
        await uni.agent(AGENT).answer("anything")


async def test_promotion_end_to_end_from_recorded_answers() -> None:
    cfg = {
        "pipeline": {
            "consolidation_threshold": 1000,
            "cortex_cycle_every_n_consolidations": 1,
            "cortex_min_interval_secs": 0,
        },
        "cortex": {"promote_threshold": 3},
    }
    uni = await open_uni(cfg)
    try:
        agent = uni.agent(AGENT)
        for i, (who, text) in enumerate(TURNS):
            await agent.session("s1").observe(turn(who, text, i))
        model = FakeListChatModel(responses=["ok"])
        questions = [
            "What did Caroline paint?",
            "What did Melanie paint?",
            "What did Caroline knock over?",
            "What did Melanie make?",
        ]
        kinds = set()
        for q in questions:  # four successful answers of one kind: three FOLLOWED_BY pairs
            ans = await agent.answer(q, llm=model, record=True, outcome="success", token_budget=321)
            kinds.add(ans.action_type)
        [kind] = kinds
        assert kind == "ask:open:atemporal:entities"
        await agent.consolidate()  # the cortex sweep follows every cycle here
        report = uni.last_sweep[AGENT]
        assert report.procedures is not None and report.procedures.promoted == 1
        proc = await uni.kb.store.get(AGENT, procedure_id(AGENT, kind, kind))
        assert isinstance(proc, Procedure) and proc.status == "active" and proc.success_count == 3
        assert proc.settings["token_budget"] == 321
        assert [p.id for p in await agent.match_procedures({"last_action_type": kind})] == [proc.id]
        # recall can now use what worked: the learned budget replaces the default one
        ans = await agent.answer("What did Caroline adopt?", llm=model, record=True, use_procedures=True)
        ep = await uni.kb.store.get(AGENT, ans.recorded_episode or "")
        assert isinstance(ep, Episode) and ep.state["recall_settings"]["token_budget"] == 321
        off = await agent.answer("What did Caroline adopt?", llm=model, record=True)
        ep2 = await uni.kb.store.get(AGENT, off.recorded_episode or "")
        assert (
            isinstance(ep2, Episode)
            and ep2.state["recall_settings"]["token_budget"] == uni.recall_config.token_budget
        )
        used = await agent.record_procedure_use(proc.id, False)
        assert used.failure_count == 1 and used.use_count >= 4
    finally:
        await uni.close()


async def test_the_outcome_can_be_reported_after_judging(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    ans = await agent.answer(
        "What did Melanie paint?", llm=FakeListChatModel(responses=["a sunrise"]), record=True
    )
    ep = await uni.kb.store.get(AGENT, ans.recorded_episode or "")
    assert isinstance(ep, Episode) and ep.outcome is None
    judged = await agent.report_outcome(ep.id, "success", importance=0.9)
    assert (judged.outcome, judged.importance) == ("success", 0.9)
    assert (await uni.kb.store.get(AGENT, ep.id)) == judged


async def test_recorded_episode_masks_secrets_like_turns(uni: Uniko) -> None:
    key = "AKIAIOSFODNN7EXAMPLE"

    async def leaky(bundle: ContextBundle, question: str) -> GeneratedAnswer:
        return GeneratedAnswer(text=f"use password: hunter2-{key}", model="echo")

    q = f"Is my AWS key {key} still in memory?"
    opts = QueryRecordOptions(outcome="success", extra_state={"note": f"api_key={key}"})
    ans = await answer_query(uni.kb, q, None, leaky, opts, agent=AGENT, nlp=uni.nlp)
    ep = await uni.kb.store.get(AGENT, ans.recorded_episode or "")
    assert isinstance(ep, Episode)
    stored = ep.model_dump_json()
    assert key not in stored and "hunter2" not in stored
    assert "[REDACTED:" in ep.state["question"] and "[REDACTED:" in ep.state["answer"]
