"""Recall latency at scale: p50 / p95 / p99 of ``agent.recall`` on a synthetic N-turn memory.

The target (issue 5): recall p95 ≤ 300 ms on a 20,000-turn memory (p50 ≤ 50 / p95 ≤ 150 ms is the
bar for one ~600-turn conversation, ``recall_latency_bench``). The memory
is one agent's: ``--turns`` synthetic chat turns in sessions of ``--sessions-of`` turns, one
session per day, each between two of ``--speakers`` people. The chatter comes from the load
benchmark's generator (``benchmarks.load_bench.fill`` and its templates: names, places,
activities, dates); among it, facts about a cast of friends are planted once each ("My cousin
Ines Okafor went hiking at Granite Peak last weekend."). The questions ask for those facts
("Where did Ines Okafor go hiking?"), so besides latency the run reports a sanity quality
figure: the share of questions whose bundle holds the turn that states the answer (evidence hit
at ``--budget`` tokens; topic and summary items do not count, as in the harness). Everything
is seeded (``--seed``): the same arguments give the same world and the same questions.

The memory is built through the facade (``Uniko.open``, one ``commit_unit`` per session, or
``observe`` per turn with ``--ingest observe``), then the pipeline is flushed, every session
finalised and one consolidation cycle run; the ingest wall time and turns/s are printed, with a
progress line every 1,000 turns on stderr. A complete build leaves ``<store>.bench.json`` next
to the store; a later run with the same ``--turns/--sessions-of/--speakers/--seed`` reuses the
store (``--rebuild`` deletes it and builds again).

Recall is timed after a warm-up, cache off, query embedding and NLP included, no reranker:
p50 / p95 / p99 / mean, the early-exit share, bundle tokens; then process RSS and store size.

    uv run python -m benchmarks.recall_scale_bench --turns 20000 --sessions-of 40 --speakers 6 \\
        --store /tmp/uniko-scale-20k.db --questions 150 --budget 1000 --seed 7 [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import resource
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.load_bench import (
    ACTIVITIES,
    COMPANIES,
    JOBS,
    NAMES,
    PLACES,
    REPLIES,
    STATEMENTS,
    WHEN,
    fill,
    machine,
    percentile,
    rss_mb,
)

AGENT = "bench"
BASE = datetime(2023, 1, 2, tzinfo=UTC)
PROGRESS_EVERY = 1000
#: Manifest fields that must match for a store to be reused.
WORLD_KEYS = ("turns", "sessions_of", "speakers", "seed")

# ---------------------------------------------------------------------------------- the world
SURNAMES = [
    "Okafor", "Lindqvist", "Moreau", "Tanaka", "Haddad", "Novak", "Castillo", "Brennan", "Kowalski",
    "Achebe", "Varga", "Sato", "Ferreira", "Olsen", "Mensah", "Rossi", "Nakamura", "Dubois", "Petrov",
    "Quinn",
]  # fmt: skip
RELATIONS = ["My friend", "My cousin", "My neighbour", "My colleague", "My old roommate", "My sister-in-law"]
HIKES = [
    "the Skyline Trail", "Granite Peak", "the Cinder Ridge loop", "the Old Mill gorge", "Eagle Pass",
    "the Lavender Coast path", "Blackwater Falls", "the Three Lakes circuit", "Mount Tamarack",
    "the Fern Hollow trail", "Mirror Lake", "the Saddleback ridge",
]  # fmt: skip
SPECIES = [
    "beagle", "tabby cat", "corgi", "greyhound", "lop-eared rabbit", "cockatiel", "bearded dragon",
    "husky", "hamster", "border collie", "ragdoll kitten", "tortoise",
]  # fmt: skip
PET_NAMES = [
    "Waffles", "Juniper", "Pickle", "Nova", "Ziggy", "Marmalade", "Bramble", "Tofu", "Comet", "Olive",
    "Rascal", "Pippin",
]  # fmt: skip
CITIES = [p for p in PLACES if not p.startswith("the ")] + ["Seoul", "Tallinn", "Dublin", "Auckland"]
INSTRUMENTS = ["cello", "ukulele", "trumpet", "harp", "accordion", "drums", "banjo", "saxophone"]
BOOKS = [
    "The Glass Orchard", "A Map of Quiet Rivers", "The Last Lighthouse Keeper", "Salt and Cedar",
    "The Clockmaker's Daughter", "Northern Lights, Southern Seas", "The Paper Garden", "Small Hours",
]  # fmt: skip
HOLIDAY_PLACES = [*CITIES, "a cabin in the mountains", "a farmhouse in Tuscany", "a beach town in Portugal"]


@dataclass(frozen=True)
class FactKind:
    """One kind of plantable fact: how a speaker states it and how it is asked."""

    name: str
    statement: str  # {rel} {who} {when} + the answer slots
    question: str  # {who} + slots
    answer: str  # the answer (may use {date})


KINDS = [
    FactKind("hike", "{rel} {who} went hiking at {hike} {when}; the views were incredible.",
             "Where did {who} go hiking?", "{hike}"),
    FactKind("adopt", "{rel} {who} adopted a {species} named {pet} {when}.",
             "What did {who} adopt?", "a {species} named {pet}"),
    FactKind("move", "Big news: {rel_l} {who} moved to {city} this week.",
             "When did {who} move to {city}?", "{date}"),
    FactKind("job", "{rel} {who} got a job at {company} as a {job} {when}.",
             "Where did {who} get a job?", "{company}"),
    FactKind("instrument", "{rel} {who} has started learning the {instrument}, lessons twice a week.",
             "What instrument is {who} learning?", "the {instrument}"),
    FactKind("book", "{rel} {who} recommended a novel called {book}; I should read it.",
             "Which book did {who} recommend?", "{book}"),
    FactKind("signup", "{rel} {who} signed up for {activity} {when}.",
             "What did {who} sign up for?", "{activity}"),
    FactKind("holiday", "{rel} {who} is spending the holidays in {holiday} this year.",
             "Where is {who} spending the holidays?", "{holiday}"),
]  # fmt: skip


@dataclass(frozen=True)
class Fact:
    kind: str
    who: str
    turn_id: str
    session: str
    at: datetime
    question: str
    answer: str


@dataclass
class World:
    speakers: list[str]
    sessions: list[tuple[str, list[Any]]]  # (session id, turns)
    facts: list[Fact]

    @property
    def turns(self) -> int:
        return sum(len(t) for _, t in self.sessions)

    @property
    def end(self) -> datetime:
        return max(t.at for _, turns in self.sessions for t in turns)


def build_world(turns: int, sessions_of: int, n_speakers: int, seed: int) -> World:
    """The deterministic synthetic memory: sessions of chat turns with planted, unique facts."""
    from uniko_memory import Turn

    rng = random.Random(seed)
    names = NAMES[:]
    rng.shuffle(names)
    speakers = names[:n_speakers]
    # The cast the facts are about: full names whose first name is no speaker's.
    cast = [f"{first} {last}" for first in names[n_speakers:] for last in SURNAMES]
    pairs = [(who, kind) for who in cast for kind in KINDS]
    rng.shuffle(pairs)
    n_sessions = math.ceil(turns / sessions_of)
    statement_slots = [i for i in range(turns) if (i % sessions_of) % 2 == 0]
    n_facts = min(len(pairs), len(statement_slots), max(1, turns // 16))
    planted = dict(zip(sorted(rng.sample(statement_slots, n_facts)), pairs, strict=False))

    sessions: list[tuple[str, list[Any]]] = []
    facts: list[Fact] = []
    g = 0  # global turn index
    for s in range(n_sessions):
        sid = f"day-{s:04d}"
        a, b = rng.sample(speakers, 2)
        at = BASE + timedelta(days=s, hours=rng.randint(8, 21), minutes=rng.randint(0, 59))
        out = []
        for i in range(min(sessions_of, turns - g)):
            sender, to = (a, b) if i % 2 == 0 else (b, a)
            tid = f"{sid}:{i}"
            if g in planted:
                who, kind = planted[g]
                slots = {
                    "who": who,
                    "rel": (rel := rng.choice(RELATIONS)),
                    "rel_l": rel[0].lower() + rel[1:],
                    "when": rng.choice(WHEN),
                    "hike": rng.choice(HIKES),
                    "species": rng.choice(SPECIES),
                    "pet": rng.choice(PET_NAMES),
                    "city": rng.choice(CITIES),
                    "company": rng.choice(COMPANIES),
                    "job": rng.choice(JOBS),
                    "instrument": rng.choice(INSTRUMENTS),
                    "book": rng.choice(BOOKS),
                    "activity": rng.choice(ACTIVITIES),
                    "holiday": rng.choice(HOLIDAY_PLACES),
                    "date": f"{at:%-d %B %Y}",
                }
                text = kind.statement.format(**slots)
                facts.append(
                    Fact(
                        kind=kind.name,
                        who=who,
                        turn_id=tid,
                        session=sid,
                        at=at,
                        question=kind.question.format(**slots),
                        answer=kind.answer.format(**slots),
                    )
                )
            else:
                text = fill(rng.choice(STATEMENTS if i % 2 == 0 else REPLIES), rng)
            out.append(Turn(id=tid, sender=sender, content=text, at=at, addressed_to=[to]))
            at += timedelta(seconds=rng.randint(20, 120))
            g += 1
        sessions.append((sid, out))
    return World(speakers=speakers, sessions=sessions, facts=facts)


def pick_questions(world: World, n: int, warmup: int, seed: int) -> tuple[list[Fact], list[Fact]]:
    """``n`` questions and ``warmup`` warm-up questions, disjoint where the facts allow."""
    rng = random.Random(seed * 7919 + 1)
    order = world.facts[:]
    rng.shuffle(order)
    questions = order[:n]
    rest = order[n:] or order
    return questions, rest[:warmup]


# ---------------------------------------------------------------------------------- build / reuse
def manifest_path(store: Path) -> Path:
    return store.with_name(store.name + ".bench.json")


def store_files(store: Path) -> list[Path]:
    return [p for p in (store, Path(f"{store}-wal"), Path(f"{store}-shm")) if p.exists()]


def store_bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in store_files(store))


def remove_store(store: Path) -> None:
    for p in (*store_files(store), store.with_name(store.name + ".lock"), manifest_path(store)):
        p.unlink(missing_ok=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def build(uni: Any, world: World, mode: str) -> dict[str, Any]:
    """Ingest every session, flush, finalise every session, consolidate once; phase wall times."""
    agent = uni.agent(AGENT)
    total = world.turns
    t0 = time.perf_counter()
    done = 0
    for sid, turns in world.sessions:
        session = agent.session(sid)
        if mode == "observe":
            for turn in turns:
                await session.observe(turn)
        else:
            await session.commit_unit(turns)
        before, done = done, done + len(turns)
        if done // PROGRESS_EVERY > before // PROGRESS_EVERY or done == total:
            el = time.perf_counter() - t0
            rate = done / el if el else float("nan")
            eta = (total - done) / rate if rate else float("nan")
            depth = uni.health()["pipeline"]["post_ingest"]["queue_depth"]
            progress(
                f"[ingest] {done:>6}/{total} turns  {el:7.1f} s  {rate:6.1f} turns/s  "
                f"post-ingest queue {depth}  eta {eta:5.0f} s  rss {rss_mb():.0f} MB"
            )
    t_commit = time.perf_counter()
    await agent.flush()
    t_flush = time.perf_counter()
    progress(f"[ingest] flushed in {t_flush - t_commit:.1f} s; finalising {len(world.sessions)} sessions")
    for k, (sid, _) in enumerate(world.sessions, 1):
        await agent.session(sid).finalize()
        if k % 100 == 0 or k == len(world.sessions):
            progress(f"[finalize] {k}/{len(world.sessions)} sessions  {time.perf_counter() - t_flush:.1f} s")
    t_final = time.perf_counter()
    cycle = await agent.consolidate()
    t_cons = time.perf_counter()
    progress(
        f"[consolidate] {t_cons - t_final:.1f} s" + (" (cycle FAILED, see log)" if cycle is None else "")
    )
    wall = t_cons - t0
    return {
        "ingest_mode": mode,
        "commit_s": round(t_commit - t0, 2),
        "flush_s": round(t_flush - t_commit, 2),
        "finalize_s": round(t_final - t_flush, 2),
        "consolidate_s": round(t_cons - t_final, 2),
        "ingest_wall_s": round(wall, 2),
        "turns_per_s": round(total / wall, 2),
        "commit_turns_per_s": round(total / (t_commit - t0), 2),
        "consolidation_failed": cycle is None,
        "built_at": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "rss_after_build_mb": round(rss_mb(), 1),
    }


# ---------------------------------------------------------------------------------- recall
def bundle_hit(bundle: Any, gold: str) -> bool:
    return any(gold in it.message_ids() for it in bundle.items if it.kind not in ("topic", "summary"))


async def measure(uni: Any, world: World, args: argparse.Namespace) -> dict[str, Any]:
    from uniko_memory.model import message_id

    agent = uni.agent(AGENT)
    questions, warm = pick_questions(world, args.questions, args.warmup, args.seed)
    ref = world.end + timedelta(days=1)

    async def ask(q: Fact) -> tuple[float, Any]:
        t0 = time.perf_counter()
        b = await agent.recall(
            q.question, token_budget=args.budget, limit=200, reference_ts=ref, use_cache=False
        )
        return (time.perf_counter() - t0) * 1000, b

    for q in warm:
        await ask(q)
    load_before = os.getloadavg()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for r in range(args.repeats):
        for q in questions:
            ms, b = await ask(q)
            rows.append(
                {
                    "repeat": r,
                    "kind": q.kind,
                    "question": q.question,
                    "answer": q.answer,
                    "turn_id": q.turn_id,
                    "ms": round(ms, 2),
                    "hit": bundle_hit(b, message_id(AGENT, q.turn_id)),
                    "answer_in_bundle": q.kind != "move" and q.answer.lower() in b.render().lower(),
                    "early_exit": bool(b.phase1_only or b.phase2_only),
                    "tokens": b.total_tokens,
                    "items": len(b.items),
                    "degraded": list(b.degraded),
                }
            )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    load_after = os.getloadavg()
    lat = [r["ms"] for r in rows]
    first = [r for r in rows if r["repeat"] == 0]
    by_kind: dict[str, list[bool]] = {}
    for r in first:
        by_kind.setdefault(r["kind"], []).append(r["hit"])
    text_rows = [r for r in first if r["kind"] != "move"]
    return {
        "questions": len(questions),
        "warmup": len(warm),
        "recalls": len(rows),
        "reference_ts": ref.isoformat(),
        "p50_ms": percentile(lat, 0.50),
        "p95_ms": percentile(lat, 0.95),
        "p99_ms": percentile(lat, 0.99),
        "mean_ms": statistics.fmean(lat),
        "max_ms": max(lat),
        "cpu_per_recall_ms": 1000 * cpu / len(rows),
        "wall_s": round(wall, 2),
        "early_exit_share": sum(r["early_exit"] for r in rows) / len(rows),
        "tokens_mean": statistics.fmean(r["tokens"] for r in rows),
        "items_mean": statistics.fmean(r["items"] for r in rows),
        "degraded": sum(bool(r["degraded"]) for r in rows),
        "evidence_hit": sum(r["hit"] for r in first) / len(first),
        "evidence_hit_by_kind": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_kind.items())},
        "answer_in_bundle": sum(r["answer_in_bundle"] for r in text_rows) / max(1, len(text_rows)),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "rows": rows,
    }


# ---------------------------------------------------------------------------------- the run
def prepare_store(args: argparse.Namespace) -> tuple[Path, dict[str, Any] | None]:
    """The store path and its build record (None: build now); refuses a store of another world."""
    store: Path = args.store or Path(f"/tmp/uniko-scale-{args.turns}-s{args.seed}.db")
    manifest = manifest_path(store)
    old = json.loads(manifest.read_text()) if manifest.exists() else None
    if args.rebuild:
        remove_store(store)
        return store, None
    if store.exists() and (old is None or any(old.get(k) != getattr(args, k) for k in WORLD_KEYS)):
        why = (
            "no complete build recorded"
            if old is None
            else f"built with { {k: old.get(k) for k in WORLD_KEYS} }"
        )
        raise SystemExit(
            f"{store} exists but does not hold this memory ({why}); pass --rebuild or another --store"
        )
    return store, old if store.exists() else None


def config_of(args: argparse.Namespace) -> Any:
    """The default configuration with ``--config``'s overrides, and ``--exact-below`` (the embedded
    store's ANN switch) if given."""
    from uniko_memory.config import UnikoConfig

    overrides: dict[str, Any] = json.loads(json.dumps(args.config or {}))
    if args.exact_below is not None:
        store = overrides.setdefault("store", {})
        store.setdefault("embedded_vectors", {})["exact_below"] = args.exact_below
    return UnikoConfig.build(overrides) if overrides else UnikoConfig()


async def run(args: argparse.Namespace, store: Path, old: dict[str, Any] | None) -> dict[str, Any]:
    from uniko_memory import Uniko

    load_start = os.getloadavg()
    world_params = {k: getattr(args, k) for k in WORLD_KEYS}
    t_gen = time.perf_counter()
    world = build_world(args.turns, args.sessions_of, args.speakers, args.seed)
    gen_s = time.perf_counter() - t_gen
    if args.questions > len(world.facts):
        progress(f"only {len(world.facts)} facts planted: asking {len(world.facts)} questions")
    fresh = old is None
    manifest = manifest_path(store)

    t_open = time.perf_counter()
    uni = await Uniko.open(store, config_of(args))
    uni.nlp.analyze(["Warm-up sentence for Priya in Lisbon."])
    await uni.kb.embedder.embed_documents(["warm-up"])
    open_s = time.perf_counter() - t_open
    try:
        agent = uni.agent(AGENT)
        if fresh:
            progress(f"building {args.turns} turns in {len(world.sessions)} sessions at {store}")
            build_figs = await build(uni, world, args.ingest)
            manifest.write_text(json.dumps({**world_params, **build_figs}, indent=2))
        else:
            build_figs = {k: v for k, v in (old or {}).items() if k not in WORLD_KEYS}
        nodes = await agent.stats()
        if nodes.get("message", 0) != world.turns:
            raise SystemExit(f"{store} holds {nodes.get('message', 0)} messages, expected {world.turns}")
        # The keyword index's RAM copy (a default of the embedded store) is read in the background
        # after the first search: built here, so no timed recall runs beside its build.
        keyword_index_s = None
        if (ready := getattr(uni.kb.store, "keyword_index_ready", None)) is not None:
            t_kw = time.perf_counter()
            if await ready():
                keyword_index_s = round(time.perf_counter() - t_kw, 2)
        rss_before = rss_mb()
        rec = await measure(uni, world, args)
        rss_after = rss_mb()
    finally:
        await uni.close()
    return {
        "machine": machine(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "command": "python -m benchmarks.recall_scale_bench " + shlex.join(sys.argv[1:]),
        "store": str(store),
        "reused": not fresh,
        **world_params,
        "sessions": len(world.sessions),
        "facts": len(world.facts),
        "budget": args.budget,
        "world_gen_s": round(gen_s, 2),
        "open_s": round(open_s, 2),
        "keyword_index_build_s": keyword_index_s,
        "build": build_figs,
        "nodes": nodes,
        "store_mb": round(store_bytes(store) / 2**20, 1),
        "rss_before_recall_mb": round(rss_before, 1),
        "rss_after_recall_mb": round(rss_after, 1),
        "rss_peak_mb": round(max(rss_after, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), 1),
        "load_start": [round(x, 2) for x in load_start],
        "recall": rec,
    }


def markdown(r: dict[str, Any]) -> str:
    rec, b = r["recall"], r["build"]

    def load(xs: list[float]) -> str:
        return " / ".join(f"{x:.2f}" for x in xs)

    ok = rec["p95_ms"] <= 300
    if b:
        ingest = (
            f"{b['ingest_wall_s']:.0f} s, **{b['turns_per_s']:.1f} turns/s** "
            f"(commit {b['commit_s']:.0f} s = {b['commit_turns_per_s']:.1f} turns/s, flush {b['flush_s']:.0f} s, "
            f"finalise {b['finalize_s']:.0f} s, consolidate {b['consolidate_s']:.0f} s"
            + (", cycle FAILED" if b.get("consolidation_failed") else "")
            + f"; {b['ingest_mode']})"
            + (f", built {b['built_at']}" if r["reused"] else "")
        )
    else:
        ingest = "(reused store, no build record)"
    kinds = ", ".join(f"{k} {v:.0%}" for k, v in rec["evidence_hit_by_kind"].items())
    rows = [
        ("command", f"`{r['command']}`"),
        ("machine", r["machine"]),
        ("date", r["date"]),
        ("memory", f"{r['turns']} turns, {r['sessions']} sessions of {r['sessions_of']}, {r['speakers']} speakers, "
                   f"{r['facts']} planted facts, seed {r['seed']}"),
        ("store", f"{r['store']} ({'reused' if r['reused'] else 'built now'}), {r['store_mb']} MB"),
        ("nodes", ", ".join(f"{k} {v}" for k, v in r["nodes"].items())),
        ("ingest wall time", ingest),
        ("models loaded", f"{r['open_s']} s"),
        ("keyword index copy built (before the recalls)",
         "none" if r["keyword_index_build_s"] is None else f"{r['keyword_index_build_s']} s"),
        ("questions × repeats (warm-up)", f"{rec['questions']} × {rec['recalls'] // max(1, rec['questions'])} "
                                          f"({rec['warmup']}), token budget {r['budget']}, limit 200, cache off"),
        ("recall p50 / p95 / p99", f"**{rec['p50_ms']:.1f} / {rec['p95_ms']:.1f} / {rec['p99_ms']:.1f} ms** "
                                   f"(target p95 ≤ 300: {'met' if ok else 'NOT met'})"),
        ("recall mean / max", f"{rec['mean_ms']:.1f} / {rec['max_ms']:.1f} ms"),
        ("process CPU per recall", f"{rec['cpu_per_recall_ms']:.1f} ms"),
        ("early-exit share", f"{rec['early_exit_share']:.0%}"),
        ("bundle tokens / items, mean", f"{rec['tokens_mean']:.0f} / {rec['items_mean']:.1f}"),
        ("evidence hit @ budget", f"**{rec['evidence_hit']:.0%}** ({kinds})"),
        ("answer text in bundle", f"{rec['answer_in_bundle']:.0%} (all kinds but 'move')"),
        ("degraded recalls", str(rec["degraded"])),
        ("RSS before / after recall, peak", f"{r['rss_before_recall_mb']:.0f} / {r['rss_after_recall_mb']:.0f} / "
                                            f"{r['rss_peak_mb']:.0f} MB"),
        ("load avg (1/5/15 min) at start", load(r["load_start"])),
        ("load avg before / after recall", f"{load(rec['load_before'])} → {load(rec['load_after'])}"),
    ]  # fmt: skip
    out = [
        f"Recall latency at scale — {platform.machine()}, {r['date']}, {r['turns']} turns, budget {r['budget']}",
        "",
        "| measure | value |",
        "|---|---|",
    ]
    return "\n".join(out + [f"| {k} | {v} |" for k, v in rows])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=20000)
    p.add_argument("--sessions-of", type=int, default=40, help="turns per session (one session a day)")
    p.add_argument("--speakers", type=int, default=6, help="people who chat (two per session)")
    p.add_argument("--store", type=Path, default=None, help="build (or reuse) the memory here")
    p.add_argument("--rebuild", action="store_true", help="delete the store at --store and build it again")
    p.add_argument("--ingest", choices=["unit", "observe"], default="unit",
                   help="one commit_unit per session (default) or one observe per turn")  # fmt: skip
    p.add_argument("--questions", type=int, default=150)
    p.add_argument("--warmup", type=int, default=5, help="recalls before timing")
    p.add_argument("--repeats", type=int, default=1, help="times each question is asked")
    p.add_argument("--budget", type=int, default=1000, help="token budget")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--config", type=json.loads, default=None, help="UnikoConfig overrides as JSON")
    p.add_argument(
        "--exact-below",
        type=int,
        default=None,
        help="vectors a tier from which the embedded store searches an HNSW graph (default: the config's)",
    )
    p.add_argument("--json", type=Path, help="write the figures (and every question's row) here")
    args = p.parse_args(argv)
    if args.turns < 2 or args.sessions_of < 2 or not 2 <= args.speakers <= len(NAMES) - 1:
        p.error("--turns and --sessions-of must be ≥ 2, --speakers between 2 and 19")
    if args.questions < 1 or args.repeats < 1 or args.warmup < 0:
        p.error("--questions and --repeats must be ≥ 1, --warmup ≥ 0")
    store, old = prepare_store(args)
    result = asyncio.run(run(args, store, old))
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
