"""Wake-up benchmark (issue 21): how much of what a conversation's questions ask is already in the
600-token wake-up, against the most recent turns that fit in the same 600 tokens.

Per development conversation: ingest it as ``benchmarks.harness.uniko_system.UnikoSystem`` does
(the shipped defaults, consolidation and sweep run once), then

- ``wakeup``: ``agent.wake_up(600)`` through the default call path, text = ``bundle.render()``;
- ``recent``: the conversation's last turns, newest first, as long as they fit (a chat buffer),
  rendered and framed as the library renders Messages, counted with the same token counter.

Reported: the share of single-hop and multi-hop questions whose gold answer appears in the text
(``metrics.answer_contained``: normalised substring), per conversation and over all, plus the
tokens each text holds. No query is seen by either side.

    .venv/bin/python benchmarks/wakeup_bench.py [--data PATH] [--budget 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.baselines import turn_item
from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Conversation
from benchmarks.harness.metrics import answer_contained
from benchmarks.harness.uniko_system import AGENT, UnikoSystem
from uniko_memory.providers.token_counter import default_token_counter
from uniko_memory.recall.assemble import Charges, finish_render
from uniko_memory.recall.items import RecallItem, render_text

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
CATEGORIES = ("single-hop", "multi-hop")


def recent_turns_text(conv: Conversation, budget: int) -> str:
    """The most recent turns that fit in ``budget`` tokens (rendered text, framing included)."""
    counter = default_token_counter()
    charges = Charges.of(counter, "grouped")
    turns = [(s, t) for s in conv.sessions for t in s.turns]
    chosen: list[RecallItem] = []
    for s, t in reversed(turns):
        item = turn_item(t.id, t.timestamp or s.start, t.speaker, t.text)
        finish_render(item, counter)
        if charges.rendered([item, *chosen]) > budget:
            break  # a buffer keeps a contiguous tail
        chosen.insert(0, item)
    return render_text(chosen, "grouped")


async def run_one(conv: Conversation, budget: int) -> dict[str, Any]:
    system = UnikoSystem()
    await system.setup(conv)
    try:
        assert system.uni is not None
        bundle = await system.uni.agent(AGENT).wake_up(budget)
        wake = bundle.render()
    finally:
        await system.close()
    recent = recent_turns_text(conv, budget)
    counter = default_token_counter()
    out: dict[str, Any] = {
        "conversation": conv.id,
        "tokens": {"wakeup": counter.count(wake), "recent": counter.count(recent)},
        "lines": len(bundle.items),
    }
    for cat in CATEGORIES:
        qs = [q for q in conv.questions if q.category == cat and q.answer]
        out[cat] = {
            "questions": len(qs),
            "wakeup": sum(answer_contained(wake, q.answer) for q in qs),
            "recent": sum(answer_contained(recent, q.answer) for q in qs),
        }
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for cat in CATEGORIES:
        n = sum(r[cat]["questions"] for r in rows)
        total[cat] = {
            "questions": n,
            "wakeup": round(sum(r[cat]["wakeup"] for r in rows) / n, 4) if n else None,
            "recent": round(sum(r[cat]["recent"] for r in rows) / n, 4) if n else None,
        }
    return total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--budget", type=int, default=600)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    dataset = load_any(args.data, "locomo")
    convs = dataset.conversations[: args.conversations] if args.conversations else dataset.conversations
    rows = []
    for conv in convs:
        row = asyncio.run(run_one(conv, args.budget))
        rows.append(row)
        cells = "  ".join(
            f"{cat}: wake-up {row[cat]['wakeup']}/{row[cat]['questions']}, recent {row[cat]['recent']}"
            for cat in CATEGORIES
        )
        print(f"{conv.id}: {row['tokens']} tokens, {row['lines']} lines; {cells}", flush=True)
    report = {"budget": args.budget, "conversations": rows, "overall": summarise(rows)}
    print(json.dumps(report["overall"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
