"""``uniko list``: the nodes of one tier of an agent, filtered and paged."""

from __future__ import annotations

import argparse
from typing import Any

from ..model import Tier, participant_id, session_id
from ..store.filters import Eq, Filter
from ..store.validation import MAX_FIND_LIMIT
from .nodes_view import node_json, node_text, node_time
from .output import _out
from .store_access import CliError, add_store_options, open_kb, pick_agent, print_json, run_command, short

DEFAULT_PAGE = 20


def register(sub: Any) -> None:
    p = sub.add_parser(
        "list",
        help="list the nodes of a tier (messages, observations, facts, ...), filtered and paged",
        description="List an agent's nodes of one tier, oldest first (--newest: newest first).",
    )
    add_store_options(p, read_only=True)
    p.add_argument(
        "--tier", default="message", help=f"one of {', '.join(t.value for t in Tier)} (default: message)"
    )
    p.add_argument("--session", default=None, help="only this session (its id as you gave it)")
    p.add_argument("--participant", default=None, help="only this participant (a sender's name)")
    p.add_argument("--limit", type=int, default=DEFAULT_PAGE, help=f"page size (default {DEFAULT_PAGE})")
    p.add_argument("--offset", type=int, default=0, help="skip this many (the next page: --offset LIMIT)")
    p.add_argument("--newest", action="store_true", help="newest first")
    p.add_argument("--include-redacted", action="store_true", help="also forgotten (blanked) nodes")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("list", lambda: list_nodes(args))


def _tier(name: str) -> Tier:
    try:
        return Tier(name.strip().lower())
    except ValueError:
        raise CliError(f"unknown tier {name!r}; one of {', '.join(t.value for t in Tier)}") from None


async def list_nodes(args: argparse.Namespace) -> int:
    tier = _tier(args.tier)
    if args.limit < 1 or args.offset < 0 or args.offset + args.limit > MAX_FIND_LIMIT:
        raise CliError(
            f"--limit must be at least 1 and --offset at least 0 (together at most {MAX_FIND_LIMIT:,})"
        )
    async with open_kb(args.path, read_only=args.read_only) as kb:
        store = kb.store
        agent = await pick_agent(store, args.agent)
        parts: list[Filter] = []
        if args.session is not None:
            sid = session_id(agent, args.session)
            if await store.get(agent, sid) is None:
                raise CliError(f"no session {args.session!r} in agent {agent!r} (see `uniko sessions`)")
            parts.append(Eq("session", sid))
        if args.participant is not None:
            pid = participant_id(agent, args.participant)
            if await store.get(agent, pid) is None:
                raise CliError(f"no participant {args.participant!r} in agent {agent!r}")
            parts.append(Eq("participant", pid))
        flt: Filter | None = None
        for part in parts:
            flt = part if flt is None else flt & part
        total = await store.count(agent, tier, flt)
        found = await store.find(
            agent,
            tier,
            flt,
            limit=args.offset + args.limit,
            order_by="time",
            descending=args.newest,
            include_redacted=args.include_redacted,
        )
    page = found[args.offset :]
    if args.json:
        print_json(
            {
                "agent": agent,
                "tier": tier.value,
                "offset": args.offset,
                "limit": args.limit,
                "total": total,
                "nodes": [node_json(n) for n in page],
            }
        )
        return 0
    for node in page:
        _out(f"{node.id}  {node_time(node):<16}  {short(node_text(node))}")
    shown = f"{args.offset + 1}-{args.offset + len(page)}" if page else "none"
    more = args.offset + len(page) < total
    _out(
        f"\n{tier.value}: {shown} of {total} (agent {agent})"
        + (f"; next page: --offset {args.offset + args.limit}" if more else "")
    )
    return 0
