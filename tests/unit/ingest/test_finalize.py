"""Session finalisation: transcript chunks, observation chunks, summary; idempotent and incremental."""

from __future__ import annotations

import pytest

from uniko_memory.errors import NotFound
from uniko_memory.facade import Uniko
from uniko_memory.model import Chunk, EdgeType, Session, Summary, Tier
from uniko_memory.store.filters import Eq

from ._support import edges, messages, turn

AGENT = "fin"
LINES = [
    ("Caroline", "I went to a LGBTQ support group yesterday and it was really powerful for me."),
    ("Melanie", "That sounds amazing, Caroline. What did you talk about with the group there?"),
    ("Caroline", "We shared transgender stories and I felt accepted by everyone in the room."),
    ("Melanie", "I painted a sunrise over the lake last week, it reminded me of our camping trip."),
    ("Caroline", "I am researching adoption agencies because I want to give a child a loving home."),
    ("Melanie", "You would be a great mom. My kids love the pottery class we joined in March."),
]


async def _conversation(uni: Uniko, session: str, n: int, start: int = 0) -> None:
    s = uni.agent(AGENT).session(session)
    for i in range(start, start + n):
        speaker, text = LINES[i % len(LINES)]
        other = "Melanie" if speaker == "Caroline" else "Caroline"
        await s.observe(turn(speaker, f"{text} (turn {i})", i, addressed_to=other, id=f"{session}:{i}"))


async def _session_chunks(uni: Uniko, session_node_id: str, kind: str) -> list[Chunk]:
    found = await uni.kb.store.find(AGENT, Tier.CHUNK, Eq("parent_id", session_node_id), limit=1000)
    return sorted((c for c in found if isinstance(c, Chunk) and c.chunk_type == kind), key=lambda c: c.index)


async def test_transcript_chunks_cover_exactly_their_messages(uni: Uniko) -> None:
    await _conversation(uni, "s1", 30)
    s = uni.agent(AGENT).session("s1")
    report = await s.finalize()
    assert report.rebuilt and report.transcript_chunks >= 3 and report.observation_chunks >= 1
    msgs = await messages(uni, AGENT, s.node_id)
    chunks = await _session_chunks(uni, s.node_id, "session")
    assert len(chunks) == report.transcript_chunks
    covered: list[str] = []
    by_id = {m.id: m for m in msgs}
    for c in chunks:
        assert c.parent_tier is Tier.SESSION and c.session_id == s.node_id
        assert c.token_count <= 256
        lines = c.text.split("\n")
        assert lines == [f"{by_id[i].sender_name}: {by_id[i].content}" for i in c.covered_ids]
        assert c.start_time == by_id[c.covered_ids[0]].timestamp
        assert c.end_time == by_id[c.covered_ids[-1]].timestamp
        covered += c.covered_ids
    assert covered == [m.id for m in msgs]  # every message once, in order, never stretched
    has_chunk = await edges(uni, AGENT, [s.node_id], EdgeType.HAS_CHUNK)
    assert {e.dst for e in has_chunk} >= {c.id for c in chunks}

    obs_chunks = await _session_chunks(uni, s.node_id, "observation")
    assert len(obs_chunks) == report.observation_chunks
    assert all(c.covered_ids and c.text for c in obs_chunks)

    summary = await uni.kb.store.get(AGENT, report.summary_id or "")
    assert isinstance(summary, Summary) and summary.text and summary.session_id == s.node_id
    session = await uni.kb.store.get(AGENT, s.node_id)
    assert isinstance(session, Session)
    assert session.finalized_message_count == 30 and session.finalized_at is not None
    assert session.ended_at is None  # finalize without close keeps the session open


async def test_second_finalize_of_an_unchanged_session_is_a_noop(uni: Uniko) -> None:
    await _conversation(uni, "s1", 12)
    s = uni.agent(AGENT).session("s1")
    first = await s.finalize()
    generation = uni.kb.store.generation(AGENT)
    second = await s.finalize()
    assert first.rebuilt and not second.rebuilt
    assert (second.transcript_chunks, second.observation_chunks) == (
        first.transcript_chunks,
        first.observation_chunks,
    )
    assert uni.kb.store.generation(AGENT) == generation  # nothing written at all


async def test_adding_a_turn_rebuilds_only_the_changed_suffix(uni: Uniko) -> None:
    await _conversation(uni, "s1", 30)
    s = uni.agent(AGENT).session("s1")
    await s.finalize()
    before = {c.id: c for c in await _session_chunks(uni, s.node_id, "session")}
    assert len(before) >= 3

    await _conversation(uni, "s1", 1, start=30)
    report = await s.finalize()
    assert report.rebuilt
    after = await _session_chunks(uni, s.node_id, "session")
    last_msg = (await messages(uni, AGENT, s.node_id))[-1]
    assert last_msg.id in after[-1].covered_ids
    unchanged = [c for c in after if c.id in before and c.created_at == before[c.id].created_at]
    rewritten = [c for c in after if c not in unchanged]
    # Every chunk but the tail is kept as it was (same node, never rewritten).
    assert [c.index for c in unchanged] == list(range(len(after) - len(rewritten)))
    assert 1 <= len(rewritten) <= 2 and after[-1] in rewritten
    for c in unchanged:
        assert c.text == before[c.id].text


async def test_finalize_close_sets_ended_at_and_unknown_session_is_not_found(uni: Uniko) -> None:
    await _conversation(uni, "s1", 3)
    report = await uni.agent(AGENT).session("s1").finalize(close=True)
    assert report.ended_at is not None
    with pytest.raises(NotFound):
        await uni.agent(AGENT).session("nope").finalize()


async def test_maintain_sessions_auto_closes_idle_sessions(uni: Uniko) -> None:
    await _conversation(uni, "old", 4)
    agent = uni.agent(AGENT)
    closed = await agent.maintain_sessions(inactivity_secs=0)
    assert closed == ["old"]
    node = await uni.kb.store.get(AGENT, agent.session("old").node_id)
    assert isinstance(node, Session) and node.ended_at is not None and node.finalized_message_count == 4
    assert await _session_chunks(uni, node.id, "session")
    assert await agent.maintain_sessions(inactivity_secs=0) == []  # already closed

    # A new turn re-opens the session; the default 3,600 s inactivity closes it again (turns are from 2023).
    await _conversation(uni, "old", 1, start=4)
    reopened = await uni.kb.store.get(AGENT, node.id)
    assert isinstance(reopened, Session) and reopened.ended_at is None
    assert await agent.maintain_sessions() == ["old"]


async def test_maintain_sessions_keeps_recent_sessions_open(uni: Uniko) -> None:
    from uniko_memory.model.time import utcnow

    await uni.agent(AGENT).session("live").observe(turn("A", "Talking right now.", at=utcnow()))
    assert await uni.agent(AGENT).maintain_sessions() == []
