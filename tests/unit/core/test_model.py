from datetime import UTC, datetime, timedelta, timezone

import pytest

from uniko_memory.errors import UnknownTier
from uniko_memory.model import (
    Entity,
    Fact,
    Message,
    Tier,
    Viewer,
    entity_id,
    is_well_formed,
    node_class,
    to_uuid,
)


def _msg(**kw: object) -> Message:
    base: dict[str, object] = dict(
        id="m1",
        agent="a",
        external_id="t1",
        session_id="s",
        sender_id="p",
        sender_name="Caroline",
        content="I went to a support group",
        timestamp=datetime(2023, 5, 8, 13, 56),
    )
    base.update(kw)
    return Message(**base)  # type: ignore[arg-type]


def test_naive_datetimes_become_utc_and_aware_are_converted() -> None:
    assert _msg().timestamp.tzinfo is UTC
    cest = timezone(timedelta(hours=2))
    assert _msg(timestamp=datetime(2023, 5, 8, 15, 56, tzinfo=cest)).timestamp == datetime(
        2023, 5, 8, 13, 56, tzinfo=UTC
    )


def test_round_trip_json() -> None:
    m = _msg(addressed_to=["q"], metadata={"k": [1, 2]})
    assert Message.model_validate_json(m.model_dump_json()) == m


def test_entity_ids_are_deterministic_and_normalised_per_agent() -> None:
    assert entity_id("a", "Caroline", "person") == entity_id("a", "  caroline ", "person")
    assert entity_id("a", "Caroline", "person") != entity_id("a", "Caroline", "location")
    assert entity_id("a", "Caroline", "person") != entity_id("b", "Caroline", "person")
    assert to_uuid("x") == to_uuid("x")


def test_redacted_copy_blanks_content_only() -> None:
    r = _msg(metadata={"secret": 1}).redacted_copy()
    assert isinstance(r, Message)
    assert r.redacted and r.content == "" and r.metadata == {}
    assert r.sender_name == "Caroline" and r.search_text() is None


def test_search_text_and_dimensions() -> None:
    m = _msg()
    assert m.search_text() == "Caroline: I went to a support group"
    assert (m.session_key(), m.participant_key()) == ("s", "p")
    f = Fact(
        id="f",
        agent="a",
        subject="Caroline",
        predicate="go_to",
        object="support group",
        valid_from=datetime(2023, 5, 7),
    )
    # no lemma triple is ever shown: the tensed template, or the supporting Observation's sentence
    assert f.search_text() == "Caroline goes to support group"
    said = f.model_copy(update={"text": "Caroline went to a support group on 7 May 2023"})
    assert said.statement() == "Caroline went to a support group on 7 May 2023"  # what a prompt shows
    assert said.search_text() == "Caroline goes to support group"  # what search matches: the triple
    assert said.redacted_copy().statement() == ""
    e = Entity(
        id="e",
        agent="a",
        name="Paris",
        entity_type="location",
        first_seen=datetime(2023, 1, 1),
        last_seen=datetime(2023, 1, 2),
    )
    assert e.search_text() == "Paris (location)"


def test_unknown_tier() -> None:
    assert node_class("message") is Message
    assert node_class(Tier.FACT) is Fact
    with pytest.raises(UnknownTier):
        node_class("memes")


def test_visibility_fails_closed() -> None:
    v = Viewer(participant_id="p1", teams=frozenset({"t1"}), orgs=frozenset({"o"}))
    assert v.admits("public") and v.admits("") and v.admits(None)
    assert v.admits("private:p1") and v.admits("team:t1") and v.admits("org:o")
    for other in ("private:p2", "team:t2", "secret:p1", "private:", "PUBLIC", "private: p1"):
        assert not v.admits(other)
    assert is_well_formed("team:x") and not is_well_formed("weird:x") and not is_well_formed("org:")


def test_merged_visibility_never_widens_a_private_source() -> None:
    from uniko_memory.model import AGENT_ONLY, merged_visibility

    assert merged_visibility("public", "private:ana") == "public"
    assert merged_visibility("private:ana", "") == "public"
    assert merged_visibility("private:ana", "private:ana") == "private:ana"
    assert merged_visibility("team:x", "team:x") == "team:x"
    assert merged_visibility("private:ana", "team:x") == AGENT_ONLY
    assert merged_visibility(AGENT_ONLY, "private:ana") == AGENT_ONLY
    assert merged_visibility(AGENT_ONLY, "public") == "public"
