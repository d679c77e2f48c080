"""``uniko recall "question"``: the bundle the default call gives an agent, as the prompt sees it."""

from __future__ import annotations

import argparse
from typing import Any

from ..model import Viewer
from .output import _out
from .store_access import CliError, add_store_options, open_engine, pick_agent, print_json, run_command, short


def register(sub: Any) -> None:
    p = sub.add_parser(
        "recall",
        help="recall what an agent remembers about a question (the rendered bundle)",
        description="Recall through the default call (Agent.recall) and print bundle.render(): the text a "
        "prompt gets, within --budget tokens.",
    )
    p.add_argument("question")
    add_store_options(p, read_only=True)
    p.add_argument(
        "--budget", type=int, default=None, help="token budget of the rendered text (default: config)"
    )
    p.add_argument("--limit", type=int, default=None, help="at most this many items")
    p.add_argument("--session", action="append", default=None, help="only these sessions (repeatable)")
    p.add_argument(
        "--participant", action="append", default=None, help="only these participants (repeatable)"
    )
    p.add_argument(
        "--viewer", default=None, help="recall for this participant: only what they may see (docs/scoping.md)"
    )
    p.add_argument(
        "--team", action="append", default=[], help="with --viewer: a team they belong to (repeatable)"
    )
    p.add_argument(
        "--org", action="append", default=[], help="with --viewer: an org they belong to (repeatable)"
    )
    p.add_argument("--explain", action="store_true", help="also show each item's score, channels and sources")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("recall", lambda: recall(args))


async def recall(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {"explain": args.explain}
    if args.budget is not None:
        options["token_budget"] = args.budget
    if args.limit is not None:
        options["limit"] = args.limit
    if args.session:
        options["sessions"] = args.session
    if args.participant:
        options["participants"] = args.participant
    if args.viewer is not None:
        options["viewer"] = Viewer(
            participant_id=args.viewer, teams=frozenset(args.team), orgs=frozenset(args.org)
        )
    elif args.team or args.org:
        raise CliError("--team and --org describe a --viewer; give --viewer too")
    async with open_engine(args.path, read_only=args.read_only) as uni:
        agent = uni.agent(await pick_agent(uni.kb.store, args.agent))
        bundle = await agent.recall(args.question, **options)
    if args.json:
        print_json({"agent": agent.agent_id, "rendered": bundle.render(), **bundle.model_dump(mode="json")})
        return 0
    rendered = bundle.render()
    _out(rendered if rendered else "(nothing recalled)")
    phase = "1" if bundle.phase1_only else "2" if bundle.phase2_only else "3"
    _out(
        f"\n{len(bundle.items)} items, {bundle.total_tokens} tokens"
        f"{f' of {bundle.token_budget}' if bundle.token_budget else ''} ({bundle.token_counter}), "
        f"coverage {bundle.coverage:.2f}, exited after phase {phase}"
        + (f"; degraded: {', '.join(bundle.degraded)}" if bundle.degraded else "")
    )
    if args.explain:
        _out("\nitems (score = cosine to the question, relative = rank score):")
        for i, item in enumerate(bundle.items, 1):
            when = f" {item.timestamp:%Y-%m-%d}" if item.timestamp else ""
            _out(
                f"{i:>3}. {item.score:.3f} rel {item.relative_score:.2f} {item.kind:<11}{when} "
                f"[{', '.join(item.channels)}] {short(item.content, 80)}"
            )
            _out(f"     id {item.node_id}; from {', '.join(item.message_ids()) or '-'}")
        trace = bundle.trace or {}
        if trace.get("dropped"):
            _out(
                f"\ndropped: {len(trace['dropped'])} ({', '.join(sorted(set(map(str, trace['dropped'].values()))))})"
            )
        _out("\nsee one: uniko show ID --path " + str(args.path) + f" --agent {agent.agent_id}")
    return 0
