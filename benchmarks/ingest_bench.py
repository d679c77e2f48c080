"""Ingest benchmark: the LoCoMo development conversations through the ``Uniko`` facade.

Each conversation is one agent; every turn is one ``session.observe`` (one transaction),
timestamped at its session date + 30 s × turn index (``uniko_memory.cli.parse_locomo``). Reported:

- P1+P2 latency per turn (``ObserveResult.timings.total_ms``: validation, spaCy NER, commit),
  p50 / p95 / max, with the per-step split;
- wall time to ingest everything *including* P3 observations and P7a embeddings (``flush()``)
  and session finalisation, models already loaded (their load time is reported apart);
- where the background time goes (P3, P7a, finalisation), observations per turn, peak RSS.

Usage::

    python benchmarks/ingest_bench.py --data ../shared/data/locomo/locomo_dev.json [--conversations 2]
        [--profile out.prof] [--pace-ms 100]

``--pace-ms N`` starts each live turn N ms after the previous one started, as a chat would send
them: the background (P3, P7a) runs between turns, as it does in use. Without it the turns go
back to back and P1+P2 competes with a backlog that never drains (the worst case).

Targets (issue 4): p50 ≤ 10 ms, p95 ≤ 25 ms, total ≤ 60 s for the ~2,900 turns, peak RSS ≤ 1.5 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
TARGETS = {"p50_ms": 10.0, "p95_ms": 25.0, "total_s": 60.0, "rss_mb": 1536.0}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{cpu}, {cores} cores, Python {platform.python_version()}, load avg {load:.1f} at start"


class Timed:
    """Wraps an async method, accumulating wall seconds and calls (background steps)."""

    def __init__(self, obj: Any, name: str, totals: dict[str, float], key: str) -> None:
        real: Callable[..., Awaitable[Any]] = getattr(obj, name)

        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await real(*args, **kwargs)
            finally:
                totals[key] += time.perf_counter() - t0
                totals[key + "_calls"] += 1

        setattr(obj, name, wrapper)


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def run(
    raw: list[Any],
    conversations: int | None,
    config: dict[str, Any] | None = None,
    defer: bool = False,
    consolidate: bool = False,
    mode: str = "live",
    pace_ms: float = 0.0,
) -> dict[str, Any]:
    from uniko_memory.cli import parse_locomo
    from uniko_memory.config import UnikoConfig
    from uniko_memory.facade import Uniko
    from uniko_memory.model import Tier

    if conversations:
        raw = raw[:conversations]
    turns = parse_locomo(raw)
    load_avg_start = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="uniko-ingest-bench-") as tmp:
        t_load = time.perf_counter()
        cfg = dict(config or {})
        if defer:  # room for the whole backlog: P3/P7a wait until every turn is in
            cfg["pipeline"] = {**cfg.get("pipeline", {}), "ingest_queue_capacity": len(turns) + 1}
        uni = await Uniko.open(Path(tmp) / "bench.db", UnikoConfig.build(cfg))
        # Load both models before the clock starts (a real service loads them once at start-up).
        uni.nlp.analyze(["Warm-up sentence for Caroline in Paris."])
        await uni.kb.embedder.embed_documents(["warm-up"])
        load_s = time.perf_counter() - t_load

        if not consolidate:  # P4 is its own issue and benchmark; here only P1-P3, P7a, finalisation
            uni._pipeline.consolidate_fn = None
        totals: dict[str, float] = defaultdict(float)
        Timed(uni._post, "observe", totals, "p3")
        Timed(uni._post, "embed", totals, "p7a")
        Timed(uni._finalizer, "finalize", totals, "finalize")
        if consolidate and uni._pipeline.consolidate_fn is not None:
            Timed(uni._pipeline, "consolidate_fn", totals, "p4")

        lat: list[float] = []
        wall: list[float] = []
        steps: dict[str, list[float]] = defaultdict(list)
        if defer:  # hold the background worker's CPU slot: P1+P2 alone, then P3/P7a afterwards
            await uni._pipeline.cpu.acquire()
        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        if mode == "import":  # what an import does: each session's turns through observe_each
            for (agent, session), run_turns in itertools.groupby(turns, key=lambda t: (t.agent, t.session)):
                batch = [t.turn() for t in run_turns]
                s0 = time.perf_counter()
                bulk = await uni.agent(agent).session(session).observe_each(batch)
                wall.append((time.perf_counter() - s0) * 1000 / len(batch))
                assert bulk.stored == len(batch) and not bulk.refused, bulk
        for t in turns if mode == "live" else []:
            if pace_ms and wall:  # the next turn arrives pace_ms after the previous one did
                await asyncio.sleep(max(0.0, s0 + pace_ms / 1000 - time.perf_counter()))
            s0 = time.perf_counter()
            r = await uni.agent(t.agent).session(t.session).observe(t.turn())
            wall.append((time.perf_counter() - s0) * 1000)
            assert r.timings is not None and not r.was_replay
            lat.append(r.timings.total_ms)
            steps["validate"].append(r.timings.validate_ms)
            steps["ner"].append(r.timings.ner_ms)
            steps["commit"].append(r.timings.commit_ms)
        observe_s = time.perf_counter() - t0
        observe_cpu_s = cpu_seconds() - cpu0
        if defer:
            uni._pipeline.cpu.release()
        agents = list(dict.fromkeys(t.agent for t in turns))
        for a in agents:
            await uni.agent(a).flush()
        flushed_s = time.perf_counter() - t0
        sessions = list(dict.fromkeys((t.agent, t.session) for t in turns))
        for a, s in sessions:
            await uni.agent(a).session(s).finalize()
        total_s = time.perf_counter() - t0
        cpu_s = cpu_seconds() - cpu0

        counts: dict[str, int] = defaultdict(int)
        for a in agents:
            for tier in Tier:
                counts[tier.value] += await uni.kb.store.count(a, tier)
        await uni.close()

    return {
        "turns": len(turns),
        "conversations": len(agents),
        "sessions": len(sessions),
        "load_s": load_s,
        "observe_s": observe_s,
        "flushed_s": flushed_s,
        "total_s": total_s,
        "cpu_s": cpu_s,
        "observe_cpu_ms": observe_cpu_s * 1000 / len(turns),
        "config": config or {},
        "defer": defer,
        "consolidate": consolidate,
        "mode": mode,
        "pace_ms": pace_ms,
        "p50_ms": percentile(lat, 0.5),
        "p95_ms": percentile(lat, 0.95),
        "max_ms": max(lat, default=float("nan")),
        "mean_ms": statistics.fmean(lat) if lat else float("nan"),
        "wall_p50_ms": percentile(wall, 0.5),
        "wall_p95_ms": percentile(wall, 0.95),
        "steps_p50": {k: percentile(v, 0.5) for k, v in steps.items()},
        "steps_p95": {k: percentile(v, 0.95) for k, v in steps.items()},
        "steps_sum_s": {k: sum(v) / 1000 for k, v in steps.items()},
        "background": dict(totals),
        "counts": dict(counts),
        "obs_per_turn": counts["observation"] / len(turns),
        "rss_mb": peak_rss_mb(),
        "load_avg_start": load_avg_start,
        "load_avg_end": os.getloadavg()[0],
    }


def ok(value: float, target: float) -> str:
    return "yes" if value <= target else "**no**"


def report(r: dict[str, Any], label: str) -> str:
    bg = r["background"]
    lines = [
        f"### {label}",
        "",
        f"- Machine: {machine()}; load avg {r['load_avg_start']:.1f} → {r['load_avg_end']:.1f} during the run",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; data: {r['conversations']} conversations, "
        f"{r['sessions']} sessions, {r['turns']} turns; models loaded in {r['load_s']:.1f} s (not counted)"
        + (f"; config overrides {json.dumps(r['config'])}" if r["config"] else "")
        + ("; **background deferred** until all turns are in (P1+P2 measured alone)" if r["defer"] else "")
        + ("; P4 consolidation cycles on" if r["consolidate"] else "; P4 consolidation off")
        + (
            "; **import mode**: each session's turns through `observe_each` (windows of"
            " `IngestConfig.import_window_turns`), so the per-turn P1+P2 rows are empty and the"
            " caller's view is the call's wall time per turn"
            if r["mode"] == "import"
            else "; live mode: one `observe` per turn"
            + (
                f", one turn every {r['pace_ms']:g} ms (background work runs between turns)"
                if r["pace_ms"]
                else ""
            )
        ),
        "",
        "| metric | value | target | met |",
        "|---|---:|---:|:---:|",
        f"| P1+P2 latency p50 (`timings.total_ms`) | {r['p50_ms']:.1f} ms | ≤ 10 ms | {ok(r['p50_ms'], 10)} |",
        f"| P1+P2 latency p95 | {r['p95_ms']:.1f} ms | ≤ 25 ms | {ok(r['p95_ms'], 25)} |",
        f"| P1+P2 latency max / mean | {r['max_ms']:.1f} / {r['mean_ms']:.1f} ms | | |",
        f"| `observe` wall p50 / p95 (caller's view) | {r['wall_p50_ms']:.1f} / {r['wall_p95_ms']:.1f} ms | | |",
        f"| all turns observed (P1+P2) | {r['observe_s']:.1f} s | | |",
        f"| + P3 and P7a drained (`flush`) | {r['flushed_s']:.1f} s | | |",
        f"| **total incl. session finalisation** | **{r['total_s']:.1f} s** | ≤ 60 s | {ok(r['total_s'], 60)} |",
        f"| process CPU time (user + sys) over that span | {r['cpu_s']:.1f} s | | |",
        f"| CPU per turn during the observe loop{' (= P1+P2 alone)' if r['defer'] else ' (P1+P2 + overlapping background)'}"
        f" | {r['observe_cpu_ms']:.1f} ms | | |",
        f"| observations per turn | {r['obs_per_turn']:.2f} ({r['counts'].get('observation', 0)} total) | | |",
        f"| peak RSS | {r['rss_mb']:.0f} MB | ≤ 1,536 MB | {ok(r['rss_mb'], 1536)} |",
        "",
        "Where the time goes (seconds of wall time; background steps overlap the observe loop):",
        "",
        "| step | p50 ms/turn | p95 ms/turn | total s |",
        "|---|---:|---:|---:|",
    ]
    for k in ("validate", "ner", "commit") if r["steps_p50"] else ():
        lines.append(
            f"| P1/P2 {k} | {r['steps_p50'][k]:.2f} | {r['steps_p95'][k]:.2f} | {r['steps_sum_s'][k]:.1f} |"
        )
    for k, name in (
        ("p4", "P4 consolidation (triggered at 20 observations)"),
        ("p3", "P3 observations"),
        ("p7a", "P7a embeddings"),
        ("finalize", "session finalisation"),
    ):
        if k in bg:
            lines.append(f"| {name} ({int(bg.get(k + '_calls', 0))} calls) | | | {bg.get(k, 0.0):.1f} |")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r["counts"].items()) if v)
    lines += ["", f"Stored: {counts}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON (a list of conversations)"
    )
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--runs", type=int, default=1, help="repeat the whole run (fresh store each time)")
    parser.add_argument(
        "--profile", type=Path, default=None, help="write a cProfile of the event-loop thread"
    )
    parser.add_argument("--config", type=json.loads, default=None, help="UnikoConfig overrides as JSON")
    parser.add_argument(
        "--defer-background",
        action="store_true",
        help="hold P3/P7a until every turn is observed (measures P1+P2 without background contention)",
    )
    parser.add_argument(
        "--with-consolidation",
        action="store_true",
        help="leave the P4 consolidation trigger on (off by default)",
    )
    parser.add_argument(
        "--mode",
        choices=("live", "import"),
        default="live",
        help="live: one observe per turn (a chat); import: each session through observe_each",
    )
    parser.add_argument(
        "--pace-ms",
        type=float,
        default=0.0,
        help="live mode: start each turn this long after the previous one started (a chat's pace; 0: back to back)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the raw figures as JSON")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        sys.stderr.write(f"no data at {args.data}; pass --data (see ../shared/data/locomo/README.md)\n")
        return 2
    raw = json.loads(args.data.read_text("utf-8"))
    results = []
    for i in range(args.runs):
        prof = cProfile.Profile() if args.profile else None
        if prof:
            prof.enable()
        r = asyncio.run(
            run(
                raw,
                args.conversations,
                args.config,
                args.defer_background,
                args.with_consolidation,
                args.mode,
                args.pace_ms,
            )
        )
        if prof:
            prof.disable()
            prof.dump_stats(str(args.profile))
        results.append(r)
        sys.stdout.write(report(r, f"Ingest benchmark, run {i + 1} of {args.runs}") + "\n")
        sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
