"""Profile benchmark (issue 39.5): how often a participant's 400-token profile already holds the
answer to a single-hop question about that participant, against the 400-token wake-up.

Per development conversation: ingest it as ``benchmarks.harness.uniko_system.UnikoSystem`` does
(the shipped defaults, consolidation and sweep run once), then for every single-hop question that
names exactly one of the conversation's speakers, ``agent.profile(speaker, 400)`` through the
default call path (text = ``bundle.render()``), and ``agent.wake_up(400)``. Reported: the share of
those questions whose gold answer is in the text (``metrics.answer_contained``: normalised
substring), the same for the whole profile (no budget: every current statement about the speaker,
the ceiling of any profile made of these statements), the best a 400-token selection of those
lines could do if it knew the questions (``oracle_cover``), and the tokens each text holds. No question is seen by either side.

    .venv/bin/python benchmarks/profile_bench.py [--data PATH] [--budget 400] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Conversation
from benchmarks.harness.metrics import answer_contained
from benchmarks.harness.uniko_system import AGENT, UnikoSystem
from uniko_memory.providers.token_counter import default_token_counter
from uniko_memory.recall.items import RecallItem, render_text

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def about(question: str, speakers: list[str]) -> str | None:
    """The one speaker a question names (by first name), else None."""
    named = [s for s in speakers if re.search(rf"\b{re.escape(s.split()[0])}\b", question)]
    return named[0] if len(named) == 1 else None


#: A budget no profile reaches: the ceiling of a profile made of statements, whatever its length.
UNBOUNDED = 1_000_000


async def run_one(conv: Conversation, budget: int) -> dict[str, Any]:
    system = UnikoSystem()
    await system.setup(conv)
    counter = default_token_counter()
    try:
        assert system.uni is not None
        agent = system.uni.agent(AGENT)
        profiles = {s: (await agent.profile(s, budget)).render() for s in conv.speakers}
        whole_bundles = {s: await agent.profile(s, UNBOUNDED) for s in conv.speakers}
        whole = {s: b.render() for s, b in whole_bundles.items()}
        wake = (await agent.wake_up(budget)).render()
    finally:
        await system.close()
    qs = [
        (q, about(q.text, conv.speakers)) for q in conv.questions if q.category == "single-hop" and q.answer
    ]
    qs = [(q, who) for q, who in qs if who is not None]
    oracle = sum(
        oracle_cover(whole_bundles[s].items, [q.answer or "" for q, who in qs if who == s], budget, counter)
        for s in conv.speakers
    )
    return {
        "conversation": conv.id,
        "questions": len(qs),
        "oracle": oracle,
        "profile": sum(answer_contained(profiles[who], q.answer or "") for q, who in qs),
        "ceiling": sum(answer_contained(whole[who], q.answer or "") for q, who in qs),
        "wakeup": sum(answer_contained(wake, q.answer or "") for q, _ in qs),
        "tokens": {
            "profile": {s: counter.count(t) for s, t in profiles.items()},
            "whole profile": {s: counter.count(t) for s, t in whole.items()},
            "wakeup": counter.count(wake),
        },
    }


def oracle_cover(items: list[RecallItem], answers: list[str], budget: int, counter: Any) -> int:
    """How many ``answers`` the best ``budget``-token selection of the profile's own lines could
    hold, chosen greedily *knowing the questions* (most new answers per token first): an upper
    bound (up to greedy's approximation) for any profile that does not see the question."""
    holds = [{i for i, a in enumerate(answers) if answer_contained(render_text([it]), a)} for it in items]
    cost = [counter.count(render_text([it], header=False)) or 1 for it in items]
    chosen: list[RecallItem] = []
    covered: set[int] = set()
    left = set(range(len(items)))
    while True:
        best = max(left, key=lambda k: (len(holds[k] - covered) / cost[k], -k), default=None)
        if best is None or not holds[best] - covered:
            return len(covered)
        left.discard(best)
        if counter.count(render_text([*chosen, items[best]])) <= budget:
            chosen.append(items[best])
            covered |= holds[best]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--budget", type=int, default=400)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    dataset = load_any(args.data, "locomo")
    convs = dataset.conversations[: args.conversations] if args.conversations else dataset.conversations
    rows = []
    for conv in convs:
        row = asyncio.run(run_one(conv, args.budget))
        rows.append(row)
        print(
            f"{conv.id}: {row['questions']} questions; profile {row['profile']}, whole profile "
            f"{row['ceiling']}, 400-token oracle {row['oracle']}, wake-up {row['wakeup']}; "
            f"tokens {row['tokens']}",
            flush=True,
        )
    n = sum(r["questions"] for r in rows)
    overall = {
        "questions": n,
        "profile": round(sum(r["profile"] for r in rows) / n, 4) if n else None,
        "wakeup": round(sum(r["wakeup"] for r in rows) / n, 4) if n else None,
        "oracle (best lines for known questions)": round(sum(r["oracle"] for r in rows) / n, 4)
        if n
        else None,
        "ceiling (whole profile)": round(sum(r["ceiling"] for r in rows) / n, 4) if n else None,
    }
    print(json.dumps(overall, indent=1))
    if args.json:
        args.json.write_text(
            json.dumps({"budget": args.budget, "conversations": rows, "overall": overall}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
