"""Issue 16.10: bad input that raised a raw Python exception now gets the library's error, or a
documented normalisation, at the call that takes it (never later, at the first write)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pydantic
import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

AGENT = "raw"


async def test_a_query_with_a_lone_surrogate_is_recalled_with_a_replacement_character(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    await agent.session("s1").observe(Turn(sender="Ana", content="I moved to Lisbon last spring."))
    await agent.flush()
    bundle = await agent.recall("\ud800 Lisbon")  # was UnicodeEncodeError
    assert any("Lisbon" in item.content for item in bundle.items)
    assert (await agent.recall("\ufffd Lisbon")).items == bundle.items  # the same query


@pytest.mark.parametrize("hours", [14, -14])
def test_a_time_out_of_range_in_utc_is_a_validation_error_naming_the_field(hours: int) -> None:
    year, day = (1, 1) if hours > 0 else (9999, 31)
    at = datetime(
        year, 12 if year == 9999 else 1, day, 23 if hours < 0 else 0, tzinfo=timezone(timedelta(hours=hours))
    )
    with pytest.raises(pydantic.ValidationError, match="out of range once converted to UTC") as info:
        Turn(sender="Ana", content="hello", at=at)  # was OverflowError
    assert info.value.errors()[0]["loc"] == ("at",)
    assert isinstance(info.value, ValueError)


async def test_the_extreme_utc_times_themselves_are_stored(uni: Uniko) -> None:
    session = uni.agent(AGENT).session("edges")
    for at in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC)):
        result = await session.observe(Turn(sender="Ana", content="Tomorrow I fly to Lisbon.", at=at))
        assert not result.was_replay
    await uni.agent(AGENT).flush()


@pytest.mark.parametrize(
    ("agent_id", "message"),
    [
        ("a" * 257, "257 characters, over the limit of 256"),
        ("x\udc00y", "lone surrogate"),
        (" ", "non-empty"),
    ],
)
async def test_an_agent_id_no_node_could_carry_is_refused_by_uni_agent(
    uni: Uniko, agent_id: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        uni.agent(agent_id)  # was accepted, then failed at observe
    uni.agent("a" * 256)  # the limit itself is fine


@pytest.mark.parametrize(
    ("agent_id", "kind"),
    [
        ("sk-live-4eC39HqLyjWDarjtT1zdp7dc", "openai_key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        ("bot-ghp_FAKEexample0123456789abcdefghijklmno", "github_token"),
    ],
)
async def test_an_agent_id_holding_a_secret_is_refused_by_uni_agent(
    uni: Uniko, agent_id: str, kind: str
) -> None:
    """Issue 40.12: every node, log line and export names its agent, so the secret would be
    everywhere; it is refused as a turn or session id is, naming the kind, never the value."""
    with pytest.raises(
        ValidationError, match=rf"agent has what looks like a secret \({kind}\) in its id"
    ) as info:
        uni.agent(agent_id)  # was accepted
    assert agent_id not in str(info.value)
    uni.agent("4111111111111111")  # a number that is the whole id is a numeric id, not a card


async def test_an_agent_id_holding_a_secret_is_kept_when_masking_is_off() -> None:
    from tests.unit.ingest._support import open_uni

    u = await open_uni({"ingest": {"redact_secrets": False}})
    try:
        assert u.agent("AKIAIOSFODNN7EXAMPLE").agent_id == "AKIAIOSFODNN7EXAMPLE"
    finally:
        await u.close()


#: Issue 40.12: each was a raw TypeError from deep in the engine.
_BAD_CALLS = {
    "forget_turn(None, None)": (
        lambda a: a.forget_turn(None, None),
        "forget_turn: session_id must be a non-empty string, got None",
    ),
    "forget_turn('s1', None)": (
        lambda a: a.forget_turn("s1", None),
        r"forget_turn: turn_id .* must be a non-empty string, got None",
    ),
    "delete_turn('s1', 7)": (lambda a: a.delete_turn("s1", 7), r"delete_turn: turn_id .* got int 7"),
    "forget_participant(None)": (
        lambda a: a.forget_participant(None),
        r"forget_participant: participant .* must be a non-empty string, got None",
    ),
    "forget_participant(123)": (lambda a: a.forget_participant(123), r"forget_participant: .* got int 123"),
    "feedback(None, True)": (
        lambda a: a.feedback(None, True),
        "feedback takes a ContextBundle, a list of its items or a list of node ids, got NoneType",
    ),
    "observe_each(None)": (
        lambda a: a.session("s1").observe_each(None),
        r"observe_each takes an iterable of Turns \(a list, say\), got NoneType",
    ),
    "observe_each('text')": (
        lambda a: a.session("s1").observe_each("I moved to Lisbon"),
        "observe_each takes an iterable of Turns .* got str",
    ),
    "observe_each(a Turn)": (
        lambda a: a.session("s1").observe_each(Turn(sender="Ana", content="hi")),
        r"got one Turn: pass \[turn\], or use observe",
    ),
    "commit_unit(None)": (
        lambda a: a.session("s1").commit_unit(None),
        "commit_unit takes an iterable of Turns",
    ),
}


@pytest.mark.parametrize("call", list(_BAD_CALLS))
async def test_a_bad_argument_to_a_verb_is_a_validation_error_saying_what_was_expected(
    uni: Uniko, call: str
) -> None:
    make, message = _BAD_CALLS[call]
    agent = uni.agent(AGENT)
    with pytest.raises(ValidationError, match=message):
        await make(agent)


def test_the_sync_twins_raise_the_same_validation_errors() -> None:
    from tests.unit.ingest._support import FakeEmbedder

    with Uniko.in_memory_sync(embedder=FakeEmbedder()) as u:
        agent = u.agent(AGENT)
        with pytest.raises(ValidationError, match="forget_turn: session_id"):
            agent.forget_turn_sync(None, None)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="forget_participant: participant"):
            agent.forget_participant_sync(123)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="feedback takes a ContextBundle"):
            agent.feedback_sync(None, True)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="observe_each takes an iterable of Turns"):
            agent.session("s1").observe_each_sync(None)  # type: ignore[arg-type]
        # A good call still works after the refusals.
        agent.session("s1").observe_each_sync([Turn(sender="Ana", content="I moved to Lisbon.")])
