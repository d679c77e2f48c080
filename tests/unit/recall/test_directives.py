"""Questions about the assistant's conduct find the turn that set the rule (issue 41, long chats).

The patterns on hand-made questions and turns, the lift on candidates (the assistant's own advice
is no rule; an unrelated question moves nothing), then end to end: a rule said once, buried among
long answers that fit the question's words better, comes first.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.ingest._support import open_uni
from uniko_memory.ingest import Turn
from uniko_memory.model import Message
from uniko_memory.recall.directives import asks_about_conduct, favour_directives, states_a_rule_or_taste
from uniko_memory.recall.fusion import Candidate

T = datetime(2024, 3, 4, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "question",
    [
        "Which dataframe library are your examples supposed to use for me?",
        "How should you format code for me?",
        "What did I ask you to do with acronyms?",
        "Which editor would I prefer?",
        "Is it ok for you to suggest paid tools?",
    ],
)
def test_conduct_questions(question: str) -> None:
    assert asks_about_conduct(question)


@pytest.mark.parametrize(
    "question",
    ["What did Caroline paint?", "When did Jon visit Paris?", "How many children does Melanie have?"],
)
def test_questions_about_others_are_not(question: str) -> None:
    assert not asks_about_conduct(question)


def test_rules_and_tastes() -> None:
    assert states_a_rule_or_taste("From now on use polars instead of pandas in your examples.")
    assert states_a_rule_or_taste("Please keep code examples under 25 lines.")
    assert states_a_rule_or_taste("I'd rather cycle than drive.")
    assert not states_a_rule_or_taste("The vendor drops CSV files on an SFTP server every 15 minutes.")


def _message(mid: str, sender: str, text: str) -> Message:
    return Message(
        id=mid,
        agent="a",
        external_id=mid,
        session_id="s",
        sender_id=f"par_{sender}",
        sender_name=sender,
        content=text,
        timestamp=T,
    )


def test_the_lift_skips_the_assistant_s_advice_and_reorders_only() -> None:
    advice = Candidate(node=_message("m1", "assistant", "Always pin your versions."), fused=1.0)
    rule = Candidate(node=_message("m2", "user", "From now on always pin versions for me."), fused=0.8)
    other = Candidate(node=_message("m3", "user", "The build takes 4 minutes."), fused=0.9)
    ranked = favour_directives([advice, other, rule], 0.5, 60)
    assert [c.node.id for c in ranked] == ["m2", "m1", "m3"]
    assert len(ranked) == 3
    assert favour_directives([advice, other], 0.0, 60) == [advice, other]


async def test_a_rule_said_once_comes_first() -> None:
    uni = await open_uni({"recall": {"fusion": {"directive_boost": 1.0}}}, real_embedder=True)
    try:
        agent = uni.agent("rules")
        session = agent.session("s1")
        turns = [
            ("user", "I'm building a data pipeline for sensor readings in Python."),
            ("user", "From now on, use polars instead of pandas in your examples."),
        ]
        for i in range(6):
            turns.append(
                (
                    "assistant",
                    f"Here is step {i} of the pipeline with dataframes: read the CSV files into a "
                    "dataframe, group the readings by sensor, compute rolling means over the "
                    "dataframe, and write the dataframe examples back to Parquet files.",
                )
            )
        for i, (sender, text) in enumerate(turns):
            to = "user" if sender == "assistant" else "assistant"
            await session.observe(
                Turn(sender=sender, content=text, at=T + timedelta(minutes=i), addressed_to=to)
            )
        await agent.flush()
        question = "Which dataframe library should your examples use for me?"
        best = await agent.recall(question, limit=1)
        assert [i.kind for i in best.items] == ["message"] and "polars" in best.items[0].content
    finally:
        await uni.close()
