"""A turn found stored whose Session does not count it: a unit another writer has not finished.

Ingest waits for that unit (``IngestConfig.replay_settle_secs``) and returns the replay once the
Session counts the turn; a unit that never finishes (its writer stopped part way) is applied again
over the stored Session. The embedded store commits a unit whole, so the half-written state is made
here by storing a turn's Message alone, as an unfinished unit on Weaviate leaves it
(``tests/unit/weaviate/test_scaleout.py`` makes it there for real).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from uniko_memory.errors import StoreError
from uniko_memory.facade import Uniko
from uniko_memory.model import EdgeType, Message, Session, session_id

from ._support import edges, messages, open_uni, turn

AGENT = "settle"
FIRST = turn("Caroline", "I moved to Paris last year.", 0, id="u1")
SECOND = turn("Melanie", "Paris sounds lovely, what do you do there?", 1, id="u2")
THIRD = turn("Caroline", "I teach French to the neighbour's kids.", 2, id="u3")


async def _session(uni: Uniko) -> Session:
    node = await uni.kb.store.get(AGENT, session_id(AGENT, "s1"))
    assert isinstance(node, Session)
    return node


async def _store_message_alone(uni: Uniko, source: Uniko, external_id: str) -> Message:
    """The Message ``source`` stored for a turn, written into ``uni`` without the rest of its unit."""
    (msg,) = [m for m in await messages(source, AGENT) if m.external_id == external_id]
    async with uni.kb.store.unit(AGENT) as u:
        u.put(msg)
    return msg


@pytest.fixture
async def pair() -> Any:
    """``done``: FIRST and SECOND ingested whole; ``half``: FIRST whole, SECOND's Message alone."""
    done = await open_uni()
    half = await open_uni({"ingest": {"replay_settle_secs": 0.05}})
    try:
        for t in (FIRST, SECOND):
            await done.agent(AGENT).session("s1").observe(t)
        await half.agent(AGENT).session("s1").observe(FIRST)
        await _store_message_alone(half, done, "u2")
        yield done, half
    finally:
        await half.close()
        await done.close()


async def test_a_unit_that_never_finishes_is_applied_again(pair: Any, caplog: Any) -> None:
    done, half = pair
    assert (await _session(half)).message_count == 1  # the Session does not count SECOND
    with caplog.at_level(logging.WARNING, logger="uniko_memory.ingest.atomic"):
        result = await half.agent(AGENT).session("s1").observe(SECOND)
    assert not result.was_replay
    assert "did not finish" in caplog.text
    # The same state as a clean ingest: sequence numbers, count, last turn, the NEXT edge.
    assert [(m.external_id, m.seq) for m in await messages(half, AGENT)] == [("u1", 0), ("u2", 1)]
    assert [(m.external_id, m.seq) for m in await messages(done, AGENT)] == [("u1", 0), ("u2", 1)]
    got, want = await _session(half), await _session(done)
    assert (
        (got.message_count, got.last_message_id)
        == (want.message_count, want.last_message_id)
        == (2, want.last_message_id)
    )
    first_id = (await messages(half, AGENT))[0].id
    assert [e.dst for e in await edges(half, AGENT, [first_id], EdgeType.NEXT)] == [result.message_node_id]
    # ... so the next turn extends it normally, and a second replay is a plain replay.
    third = await half.agent(AGENT).session("s1").observe(THIRD)
    assert [m.seq for m in await messages(half, AGENT)] == [0, 1, 2]
    assert (await half.agent(AGENT).session("s1").observe(SECOND)).was_replay
    assert not third.was_replay and (await _session(half)).message_count == 3


async def test_an_import_window_applies_an_unfinished_unit_again(pair: Any) -> None:
    _, half = pair
    out = await half.agent(AGENT).session("s1").observe_each([FIRST, SECOND, THIRD])
    assert (out.replays, out.stored) == (1, 2)  # FIRST a replay; SECOND resumed; THIRD new
    assert [(m.external_id, m.seq) for m in await messages(half, AGENT)] == [("u1", 0), ("u2", 1), ("u3", 2)]
    assert (await _session(half)).message_count == 3


async def test_a_replay_waits_for_the_writer_that_finishes_the_unit(pair: Any) -> None:
    """While the Session does not count the turn, the replay is held; once another writer's
    Session lands, it returns as a replay (nothing written twice)."""
    done, half = pair
    half.config.ingest.replay_settle_secs = 5.0
    observing = asyncio.create_task(half.agent(AGENT).session("s1").observe(SECOND))
    await asyncio.sleep(0.2)
    assert not observing.done()  # waiting for the Session to count SECOND
    finished = await done.kb.store.get(AGENT, session_id(AGENT, "s1"))
    async with half.kb.store.unit(AGENT) as u:  # the other writer's last write of the unit
        u.put(finished)
    result = await asyncio.wait_for(observing, 5)
    assert result.was_replay
    assert (await _session(half)).message_count == 2


async def test_a_session_that_moved_on_without_the_turn_is_an_error(pair: Any) -> None:
    """Another writer extended the Session past the unfinished turn: no replay, no resume."""
    done, half = pair
    await done.agent(AGENT).session("s1").observe(THIRD)
    await _store_message_alone(half, done, "u3")  # seq 2, while the Session counts 1
    with pytest.raises(StoreError, match="does not include them"):
        await half.agent(AGENT).session("s1").observe(THIRD)
