"""Recall latency on one LoCoMo conversation (~600 turns): p50 / p95 of ``agent.recall``.

Query embedding and NLP are included; no reranker; the recall cache is off; the default call
(``agent.recall(q, token_budget=N)``, no item limit) unless ``--limit`` is given. The memory is
ingested through the facade first (or reused with ``--store`` from an earlier run).

``--peer mem0`` (extra ``peers``) ingests the same conversation into mem0 OSS (offline, no LLM;
``benchmarks.harness.mem0_system``) and times its 10-item ``search`` right after each recall, on
the same question, neither with a cached query embedding: the issue-20 bar is the ratio of the two.

``--live`` times what a chat sees: before each question one more turn (from the next conversation
of the split, in turn) is stored, in uniko (``observe`` and ``flush``: the background work is done
before the question, as between a chat's turns) and in mem0 (``add``). Every search memo and
cache keyed on the content starts cold. The turns go to a copy of the memory, removed after.

    uv run python -m benchmarks.recall_latency_bench --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness.convert import load_any
from benchmarks.harness.run import reference_time
from uniko_memory import Turn, Uniko

AGENT = "bench"


async def ingest(uni: Uniko, conv: object) -> None:
    agent = uni.agent(AGENT)
    for session in conv.sessions:  # type: ignore[attr-defined]
        turns = [
            Turn(
                id=t.id,
                sender=t.speaker,
                content=t.text,
                at=t.timestamp,
                addressed_to=next((s for s in conv.speakers if s != t.speaker), None),  # type: ignore[attr-defined]
            )
            for t in session.turns
        ]
        await agent.session(session.id).commit_unit(turns)
    await agent.flush()
    for session in conv.sessions:  # type: ignore[attr-defined]
        await agent.session(session.id).finalize()
    await agent.consolidate()


async def run(
    data: Path,
    store: Path | None,
    conv_index: int,
    budget: int,
    repeats: int,
    fresh: bool,
    limit: int | None = None,
    peer: str = "none",
    live: bool = False,
) -> dict[str, float]:
    ds = load_any(data, "locomo")
    convs = sorted(ds.conversations, key=lambda c: c.id)
    conv = convs[conv_index]
    path = store or Path(f"/tmp/uniko-latency-{conv.id}.db")
    scratch = Path(tempfile.mkdtemp(prefix="uniko-live-")) if live else None
    if scratch is not None:  # the live turns go to a copy (or a new memory), removed after
        for suffix in ("", "-wal") if not fresh else ():
            if (source := Path(f"{path}{suffix}")).exists():
                shutil.copy(source, scratch / source.name)
        path = scratch / path.name
    uni = await Uniko.open(path)
    try:
        if fresh:
            await ingest(uni, conv)
        agent = uni.agent(AGENT)
        # Turns said meanwhile (--live): the other conversations' (its own again if it is alone).
        extra = [(s, t) for c in convs if c is not conv for s in c.sessions for t in s.turns] or [
            (s, t) for s in conv.sessions for t in s.turns
        ]
        questions = [q for q in conv.questions if not q.abstention]
        await agent.recall(questions[0].text, token_budget=budget, use_cache=False)  # warm-up
        mem0 = await _peer(peer, conv, questions[0].text)
        peer_lat: list[float] = []
        load_start = os.getloadavg()[0]
        lat: list[float] = []
        early = 0
        cpu = 0.0
        for _ in range(repeats):
            for q in questions:
                if live:
                    await _say_one_more(agent, mem0, extra[len(lat) % len(extra)], reference_time(conv, q))
                cpu0 = time.process_time()
                t0 = time.perf_counter()
                b = await agent.recall(
                    q.text,
                    token_budget=budget,
                    limit=limit,
                    reference_ts=reference_time(conv, q),
                    use_cache=False,
                )
                lat.append((time.perf_counter() - t0) * 1000)
                early += b.phase1_only or b.phase2_only
                if mem0 is not None:
                    t0 = time.perf_counter()
                    mem0.search(q.text, PEER_TOP_K)
                    peer_lat.append((time.perf_counter() - t0) * 1000)
                cpu += time.process_time() - cpu0
        cpu_ms = cpu * 1000 / len(lat)  # the peer's searches included (not the turns stored meanwhile)
        lat.sort()
        peer_figures: dict[str, float] = {}
        if mem0 is not None:
            peer_lat.sort()
            m50, m95 = statistics.median(peer_lat), peer_lat[int(0.95 * (len(peer_lat) - 1))]
            peer_figures = {
                "mem0_search_p50_ms": m50,
                "mem0_search_p95_ms": m95,
                "p50_ratio_to_mem0": statistics.median(lat) / m50,
                "p95_ratio_to_mem0": lat[int(0.95 * (len(lat) - 1))] / m95,
            }
            await mem0.close()
        return {
            "conversation": conv.id,  # type: ignore[dict-item]
            "turns": len(conv.turns()),
            "queries": len(lat),
            "p50_ms": statistics.median(lat),
            "p95_ms": lat[int(0.95 * (len(lat) - 1))],
            "early_exit_share": early / len(lat),
            "process_cpu_ms_per_recall": cpu_ms,
            "limit": "default (budget-driven)" if limit is None else limit,  # type: ignore[dict-item]
            "live": live,  # type: ignore[dict-item]
            **peer_figures,
            "load_1min_start_end": f"{load_start:.2f} / {os.getloadavg()[0]:.2f}",  # type: ignore[dict-item]
        }
    finally:
        await uni.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


async def _say_one_more(agent: Any, mem0: Any, said: tuple[Any, Any], at: datetime) -> None:
    """One more turn of a live chat, stored in both memories before the next question."""
    session, turn = said
    await agent.session("live-" + session.id).observe(Turn(sender=turn.speaker, content=turn.text, at=at))
    await agent.flush()
    if mem0 is not None:
        mem0.add_turn(
            f"live-{turn.id}-{int(at.timestamp())}", "live-" + session.id, at, turn.speaker, turn.text
        )


#: The peer's result count: the issue-20 bar compares with mem0's 10-item search.
PEER_TOP_K = 10


async def _peer(peer: str, conv: object, warm_query: str) -> Any:
    """mem0 holding the conversation (None without ``--peer mem0``); a clear exit without ``mem0ai``."""
    if peer == "none":
        return None
    from benchmarks.harness.mem0_system import Mem0System, mem0_available

    if not mem0_available():
        raise SystemExit("--peer mem0 needs mem0ai: install the 'peers' extra (uv sync --extra peers)")
    system = Mem0System(query_cache_size=0)
    await system.setup(conv)  # type: ignore[arg-type]
    system.search(warm_query, PEER_TOP_K)  # warm-up, as uniko's
    return system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo_dev.json"))
    ap.add_argument("--store", type=Path, default=None, help="reuse (or create) the memory at this path")
    ap.add_argument("--conversation", type=int, default=0)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--limit", type=int, default=None, help="item limit (default: the default call's)")
    ap.add_argument("--peer", choices=["none", "mem0"], default="none", help="time mem0's search beside it")
    ap.add_argument("--live", action="store_true", help="store one more turn before each question")
    args = ap.parse_args()
    fresh = args.store is None or not args.store.exists()
    r = asyncio.run(
        run(
            args.data,
            args.store,
            args.conversation,
            args.budget,
            args.repeats,
            fresh,
            args.limit,
            args.peer,
            args.live,
        )
    )
    print(
        f"Recall latency — {platform.machine()}, {datetime.now(UTC):%Y-%m-%d}, token budget {args.budget}\n"
    )
    print("| metric | value |\n|---|---|")
    for k, v in r.items():
        print(f"| {k} | {v:.3f} |" if isinstance(v, float) else f"| {k} | {v} |")


if __name__ == "__main__":
    main()
