"""Bad input: each case is a clear error or a documented normalisation (see ``ingest/turn.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pydantic
import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import EdgeType, Message, Participant, Session, Tier, participant_id

from ._support import at, edges, messages, nodes, turn

AGENT = "bad"


@pytest.mark.parametrize("content", ["", "   ", "\n\t \n", "\x00\x07"])
async def test_empty_or_whitespace_turn_is_refused(uni: Uniko, content: str) -> None:
    with pytest.raises(ValidationError, match="empty content"):
        await uni.agent(AGENT).session("s1").observe(turn("Caroline", content))
    assert await uni.kb.store.count(AGENT) == 0


async def test_one_empty_turn_refuses_the_whole_unit(uni: Uniko) -> None:
    with pytest.raises(ValidationError, match=r"turn 1 .*'e2'"):
        await (
            uni.agent(AGENT)
            .session("s1")
            .commit_unit([turn("A", "fine", 0, id="e1"), turn("B", " ", 1, id="e2")])
        )
    assert await uni.kb.store.count(AGENT) == 0


async def test_ten_megabyte_turn_is_refused_naming_the_limit(uni: Uniko) -> None:
    huge = "word " * 2_000_000  # 10 MB
    with pytest.raises(ValidationError) as info:
        await uni.agent(AGENT).session("s1").observe(turn("Caroline", huge, id="big"))
    msg = str(info.value)
    assert (
        "10,000,000 characters" in msg and "1,000,000" in msg and "max_turn_chars" in msg and "'big'" in msg
    )
    assert "ingest_artifact" in msg
    assert await uni.kb.store.count(AGENT) == 0


async def test_turn_size_limit_is_configurable() -> None:
    from ._support import open_uni

    uni = await open_uni({"ingest": {"max_turn_chars": 10}})
    try:
        with pytest.raises(ValidationError, match="over the limit of 10"):
            await uni.agent(AGENT).session("s1").observe(turn("A", "eleven char"))
        await uni.agent(AGENT).session("s1").observe(turn("A", "ten chars!"))
    finally:
        await uni.close()


async def test_control_characters_are_stripped_tabs_and_newlines_kept(uni: Uniko) -> None:
    raw = "Hello\x00 wor\x07ld\x1b!\r\nSecond\tline\rthird\x7f\x85 end"
    r = await uni.agent(AGENT).session("s1").observe(turn("Caroline", raw))
    [m] = await messages(uni, AGENT)
    assert m.content == "Hello world!\nSecond\tline\nthird end"
    assert Turn(sender="a", content=raw).content == m.content  # the normalisation is on the Turn
    hits = await uni.kb.store.text_search(AGENT, Tier.MESSAGE, "world")
    assert [h.id for h in hits] == [r.message_node_id]


def test_lone_surrogates_become_replacement_characters() -> None:
    assert Turn(sender="a", content="bad \ud800 surrogate").content == "bad \ufffd surrogate"


async def test_naive_datetimes_are_utc_and_aware_ones_are_converted(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.observe(Turn(sender="A", content="naive time", at=datetime(2023, 5, 8, 13, 56), id="n1"))
    cest = timezone(timedelta(hours=2))
    await s.observe(
        Turn(sender="B", content="aware time", at=datetime(2023, 5, 8, 16, 0, tzinfo=cest), id="n2")
    )
    m1, m2 = await messages(uni, AGENT)
    assert m1.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert m1.timestamp.utcoffset() == timedelta(0) and m2.timestamp.utcoffset() == timedelta(0)
    assert m2.timestamp == datetime(2023, 5, 8, 14, 0, tzinfo=UTC)
    nxt = await edges(uni, AGENT, [m1.id], EdgeType.NEXT)
    assert nxt[0].props == {"gap_ms": 4 * 60 * 1000}


async def test_turn_without_time_gets_now(uni: Uniko) -> None:
    from uniko_memory.model.time import utcnow

    before = utcnow()
    await uni.agent(AGENT).session("s1").observe(Turn(sender="A", content="when is now?"))
    [m] = await messages(uni, AGENT)
    assert before <= m.timestamp <= utcnow()


async def test_out_of_order_timestamps_are_accepted_and_flagged(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    r1 = await s.observe(turn("A", "this was said later", at=at(600), id="o1"))
    r2 = await s.observe(turn("B", "this was said earlier", at=at(0), id="o2"))
    r3 = await s.observe(turn("A", "and this after both", at=at(900), id="o3"))
    msgs = await messages(uni, AGENT)
    assert [m.id for m in msgs] == [
        r1.message_node_id,
        r2.message_node_id,
        r3.message_node_id,
    ]  # arrival order
    props = {(e.src, e.dst): e.props for e in await edges(uni, AGENT, [m.id for m in msgs], EdgeType.NEXT)}
    assert props[(r1.message_node_id, r2.message_node_id)] == {"gap_ms": 0, "out_of_order": True}
    assert props[(r2.message_node_id, r3.message_node_id)] == {"gap_ms": 900_000}
    session = await uni.kb.store.get(AGENT, r1.session_node_id)
    assert isinstance(session, Session)
    assert session.started_at == at(0) and session.last_activity_at == at(900)


async def test_unknown_addressee_becomes_a_participant(uni: Uniko) -> None:
    r = (
        await uni.agent(AGENT)
        .session("s1")
        .observe(turn("Caroline", "Say hi to everyone for me!", addressed_to=["Melanie", "Stranger Danger"]))
    )
    people = {p.name: p for p in await nodes(uni, AGENT, Tier.PARTICIPANT) if isinstance(p, Participant)}
    assert set(people) == {"Caroline", "Melanie", "Stranger Danger"}
    stranger = participant_id(AGENT, "Stranger Danger")
    assert people["Stranger Danger"].id == stranger
    addressed = await edges(uni, AGENT, [r.message_node_id], EdgeType.ADDRESSED_TO)
    assert {e.dst for e in addressed} == {participant_id(AGENT, "Melanie"), stranger}
    participated = await edges(uni, AGENT, [stranger], EdgeType.PARTICIPATED_IN)
    assert [e.dst for e in participated] == [r.session_node_id]
    m = await uni.kb.store.get(AGENT, r.message_node_id)
    assert isinstance(m, Message) and m.addressed_to == [participant_id(AGENT, "Melanie"), stranger]


def test_blank_sender_and_ids_are_refused_by_the_turn_model() -> None:
    with pytest.raises(pydantic.ValidationError):
        Turn(sender="   ", content="x")
    with pytest.raises(pydantic.ValidationError):
        Turn(sender="a", content="x", id="")
    assert Turn(sender=" a ", content="x", addressed_to=["", " b "]).addressed_to == ["b"]
    assert Turn(sender="a", content="x", addressed_to=None).addressed_to == []


async def test_blank_session_and_agent_ids_are_refused(uni: Uniko) -> None:
    with pytest.raises(ValidationError):
        uni.agent(AGENT).session("  ")
    with pytest.raises(ValidationError):
        uni.agent("")


async def test_non_turn_objects_are_refused(uni: Uniko) -> None:
    with pytest.raises(ValidationError, match="expected Turn"):
        await uni.agent(AGENT).session("s1").commit_unit([{"sender": "a", "content": "b"}])  # type: ignore[list-item]
