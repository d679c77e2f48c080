"""Embedded-store benchmark: insert rate, hybrid / filtered-hybrid latency, RSS and disk at N records.

Run: ``uv run python benchmarks/store_bench.py [--n 100000] [--queries 200]``. Prints a Markdown table.
Vectors are clustered (2,000 centres, cos(member, centre) ~ 0.74) and texts are Zipf draws from a
synthetic 20k vocabulary, as in models-and-stores.md §7.2. Not a timed test: figures go to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import resource
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from uniko_memory.model import Message, Tier
from uniko_memory.store import Eq
from uniko_memory.store.embedded import EmbeddedStore

DIM = 384


def make_corpus(n: int, seed: int = 42) -> tuple[list[str], np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}x{(i * 7919) % 1000}" for i in range(20_000)]
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks**1.07
    p /= p.sum()
    lengths = rng.integers(8, 33, size=n)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    texts, pos = [], 0
    for length in lengths:
        texts.append(" ".join(vocab[w] for w in words[pos : pos + length]))
        pos += length
    centres = rng.standard_normal((2000, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    assign = rng.integers(0, 2000, size=n)
    noise = rng.standard_normal((n, DIM)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    vecs = centres[assign] + 0.9 * noise
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    mid_vocab = vocab[200:3000]
    queries = [" ".join(rng.choice(mid_vocab, size=int(rng.integers(2, 4)))) for _ in range(1000)]
    return texts, vecs.astype(np.float32), queries


def message(i: int, text: str, base: datetime) -> Message:
    return Message(
        id=f"m{i}",
        agent="bench",
        external_id=str(i),
        session_id=f"s{i % 10}",
        sender_id=f"p{i % 2}",
        sender_name=f"P{i % 2}",
        content=text,
        timestamp=base + timedelta(seconds=30 * i),
    )


def _disk_mb(workdir: Path) -> float:
    return sum(p.stat().st_size for p in workdir.iterdir() if p.is_file()) / 1e6


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


async def run(n: int, n_queries: int, workdir: Path) -> dict[str, float]:
    texts, vecs, queries = make_corpus(n)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    store = await EmbeddedStore.open(workdir / "bench.db", dim=DIM)
    t0 = time.perf_counter()
    batch = 1000
    for start in range(0, n, batch):
        async with store.unit("bench") as u:
            for i in range(start, min(n, start + batch)):
                u.put(message(i, texts[i], base), vecs[i])
    insert_s = time.perf_counter() - t0

    single = []
    for j in range(200):
        i = n + j
        t = time.perf_counter()
        async with store.unit("bench") as u:
            u.put(message(i, texts[j], base), vecs[j])
        single.append((time.perf_counter() - t) * 1000)

    rng = np.random.default_rng(7)
    qvecs = vecs[rng.integers(0, n, size=n_queries + 10)] + 0.3 * rng.standard_normal(
        (n_queries + 10, DIM)
    ).astype(np.float32)

    async def timed(filtered: bool) -> list[float]:
        out = []
        for qi in range(n_queries + 10):
            flt = Eq("session", f"s{qi % 10}") if filtered else None
            t = time.perf_counter()
            await store.hybrid_search(
                "bench", Tier.MESSAGE, queries[qi], qvecs[qi], alpha=0.5, k=20, filter=flt
            )
            if qi >= 10:  # warm-up excluded
                out.append((time.perf_counter() - t) * 1000)
        return out

    t = time.perf_counter()
    await store.vector_search("bench", Tier.MESSAGE, qvecs[0], k=20)  # lazy matrix load
    load_ms = (time.perf_counter() - t) * 1000
    hybrid = await timed(False)
    filtered = await timed(True)
    vec_only = []
    for qi in range(n_queries):
        t = time.perf_counter()
        await store.vector_search("bench", Tier.MESSAGE, qvecs[qi], k=20)
        vec_only.append((time.perf_counter() - t) * 1000)
    bm25 = []
    for qi in range(n_queries):
        t = time.perf_counter()
        await store.text_search("bench", Tier.MESSAGE, queries[qi], k=20)
        bm25.append((time.perf_counter() - t) * 1000)
    await store.close()
    disk = _disk_mb(workdir)
    return {
        "n": n,
        "insert_rows_per_s": n / insert_s,
        "single_unit_p50_ms": statistics.median(single),
        "single_unit_p95_ms": pct(single, 95),
        "matrix_load_ms": load_ms,
        "vector_p50_ms": statistics.median(vec_only),
        "vector_p95_ms": pct(vec_only, 95),
        "bm25_p50_ms": statistics.median(bm25),
        "bm25_p95_ms": pct(bm25, 95),
        "hybrid_p50_ms": statistics.median(hybrid),
        "hybrid_p95_ms": pct(hybrid, 95),
        "filtered_hybrid_p50_ms": statistics.median(filtered),
        "filtered_hybrid_p95_ms": pct(filtered, 95),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "disk_mb": disk,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = asyncio.run(run(args.n, args.queries, Path(tmp)))
    print(
        f"Embedded store benchmark — {platform.processor() or platform.machine()}, {datetime.now(UTC):%Y-%m-%d}"
    )
    print(
        f"records: {r['n']:,} × {DIM}-d, hybrid top-20 (alpha 0.5), {args.queries} queries after 10 warm-up\n"
    )
    print("| metric | value |\n|---|---|")
    for k, v in r.items():
        if k != "n":
            print(f"| {k} | {v:,.2f} |")


if __name__ == "__main__":
    main()
