"""Embedded-store benchmark: insert rate, hybrid / filtered-hybrid latency, RSS and disk at N records.

Run: ``uv run python benchmarks/store_bench.py [--n 100000] [--queries 200]``. Prints a Markdown table.
Vectors are clustered (2,000 centres, cos(member, centre) ~ 0.74) and texts are Zipf draws from a
synthetic 20k vocabulary, as in models-and-stores.md §7.2. Not a timed test: figures go to BENCHMARKS.md.

Vector search is exact below ``--exact-below`` rows (``EmbeddedVectorOptions.exact_below``) and an
HNSW graph above it (``--ef``, ``--m``): ``index_first_search_ms`` is its build (or the exact
matrix's load) on the first search, ``index_reopen_ms`` the first search after a reopen (the graph
from its cache file), ``vector_recall_at_20`` the share of the exact top 20 (numpy over the same
float16-rounded vectors) the store's vector search returns. ``--exact-below 1000000000`` measures
the exact path at any size.
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
from uniko_memory.store.embedded import EmbeddedStore, EmbeddedVectorOptions

DIM = 384
K = 20


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


def rss_now_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def exact_top(stored: np.ndarray, ids: list[str], q: np.ndarray) -> set[str]:
    scores = stored @ (q / np.linalg.norm(q))
    return {ids[r] for r in np.argpartition(-scores, K)[:K]}


async def run(n: int, n_queries: int, workdir: Path, options: EmbeddedVectorOptions) -> dict[str, float]:
    texts, vecs, queries = make_corpus(n)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    db = workdir / "bench.db"
    store = await EmbeddedStore.open(db, dim=DIM, vectors=options)
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
    await store.vector_search("bench", Tier.MESSAGE, qvecs[0], k=20)  # lazy matrix load / graph build
    load_ms = (time.perf_counter() - t) * 1000
    rss_index = rss_now_mb()
    await store.close()
    store = await EmbeddedStore.open(db, dim=DIM, vectors=options)
    t = time.perf_counter()
    await store.vector_search("bench", Tier.MESSAGE, qvecs[0], k=20)  # the graph from its cache file
    reopen_ms = (time.perf_counter() - t) * 1000
    hybrid = await timed(False)
    filtered = await timed(True)
    vec_only = []
    for qi in range(n_queries):
        t = time.perf_counter()
        await store.vector_search("bench", Tier.MESSAGE, qvecs[qi], k=20)
        vec_only.append((time.perf_counter() - t) * 1000)
    # Recall against exact search over what the store holds (float16-rounded when stored so).
    stored = np.concatenate([vecs, vecs[:200]])
    if options.storage == "float16":
        stored = stored.astype(np.float16).astype(np.float32)
    all_ids = [f"m{i}" for i in range(n + 200)]
    recall = []
    for qi in range(min(n_queries, 100)):
        got = await store.vector_search("bench", Tier.MESSAGE, qvecs[qi], k=K)
        want = exact_top(stored, all_ids, qvecs[qi])
        recall.append(len({h.id for h in got} & want) / K)
    del stored
    bm25 = []
    for qi in range(n_queries):
        t = time.perf_counter()
        await store.text_search("bench", Tier.MESSAGE, queries[qi], k=20)
        bm25.append((time.perf_counter() - t) * 1000)
    rss_end = rss_now_mb()
    await store.close()
    disk = _disk_mb(workdir)
    rows = n + 200
    return {
        "n": n,
        "insert_rows_per_s": n / insert_s,
        "single_unit_p50_ms": statistics.median(single),
        "single_unit_p95_ms": pct(single, 95),
        "index_first_search_ms": load_ms,
        "index_reopen_ms": reopen_ms,
        "vector_recall_at_20": float(np.mean(recall)),
        "vector_p50_ms": statistics.median(vec_only),
        "vector_p95_ms": pct(vec_only, 95),
        "bm25_p50_ms": statistics.median(bm25),
        "bm25_p95_ms": pct(bm25, 95),
        "hybrid_p50_ms": statistics.median(hybrid),
        "hybrid_p95_ms": pct(hybrid, 95),
        "filtered_hybrid_p50_ms": statistics.median(filtered),
        "filtered_hybrid_p95_ms": pct(filtered, 95),
        "rss_after_index_mb": rss_index,
        "rss_end_mb": rss_end,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "disk_mb": disk,
        "db_bytes_per_row": (db.stat().st_size) / rows,
        "graph_cache_mb": sum(p.stat().st_size for p in (workdir / "bench.db.vidx").glob("*")) / 1e6
        if (workdir / "bench.db.vidx").is_dir()
        else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    defaults = EmbeddedVectorOptions()
    ap.add_argument(
        "--exact-below", type=int, default=defaults.exact_below, help="rows a tier from which ANN"
    )
    ap.add_argument("--ef", type=int, default=defaults.ann_expansion_search, help="ANN search candidates")
    ap.add_argument("--m", type=int, default=defaults.ann_connectivity, help="ANN graph degree")
    ap.add_argument("--storage", choices=["float16", "float32"], default=defaults.storage)
    args = ap.parse_args()
    options = EmbeddedVectorOptions(
        exact_below=args.exact_below,
        ann_expansion_search=args.ef,
        ann_connectivity=args.m,
        storage=args.storage,
    )
    with tempfile.TemporaryDirectory() as tmp:
        r = asyncio.run(run(args.n, args.queries, Path(tmp), options))
    print(
        f"Embedded store benchmark — {platform.processor() or platform.machine()}, {datetime.now(UTC):%Y-%m-%d}"
    )
    print(
        f"records: {r['n']:,} × {DIM}-d, hybrid top-20 (alpha 0.5), {args.queries} queries after 10 warm-up; "
        f"vectors {options.storage}, exact below {options.exact_below:,}, ef {options.ann_expansion_search}, "
        f"M {options.ann_connectivity}\n"
    )
    print("| metric | value |\n|---|---|")
    for k, v in r.items():
        if k != "n":
            print(f"| {k} | {v:,.2f} |")


if __name__ == "__main__":
    main()
