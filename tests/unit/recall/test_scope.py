"""Scope filters (sessions, participants, since/until half-open, categories) pushed into every channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from uniko_memory.facade import Agent, Uniko
from uniko_memory.model import Message, Observation, participant_id, session_id
from uniko_memory.recall import ContextBundle

from ._corpus import AGENT, ALL_PHASES, MAIN, S2_START, S3_START, Line, build, message_by_text, nodes_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

BROAD = [
    "What did Caroline and Melanie talk about?",
    "cat Bailey shelter counseling",
    "salsa dance studio Jon",
    "violin Ava recital",
]
WORK = [
    Line(
        "w",
        "Jon",
        "The studio lease renewal is due in September.",
        S3_START + timedelta(days=1),
        category="work",
    ),
    Line(
        "w", "Jon", "I hired a bookkeeper for the studio accounts.", S3_START + timedelta(days=1, minutes=1)
    ),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build([*MAIN, *WORK])
    try:
        yield u
    finally:
        await u.close()


@pytest.fixture
def agent(uni: Uniko) -> Agent:
    return uni.agent(AGENT)


async def ask(agent: Agent, query: str, **options: Any) -> ContextBundle:
    return await agent.recall(query, use_cache=False, limit=30, token_budget=6000, **options)


@pytest.mark.parametrize("phases", ["default", "all"])
@pytest.mark.parametrize("sessions", [["s2"], ["s1", "s3"]])
async def test_sessions_scope(uni: Uniko, agent: Agent, sessions: list[str], phases: str) -> None:
    extra = ALL_PHASES if phases == "all" else {}
    wanted = {session_id(AGENT, s) for s in sessions}
    store = uni.kb.store
    for q in BROAD:
        b = await ask(agent, q, sessions=sessions, **extra)
        assert b.items, q
        assert {i.session_id for i in b.items} <= wanted, q
        for item in b.items:
            msgs = await store.get_many(AGENT, item.message_ids())
            assert all(isinstance(m, Message) and m.session_id in wanted for m in msgs.values())


async def test_sessions_scope_unknown_session_is_empty(agent: Agent) -> None:
    b = await ask(agent, BROAD[0], sessions=["nope"])
    assert b.items == []


@pytest.mark.parametrize("phases", ["default", "all"])
async def test_participants_scope(uni: Uniko, agent: Agent, phases: str) -> None:
    extra = ALL_PHASES if phases == "all" else {}
    jon = participant_id(AGENT, "Jon")
    for q in [*BROAD, "What did Caroline say about the youth shelter kids?"]:
        b = await ask(agent, q, participants=["Jon"], **extra)
        nodes = await nodes_of(uni, b)
        for item in b.items:
            node = nodes[item.node_id]
            if isinstance(node, Message):
                assert node.sender_id == jon, (q, item.rendered)
            elif isinstance(node, Observation):
                assert node.speaker_id == jon, (q, item.rendered)
            else:
                pytest.fail(f"{item.kind} has no participant and cannot satisfy the scope")
    assert (await ask(agent, "salsa dance studio", participants=["Jon"])).items


async def test_participants_scope_is_case_insensitive(agent: Agent) -> None:
    a = await ask(agent, "salsa dance studio", participants=["Jon"])
    b = await ask(agent, "salsa dance studio", participants=["jon"])
    assert [i.node_id for i in a.items] == [i.node_id for i in b.items]


@pytest.mark.parametrize("phases", ["default", "all"])
async def test_since_until_is_half_open(uni: Uniko, agent: Agent, phases: str) -> None:
    extra = ALL_PHASES if phases == "all" else {}
    first_s2 = await message_by_text(uni, "I adopted a second cat named Bailey from the shelter in Boston.")
    first_s3 = await message_by_text(uni, "I opened my dance studio downtown and the first class was salsa.")
    since, until = S2_START, S3_START
    assert first_s2.timestamp == since and first_s3.timestamp == until
    for q in [*BROAD, "cat named Bailey shelter in Boston", "opened my dance studio downtown salsa"]:
        b = await ask(agent, q, since=since, until=until, **extra)
        for item in b.items:
            assert item.timestamp is not None and since <= item.timestamp < until, (q, item.rendered)
        ids = {m for i in b.items for m in i.message_ids()}
        assert first_s3.id not in ids  # exactly at `until`: excluded
        if "Bailey" in q:
            assert first_s2.id in ids  # exactly at `since`: included


async def test_since_only_and_until_only(agent: Agent) -> None:
    late = await ask(agent, "Caroline", since=S3_START)
    assert late.items and all(i.timestamp is not None and i.timestamp >= S3_START for i in late.items)
    early = await ask(agent, "Caroline", until=S2_START)
    assert early.items and all(i.timestamp is not None and i.timestamp < S2_START for i in early.items)


async def test_until_also_bounds_the_evidence_inside_chunks(uni: Uniko, agent: Agent) -> None:
    until = S2_START + timedelta(minutes=5)  # mid-session: s2's chunks start before and end after it
    b = await ask(
        agent, "counseling program Bailey keyboard youth shelter", since=S2_START, until=until, **ALL_PHASES
    )
    store = uni.kb.store
    for item in b.items:
        msgs = await store.get_many(AGENT, item.message_ids())
        assert all(m.time_key() < until for m in msgs.values()), (item.kind, item.rendered)


async def test_categories_scope(uni: Uniko, agent: Agent) -> None:
    lease = await message_by_text(uni, WORK[0].text)
    b = await ask(agent, "studio lease bookkeeper accounts", categories=["work"], **ALL_PHASES)
    assert [i.node_id for i in b.items] == [lease.id]
    assert b.items[0].category == "work"
    assert (await ask(agent, "studio lease", categories=["hobby"])).items == []


async def test_scopes_combine(uni: Uniko, agent: Agent) -> None:
    b = await ask(
        agent, "Bailey counseling shelter", sessions=["s2"], participants=["Caroline"], **ALL_PHASES
    )
    assert b.items
    caroline, s2 = participant_id(AGENT, "Caroline"), session_id(AGENT, "s2")
    nodes = await nodes_of(uni, b)
    for node in nodes.values():
        assert node.session_key() == s2 and node.participant_key() == caroline
