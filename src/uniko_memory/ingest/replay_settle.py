"""A replayed turn whose unit another writer is still writing: wait for it to finish.

On a store without isolation (Weaviate), a turn's Message is written before the rest of its unit
and its Session last (``store/weaviate/writes.py``). Another process ingesting the same turn can
therefore find the Message stored (a replay) while the Session does not count it yet. Returning the
replay there would let the caller's next turn extend the Session from that stale state (two turns
with one sequence number, a lost count). So a replay is returned only once the stored Session
counts every replayed turn (``message_count`` is the next sequence number and never goes down).

A unit that never finishes was left part way by a writer that stopped (a crash, a failed
compensation). Past ``IngestConfig.replay_settle_secs`` the caller applies it again over the stored
Session, which writes the same Messages (same ids and sequence numbers) and the missing rest (an
Entity the stopped writer had already updated counts that turn's mentions twice). On the
embedded store (one transaction per unit) a stored turn is always counted: nothing waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from ..errors import StoreError
from ..model import Message, Session
from ..store.protocol import Store

#: First and longest pause between two reads of the Session while another writer finishes.
_FIRST_POLL_SECS = 0.01
_MAX_POLL_SECS = 0.25


def counts(session: Any, messages: Sequence[Message]) -> bool:
    """Whether the stored Session counts every one of these stored turns."""
    if not isinstance(session, Session):
        return False
    return session.message_count > max(m.seq for m in messages)


def resumable(session: Any, messages: Sequence[Message]) -> bool:
    """Whether applying the turns again over this Session gives them their stored sequence numbers:
    the Session stands exactly where the unfinished unit found it."""
    first = session.message_count if isinstance(session, Session) else 0
    return [m.seq for m in messages] == list(range(first, first + len(messages)))


async def settle(
    store: Store, agent: str, sid: str, messages: Sequence[Message], session: Any, wait: float
) -> Any:
    """The stored Session once it counts ``messages`` (``session`` itself, unread, when it already
    does), read again until ``wait`` seconds pass; the last one read if it never does (the caller
    then resumes the unit or refuses it)."""
    deadline = time.monotonic() + wait
    pause = _FIRST_POLL_SECS
    while not counts(session, messages):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        await asyncio.sleep(min(pause, left))
        pause = min(2 * pause, _MAX_POLL_SECS)
        session = await store.get(agent, sid)
    return session


def unfinished_error(sid: str, messages: Sequence[Message], session: Any) -> StoreError:
    """The unit can neither be taken as a replay nor resumed: the Session moved on without it."""
    have = session.message_count if isinstance(session, Session) else 0
    return StoreError(
        f"turn(s) {', '.join(repr(m.external_id) for m in messages)} are stored with sequence "
        f"number(s) {', '.join(str(m.seq) for m in messages)}, but session {sid!r} counts {have} "
        "turn(s) and does not include them: another writer extended the session while their unit "
        "was unfinished. Send a session's turns to one process at a time (docs/deploy-weaviate.md)"
    )
