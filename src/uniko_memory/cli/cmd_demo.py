"""``uniko demo`` and ``uniko stats``."""

from __future__ import annotations

import time
from pathlib import Path

from ..model import Chunk, Observation, Tier
from ..store.filters import Eq
from .cmd_ingest import _print_tiers
from .formats import parse_jsonl, sample_text
from .output import _out

DEMO_AGENT = "demo"
#: Where ``uniko demo`` (and ``make demo``) keeps its store, to explore afterwards.
DEMO_PATH = Path("uniko-demo.db")
DEMO_QUERIES = (
    "What is the name of Priya's cat?",
    "When did Tomas hurt his ankle?",
    "Where does Priya work now?",
)


async def demo(path: Path = DEMO_PATH) -> None:
    """Ingest the bundled sample through the facade, show what each tier now holds, and keep the
    store at ``path`` (a second run replays the stored turns) with the commands to explore it."""
    from ..facade import Uniko

    t_start = time.perf_counter()
    turns = parse_jsonl(sample_text(), DEMO_AGENT)
    db = path
    uni = await Uniko.open(db)
    try:
        agent = uni.agent(DEMO_AGENT)
        latencies = []
        replays = 0
        t0 = time.perf_counter()
        for t in turns:
            r = await agent.session(t.session).observe(t.turn())
            replays += r.was_replay
            if not r.was_replay:
                latencies.append(r.timings.total_ms if r.timings else 0.0)
        ingest_ms = (time.perf_counter() - t0) * 1000
        await agent.flush()
        sessions = list(dict.fromkeys(t.session for t in turns))
        reports = [await agent.session(s).finalize() for s in sessions]
        _out(_stored_line(len(turns) - replays, replays, len(sessions), ingest_ms, latencies, db))
        store = uni.kb.store
        for tier in Tier:
            n = await store.count(DEMO_AGENT, tier)
            if n:
                _out(f"  {tier.value:<20} {n}")
        transcript = sum(r.transcript_chunks for r in reports)
        obs_chunks = sum(r.observation_chunks for r in reports)
        _out(
            f"\nfinalised {len(sessions)} sessions: {transcript} transcript chunks, {obs_chunks} observation chunks"
        )

        observations = await store.find(DEMO_AGENT, Tier.OBSERVATION, limit=6, order_by="time")
        _out("\nobservations (rule-based, no LLM):")
        for o in observations:
            assert isinstance(o, Observation)
            when = f"  [{o.anchor_lo:%d %b %Y}]" if o.anchor_lo else ""
            _out(f"  - {o.content}{when}")
        chunks = await store.find(
            DEMO_AGENT, Tier.CHUNK, Eq("chunk_type", "session"), limit=1, order_by="time"
        )
        if chunks:
            c = chunks[0]
            assert isinstance(c, Chunk)
            first = c.text.split("\n", 1)[0]
            _out(f"\ntranscript chunk 0 of {c.heading}: {len(c.covered_ids)} turns, {c.token_count} tokens")
            _out(f"  {first[:100]}{'...' if len(first) > 100 else ''}")

        for q in DEMO_QUERIES:
            t0 = time.perf_counter()
            bundle = await agent.recall(q, token_budget=200, limit=5)
            phase = "1" if bundle.phase1_only else "2" if bundle.phase2_only else "3"
            _out(
                f"\n? {q}   (recall {(time.perf_counter() - t0) * 1000:.0f} ms, exited after phase {phase}, "
                f"{bundle.total_tokens} tokens, coverage {bundle.coverage:.2f})"
            )
            for item in bundle.items:
                _out(f"  {item.score:.2f} {item.kind:<11} {item.rendered}")
        _out(f"\ndemo done in {time.perf_counter() - t_start:.1f} s; the store is kept at {db}")
        _out("try next:")
        for command in (
            f'uniko recall "Where does Priya work now?" --path {db} --explain',
            f"uniko sessions --path {db}",
            f"uniko list --path {db} --tier observation",
            f"uniko show ID --path {db}   (an id from the list)",
            f"uniko export --path {db} -o demo.jsonl",
        ):
            _out(f"  {command}")
    finally:
        await uni.close()


def _stored_line(
    stored: int, replays: int, sessions: int, ingest_ms: float, latencies: list[float], db: Path
) -> str:
    """What the demo's ingest did: new turns and replays of turns the store already held, apart."""
    if not stored:
        return (
            f"stored 0 new turns: all {replays} were already stored at {db} (a rerun replays them; "
            f"delete {db} for a fresh demo)"
        )
    latencies = sorted(latencies)
    again = f" ({replays} already stored)" if replays else ""
    return (
        f"stored {stored} turns{again} in {sessions} sessions in {ingest_ms:.0f} ms "
        f"(P1+P2 median {latencies[len(latencies) // 2]:.1f} ms/turn, first turn loads the models) at {db}"
    )


async def stats(path: Path, *, read_only: bool = False) -> None:
    """Count the nodes per agent and tier of the embedded store at ``path`` (no models loaded);
    ``read_only``: a reader beside the process that writes it."""
    from ..knowledge_base import KnowledgeBase
    from .store_access import reader_config

    kb = await KnowledgeBase.from_config(
        reader_config() if read_only else None, path=path, default_models=False
    )
    try:
        await _print_tiers(kb.store, await kb.store.agents())
    finally:
        await kb.close()
