"""Feedback benchmark (issue 21): does rating what recall returned help later, unseen questions?

Per development conversation (ingested as ``benchmarks.harness.uniko_system.UnikoSystem`` does:
shipped defaults, consolidation and sweep once), its answerable questions (gold turns, not
adversarial) are split into two halves by a fixed seed. Then, on the default call path
(``agent.recall(question, token_budget=N, reference_ts=question time, use_cache=False)``):

1. **before**: both halves are asked; per question, evidence recall (share of gold turns the
   bundle's items cover) and answer containment (the gold answer in ``bundle.render()``);
2. **feedback** from the first half only, on those same bundles: ``agent.feedback(items that
   cover a gold turn, True)`` and ``agent.feedback(the rest, False)``;
3. **after**: both halves again (the first half has been seen; the second has not);
4. **zero weights**: both halves with every feedback weight at 0 (``ZERO_WEIGHTS``), with the
   feedback still stored: the rendered text must equal *before* for every question.

5. **variants** (``--variants``): both halves again under each named set of ``RecallFeedback``
   overrides, on the same stored feedback (every estimator is a read-time function of what was
   stored, so a variant gives what a run with that config would).

Settings are chosen on some conversations and confirmed on the others: ``--only`` takes
conversation ids (``--only conv-26,conv-30``), ``--skip`` leaves ids out.

    .venv/bin/python benchmarks/feedback_bench.py [--budget 2000] [--seed 21] [--only IDS] [--skip IDS]
        [--variants '{"name": {"ucb_weight": 0.1}}'] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Conversation, Question
from benchmarks.harness.metrics import RetrievedItem, answer_contained, evidence_recall_all
from benchmarks.harness.run import reference_time
from benchmarks.harness.uniko_system import AGENT, UnikoSystem
from uniko_memory.recall import ContextBundle
from uniko_memory.recall.feedback import base_rate, feedback_state, learned_alpha

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
ZERO_WEIGHTS: dict[str, Any] = {
    "feedback": {
        "echo_weight": 0.0,
        "fizzle_weight": 0.0,
        "ucb_weight": 0.0,
        "roi_weight": 0.0,
        "document_trust_floor": 1.0,
        "alpha_weight": 0.0,
    }
}


def split(questions: list[Question], seed: int, conv_id: str) -> tuple[list[Question], list[Question]]:
    qs = sorted(questions, key=lambda q: q.id)
    random.Random(f"{seed}:{conv_id}").shuffle(qs)
    half = len(qs) // 2
    return qs[:half], qs[half:]


class Asker:
    def __init__(self, system: UnikoSystem, conv: Conversation, budget: int) -> None:
        self.system, self.conv, self.budget = system, conv, budget

    def covers(self, bundle: ContextBundle) -> list[RetrievedItem]:
        turn_of, session_of = self.system.turn_of, self.system.session_of
        out = []
        for it in bundle.items:
            covers: frozenset[str] = frozenset()
            if it.kind not in ("topic", "summary"):
                covers = frozenset(turn_of[m] for m in it.message_ids() if m in turn_of)
            out.append(
                RetrievedItem(
                    content=it.rendered or it.content,
                    covered_turn_ids=covers,
                    session_ids=frozenset(session_of[t] for t in covers),
                    kind=it.kind,
                )
            )
        return out

    async def ask(self, q: Question, **options: Any) -> tuple[ContextBundle, dict[str, float]]:
        assert self.system.uni is not None
        bundle = await self.system.uni.agent(AGENT).recall(
            q.text,
            token_budget=self.budget,
            reference_ts=reference_time(self.conv, q),
            use_cache=False,
            **options,
        )
        items = self.covers(bundle)
        score = {
            "evidence": evidence_recall_all(items, q.gold_turn_ids),
            "answer": float(answer_contained(bundle.render(), q.answer)),
        }
        return bundle, score


def mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


async def run_one(
    conv: Conversation,
    budget: int,
    seed: int,
    feedback: dict[str, Any],
    variants: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    system = UnikoSystem(uniko_config={"recall": {"feedback": feedback}} if feedback else None)
    await system.setup(conv)
    try:
        asker = Asker(system, conv, budget)
        qs = [q for q in conv.questions if q.gold_turn_ids and not q.abstention and q.answer]
        first, second = split(qs, seed, conv.id)
        agent = system.uni.agent(AGENT)  # type: ignore[union-attr]
        before: dict[str, tuple[ContextBundle, dict[str, float]]] = {}
        for q in first + second:
            before[q.id] = await asker.ask(q)
        ratings = {"useful": 0, "not_useful": 0}
        for q in first:
            bundle = before[q.id][0]
            gold = set(q.gold_turn_ids)
            covering = asker.covers(bundle)
            useful = [it for it, r in zip(bundle.items, covering, strict=True) if r.covered_turn_ids & gold]
            rest = [it for it in bundle.items if it not in useful]
            if useful:
                ratings["useful"] += await agent.feedback(useful, True)
            if rest:
                ratings["not_useful"] += await agent.feedback(rest, False)
        state = await feedback_state(system.uni.kb.store, AGENT)  # type: ignore[union-attr]
        learned = {
            "alpha": round(learned_alpha(state, system.uni.recall_config.feedback), 4),  # type: ignore[union-attr]
            "base_rate": round(base_rate(state) or 0.0, 4),
        }
        after = {q.id: (await asker.ask(q))[1] for q in first + second}
        zero_same = 0
        for q in first + second:
            bundle, _ = await asker.ask(q, **ZERO_WEIGHTS)
            zero_same += bundle.render() == before[q.id][0].render()
        varied: dict[str, dict[str, dict[str, float]]] = {}
        for name, overrides in (variants or {}).items():
            fb = {**feedback, **overrides}
            varied[name] = {q.id: (await asker.ask(q, feedback=fb))[1] for q in first + second}
    finally:
        await system.close()

    def half(qs_: list[Question], table: dict[str, Any], pick: Any) -> dict[str, float]:
        return {m: mean([pick(table[q.id])[m] for q in qs_]) for m in ("evidence", "answer")}

    return {
        "conversation": conv.id,
        "questions": {"first": len(first), "second": len(second)},
        "ratings": ratings,
        "learned": learned,
        "first": {"before": half(first, before, lambda v: v[1]), "after": half(first, after, lambda v: v)},
        "second": {"before": half(second, before, lambda v: v[1]), "after": half(second, after, lambda v: v)},
        "zero_weights_identical": f"{zero_same}/{len(first) + len(second)}",
        "variants": {
            name: {
                "first": half(first, table, lambda v: v),
                "second": half(second, table, lambda v: v),
            }
            for name, table in varied.items()
        },
        "_raw": {
            "before": {k: v[1] for k, v in before.items()},
            "after": after,
            **{f"variant:{name}": table for name, table in varied.items()},
            "first": [q.id for q in first],
            "second": [q.id for q in second],
        },
    }


def overall(rows: list[dict[str, Any]], variants: Sequence[str] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("first", "second"):
        out[part] = {}
        for when in ("before", "after", *(f"variant:{v}" for v in variants)):
            vals = [r["_raw"][when][qid] for r in rows for qid in r["_raw"][part]]
            out[part][when] = {m: mean([v[m] for v in vals]) for m in ("evidence", "answer")}
    same = [tuple(map(int, r["zero_weights_identical"].split("/"))) for r in rows]
    out["zero_weights_identical"] = f"{sum(a for a, _ in same)}/{sum(b for _, b in same)}"
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--only", default="", help="only these conversation ids (comma-separated)")
    p.add_argument("--skip", default="", help="leave these conversation ids out (comma-separated)")
    p.add_argument(
        "--variants",
        type=json.loads,
        default={},
        help='named RecallFeedback overrides evaluated on the same feedback, e.g. \'{"no-ucb": {"ucb_weight": 0}}\'',
    )
    p.add_argument("--json", type=Path, default=None)
    p.add_argument(
        "--feedback",
        type=json.loads,
        default={},
        help="RecallFeedback overrides as JSON, e.g. '{\"ucb_weight\": 0}'",
    )
    args = p.parse_args(argv)
    dataset = load_any(args.data, "locomo")
    convs = dataset.conversations[: args.conversations] if args.conversations else dataset.conversations
    only = {c for c in args.only.split(",") if c}
    skip = {c for c in args.skip.split(",") if c}
    unknown = (only | skip) - {c.id for c in dataset.conversations}
    if unknown:
        p.error(f"no such conversation(s): {sorted(unknown)}")
    convs = [c for c in convs if (not only or c.id in only) and c.id not in skip]
    rows = []
    for conv in convs:
        row = asyncio.run(run_one(conv, args.budget, args.seed, args.feedback, args.variants))
        rows.append(row)
        print(
            json.dumps({k: v for k, v in row.items() if k != "_raw"}),
            flush=True,
        )
    report = {
        "budget": args.budget,
        "seed": args.seed,
        "feedback": args.feedback,
        "conversation_ids": [c.id for c in convs],
        "variants": args.variants,
        "overall": overall(rows, list(args.variants)),
        "conversations": rows,
    }
    print(json.dumps(report["overall"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
