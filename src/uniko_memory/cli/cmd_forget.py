"""``uniko forget``: forget a turn, a session or a participant (``Agent.forget_*``), after a
confirmation flag. Without ``--yes`` it says what would be forgotten and changes nothing."""

from __future__ import annotations

import argparse
from typing import Any

from ..consolidation.forget import ForgetReport
from ..model import Message, Tier, participant_id
from ..store.filters import Eq
from .output import _out, _Progress
from .store_access import (
    CliError,
    add_store_options,
    open_engine,
    open_kb,
    pick_agent,
    print_json,
    run_command,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "forget",
        help="forget a turn, a session or a participant (redact, or --hard delete)",
        description="Forget what an agent remembers: one turn (--session S --turn T), a whole session "
        "(--session S) or a participant (--participant NAME: what they said and, with --about or "
        "--hard, what others said about them). Redacts by default (blank, kept as a tombstone); "
        "--hard deletes. Nothing changes without --yes.",
    )
    add_store_options(p)
    p.add_argument("--session", default=None, help="the session (alone: every turn of it)")
    p.add_argument("--turn", default=None, help="one turn id of --session")
    p.add_argument("--participant", default=None, help="a participant's name")
    p.add_argument("--hard", action="store_true", help="delete instead of redacting")
    p.add_argument(
        "--about",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --participant: also what others said about them (default: on with --hard)",
    )
    p.add_argument("--yes", action="store_true", help="confirm: without it nothing is forgotten")
    p.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("forget", lambda: forget(args))


def _target(args: argparse.Namespace) -> str:
    if args.participant is not None:
        if args.session is not None or args.turn is not None:
            raise CliError("give either --participant, or --session (with --turn for one turn), not both")
        return "participant"
    if args.turn is not None and args.session is None:
        raise CliError("--turn needs the --session it belongs to")
    if args.session is None:
        raise CliError("say what to forget: --session S [--turn T] or --participant NAME")
    if args.about is not None:
        raise CliError("--about goes with --participant")
    return "turn" if args.turn is not None else "session"


async def _plan(args: argparse.Namespace, kind: str) -> tuple[str, list[str]]:
    """The agent and the turn ids that would be forgotten (checked against the store: bad input is
    refused before the engine opens)."""
    async with open_kb(args.path) as kb:
        store = kb.store
        agent = await pick_agent(store, args.agent)
        if kind == "participant":
            pid = participant_id(agent, args.participant)
            if await store.get(agent, pid) is None:
                raise CliError(f"no participant {args.participant!r} in agent {agent!r}")
            said = await store.count(agent, Tier.MESSAGE, Eq("participant", pid))
            return agent, [f"{said} turns said by {args.participant}"]
        session = await agent_session(store, agent, args.session)
        turns = [m for m in session if args.turn is None or m.external_id == args.turn]
        if not turns:
            what = (
                f"turn {args.turn!r} in session {args.session!r}"
                if args.turn
                else f"turns in session {args.session!r}"
            )
            raise CliError(f"no live {what} of agent {agent!r}")
        return agent, [m.external_id for m in turns]


async def agent_session(store: Any, agent: str, session: str) -> list[Message]:
    from ..model import session_id

    if await store.get(agent, session_id(agent, session)) is None:
        raise CliError(f"no session {session!r} in agent {agent!r} (see `uniko sessions`)")
    found = await store.find(
        agent, Tier.MESSAGE, Eq("session", session_id(agent, session)), limit=1_000_000, order_by="seq"
    )
    return [m for m in found if isinstance(m, Message)]


def _total(reports: list[ForgetReport]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in reports:
        for k, v in r.model_dump().items():
            if isinstance(v, bool):
                out[k] = out.get(k, False) or v
            elif isinstance(v, int):
                out[k] = out.get(k, 0) + v
            elif isinstance(v, list):
                out[k] = sorted({*out.get(k, []), *v})
    return out


async def forget(args: argparse.Namespace) -> int:
    kind = _target(args)
    agent, turns = await _plan(args, kind)
    mode = "delete" if args.hard else "redact"
    if kind == "participant":
        what = f"participant {args.participant!r} ({turns[0]})"
    elif kind == "turn":
        what = f"turn {args.turn!r} of session {args.session!r}"
    else:
        what = f"session {args.session!r} ({len(turns)} turns)"
    if not args.yes:
        message = f"would {mode} {what} of agent {agent!r}; nothing changed: add --yes to do it"
        if args.json:
            print_json({"agent": agent, "confirmed": False, "would": mode, "target": kind, "turns": turns})
        else:
            _out(message)
        return 2
    async with open_engine(args.path) as uni:
        a = uni.agent(agent)
        if kind == "participant":
            reports = [await a.forget_participant(args.participant, hard=args.hard, about=args.about)]
        else:
            reports = []
            with _Progress(len(turns), f"{mode} {args.session}", plain=args.plain, stderr=args.json) as bar:
                for turn in turns:
                    forget_one = a.delete_turn if args.hard else a.forget_turn
                    reports.append(await forget_one(args.session, turn))
                    bar.advance()
    total = _total(reports)
    if args.json:
        print_json({"agent": agent, "confirmed": True, "mode": mode, "target": kind, "report": total})
    else:
        _out(
            f"{'deleted' if args.hard else 'redacted'} {what}: {total.get('messages', 0)} messages, "
            f"{total.get('observations', 0)} observations, {total.get('chunks', 0)} chunks, "
            f"{total.get('facts_closed', 0)} facts closed"
            + ("; nothing left to forget" if total.get("nothing_to_do") else "")
        )
    return 0
