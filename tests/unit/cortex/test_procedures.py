"""P5: promotion from successful FOLLOWED_BY pairs, use tracking, matching, and learned settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from tests.unit.consolidation._support import AGENT, T0, new_kb
from uniko_memory.cortex import (
    action_type_for,
    match_procedures,
    parse_precondition,
    precondition_holds,
    procedure_id,
    procedure_settings_for,
    promote_procedures,
    record_procedure_use,
)
from uniko_memory.errors import NotFound
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import Edge, EdgeType, Episode, Procedure, Tier, make_id

PID = "par_me"


@pytest.fixture
async def kb() -> AsyncIterator[KnowledgeBase]:
    k = await new_kb(cortex={"promote_threshold": 3})
    try:
        yield k
    finally:
        await k.close()


async def chain(
    kb: KnowledgeBase, steps: list[tuple[str, str]], *, pid: str = PID, tag: str = ""
) -> list[str]:
    """Episodes (action, outcome) linked by FOLLOWED_BY in order."""
    ids = []
    async with kb.store.unit(AGENT) as u:
        for i, (action, outcome) in enumerate(steps):
            eid = make_id("epi", AGENT, tag, str(i))
            u.put(
                Episode(
                    id=eid,
                    agent=AGENT,
                    action_type=action,
                    outcome=outcome,
                    timestamp=T0 + timedelta(minutes=i),
                    participant_id=pid,
                    state={"recall_settings": {"token_budget": 300 + (i % 2), "limit": 7}},
                )
            )
            u.put_edge(Edge(type=EdgeType.RECORDED_BY, src=eid, dst=pid))
            if ids:
                u.put_edge(Edge(type=EdgeType.FOLLOWED_BY, src=ids[-1], dst=eid, props={"gap_ms": 60_000}))
            ids.append(eid)
    return ids


async def test_pairs_seen_three_times_become_active(kb: KnowledgeBase) -> None:
    s = "success"
    # a→b three times (both successful), b→a twice, and one a→b whose second step failed
    await chain(kb, [("a", s), ("b", s), ("a", s), ("b", s), ("a", s), ("b", s)], tag="x")
    await chain(kb, [("a", s), ("b", "failure")], tag="y")
    stats = await promote_procedures(kb.store, kb.config, kb.embedder, AGENT, participant_id=PID)
    assert stats.promoted == 1
    ab = await kb.store.get(AGENT, procedure_id(AGENT, "a", "b"))
    ba = await kb.store.get(AGENT, procedure_id(AGENT, "b", "a"))
    assert isinstance(ab, Procedure) and ab.status == "active" and ab.success_count == 3
    assert ab.name == "a → b" and ab.precondition_rule == "last_action_type=a"
    assert ab.settings["limit"] == 7 and ab.settings["token_budget"] in (300, 301)
    assert isinstance(ba, Procedure) and ba.status == "candidate" and ba.success_count == 2
    again = await promote_procedures(kb.store, kb.config, kb.embedder, AGENT, participant_id=PID)
    assert again.promoted == 0  # idempotent
    assert (await kb.store.get(AGENT, ab.id)) == ab


async def test_episodes_of_another_participant_do_not_count(kb: KnowledgeBase) -> None:
    s = "success"
    await chain(kb, [("a", s), ("b", s)] * 3, pid="par_other")
    stats = await promote_procedures(kb.store, kb.config, kb.embedder, AGENT, participant_id=PID)
    assert stats.pairs == 0 and not await kb.store.find(AGENT, Tier.PROCEDURE)


async def test_candidates_are_promoted_when_the_count_reaches_the_threshold(kb: KnowledgeBase) -> None:
    s = "success"
    await chain(kb, [("a", s), ("b", s), ("a", s), ("b", s)], tag="one")
    await promote_procedures(kb.store, kb.config, kb.embedder, AGENT)
    p = await kb.store.get(AGENT, procedure_id(AGENT, "a", "b"))
    assert isinstance(p, Procedure) and p.status == "candidate"
    await chain(kb, [("a", s), ("b", s)], tag="two")
    stats = await promote_procedures(kb.store, kb.config, kb.embedder, AGENT)
    p = await kb.store.get(AGENT, procedure_id(AGENT, "a", "b"))
    assert isinstance(p, Procedure) and p.status == "active" and stats.promoted == 1


async def test_use_deprecates_and_restores(kb: KnowledgeBase) -> None:
    s = "success"
    await chain(kb, [("a", s), ("b", s)] * 3)
    await promote_procedures(kb.store, kb.config, kb.embedder, AGENT)
    pid = procedure_id(AGENT, "a", "b")
    statuses = []
    for ok in [False, False, False, False, False]:  # 3/(3+k): .75 .6 .5 .43 .375
        p = await record_procedure_use(kb.store, kb.config, AGENT, pid, ok)
        statuses.append(p.status)
    assert statuses == ["active"] * 4 + ["deprecated"]
    assert p.failure_count == 5 and p.use_count >= 5 and p.last_used_at is not None
    for _ in range(5):  # 4/9 .44, 5/10, 6/11 .545, 7/12 .583, 8/13 .615
        p = await record_procedure_use(kb.store, kb.config, AGENT, pid, True)
    assert p.status == "active" and p.effectiveness >= 0.6
    with pytest.raises(NotFound):
        await record_procedure_use(kb.store, kb.config, AGENT, "prc_missing", True)


async def test_use_never_promotes_a_candidate(kb: KnowledgeBase) -> None:
    await chain(kb, [("a", "success"), ("b", "success")])
    await promote_procedures(kb.store, kb.config, kb.embedder, AGENT)
    p = await record_procedure_use(kb.store, kb.config, AGENT, procedure_id(AGENT, "a", "b"), True)
    assert p.status == "candidate"


def test_preconditions_parse_and_fail_closed() -> None:
    assert parse_precondition("") == []
    assert parse_precondition("a=1, b = x") == [("a", "1"), ("b", "x")]
    for bad in ("a", "a=1,", "=1", "a=1=2", "a=1,,b=2"):
        assert parse_precondition(bad) is None
        assert not precondition_holds(bad, {"a": "1"})
    assert precondition_holds("", {})
    assert precondition_holds("last_action_type=a,n=3", {"last_action_type": "a", "n": 3})
    assert not precondition_holds("last_action_type=a", {})


async def test_match_procedures_returns_active_matches_by_effectiveness(kb: KnowledgeBase) -> None:
    async with kb.store.unit(AGENT) as u:
        for name, rule, eff, status in [
            ("p1", "last_action_type=a", 0.7, "active"),
            ("p2", "last_action_type=a", 0.9, "active"),
            ("p3", "last_action_type=b", 1.0, "active"),
            ("p4", "", 0.5, "active"),
            ("p5", "last_action_type=a", 1.0, "candidate"),
            ("p6", "last_action_type", 1.0, "active"),  # malformed
        ]:
            u.put(
                Procedure(
                    id=f"prc_{name}",
                    agent=AGENT,
                    name=name,
                    precondition_rule=rule,
                    effectiveness=eff,
                    status=status,
                )
            )
    found = await match_procedures(kb.store, AGENT, {"last_action_type": "a"})
    assert [p.name for p in found] == ["p2", "p1", "p4"]


async def test_settings_for_a_kind_of_question(kb: KnowledgeBase) -> None:
    date_q = action_type_for("date", True, True)
    assert date_q == "ask:date:temporal:entities"
    s = "success"
    await chain(kb, [("ask:open:atemporal:general", s), (date_q, s)] * 3)
    await promote_procedures(kb.store, kb.config, kb.embedder, AGENT)

    class Intent:
        expected_answer_type = "date"
        temporal_window = (T0, T0)
        entity_refs = ("Caroline",)

    got = await procedure_settings_for(kb, AGENT, Intent())
    assert got is not None and got["limit"] == 7
    assert await procedure_settings_for(kb, AGENT, "ask:person:atemporal:entities") is None
    assert await procedure_settings_for(kb, AGENT, Intent(), last_action_type="nope") is None
