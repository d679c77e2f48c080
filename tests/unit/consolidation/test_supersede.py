"""Supersession (issue 39): a newer value of the same attribute closes the older Fact, across verbs.

Slot reading on hand-made triples, the pure decision (``slot_supersessions``), a cycle on the
embedded store (valid_to, superseded_by, the SUPERSEDED_BY edge, marked Observations, drift
untouched), and the facade end to end: real text, real models, recall's marked rendering and its
bitemporal read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.ingest._support import open_uni
from uniko_memory.consolidation import run_cycle
from uniko_memory.consolidation.slots import SlotReading, Statement, cessation_head, read_slots
from uniko_memory.consolidation.supersede import (
    STOPPED,
    SUPERSEDED,
    Entry,
    slot_supersessions,
)
from uniko_memory.ingest import Turn
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import EdgeType, Entity, Observation, Tier

from ._support import AGENT, Writer, day, edges, facts, new_kb


def obs(content: str, **extra: object) -> Observation:
    return Observation(id="o", agent="a", content=content, observed_at=day(0), **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("content", "subject", "predicate", "obj", "key", "value"),
    [
        ("Maya lives in Paris", "Maya", "live_in", "Paris", "residence/maya", "paris"),
        ("Maya moved to Lyon in May 2024", "Maya", "move_to", "Lyon", "residence/maya", "lyon"),
        (
            "Since moving to Lyon Maya cycles to work",
            "Maya",
            "cycle_since",
            "moving to Lyon",
            "residence/maya",
            "lyon",
        ),
        (
            "Maya's brother Leo moved to Oslo",
            "Maya's brother Leo",
            "move_to",
            "Oslo",
            "residence/leo",
            "oslo",
        ),
        ("Maya works at Google", "Maya", "work_at", "Google", "employer/maya", "google"),
        (
            "Maya's new boss at Acme is great",
            "Maya's new boss at Acme",
            "be",
            "great",
            "employer/maya",
            "acme",
        ),
        ("Maya has started working as a nurse", "Maya", "start_work_as", "nurse", "job/maya", "nurse"),
        ("Maya is pescatarian now", "Maya", "be", "pescatarian", "diet/maya", "pescatarian"),
        ("Maya is dating Sarah now", "Maya", "date", "Sarah", "partner/maya", "sarah"),
        ("Maya has two cats now", "Maya", "have", "two cats", "count of cat/maya", "2"),
        (
            "Maya's favourite drink is matcha",
            "Maya's favourite drink",
            "be",
            "matcha",
            "favourite drink/maya",
            "matcha",
        ),
        ("Maya called off the wedding", "Maya", "call_off", "wedding", "date/wedding", "cancelled"),
        # an aside after the value is not part of it
        (
            "Chidi is vegetarian now, Ifeoma's influence",
            "Chidi",
            "be",
            "vegetarian now, Ifeoma's influence",
            "diet/chidi",
            "vegetarian",
        ),
        (
            "Omar is single again, just Omar and a cactus",
            "Omar",
            "be",
            "single again, just Omar and a cactus",
            "partner/omar",
            "single",
        ),
        # no partner is a value too
        ("Ivan is not seeing anyone anymore", "Ivan", "not_be_seeing", "anyone", "partner/ivan", "single"),
        ("Lucía is not with anyone anymore", "Lucía", "not_be_with", "anyone", "partner/lucía", "single"),
    ],
)
def test_slot_rules_read_the_attribute_whatever_the_verb(
    content: str, subject: str, predicate: str, obj: str, key: str, value: str
) -> None:
    [reading] = read_slots(obs(content), subject, predicate, obj)
    assert (reading.key, reading.value) == (key, value)


@pytest.mark.parametrize(
    ("content", "subject", "predicate", "obj"),
    [
        ("Maya works at home", "Maya", "work_at", "home"),  # a place, not an employer
        ("Maya joined a gym", "Maya", "join", "gym"),
        ("Maya does not live in Paris", "Maya", "not_live_in", "Paris"),  # negated: no value
        ("Maya loves the party", "Maya", "love", "party"),
        ("Maya is tired", "Maya", "be", "tired"),
        ("Maya has a cat", "Maya", "have", "a cat"),  # "a" is not a count
        ("Jon is also excited to guide", "Jon", "be", "also excited to guide"),  # no job noun phrase
        ("Maya is not seeing Sarah", "Maya", "not_be_seeing", "Sarah"),  # says who, not that no one
        ("Maya is vegetarian food, mostly", "Maya", "be", "vegetarian food, mostly"),  # not one diet word
    ],
)
def test_statements_that_fill_no_slot_are_left_alone(
    content: str, subject: str, predicate: str, obj: str
) -> None:
    assert read_slots(obs(content), subject, predicate, obj) == []


@pytest.mark.parametrize(
    ("content", "predicate", "obj", "stopped"),
    [
        ("Maya does not drink coffee anymore", "not_drink", "coffee", "coffee"),
        ("Maya no longer eats meat", "eat", "meat", "meat"),
        ("Maya quit smoking", "quit", "smoking", "smoking"),
        ("Jon is not going to give up on Jon's dreams", "not_will_give_up_on", "Jon's dreams", None),
        ("Jon will not quit on their dreams", "will_not_quit_on", "their dreams", None),
        ("Maya does not like coffee", "not_like", "coffee", None),  # a dislike, not a change
    ],
)
def test_only_a_statement_that_something_stopped_reads_as_stopping(
    content: str, predicate: str, obj: str, stopped: str | None
) -> None:
    assert cessation_head(Statement(obs(content), content.split()[0], predicate, obj)) == stopped


def test_an_event_date_is_read_from_the_statement_date() -> None:
    o = obs(
        "Maya says Leo is visiting on 12 July 2024",
        temporal_phrase="on 12 July 2024",
        anchor_lo=datetime(2024, 7, 12, tzinfo=UTC),
        anchor_hi=datetime(2024, 7, 13, tzinfo=UTC),
        anchor_granularity="day",
    )
    [visit] = read_slots(o, "Leo", "visit", None)
    assert (visit.key, visit.owner, visit.value, visit.object) == (
        "date/visit",
        "leo",
        "2024-07-12/day",
        "on 12 July 2024",
    )
    moved = obs("Maya says Leo's visit moved to 19 July 2024", anchor_lo=datetime(2024, 7, 19, tzinfo=UTC))
    [again] = read_slots(moved, "Leo's visit", "move", "19 July 2024")
    assert (again.key, again.owner, again.value) == ("date/visit", "leo", "2024-07-19/day")


def entry(at: int, fact: str, value: str, *, functional: bool = True, cue: bool = False, **kw: str) -> Entry:
    reading = SlotReading(
        kw.pop("attribute", "residence"), kw.pop("subject", "maya"), value, functional=functional, **kw
    )
    return Entry(day(at), fact, reading, change_cue=cue)


def test_a_newer_value_closes_the_older_at_the_change() -> None:
    [s] = slot_supersessions([entry(1, "paris", "paris"), entry(5, "lyon", "lyon")])
    assert (s.old, s.new, s.at, s.reason) == ("paris", "lyon", day(5), SUPERSEDED)


def test_the_value_said_last_is_never_closed() -> None:
    # Paris, then Lyon, then Paris again: Lyon closes; Paris holds now.
    found = slot_supersessions(
        [entry(1, "paris", "paris"), entry(5, "lyon", "lyon"), entry(9, "paris", "paris")]
    )
    assert [(s.old, s.new, s.at) for s in found] == [("lyon", "paris", day(9))]


def test_a_preference_changes_only_when_the_newer_statement_says_so() -> None:
    kw = {"attribute": "drink", "functional": False}
    assert slot_supersessions([entry(1, "coffee", "coffee", **kw), entry(3, "tea", "tea", **kw)]) == []  # type: ignore[arg-type]
    [s] = slot_supersessions([entry(1, "coffee", "coffee", **kw), entry(3, "tea", "tea", cue=True, **kw)])  # type: ignore[arg-type]
    assert (s.old, s.new) == ("coffee", "tea")


def test_events_of_one_kind_are_kept_apart_by_owner() -> None:
    date = {"attribute": "date", "subject": "visit"}
    found = slot_supersessions(
        [
            entry(1, "leo-12", "2024-07-12/day", owner="leo", **date),
            entry(2, "ana-03", "2024-08-03/day", owner="ana", **date),
            entry(5, "leo-19", "2024-07-19/day", owner="leo", **date),
        ]
    )
    assert [(s.old, s.new) for s in found] == [("leo-12", "leo-19")]


def test_an_event_named_without_owner_joins_the_only_one_it_can_mean() -> None:
    date = {"attribute": "date", "subject": "wedding"}
    found = slot_supersessions(
        [
            entry(1, "sept-7", "2024-09-07/day", owner="maya's sister", **date),
            entry(4, "off", "cancelled", **date),
        ]
    )
    assert [(s.old, s.new) for s in found] == [("sept-7", "off")]


# ---------------------------------------------------------------------------------- a cycle
@pytest.fixture
async def kb() -> AsyncIterator[KnowledgeBase]:
    k = await new_kb()
    try:
        yield k
    finally:
        await k.close()


async def cycle(kb: KnowledgeBase):  # type: ignore[no-untyped-def]
    return await run_cycle(kb.store, kb.config, kb.embedder, AGENT)  # type: ignore[arg-type]


async def test_a_cycle_supersedes_across_predicates_and_cycles(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    ent = await w.entity("Maya")
    paris = await w.say("Maya", "live_in", "Paris", day(1), about=[ent])
    first = await cycle(kb)
    assert first.facts_superseded == 0
    await w.say("Maya", "move_to", "Lyon", day(10), about=[ent])
    second = await cycle(kb)
    assert (second.facts_superseded, second.facts_invalidated, second.drift_alerts) == (1, 1, 0)
    [old] = await facts(kb, object="Paris")
    [new] = await facts(kb, object="Lyon")
    assert old.valid_to == day(10) and old.superseded_by == new.id and old.invalidation_reason == SUPERSEDED
    assert new.valid_to is None and new.slot == "residence/maya" and new.slot_value == "lyon"
    [edge] = await edges(kb, [old.id], EdgeType.SUPERSEDED_BY)
    assert edge.dst == new.id and edge.props["reason"] == SUPERSEDED
    marked = (await kb.store.get_many(AGENT, [paris.id]))[paris.id]
    assert (
        isinstance(marked, Observation) and marked.superseded_at == day(10) and marked.superseded_by == new.id
    )
    assert {e.dst for e in await edges(kb, [old.id], EdgeType.SUPPORTED_BY)} == {paris.id}  # provenance kept
    [entity] = await kb.store.find(AGENT, Tier.ENTITY)
    assert isinstance(entity, Entity) and entity.invalidation_count == 0  # a move is no contradiction


async def test_a_statement_that_something_stopped_closes_what_it_stopped(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Maya", "love", "strong coffee", day(1))
    await w.say("Maya", "love", "long walks", day(1))
    await cycle(kb)
    o = await w.say("Maya", "not_drink", "coffee", day(6))
    async with kb.store.unit(AGENT) as u:  # its sentence says "anymore"
        u.put(o.model_copy(update={"content": "Maya does not drink coffee anymore"}))
    stats = await cycle(kb)
    assert stats.facts_superseded == 1
    [coffee] = await facts(kb, object="strong coffee")
    [walks] = await facts(kb, object="long walks")
    assert coffee.valid_to == day(6) and coffee.invalidation_reason == STOPPED and walks.valid_to is None


# ---------------------------------------------------------------------------------- end to end
T = datetime(2024, 6, 3, 18, tzinfo=UTC)


async def test_recall_serves_the_current_value_and_marks_the_old_one() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 1000}}, real_embedder=True)
    try:
        agent = uni.agent("a")
        said = [
            ("s1", T, "I'm vegetarian, so please no meat at the dinner."),
            ("s1", T + timedelta(minutes=1), "I live in Paris with my two cats."),
            ("s2", T + timedelta(days=7), "Big news: I'm pescatarian now, I eat fish again."),
            ("s2", T + timedelta(days=7, minutes=1), "And we moved to Lyon last week."),
        ]
        for session, at, text in said:
            await agent.session(session).observe(Turn(sender="Maya", content=text, at=at, addressed_to="Sam"))
        await agent.flush()
        stats = await agent.consolidate()
        assert stats is not None and stats.facts_superseded >= 2
        text = (await agent.recall("Is Maya vegetarian?", token_budget=300)).render()
        assert "pescatarian" in text
        old = [line for line in text.splitlines() if "Maya is vegetarian" in line and "(observation)" in line]
        assert all("no longer true from 10 June 2024" in line for line in old)
        assert text.index("pescatarian") < text.index("vegetarian")
        # As of the day after the first session, the old value held and nothing is marked.
        before = (
            await agent.recall("Is Maya vegetarian?", token_budget=300, reference_ts=T + timedelta(days=1))
        ).render()
        assert "no longer true" not in before
    finally:
        await uni.close()
