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
