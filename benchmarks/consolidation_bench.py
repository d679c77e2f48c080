"""Consolidation (P4) and cortex sweep cost on LoCoMo, through the facade, offline.

    python -m benchmarks.consolidation_bench --data ../shared/data/locomo/locomo_dev.json [--conversations N]

Per conversation: a fresh in-memory engine with the shipped models; each session committed as one
unit, post-ingest flushed, sessions finalised (automatic consolidation is held back so the cycle can
be timed alone); then consolidation cycles of ``consolidation_batch_size`` observations until the
backlog is empty, a rerun (must be a no-op), and one cortex sweep. With ``--load-check`` the first
conversation is ingested again and interactive recalls are timed idle and while its cycles run
(the issue asks for p95 under load within 2× of idle).

Prints Markdown tables; ``--json PATH`` also writes the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness.convert import convert_locomo_conversation
from benchmarks.harness.format import Conversation
from uniko_memory.config import UnikoConfig
from uniko_memory.consolidation import CycleStats, run_cycle
from uniko_memory.cortex import run_sweep
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Entity, Fact, Tier
from uniko_memory.store.filters import Eq, IsNull

AGENT = "bench"
#: Automatic consolidation held back during ingest, so the cycle is timed on its own.
HOLD = {"pipeline": {"consolidation_threshold": 10**9, "consolidation_interval_secs": 10**7}}


async def ingest(uni: Uniko, conv: Conversation) -> float:
    t0 = time.perf_counter()
    agent = uni.agent(AGENT)
    for s in conv.sessions:
        turns = [
            Turn(
                id=t.id,
                sender=t.speaker,
                content=t.text,
                at=t.timestamp,
                addressed_to=t.addressed_to or next((x for x in conv.speakers if x != t.speaker), None),
            )
            for t in s.turns
        ]
        if turns:
            await agent.session(s.id).commit_unit(turns)
    await agent.flush()
    for s in conv.sessions:
        await agent.session(s.id).finalize()
    return time.perf_counter() - t0


async def consolidate(uni: Uniko) -> tuple[CycleStats, list[float]]:
    batch = uni.config.pipeline.consolidation_batch_size
    total, times = CycleStats(), []
    while True:
        t0 = time.perf_counter()
        one = await run_cycle(uni.kb.store, uni.config, uni.kb.embedder, AGENT, batch=batch)
        if one.observations_processed == 0:
            break
        times.append(time.perf_counter() - t0)
        total = total + one
        if one.observations_processed < batch:
            break
    return total, times


async def one_conversation(conv: Conversation) -> dict[str, Any]:
    uni = await Uniko.in_memory(UnikoConfig.build(HOLD))
    try:
        store = uni.kb.store
        ingest_s = await ingest(uni, conv)
        obs_total = await store.count(AGENT, Tier.OBSERVATION)
        stats, times = await consolidate(uni)
        t0 = time.perf_counter()
        rerun = await run_cycle(store, uni.config, uni.kb.embedder, AGENT)
        rerun_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sweep = await run_sweep(store, uni.config, uni.kb.embedder, AGENT)
        sweep_s = time.perf_counter() - t0
        facts = await store.count(AGENT, Tier.FACT)
        open_facts = await store.count(AGENT, Tier.FACT, IsNull("valid_to"))
        unstable = await store.find(AGENT, Tier.ENTITY, Eq("unstable", True), limit=10_000)
        multi = [
            f
            for f in await store.find(AGENT, Tier.FACT, limit=100_000)
            if isinstance(f, Fact) and f.observation_count > 1
        ]
        return {
            "conversation": conv.id,
            "turns": len(conv.turns()),
            "observations": obs_total,
            "ingest_s": round(ingest_s, 2),
            "cycles": len(times),
            "cycle_s": round(sum(times), 3),
            "cycle_ms_max": round(max(times, default=0.0) * 1000, 1),
            "ms_per_100_obs": round(sum(times) * 1000 / max(stats.observations_processed, 1) * 100, 1),
            "processed": stats.observations_processed,
            "facts_created": stats.facts_created,
            "facts_reinforced": stats.facts_reinforced,
            "facts_invalidated": stats.facts_invalidated,
            "drift_alerts": stats.drift_alerts,
            "facts": facts,
            "open_facts": open_facts,
            "multi_support_facts": len(multi),
            "unstable_entities": sorted(e.name for e in unstable if isinstance(e, Entity)),
            "rerun_processed": rerun.observations_processed,
            "rerun_ms": round(rerun_s * 1000, 1),
            "sweep_ms": round(sweep_s * 1000, 1),
            "topics": sweep.topics.topics if sweep.topics else 0,
        }
    finally:
        await uni.close()


def p95(xs: list[float]) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


async def load_check(conv: Conversation, n_questions: int) -> dict[str, Any]:
    """Recall latency idle vs. while consolidation cycles run (same store, same questions)."""
    uni = await Uniko.in_memory(UnikoConfig.build(HOLD))
    try:
        await ingest(uni, conv)
        agent = uni.agent(AGENT)
        questions = [q.text for q in conv.questions[:n_questions]]

        async def ask(q: str) -> float:
            t0 = time.perf_counter()
            await agent.recall(q, token_budget=1000, use_cache=False)
            return time.perf_counter() - t0

        for q in questions[:3]:
            await ask(q)  # warm-up
        idle = [await ask(q) for q in questions]
        cycle = asyncio.create_task(agent.consolidate())
        busy: list[float] = []
        i = 0
        while not cycle.done():
            busy.append(await ask(questions[i % len(questions)]))
            i += 1
        stats = await cycle
        return {
            "idle_p95_ms": round(p95(idle) * 1000, 1),
            "busy_p95_ms": round(p95(busy) * 1000, 1),
            "idle_median_ms": round(statistics.median(idle) * 1000, 1),
            "busy_median_ms": round(statistics.median(busy) * 1000, 1) if busy else None,
            "busy_samples": len(busy),
            "ratio": round(p95(busy) / p95(idle), 2) if busy else None,
            "processed": stats.observations_processed if stats else None,
        }
    finally:
        await uni.close()


def table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return "\n".join(out)


async def main_async(args: argparse.Namespace, raw: list[dict[str, Any]]) -> dict[str, Any]:
    convs = [convert_locomo_conversation(s, i) for i, s in enumerate(raw)][: args.conversations]
    rows = []
    for conv in convs:
        row = await one_conversation(conv)
        rows.append(row)
        print(
            f"{conv.id}: {row['processed']} observations → {row['facts_created']} Facts in {row['cycle_s']} s",
            file=sys.stderr,
        )
    print("## Consolidation cycle (P4) on LoCoMo\n")
    print(
        table(
            rows,
            [
                "conversation",
                "turns",
                "observations",
                "cycles",
                "cycle_s",
                "cycle_ms_max",
                "ms_per_100_obs",
                "facts_created",
                "facts_reinforced",
                "facts_invalidated",
                "drift_alerts",
                "open_facts",
                "rerun_processed",
                "rerun_ms",
            ],
        )
    )
    total = {
        "conversation": "**all**",
        **{
            k: sum(r[k] for r in rows)
            for k in (
                "turns",
                "observations",
                "cycles",
                "facts_created",
                "facts_reinforced",
                "facts_invalidated",
            )
        },
        "cycle_s": round(sum(r["cycle_s"] for r in rows), 2),
    }
    print(
        "\n"
        + table(
            [total],
            [
                "conversation",
                "turns",
                "observations",
                "cycles",
                "cycle_s",
                "facts_created",
                "facts_reinforced",
                "facts_invalidated",
            ],
        )
    )
    print("\n## Cortex sweep after consolidation\n")
    print(table(rows, ["conversation", "sweep_ms", "topics", "multi_support_facts", "unstable_entities"]))
    result: dict[str, Any] = {"rows": rows}
    if args.load_check and convs:
        lc = await load_check(convs[0], args.questions)
        result["load_check"] = lc
        print("\n## Interactive recall while a cycle runs (first conversation)\n")
        print(table([lc], list(lc)))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    p.add_argument("--conversations", type=int, default=None)
    p.add_argument("--load-check", action="store_true", help="time recall idle vs during a cycle")
    p.add_argument("--questions", type=int, default=40, help="questions for --load-check")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    result = asyncio.run(main_async(args, json.loads(Path(args.data).read_text())))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
