"""Load benchmark: N agents × M sessions ingesting and recalling at once through the facade.

Not part of CI (it runs for a fixed time on the real local models). One ``Uniko.open`` on a
temporary directory (embedded store, ONNX embedder, spaCy: loopback only, nothing leaves the
machine). Each agent gets a few seeded sessions; recall latency is measured *idle* on that store
first; then, for ``--seconds`` (or ``--soak-seconds``), every session has a writer that sends
synthetic chat turns as fast as the engine takes them (even sessions with ``observe``, odd ones
through the streaming queue with ``submit``, which can raise ``Backpressure``), and every agent
has a reader that recalls in a loop. It stops by itself: the writers stop at the deadline, the
background work is drained (``--drain-timeout``), and the figures are printed.

Reported: throughput (turns/s acknowledged, recalls/s, over the load time plus the few seconds
the turns already queued at the deadline take to settle), recall p50/p95/p99 idle vs under load,
turn acknowledgement latency, pipeline queue depths (sampled from ``Uniko.health()``),
backpressure events, RSS (sampled every ``--sample-every`` s; growth as the slope over the second
half of the run, MB/min), and lost turns: every acknowledged turn must be a stored Message after
the drain, and nothing else may be (exit status 1 otherwise).

Usage::

    uv run python benchmarks/load_bench.py --agents 8 --sessions 2 --seconds 60 [--json out.json]
    uv run python benchmarks/load_bench.py --agents 8 --sessions 2 --soak-seconds 1800

The turns come from a small generator (names, places, activities, dates), never from a dataset.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# ---------------------------------------------------------------------------------- synthetic chat
NAMES = [
    "Priya", "Tomas", "Amara", "Jonas", "Mei", "Diego", "Sofia", "Kwame", "Lena", "Ravi",
    "Hana", "Mateo", "Ingrid", "Yusuf", "Clara", "Omar", "Elif", "Noah", "Zara", "Felix",
]  # fmt: skip
PLACES = [
    "Lisbon", "Porto", "Nairobi", "Kyoto", "Oslo", "Valencia", "Montreal", "Lyon", "Cape Town",
    "Edinburgh", "the farmers' market", "the climbing gym", "the old harbour", "the botanical garden",
]  # fmt: skip
ACTIVITIES = [
    "a pottery class", "a half marathon", "a violin lesson", "a salsa workshop", "a sourdough course",
    "a chess tournament", "a kayaking trip", "a photography walk", "a book club meeting",
    "a volunteer shift at the animal shelter", "a jazz concert", "a bouldering session",
]  # fmt: skip
PETS = [("cat", "Biscuit"), ("dog", "Pepper"), ("rabbit", "Clover"), ("parrot", "Mango"), ("cat", "Oliver")]
COMPANIES = ["Northwind", "Bluefin Labs", "Greenleaf Foods", "Atlas Robotics", "Harbor Health"]
JOBS = ["data analyst", "nurse", "product designer", "teacher", "software engineer", "chef"]
WHEN = ["yesterday", "last weekend", "two weeks ago", "last May", "on Saturday", "this morning", "last year"]
LATER = ["next Friday", "in June", "next weekend", "tomorrow", "in two weeks"]
STATEMENTS = [
    "I went to {activity} in {place} {when}, and it was wonderful.",
    "{friend} and I are planning {activity} in {place} {later}.",
    "My friend {friend} just adopted a {pet} called {petname}.",
    "I started working at {company} as a {job} {when}.",
    "Did you know {friend} moved to {place} {when}?",
    "We had dinner with {friend} near {place} {when}; the food was great.",
    "I signed up for {activity} {later}, I am a bit nervous.",
    "{friend} finally finished {activity} {when} after months of practice.",
]
REPLIES = [
    "That sounds lovely! How was {place}?",
    "Oh nice, I have always wanted to try {activity}.",
    "Good luck with that! Tell me how it goes.",
    "Wow, {friend} must be thrilled.",
    "I remember you mentioned {place} before. Was it crowded?",
]
QUESTIONS = [
    "Where did I go for {activity}?",
    "What is the name of {friend}'s {pet}?",
    "When did {friend} move to {place}?",
    "Who works at {company}?",
    "What am I planning with {friend}?",
    "What did I do in {place}?",
]


def fill(template: str, rng: random.Random) -> str:
    pet, petname = rng.choice(PETS)
    return template.format(
        activity=rng.choice(ACTIVITIES),
        place=rng.choice(PLACES),
        when=rng.choice(WHEN),
        later=rng.choice(LATER),
        friend=rng.choice(NAMES),
        pet=pet,
        petname=petname,
        company=rng.choice(COMPANIES),
        job=rng.choice(JOBS),
    )


@dataclass
class Conversation:
    """One session's synthetic chat: the user states things, the assistant replies."""

    agent: str
    session: str
    user: str
    start: datetime
    rng: random.Random
    seq: int = 0

    def next_turn(self) -> Any:
        from uniko_memory import Turn

        i = self.seq
        self.seq += 1
        if i % 2 == 0:
            sender, to, text = self.user, "assistant", fill(self.rng.choice(STATEMENTS), self.rng)
        else:
            sender, to, text = "assistant", self.user, fill(self.rng.choice(REPLIES), self.rng)
        return Turn(
            id=f"{self.session}:{i}",
            sender=sender,
            content=text,
            at=self.start + timedelta(seconds=30 * i),
            addressed_to=[to],
        )


# ---------------------------------------------------------------------------------- measurement
def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def rss_mb() -> float:
    """The current resident set size (Linux /proc), else the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return float("nan")
    return 60 * sum((t - mx) * (v - my) for t, v in points) / var


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


@dataclass
class Figures:
    acked: dict[str, set[str]] = field(default_factory=dict)  # agent -> acknowledged turn ids
    ack_ms: dict[str, list[float]] = field(default_factory=lambda: {"observe": [], "submit": []})
    recall_ms: list[float] = field(default_factory=list)
    idle_recall_ms: list[float] = field(default_factory=list)
    backpressure_raised: int = 0
    ingest_errors: Counter[str] = field(default_factory=Counter)
    recall_errors: Counter[str] = field(default_factory=Counter)
    samples: list[dict[str, Any]] = field(default_factory=list)


# ---------------------------------------------------------------------------------- the run
async def submit_retrying(session: Any, turn: Any, figs: Figures, stop: asyncio.Event) -> Any:
    """Queue a turn on the streaming path; on ``Backpressure`` back off and retry (None: stopped)."""
    from uniko_memory.errors import Backpressure

    while True:
        try:
            return await session.submit(turn)
        except Backpressure:
            figs.backpressure_raised += 1
            if stop.is_set():
                return None
            await asyncio.sleep(0.05)


async def writer(uni: Any, conv: Conversation, figs: Figures, stop: asyncio.Event, streaming: bool) -> None:
    """Send turns until ``stop``; a turn counts once the engine acknowledges it as stored."""
    session = uni.agent(conv.agent).session(conv.session)
    pending: set[asyncio.Task[None]] = set()

    async def settle(turn_id: str, future: asyncio.Future[Any], t0: float) -> None:
        try:
            await future
        except Exception as exc:
            figs.ingest_errors[type(exc).__name__] += 1
            return
        figs.ack_ms["submit"].append((time.perf_counter() - t0) * 1000)
        figs.acked[conv.agent].add(turn_id)

    while not stop.is_set():
        turn = conv.next_turn()
        t0 = time.perf_counter()
        if streaming:
            future = await submit_retrying(session, turn, figs, stop)
            if future is None:
                break
            task = asyncio.ensure_future(settle(turn.id, future, t0))
            pending.add(task)
            task.add_done_callback(pending.discard)
            await asyncio.sleep(0)  # let the queue worker run
            continue
        try:
            await session.observe(turn)
        except Exception as exc:
            figs.ingest_errors[type(exc).__name__] += 1
            continue
        figs.ack_ms["observe"].append((time.perf_counter() - t0) * 1000)
        figs.acked[conv.agent].add(turn.id)
    if pending:
        await asyncio.gather(*pending)


async def reader(uni: Any, agent: str, rng: random.Random, figs: Figures, stop: asyncio.Event) -> None:
    """Recall in a loop until ``stop`` (the cache off: every recall does the work)."""
    handle = uni.agent(agent)
    while not stop.is_set():
        query = fill(rng.choice(QUESTIONS), rng)
        t0 = time.perf_counter()
        try:
            await handle.recall(query, use_cache=False)
        except Exception as exc:
            figs.recall_errors[type(exc).__name__] += 1
            continue
        figs.recall_ms.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(0)


async def sampler(uni: Any, figs: Figures, stop: asyncio.Event, t_start: float, every: float) -> None:
    while True:
        pipe = uni.health()["pipeline"]
        figs.samples.append(
            {
                "t": time.perf_counter() - t_start,
                "rss_mb": rss_mb(),
                "state": pipe["state"],
                "ingest_depth": pipe["ingest"]["queue_depth"],
                "post_depth": pipe["post_ingest"]["queue_depth"],
                "post_in_flight": pipe["post_ingest"]["in_flight"],
                "backpressure_events": pipe["backpressure_events"],
            }
        )
        if stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from uniko_memory import Uniko
    from uniko_memory.config import UnikoConfig
    from uniko_memory.model import Message, Tier

    duration = args.soak_seconds or args.seconds
    rng = random.Random(args.seed)
    figs = Figures()
    base = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    with tempfile.TemporaryDirectory(prefix="uniko-load-bench-") as tmp:
        t_load = time.perf_counter()
        uni = await Uniko.open(Path(tmp) / "load.db", UnikoConfig())
        uni.nlp.analyze(["Warm-up sentence for Priya in Lisbon."])
        await uni.kb.embedder.embed_documents(["warm-up"])
        load_s = time.perf_counter() - t_load
        if args.no_consolidation:
            uni._pipeline.consolidate_fn = None
        try:
            agents = [f"agent-{a}" for a in range(args.agents)]
            users = {agent: NAMES[i % len(NAMES)] for i, agent in enumerate(agents)}
            convs = [
                Conversation(
                    agent=agent,
                    session=f"{agent}/s{s}",
                    user=users[agent],
                    start=base + timedelta(days=7 * s + a),
                    rng=random.Random(rng.random()),
                )
                for a, agent in enumerate(agents)
                for s in range(args.sessions)
            ]
            for agent in agents:
                figs.acked[agent] = set()

            # Seed: a unit of turns per session (the multi-turn transaction), drained.
            t_seed = time.perf_counter()
            for conv in convs:
                turns = [conv.next_turn() for _ in range(args.seed_turns)]
                await uni.agent(conv.agent).session(conv.session).commit_unit(turns)
                figs.acked[conv.agent].update(t.id for t in turns)
            for agent in agents:
                await uni.agent(agent).flush(args.drain_timeout)
            seed_s = time.perf_counter() - t_seed

            # Idle recall latency on the same store, nothing else running.
            for i in range(args.idle_recalls):
                agent = agents[i % len(agents)]
                query = fill(rng.choice(QUESTIONS), rng)
                t0 = time.perf_counter()
                await uni.agent(agent).recall(query, use_cache=False)
                figs.idle_recall_ms.append((time.perf_counter() - t0) * 1000)
            seeded = sum(len(v) for v in figs.acked.values())

            # Load.
            stop = asyncio.Event()
            t_start = time.perf_counter()
            bp0 = uni.health()["pipeline"]["backpressure_events"]
            sample_task = asyncio.create_task(sampler(uni, figs, stop, t_start, args.sample_every))
            workers = [
                asyncio.create_task(writer(uni, conv, figs, stop, streaming=i % 2 == 1))
                for i, conv in enumerate(convs)
            ]
            workers += [
                asyncio.create_task(reader(uni, agent, random.Random(rng.random()), figs, stop))
                for agent in agents
            ]
            await asyncio.sleep(duration)
            stop.set()
            await asyncio.gather(*workers)  # queued turns settle: acknowledged or failed
            load_s_actual = time.perf_counter() - t_start
            await sample_task

            # Drain, then count: every acknowledged turn stored, nothing else.
            t_drain = time.perf_counter()
            drained = True
            try:
                for agent in agents:
                    await uni.agent(agent).flush(args.drain_timeout)
            except TimeoutError:
                drained = False
            drain_s = time.perf_counter() - t_drain
            stored: dict[str, set[str]] = {}
            for agent in agents:
                found = await uni.kb.store.find(agent, Tier.MESSAGE, limit=1_000_000)  # the store maximum
                stored[agent] = {m.external_id for m in found if isinstance(m, Message)}
            health = uni.health()["pipeline"]
        finally:
            await uni.close()

    acked_total = sum(len(v) for v in figs.acked.values())
    lost = sum(len(figs.acked[a] - stored[a]) for a in figs.acked)
    unexpected = sum(len(stored[a] - figs.acked[a]) for a in figs.acked)
    half = [(s["t"], s["rss_mb"]) for s in figs.samples if s["t"] >= load_s_actual / 2]
    rss = [s["rss_mb"] for s in figs.samples]
    states = Counter(s["state"] for s in figs.samples)
    under_load_turns = acked_total - seeded
    return {
        "machine": machine(),
        "agents": args.agents,
        "sessions_per_agent": args.sessions,
        "seconds": duration,
        "settled_s": round(load_s_actual - duration, 1),
        "soak": bool(args.soak_seconds),
        "model_load_s": round(load_s, 2),
        "seed_turns": seeded,
        "seed_s": round(seed_s, 2),
        "turns_acked_under_load": under_load_turns,
        "turns_per_s": under_load_turns / load_s_actual,
        "recalls": len(figs.recall_ms),
        "recalls_per_s": len(figs.recall_ms) / duration,
        "elapsed_s": round(load_s_actual, 1),
        "recall_idle_ms": {q: percentile(figs.idle_recall_ms, p) for q, p in _QS.items()},
        "recall_load_ms": {q: percentile(figs.recall_ms, p) for q, p in _QS.items()},
        "ack_observe_ms": {q: percentile(figs.ack_ms["observe"], p) for q, p in _QS.items()},
        "ack_submit_ms": {q: percentile(figs.ack_ms["submit"], p) for q, p in _QS.items()},
        "ingest_depth_max": max((s["ingest_depth"] for s in figs.samples), default=0),
        "post_depth_max": max((s["post_depth"] for s in figs.samples), default=0),
        "post_depth_mean": sum(s["post_depth"] for s in figs.samples) / max(1, len(figs.samples)),
        "pipeline_states": dict(states),
        "backpressure_raised": figs.backpressure_raised,
        "backpressure_events": health["backpressure_events"] - bp0,
        "ingest_errors": dict(figs.ingest_errors),
        "recall_errors": dict(figs.recall_errors),
        "rss_start_mb": rss[0] if rss else float("nan"),
        "rss_end_mb": rss[-1] if rss else float("nan"),
        "rss_peak_mb": max(rss, default=float("nan")),
        "rss_slope_mb_per_min": slope_per_minute(half),
        "drained": drained,
        "drain_s": round(drain_s, 2),
        "acked_turns": acked_total,
        "stored_messages": sum(len(v) for v in stored.values()),
        "lost_turns": lost,
        "unexpected_messages": unexpected,
        "samples": figs.samples,
    }


_QS = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def markdown(r: dict[str, Any]) -> str:
    def ms(d: dict[str, float]) -> str:
        return " / ".join(f"{d[q]:.0f}" for q in _QS)

    lost_ok = r["lost_turns"] == 0 and r["unexpected_messages"] == 0 and r["drained"]
    rows = [
        ("agents × sessions", f"{r['agents']} × {r['sessions_per_agent']}"),
        ("load duration", f"{r['seconds']:g} s" + (" (soak)" if r["soak"] else "") + f", then {r['settled_s']} s for queued turns to settle"),
        ("ingest throughput", f"{r['turns_per_s']:.1f} turns/s ({r['turns_acked_under_load']} acknowledged)"),
        ("recall throughput", f"{r['recalls_per_s']:.1f} recalls/s ({r['recalls']} recalls)"),
        ("recall p50 / p95 / p99, idle", f"{ms(r['recall_idle_ms'])} ms"),
        ("recall p50 / p95 / p99, under load", f"{ms(r['recall_load_ms'])} ms"),
        ("turn ack p50 / p95 / p99, observe (P1+P2 inline)", f"{ms(r['ack_observe_ms'])} ms"),
        ("turn ack p50 / p95 / p99, submit (queue wait included)", f"{ms(r['ack_submit_ms'])} ms"),
        ("ingest queue depth, max", str(r["ingest_depth_max"])),
        ("post-ingest queue depth, max / mean", f"{r['post_depth_max']} / {r['post_depth_mean']:.1f}"),
        ("pipeline states sampled", ", ".join(f"{k} {v}" for k, v in sorted(r["pipeline_states"].items()))),
        ("backpressure events (pipeline / seen by writers)", f"{r['backpressure_events']} / {r['backpressure_raised']}"),
        ("ingest / recall errors", f"{r['ingest_errors'] or 0} / {r['recall_errors'] or 0}"),
        ("RSS start / end / peak", f"{r['rss_start_mb']:.0f} / {r['rss_end_mb']:.0f} / {r['rss_peak_mb']:.0f} MB"),
        ("RSS slope, second half", f"{r['rss_slope_mb_per_min']:+.1f} MB/min"),
        ("drain after load", f"{r['drain_s']} s" + ("" if r["drained"] else " (**timed out**)")),
        ("acknowledged turns / stored Messages", f"{r['acked_turns']} / {r['stored_messages']}"),
        ("lost turns", f"{r['lost_turns']}" + (" (zero lost)" if lost_ok else " **LOST**")),
    ]  # fmt: skip
    out = [
        f"Load benchmark — {r['machine']}; models loaded in {r['model_load_s']} s; "
        f"seeded {r['seed_turns']} turns in {r['seed_s']} s.",
        "",
        "| measure | value |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", type=int, default=8)
    p.add_argument("--sessions", type=int, default=2, help="sessions (writers) per agent")
    p.add_argument("--seconds", type=float, default=60.0, help="load duration")
    p.add_argument("--soak-seconds", type=float, default=0.0, help="a longer soak instead of --seconds")
    p.add_argument("--seed-turns", type=int, default=12, help="turns per session before the load")
    p.add_argument("--idle-recalls", type=int, default=30)
    p.add_argument("--sample-every", type=float, default=2.0, help="seconds between health/RSS samples")
    p.add_argument("--drain-timeout", type=float, default=600.0)
    p.add_argument("--no-consolidation", action="store_true", help="P1-P3 and P7a only (no P4 cycles)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", type=Path, help="write the figures (and the samples) here")
    args = p.parse_args(argv)
    if args.agents < 1 or args.sessions < 1 or (args.soak_seconds or args.seconds) <= 0:
        p.error("--agents, --sessions and the duration must be positive")
    result = asyncio.run(run(args))
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
        print(f"\nfigures written to {args.json}")
    return 0 if result["lost_turns"] == 0 and result["unexpected_messages"] == 0 and result["drained"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    sys.exit(main())
