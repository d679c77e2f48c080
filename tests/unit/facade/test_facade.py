"""The facade: isolation between sessions and agents, the sync API, context managers, lifecycle."""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.ingest._support import FakeEmbedder, edges, messages, nodes, open_uni, turn
from uniko_memory.errors import ClosedError, UnikoError
from uniko_memory.facade import Uniko
from uniko_memory.facade.loop import EngineLoop
from uniko_memory.ingest import Turn
from uniko_memory.model import EdgeType, Entity, Message, Participant, Session, Tier


# ---------------------------------------------------------------------------------- isolation
async def _next_chain(uni: Uniko, agent: str, session: Session) -> list[str]:
    """Follow NEXT from the session's first message; returns the message ids in chain order."""
    msgs = await messages(uni, agent, session.id)
    ids = {m.id for m in msgs}
    nxt = {e.src: e.dst for e in await edges(uni, agent, list(ids), EdgeType.NEXT)}
    incoming = set(nxt.values())
    [head] = [m.id for m in msgs if m.id not in incoming]
    chain = [head]
    while chain[-1] in nxt:
        chain.append(nxt[chain[-1]])
    return chain


async def test_concurrent_sessions_of_one_agent_never_mix(uni: Uniko) -> None:
    agent = uni.agent("solo")

    async def talk(session: str, n: int) -> None:
        s = agent.session(session)
        for i in range(n):
            await s.observe(
                turn(f"{session}-speaker", f"{session} says line {i} about Lisbon", i, id=f"{session}/{i}")
            )
            await asyncio.sleep(0)

    await asyncio.gather(talk("alpha", 12), talk("beta", 9), talk("gamma", 7))
    await agent.flush(timeout=30)
    sessions = {s.external_id: s for s in await nodes(uni, "solo", Tier.SESSION) if isinstance(s, Session)}
    assert set(sessions) == {"alpha", "beta", "gamma"}
    for name, n in (("alpha", 12), ("beta", 9), ("gamma", 7)):
        session = sessions[name]
        msgs = await messages(uni, "solo", session.id)
        assert [m.external_id for m in msgs] == [f"{name}/{i}" for i in range(n)]
        assert [m.seq for m in msgs] == list(range(n))
        assert all(m.content.startswith(name) and m.sender_name == f"{name}-speaker" for m in msgs)
        assert session.message_count == n and session.last_message_id == msgs[-1].id
        assert await _next_chain(uni, "solo", session) == [m.id for m in msgs]
        assert session.participant_names == [f"{name}-speaker"]
        for o in await uni.kb.store.find("solo", Tier.OBSERVATION, limit=1000):
            assert o.session_key() in {s.id for s in sessions.values()}
    [lisbon] = [
        e for e in await nodes(uni, "solo", Tier.ENTITY) if isinstance(e, Entity) and e.name == "Lisbon"
    ]
    assert lisbon.frequency == 28  # one entity per agent, shared by its sessions


async def test_several_agents_in_one_store_never_mix(uni: Uniko) -> None:
    async def talk(agent_id: str, n: int) -> None:
        s = uni.agent(agent_id).session("shared-name")
        for i in range(n):
            # Same session name, same speaker, same ids, different content per agent.
            await s.observe(
                turn("Caroline", f"{agent_id}: I moved to Paris in year {2000 + i}.", i, id=f"t{i}")
            )

    await asyncio.gather(talk("agent-a", 6), talk("agent-b", 4))
    await uni._pipeline.flush(timeout=30)
    assert sorted(await uni.kb.store.agents()) == ["agent-a", "agent-b"]
    for agent_id, n in (("agent-a", 6), ("agent-b", 4)):
        msgs = await messages(uni, agent_id)
        assert len(msgs) == n and all(m.content.startswith(agent_id) and m.agent == agent_id for m in msgs)
        [session] = await nodes(uni, agent_id, Tier.SESSION)
        assert isinstance(session, Session) and session.message_count == n
        assert await _next_chain(uni, agent_id, session) == [m.id for m in msgs]
        [paris] = [e for e in await nodes(uni, agent_id, Tier.ENTITY) if isinstance(e, Entity)]
        assert paris.name == "Paris" and paris.frequency == n
        people = await nodes(uni, agent_id, Tier.PARTICIPANT)
        assert [p.name for p in people if isinstance(p, Participant)] == ["Caroline"]
        obs = await nodes(uni, agent_id, Tier.OBSERVATION)
        assert len(obs) == n and all(o.agent == agent_id for o in obs)
        stats = await uni.agent(agent_id).stats()
        assert stats["message"] == n and stats["session"] == 1
    a = {n.id for t in Tier for n in await nodes(uni, "agent-a", t)}
    b = {n.id for t in Tier for n in await nodes(uni, "agent-b", t)}
    assert not a & b  # ids include the agent: nothing is shared


async def test_streaming_submit_to_several_sessions(uni: Uniko) -> None:
    futures = []
    for i in range(10):
        s = uni.agent("stream").session(f"s{i % 3}")
        futures.append(await s.submit(turn("A", f"message number {i}", i, id=f"m{i}")))
    results = await asyncio.gather(*futures)
    assert all(not r.was_replay for r in results)
    await uni.agent("stream").flush(timeout=30)
    for k in range(3):
        s = uni.agent("stream").session(f"s{k}")
        assert [m.external_id for m in await messages(uni, "stream", s.node_id)] == [
            f"m{i}" for i in range(10) if i % 3 == k
        ]


# ---------------------------------------------------------------------------------- sync API
def test_sync_api_from_plain_code() -> None:
    with Uniko.in_memory_sync(embedder=FakeEmbedder()) as uni:
        agent = uni.agent("sync")
        s = agent.session("s1")
        r = s.observe_sync(
            Turn(sender="Caroline", content="I went to a LGBTQ support group yesterday", id="1")
        )
        assert not r.was_replay and r.timings is not None
        unit = (
            s.unit()
            .turn("Melanie", "That's great!", id="2")
            .turn("Caroline", "Thanks!", id="3")
            .commit_sync()
        )
        assert len(unit.results) == 3 - 1
        s.flush_sync(timeout=10)
        stats = agent.stats_sync()
        assert stats["message"] == 3 and stats["observation"] >= 1
        report = s.finalize_sync()
        assert report.transcript_chunks == 1
        agent.flush_sync()
        assert agent.finalize_session_sync("s1").rebuilt is False
        assert agent.maintain_sessions_sync(inactivity_secs=0) == ["s1"]
        agent.consolidate_sync()  # the facade's P4 cycle (its results are tested with consolidation)
        assert s.commit_unit_sync([Turn(sender="A", content="more", id="4")]).results[0].message_id == "4"
        with agent.session("s2") as s2:  # finalises on a clean exit
            s2.observe_sync(Turn(sender="A", content="inside a with block", id="5"))
        assert agent.stats_sync()["chunk"] >= 2
        assert uni.health()["pipeline"]["state"] == "healthy"
        engine = uni._engine_thread
        assert engine is not None and engine.thread.is_alive()
    assert uni._closed and not engine.thread.is_alive()
    with pytest.raises(ClosedError):
        uni.agent("sync")
    uni.close_sync()  # idempotent


def test_sync_handle_open_and_close_without_with(tmp_path: Any) -> None:
    uni = Uniko.open_sync(tmp_path / "sync.db", embedder=FakeEmbedder())
    uni.agent("a").session("s").observe_sync(Turn(sender="A", content="persisted", id="p"))
    uni.close_sync()
    uni = Uniko.open_sync(tmp_path / "sync.db", embedder=FakeEmbedder())
    try:
        assert uni.agent("a").stats_sync()["message"] == 1
    finally:
        uni.close_sync()


def _raised_within(call: Callable[[], object], seconds: float = 10.0) -> BaseException | None:
    """Run ``call`` in a daemon thread and return what it raised; fail (not hang) if it is still
    running after ``seconds``: issue 40.1 was a ``*_sync`` call that waited forever."""
    raised: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call hung after close"
    return raised[0] if raised else None


# Every *_sync method, called as a user would after the block that closed the handle.
_AFTER_CLOSE: dict[str, Callable[[Any, Any, Any], object]] = {
    "Agent.flush_sync": lambda a, s, u: a.flush_sync(),
    "Agent.recall_sync": lambda a, s, u: a.recall_sync("q"),
    "Agent.wake_up_sync": lambda a, s, u: a.wake_up_sync(),
    "Agent.profile_sync": lambda a, s, u: a.profile_sync("A"),
    "Agent.feedback_sync": lambda a, s, u: a.feedback_sync(["n1"], True),
    "Agent.audit_sync": lambda a, s, u: a.audit_sync(),
    "Agent.consolidate_sync": lambda a, s, u: a.consolidate_sync(),
    "Agent.finalize_session_sync": lambda a, s, u: a.finalize_session_sync("s"),
    "Agent.maintain_sessions_sync": lambda a, s, u: a.maintain_sessions_sync(),
    "Agent.sweep_sync": lambda a, s, u: a.sweep_sync(),
    "Agent.sessions_sync": lambda a, s, u: a.sessions_sync(),
    "Agent.get_nodes_sync": lambda a, s, u: a.get_nodes_sync(["n1"]),
    "Agent.stats_sync": lambda a, s, u: a.stats_sync(),
    "Agent.answer_sync": lambda a, s, u: a.answer_sync("q"),
    "Agent.report_outcome_sync": lambda a, s, u: a.report_outcome_sync("e1", "success"),
    "Agent.record_procedure_use_sync": lambda a, s, u: a.record_procedure_use_sync("p1", True),
    "Agent.match_procedures_sync": lambda a, s, u: a.match_procedures_sync({}),
    "Agent.forget_turn_sync": lambda a, s, u: a.forget_turn_sync("s", "t"),
    "Agent.delete_turn_sync": lambda a, s, u: a.delete_turn_sync("s", "t"),
    "Agent.forget_session_sync": lambda a, s, u: a.forget_session_sync("s"),
    "Agent.forget_participant_sync": lambda a, s, u: a.forget_participant_sync("A"),
    "Agent.ingest_artifact_sync": lambda a, s, u: a.ingest_artifact_sync(b"a document"),
    "Session.observe_sync": lambda a, s, u: s.observe_sync(Turn(sender="A", content="late")),
    "Session.observe_each_sync": lambda a, s, u: s.observe_each_sync([Turn(sender="A", content="x")]),
    "Session.commit_unit_sync": lambda a, s, u: s.commit_unit_sync([Turn(sender="A", content="x")]),
    "Session.flush_sync": lambda a, s, u: s.flush_sync(),
    "Session.finalize_sync": lambda a, s, u: s.finalize_sync(),
    "Session.messages_sync": lambda a, s, u: s.messages_sync(),
    "UnitBuilder.commit_sync": lambda a, s, u: s.unit().turn("A", "x").commit_sync(),
    "Uniko.run_sync": lambda a, s, u: u.run_sync(a.stats()),
    "Uniko.run_async": lambda a, s, u: asyncio.run(u.run_async(a.stats())),
}


def test_every_sync_call_after_close_raises_closed_at_once(tmp_path: Any) -> None:
    """Issue 40.1: after ``with Uniko.open_sync(...)`` a ``*_sync`` call handed its coroutine to
    the stopped engine loop and waited forever; it must raise ``ClosedError`` at once, without
    a "coroutine was never awaited" warning."""
    from uniko_memory.facade.agent import Agent
    from uniko_memory.facade.session import Session as SessionFace
    from uniko_memory.facade.session import UnitBuilder

    sync_methods = {
        f"{cls.__name__}.{name}"
        for cls in (Agent, SessionFace, UnitBuilder)
        for name in vars(cls)
        if name.endswith("_sync")
    }
    assert sync_methods <= set(_AFTER_CLOSE), "a *_sync method this test does not try after close"
    with Uniko.open_sync(tmp_path / "closed.db", embedder=FakeEmbedder()) as uni:
        agent = uni.agent("x")
        session = agent.session("s")
        session.observe_sync(Turn(sender="A", content="before close", id="t"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, call in _AFTER_CLOSE.items():
            raised = _raised_within(lambda call=call: call(agent, session, uni))
            assert isinstance(raised, ClosedError), f"{name} raised {raised!r}"
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_a_call_waiting_when_the_engine_loop_stops_gets_closed() -> None:
    """A call another thread is still waiting on when the loop stops fails with ``ClosedError``;
    a call made after the stop is refused at once."""
    engine = EngineLoop()
    never = asyncio.Event()
    started = threading.Event()

    async def waits() -> None:
        started.set()
        await never.wait()

    outcome: list[BaseException | None] = []
    waiter = threading.Thread(target=lambda: outcome.append(_raised_within(lambda: engine.run(waits()))))
    waiter.start()
    assert started.wait(10)
    engine.stop()
    waiter.join(15)
    assert isinstance(outcome[0], ClosedError)

    async def later() -> None:  # pragma: no cover - never runs
        pass

    assert isinstance(_raised_within(lambda: engine.run(later())), ClosedError)


def test_sync_handle_is_usable_from_other_threads_and_loops() -> None:
    uni = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                s = uni.agent("threads").session(f"t{k}")
                for i in range(5):
                    s.observe_sync(Turn(sender="A", content=f"thread {k} turn {i}", id=f"{k}-{i}"))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors

        async def from_another_loop() -> int:  # async verbs are forwarded to the engine loop
            await (
                uni.agent("threads").session("t9").observe(Turn(sender="B", content="hello from asyncio.run"))
            )
            await uni.agent("threads").flush(timeout=10)
            return (await uni.agent("threads").stats())["message"]

        assert asyncio.run(from_another_loop()) == 16
    finally:
        uni.close_sync()


def test_sync_call_on_the_engine_loop_is_refused() -> None:
    uni = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:
        s = uni.agent("a").session("s")

        async def inside() -> None:
            s.observe_sync(Turn(sender="A", content="deadlock?"))

        with pytest.raises(UnikoError, match="engine's own event loop"):
            asyncio.run_coroutine_threadsafe(inside(), uni._loop).result(10)
    finally:
        uni.close_sync()


# ---------------------------------------------------------------------------------- async lifecycle
async def test_async_context_managers_close_and_finalize() -> None:
    async with await open_uni() as uni:
        async with uni.agent("ctx").session("s1") as s:
            await s.observe(turn("A", "I adopted a cat named Biscuit."))
        # The session was finalised on exit: its transcript chunk exists.
        assert await uni.kb.store.count("ctx", Tier.CHUNK) >= 1
    assert uni._closed
    with pytest.raises(ClosedError):
        await uni.agent("ctx").session("s1").observe(turn("A", "after close"))  # type: ignore[unreachable]


async def test_session_context_skips_finalize_on_error(uni: Uniko) -> None:
    with pytest.raises(RuntimeError):
        async with uni.agent("ctx").session("s1") as s:
            await s.observe(turn("A", "I adopted a cat named Biscuit."))
            raise RuntimeError("caller failed")
    assert await uni.kb.store.count("ctx", Tier.CHUNK) == 0


async def test_close_twice_is_harmless() -> None:
    uni = await open_uni()
    await uni.close()
    await uni.close()


async def test_store_lock_names_the_problem(tmp_path: Any) -> None:
    from uniko_memory.errors import StoreLocked

    first = await Uniko.open(tmp_path / "locked.db", embedder=FakeEmbedder())
    try:
        with pytest.raises(StoreLocked):
            await Uniko.open(tmp_path / "locked.db", embedder=FakeEmbedder())
    finally:
        await first.close()


async def test_observe_returns_durable_message(uni: Uniko) -> None:
    r = await uni.agent("a").session("s").observe(turn("A", "durable"))
    node = await uni.kb.store.get("a", r.message_node_id)
    assert isinstance(node, Message) and node.content == "durable"
