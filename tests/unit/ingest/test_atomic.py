"""P1 + P2: one store transaction per unit, replay semantics, the session graph, entities, chunks."""

from __future__ import annotations

from typing import Any

import pytest

from uniko_memory.errors import IdConflict, ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Chunk, EdgeType, Entity, Message, Participant, Session, Tier, participant_id

from ._support import at, edges, messages, nodes, sentence_text, turn

AGENT = "atomic"


# ---------------------------------------------------------------------------------- atomicity
async def test_failure_inside_a_unit_leaves_nothing_behind(uni: Uniko, monkeypatch: Any) -> None:
    """A failure after the first turn is written (inside the store unit) rolls back the whole unit."""
    real = uni._atomic._write_turn
    calls = {"n": 0}

    async def failing(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("injected failure in the middle of the unit")
        return await real(*args, **kwargs)

    monkeypatch.setattr(uni._atomic, "_write_turn", failing)
    session = uni.agent(AGENT).session("s1")
    with pytest.raises(RuntimeError, match="injected"):
        await (
            session.unit()
            .turn("Caroline", "I moved to Paris last year.", at=at(0), id="u1")
            .turn("Melanie", "Paris sounds lovely, Caroline!", at=at(30), id="u2")
            .commit()
        )
    assert calls["n"] == 2
    for tier in (Tier.MESSAGE, Tier.SESSION, Tier.ENTITY, Tier.PARTICIPANT, Tier.CHUNK):
        assert await uni.kb.store.count(AGENT, tier) == 0, tier
    assert await uni.kb.store.agents() == []

    # The same unit commits cleanly once the fault is gone (nothing half-written blocks it).
    monkeypatch.setattr(uni._atomic, "_write_turn", real)
    result = await (
        session.unit()
        .turn("Caroline", "I moved to Paris last year.", at=at(0), id="u1")
        .turn("Melanie", "Paris sounds lovely, Caroline!", at=at(30), id="u2")
        .commit()
    )
    assert not result.was_replay
    assert len(await messages(uni, AGENT)) == 2


async def test_failure_at_commit_leaves_nothing_behind(uni: Uniko, monkeypatch: Any) -> None:
    store = uni.kb.store

    async def broken_commit(u: Any) -> None:
        raise OSError("disk full (injected)")

    monkeypatch.setattr(store, "_commit", broken_commit)
    with pytest.raises(OSError, match="injected"):
        await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I moved to Paris last year."))
    monkeypatch.undo()
    assert await store.count(AGENT) == 0


async def test_unit_commits_all_turns_together(uni: Uniko) -> None:
    result = await (
        uni.agent(AGENT)
        .session("s1")
        .unit()
        .turn("Caroline", "Hi Melanie!", at=at(0), addressed_to="Melanie")
        .turn("Melanie", "Hey Caroline, how was the weekend?", at=at(30), addressed_to="Caroline")
        .turn("Caroline", "Great, I went hiking in Yosemite.", at=at(60), addressed_to="Melanie")
        .commit()
    )
    assert len(result.results) == 3 and not result.was_replay
    msgs = await messages(uni, AGENT)
    assert [m.seq for m in msgs] == [0, 1, 2]
    session = await uni.kb.store.get(AGENT, result.results[0].session_node_id)
    assert isinstance(session, Session) and session.message_count == 3
    assert session.last_message_id == msgs[-1].id


# ---------------------------------------------------------------------------------- replay
async def test_replay_same_id_same_content_is_a_noop(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    first = await s.observe(turn("Caroline", "I went to a LGBTQ support group yesterday", id="D1:1"))
    assert not first.was_replay
    await uni.agent(AGENT).flush()
    before = {t: await uni.kb.store.count(AGENT, t) for t in Tier}
    again = await s.observe(turn("Caroline", "I went to a LGBTQ support group yesterday", id="D1:1"))
    assert again.was_replay
    assert again.message_node_id == first.message_node_id
    await uni.agent(AGENT).flush()
    assert {t: await uni.kb.store.count(AGENT, t) for t in Tier} == before
    session = await uni.kb.store.get(AGENT, first.session_node_id)
    assert isinstance(session, Session) and session.message_count == 1
    [entity] = await nodes(uni, AGENT, Tier.ENTITY) or [None]
    if isinstance(entity, Entity):  # a replay must not bump frequencies
        assert entity.frequency == 1


async def test_replay_of_a_whole_unit_is_a_noop(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    turns = [turn("A", "first line", 0, id="x1"), turn("B", "second line", 1, id="x2")]
    assert not (await s.commit_unit(turns)).was_replay
    replay = await s.commit_unit(turns)
    assert replay.was_replay and all(r.was_replay for r in replay.results)
    assert len(await messages(uni, AGENT)) == 2


async def test_turn_without_id_and_time_given_twice_is_a_replay(uni: Uniko) -> None:
    """Derived ids hash (session, sender, time, content): a retried identical turn is a no-op."""
    s = uni.agent(AGENT).session("s1")
    a = await s.observe(turn("Caroline", "Same words, same moment."))
    b = await s.observe(turn("Caroline", "Same words, same moment."))
    assert b.was_replay and a.message_id == b.message_id
    assert len(await messages(uni, AGENT)) == 1


async def test_same_id_different_content_is_an_id_conflict(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.observe(turn("Caroline", "I like tea.", id="D1:1"))
    with pytest.raises(IdConflict, match="D1:1"):
        await s.observe(turn("Caroline", "I like coffee.", id="D1:1"))
    [m] = await messages(uni, AGENT)
    assert m.content == "I like tea."


async def test_partial_unit_replay_is_an_id_conflict(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.observe(turn("Caroline", "I like tea.", id="p1"))
    with pytest.raises(IdConflict, match="partially"):
        await s.commit_unit(
            [turn("Caroline", "I like tea.", 0, id="p1"), turn("Melanie", "Me too!", 1, id="p2")]
        )
    assert [m.external_id for m in await messages(uni, AGENT)] == ["p1"]


async def test_duplicate_ids_in_one_unit_are_a_validation_error(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    with pytest.raises(ValidationError, match="appears twice"):
        await s.commit_unit([turn("A", "one", 0, id="dup"), turn("B", "two", 1, id="dup")])
    assert await uni.kb.store.count(AGENT) == 0


async def test_empty_unit_is_a_validation_error(uni: Uniko) -> None:
    with pytest.raises(ValidationError, match="at least one turn"):
        await uni.agent(AGENT).session("s1").unit().commit()


# ---------------------------------------------------------------------------------- session graph
async def test_session_participants_and_structural_edges(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    r1 = await s.observe(turn("Caroline", "Hi Melanie!", 0, addressed_to="Melanie", id="m1"))
    r2 = await s.observe(turn("Melanie", "Hi Caroline!", 1, addressed_to="Caroline", id="m2"))
    r3 = await s.observe(turn("Caroline", "Long time no see.", 5, addressed_to="Melanie", id="m3"))
    store = uni.kb.store

    session = await store.get(AGENT, r1.session_node_id)
    assert isinstance(session, Session)
    assert session.external_id == "s1" and session.message_count == 3
    assert session.started_at == at(0) and session.last_activity_at == at(150)
    assert set(session.participant_names) == {"Caroline", "Melanie"}

    people = {p.name: p for p in await nodes(uni, AGENT, Tier.PARTICIPANT) if isinstance(p, Participant)}
    assert set(people) == {"Caroline", "Melanie"}
    caroline, melanie = people["Caroline"].id, people["Melanie"].id
    assert r1.sender_node_id == caroline and r2.sender_node_id == melanie

    ids = [r1.message_node_id, r2.message_node_id, r3.message_node_id]
    out = await edges(uni, AGENT, ids)
    by_type: dict[EdgeType, set[tuple[str, str]]] = {}
    for e in out:
        by_type.setdefault(e.type, set()).add((e.src, e.dst))
    assert by_type[EdgeType.IN_SESSION] == {(i, session.id) for i in ids}
    assert by_type[EdgeType.SENT_BY] == {(ids[0], caroline), (ids[1], melanie), (ids[2], caroline)}
    assert by_type[EdgeType.ADDRESSED_TO] == {(ids[0], melanie), (ids[1], caroline), (ids[2], melanie)}
    nexts = {(e.src, e.dst): e.props for e in out if e.type is EdgeType.NEXT}
    assert nexts == {(ids[0], ids[1]): {"gap_ms": 30_000}, (ids[1], ids[2]): {"gap_ms": 120_000}}

    participated = await edges(uni, AGENT, [caroline, melanie], EdgeType.PARTICIPATED_IN)
    assert {(e.src, e.dst) for e in participated} == {(caroline, session.id), (melanie, session.id)}

    sent = await store.get(AGENT, ids[1])
    assert isinstance(sent, Message)
    assert sent.session_id == session.id and sent.sender_name == "Melanie" and sent.addressed_to == [caroline]
    assert sent.timestamp == at(30) and sent.seq == 1


async def test_sender_name_differs_from_sender_id(uni: Uniko) -> None:
    r = (
        await uni.agent(AGENT)
        .session("s1")
        .observe(turn("user-42", "Hello there, friend.", sender_name="Priya"))
    )
    p = await uni.kb.store.get(AGENT, r.sender_node_id)
    assert isinstance(p, Participant) and p.external_id == "user-42" and p.name == "Priya"
    assert r.sender_node_id == participant_id(AGENT, "user-42")


# ---------------------------------------------------------------------------------- entities
async def test_entity_upsert_frequency_first_last_seen_and_mentions(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    r1 = await s.observe(turn("Caroline", "I moved to Paris last year and Paris is lovely.", 0))
    r2 = await s.observe(turn("Melanie", "Did you ever visit Seattle?", 1))
    r3 = await s.observe(turn("Caroline", "Not yet, but Paris keeps me busy.", 4))
    assert "Paris" in r1.extracted_entities and "Paris" in r3.extracted_entities
    assert "Paris" not in r2.extracted_entities
    ents = {e.name: e for e in await nodes(uni, AGENT, Tier.ENTITY) if isinstance(e, Entity)}
    paris = ents["Paris"]
    assert paris.frequency == 3  # twice in the first turn, once in the third
    assert paris.first_seen == at(0) and paris.last_seen == at(120)
    mentions = {
        e.src: e.props for e in await edges(uni, AGENT, [paris.id], EdgeType.MENTIONS, direction="in")
    }
    assert mentions == {r1.message_node_id: {"count": 2}, r3.message_node_id: {"count": 1}}


async def test_entities_within_one_unit_accumulate(uni: Uniko) -> None:
    await (
        uni.agent(AGENT)
        .session("s1")
        .commit_unit([turn("A", "Seattle is rainy.", 0), turn("B", "Seattle is also green.", 1)])
    )
    [seattle] = [
        e for e in await nodes(uni, AGENT, Tier.ENTITY) if isinstance(e, Entity) and e.name == "Seattle"
    ]
    assert seattle.frequency == 2 and seattle.first_seen == at(0) and seattle.last_seen == at(30)


# ---------------------------------------------------------------------------------- chunks
async def test_long_message_gets_chunks(uni: Uniko) -> None:
    from uniko_memory.tokens import count_tokens

    text = sentence_text(120)
    assert count_tokens(text) > 1024
    r = await uni.agent(AGENT).session("s1").observe(turn("Archivist", text))
    assert len(r.chunk_node_ids) >= 4
    chunks = await uni.kb.store.get_many(AGENT, r.chunk_node_ids)
    ordered = sorted((c for c in chunks.values() if isinstance(c, Chunk)), key=lambda c: c.index)
    assert [c.index for c in ordered] == list(range(len(r.chunk_node_ids)))
    for c in ordered:
        assert c.parent_id == r.message_node_id and c.parent_tier is Tier.MESSAGE
        assert c.chunk_type == "message" and c.covered_ids == [r.message_node_id]
        assert 32 <= c.token_count <= 256
        assert text[c.start : c.end] == c.text
        assert c.text.rstrip().endswith(".")  # cut at sentence boundaries
    # Neighbouring chunks overlap a little (whole sentences of the previous chunk).
    assert any(ordered[i + 1].start < ordered[i].end for i in range(len(ordered) - 1))
    has_chunk = await edges(uni, AGENT, [r.message_node_id], EdgeType.HAS_CHUNK)
    assert {(e.dst, e.props["index"]) for e in has_chunk} == {(c.id, c.index) for c in ordered}


async def test_short_message_has_no_chunks(uni: Uniko) -> None:
    r = await uni.agent(AGENT).session("s1").observe(turn("A", sentence_text(40)))
    assert r.chunk_node_ids == []
    assert await uni.kb.store.count(AGENT, Tier.CHUNK) == 0


# ---------------------------------------------------------------------------------- timings
async def test_observe_reports_per_step_timings(uni: Uniko) -> None:
    r = await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I adopted a cat named Biscuit."))
    t = r.timings
    assert t is not None
    assert t.validate_ms >= 0 and t.ner_ms > 0 and t.commit_ms > 0
    assert t.total_ms >= t.validate_ms + t.ner_ms + t.commit_ms - 0.01


async def test_unit_result_carries_timings_and_per_turn_results(uni: Uniko) -> None:
    res = (
        await uni.agent(AGENT)
        .session("s1")
        .commit_unit([turn("A", "one two", 0), turn("B", "three four", 1)])
    )
    assert res.timings.total_ms > 0
    assert [r.message_id for r in res.results] == [m.external_id for m in await messages(uni, AGENT)]


def test_turn_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError):
        Turn(sender="a", content="b", colour="red")  # type: ignore[call-arg]


async def test_entity_is_as_private_as_the_turns_that_name_it() -> None:
    from tests.unit.ingest._support import open_uni, turn
    from uniko_memory.model import AGENT_ONLY, Entity, Tier

    uni = await open_uni()
    try:
        s = uni.agent("vis").session("s1")
        await s.observe(turn("Ana", "I sailed to Porto with Ben.", 0, visibility="private:Ana"))

        async def names() -> dict[str, str]:
            found = await uni.kb.store.find("vis", Tier.ENTITY, limit=100)
            return {f"{e.name}/{e.entity_type}": e.visibility for e in found if isinstance(e, Entity)}

        assert (await names()).get("Porto/location") == "private:Ana", await names()
        await s.observe(turn("Ben", "I told the crew that I sailed to Porto.", 1, visibility="team:crew"))
        assert (await names())["Porto/location"] == AGENT_ONLY  # two scopes: nobody's union, fail closed
        await s.observe(turn("Ben", "Everyone sailed to Porto.", 2))
        assert (await names())["Porto/location"] == "public"
    finally:
        await uni.close()
