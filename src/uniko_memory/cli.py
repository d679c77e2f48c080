"""The ``uniko`` command. Progress bars and printing live here, never in the engine."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from .model import Edge, EdgeType, Message, Participant, Session, Tier, message_id, participant_id, session_id
from .store.embedded import EmbeddedStore

DEMO_AGENT = "demo"
DEMO_QUERIES = (
    "What is the name of Priya's cat?",
    "Which race is Tomas training for?",
    "Where does Priya work now?",
)


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def load_sample() -> list[dict[str, Any]]:
    """The bundled sample conversation (written for this project)."""
    raw = resources.files("uniko_memory.data").joinpath("sample_conversation.jsonl").read_text("utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


async def _store_sample(store: EmbeddedStore, embedder: Any, turns: list[dict[str, Any]]) -> int:
    vectors = await embedder.embed_documents([t["text"] for t in turns])
    previous: dict[str, tuple[str, datetime]] = {}
    async with store.unit(DEMO_AGENT) as u:
        for person in sorted({t["sender"] for t in turns} | {t["to"] for t in turns}):
            u.put(Participant(id=participant_id(DEMO_AGENT, person), agent=DEMO_AGENT, external_id=person, name=person))
        for i, (turn, vec) in enumerate(zip(turns, vectors, strict=True)):
            at = datetime.fromisoformat(turn["at"])
            sid = session_id(DEMO_AGENT, turn["session"])
            if turn["session"] not in previous:
                u.put(Session(id=sid, agent=DEMO_AGENT, external_id=turn["session"], started_at=at, last_activity_at=at))
            mid = message_id(DEMO_AGENT, f"turn-{i}")
            sender = participant_id(DEMO_AGENT, turn["sender"])
            u.put(
                Message(
                    id=mid,
                    agent=DEMO_AGENT,
                    external_id=f"turn-{i}",
                    session_id=sid,
                    sender_id=sender,
                    sender_name=turn["sender"],
                    addressed_to=[participant_id(DEMO_AGENT, turn["to"])],
                    content=turn["text"],
                    timestamp=at,
                    seq=i,
                ),
                vec,
            )
            u.put_edge(Edge(type=EdgeType.IN_SESSION, src=mid, dst=sid))
            u.put_edge(Edge(type=EdgeType.SENT_BY, src=mid, dst=sender))
            if turn["session"] in previous:
                prev_id, prev_at = previous[turn["session"]]
                gap = int((at - prev_at).total_seconds() * 1000)
                u.put_edge(Edge(type=EdgeType.NEXT, src=prev_id, dst=mid, props={"gap_ms": gap}))
            previous[turn["session"]] = (mid, at)
    return len(turns)


async def demo(path: Path | None) -> None:
    from .providers.embed.local import LocalOnnxEmbedder

    embedder = LocalOnnxEmbedder()
    turns = load_sample()
    with tempfile.TemporaryDirectory() as tmp:
        db = path or Path(tmp) / "demo.db"
        store = await EmbeddedStore.open(db, dim=embedder.dim)
        try:
            t0 = time.perf_counter()
            n = await _store_sample(store, embedder, turns)
            _out(f"stored {n} turns in {(time.perf_counter() - t0) * 1000:.0f} ms at {db}")
            for tier in (Tier.PARTICIPANT, Tier.SESSION, Tier.MESSAGE):
                _out(f"  {tier.value:<12} {await store.count(DEMO_AGENT, tier)}")
            for q in DEMO_QUERIES:
                t0 = time.perf_counter()
                hits = await store.hybrid_search(
                    DEMO_AGENT, Tier.MESSAGE, q, await embedder.embed_query(q), alpha=0.5, k=3
                )
                _out(f"\n? {q}   ({(time.perf_counter() - t0) * 1000:.1f} ms, hybrid alpha 0.5)")
                for h in hits:
                    m = h.node
                    assert isinstance(m, Message)
                    _out(f"  {h.score:.3f}  [{m.timestamp:%d %b %Y}] {m.sender_name}: {m.content}")
        finally:
            await store.close()


async def stats(path: Path) -> None:
    store = await EmbeddedStore.open(path)
    try:
        for agent in await store.agents():
            _out(f"agent {agent}")
            for tier in Tier:
                n = await store.count(agent, tier)
                if n:
                    _out(f"  {tier.value:<20} {n}")
    finally:
        await store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="uniko", description="uniko-memory command line")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="store the bundled sample conversation and search it")
    p_demo.add_argument("--path", type=Path, default=None, help="keep the store at this path")
    p_stats = sub.add_parser("stats", help="count nodes per agent and tier in a store")
    p_stats.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    if args.command == "demo":
        asyncio.run(demo(args.path))
    elif args.command == "stats":
        asyncio.run(stats(args.path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
