"""``uniko sessions``: an agent's sessions, oldest first, with their turn counts and state."""

from __future__ import annotations

import argparse
from typing import Any

from ..model import Session, Tier
from ..store.validation import MAX_FIND_LIMIT
from .output import _out
from .store_access import add_store_options, open_kb, pick_agent, print_json, run_command


def register(sub: Any) -> None:
    p = sub.add_parser("sessions", help="list an agent's sessions (turns, participants, finalised, closed)")
    add_store_options(p, read_only=True)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("sessions", lambda: sessions(args))


async def sessions(args: argparse.Namespace) -> int:
    async with open_kb(args.path, read_only=args.read_only) as kb:
        agent = await pick_agent(kb.store, args.agent)
        found = await kb.store.find(agent, Tier.SESSION, limit=MAX_FIND_LIMIT, include_redacted=True)
    rows = sorted((s for s in found if isinstance(s, Session)), key=lambda s: (s.started_at, s.external_id))
    if args.json:
        print_json({"agent": agent, "sessions": [s.model_dump(mode="json") for s in rows]})
        return 0
    for s in rows:
        state = "closed" if s.ended_at else "open"
        final = (
            "finalised"
            if s.finalized_at and s.finalized_message_count == s.message_count
            else "not finalised"
        )
        _out(
            f"{s.external_id}  {s.started_at:%Y-%m-%d %H:%M} .. {s.last_activity_at:%Y-%m-%d %H:%M}  "
            f"{s.message_count} turns  {state}, {final}  {', '.join(s.participant_names)}"
        )
    _out(f"\n{len(rows)} sessions (agent {agent}); their turns: uniko list --session ID --path {args.path}")
    return 0
