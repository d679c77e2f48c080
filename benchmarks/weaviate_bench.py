"""Weaviate-store benchmark: batch ingest rate, query latency, and the edge-representation measurement.

Run against the in-process double (default) or a real server::

    .venv/bin/python benchmarks/weaviate_bench.py [--n 2000] [--dim 384] [--queries 100] [--json out.json]
    WEAVIATE_URL=http://localhost:8080 .venv/bin/python benchmarks/weaviate_bench.py --n 100000

Through the double the figures are **for regressions only**: client and server share one Python
process, the server is brute force, so they say nothing about Weaviate itself. Requests per call
are exact either way (counted from the double's request log).

Part 3 measures the two edge representations on the same graph (messages mentioning entities plus
a NEXT chain): the ``{prefix}_Edges`` collection the store uses, and native cross-references
(``mentions`` / ``next`` reference properties, written with ``reference_add_many``);
``--no-cross-refs`` skips the second (it re-ingests the whole graph); ``--no-search`` skips parts
2 and 3 (through the double they take most of the time at 100,000 objects).

Part 4 is the scale-out overhead (docs/deploy-weaviate.md): reading an agent's shared generation
(what a cached recall costs), a cycle-lease claim (``lease.settle_ms`` included), the fencing read
before a leased write, and the generation bump a commit pays, with a second store on the same
collections (another process) bumping the same agent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.weaviate_double import WeaviateDouble  # noqa: E402

from benchmarks.store_bench import make_corpus  # noqa: E402
from uniko_memory.model import Direction, Edge, EdgeType, Entity, Message, Tier, entity_id  # noqa: E402
from uniko_memory.store import Eq  # noqa: E402
from uniko_memory.store.weaviate import WeaviateStore, connect_url  # noqa: E402

AGENT = "bench"
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


async def _timed(fn: Callable[[], Awaitable[Any]], runs: int) -> dict[str, float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(out), 2), "p95_ms": round(_pct(out, 95), 2)}


def _message(i: int, text: str) -> Message:
    return Message(
        id=f"msg_{i:08d}",
        agent=AGENT,
        external_id=str(i),
        session_id=f"ses_{i // 50}",
        sender_id=f"par_{i % 2}",
        sender_name=f"P{i % 2}",
        content=text,
        timestamp=BASE + timedelta(seconds=30 * i),
        seq=i,
        created_at=BASE + timedelta(seconds=30 * i),
    )


class Requests:
    """Counts gRPC/REST requests the double saw (None against a real server)."""

    def __init__(self, double: WeaviateDouble | None) -> None:
        self.double = double
        if double is not None:
            engine = double.engine
            engine.record = True
            # Keep the method name only: the requests themselves (vectors and all) would hold
            # gigabytes at 100,000 objects.
            engine.log = lambda method, request: engine.requests.append((method, None))  # type: ignore[method-assign]

    def mark(self) -> int:
        return len(self.double.engine.requests) if self.double else 0

    def since(self, mark: int) -> int | None:
        if self.double is None:
            return None
        reqs = self.double.engine.requests[mark:]
        return sum(1 for m, _ in reqs if not m.startswith("REST GET /v1/meta"))


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    url = os.environ.get("WEAVIATE_URL")
    double = None if url else WeaviateDouble().start()

    async def client() -> Any:
        if url:
            return await connect_url(
                url,
                grpc_url=os.environ.get("WEAVIATE_GRPC_URL"),
                api_key=os.environ.get("WEAVIATE_API_KEY"),
                skip_init_checks=True,
            )
        assert double is not None
        c = double.async_client()
        await c.connect()
        return c

    prefix = "B" + uuid.uuid4().hex[:8].upper()
    store = await WeaviateStore.open(
        await client(), prefix=prefix, dim=args.dim, owns_client=True, vector_index=args.index
    )
    texts, vecs, queries = make_corpus(args.n)
    if args.dim != vecs.shape[1]:
        vecs = np.random.default_rng(1).standard_normal((args.n, args.dim)).astype(np.float32)
    reqs = Requests(double)
    report: dict[str, Any] = {
        "target": url or "in-process double (regression figures only)",
        "n": args.n,
        "dim": args.dim,
        "unit_size": args.unit,
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    # ---------------------------------------------------------------- 1. batch ingest
    entities = [
        Entity(
            id=entity_id(AGENT, f"e{j}", "THING"),
            agent=AGENT,
            name=f"e{j}",
            entity_type="THING",
            first_seen=BASE,
            last_seen=BASE,
        )
        for j in range(max(10, args.n // 20))
    ]
    async with store.unit(AGENT) as u:
        for ent in entities:
            u.put(ent)
    rng = np.random.default_rng(7)
    unit_ms: list[float] = []
    mark = reqs.mark()
    t0 = time.perf_counter()
    n_edges = 0
    for start in range(0, args.n, args.unit):
        t = time.perf_counter()
        async with store.unit(AGENT) as u:
            for i in range(start, min(args.n, start + args.unit)):
                m = _message(i, texts[i])
                u.put(m, vector=vecs[i])
                if i:
                    u.put_edge(
                        Edge(
                            type=EdgeType.NEXT, src=_message(i - 1, "").id, dst=m.id, props={"gap_ms": 30000}
                        )
                    )
                    n_edges += 1
                for j in rng.choice(len(entities), size=3, replace=False):
                    u.put_edge(Edge(type=EdgeType.MENTIONS, src=m.id, dst=entities[j].id, props={"count": 1}))
                    n_edges += 1
        unit_ms.append((time.perf_counter() - t) * 1000)
    wall = time.perf_counter() - t0
    units = len(unit_ms)
    report["ingest"] = {
        "messages_per_s": round(args.n / wall, 1),
        "objects_per_s": round((args.n + n_edges) / wall, 1),
        "unit_commit_p50_ms": round(statistics.median(unit_ms), 1),
        "unit_commit_p95_ms": round(_pct(unit_ms, 95), 1),
        "requests_per_unit": None if double is None else round((reqs.since(mark) or 0) / units, 1),
    }

    if args.search:  # parts 2 and 3
        # ---------------------------------------------------------------- 2. query latency
        q = [queries[i % len(queries)] for i in range(args.queries)]
        qv = [vecs[(i * 37) % args.n] for i in range(args.queries)]
        it = iter(range(10**9))

        def nxt() -> int:
            return next(it) % args.queries

        session = Eq("session", "ses_1")
        lat: dict[str, Any] = {}
        cases: dict[str, Callable[[], Awaitable[Any]]] = {
            "get": lambda: store.get(AGENT, _message(nxt(), "").id),
            "text_k10": lambda: store.text_search(AGENT, Tier.MESSAGE, q[nxt()], k=10),
            "vector_k10": lambda: store.vector_search(AGENT, Tier.MESSAGE, qv[nxt()], k=10),
            "hybrid_k10": lambda: store.hybrid_search(AGENT, Tier.MESSAGE, q[nxt()], qv[nxt()], k=10),
            "hybrid_filtered_k10": lambda: store.hybrid_search(
                AGENT, Tier.MESSAGE, q[nxt()], qv[nxt()], k=10, filter=session
            ),
            "find_100": lambda: store.find(AGENT, Tier.MESSAGE, session, limit=100),
            "count": lambda: store.count(AGENT, Tier.MESSAGE),
        }
        for name, fn in cases.items():
            mark = reqs.mark()
            lat[name] = await _timed(fn, args.queries)
            used = reqs.since(mark)
            lat[name]["requests_per_call"] = None if used is None else round(used / args.queries, 2)
        report["queries"] = lat

        # ---------------------------------------------------------------- 3. edges: collection vs cross-references
        ids = [_message(i, "").id for i in range(args.n)]
        ent_ids = [e.id for e in entities]
        edges: dict[str, Any] = {}
        for label, direction, seeds in (
            ("out_1hop", Direction.OUT, lambda: ids[nxt() % args.n : nxt() % args.n + 5]),
            ("in_1hop_entity", Direction.IN, lambda: ent_ids[:3]),
            ("both_1hop", Direction.BOTH, lambda: ids[nxt() % args.n : nxt() % args.n + 5]),
        ):
            mark = reqs.mark()
            r = await _timed(
                lambda d=direction, s=seeds: store.neighbors(AGENT, s(), direction=d), args.queries
            )
            used = reqs.since(mark)
            r["requests_per_hop"] = None if used is None else round(used / args.queries, 2)
            edges[f"edge_collection_{label}"] = r
        if args.cross_refs:
            edges.update(await _cross_refs(await client(), prefix, args, vecs, texts, len(entities), reqs))
        report["edges"] = edges

    # ---------------------------------------------------------------- 4. scale-out overhead
    other = await WeaviateStore.open(await client(), prefix=prefix, owns_client=True)
    report["scaleout"] = await _scaleout(store, other, args.queries, reqs)
    await other.close()
    await store.close()
    if double is not None:
        double.stop()
    return report


async def _scaleout(store: WeaviateStore, other: WeaviateStore, runs: int, reqs: Requests) -> dict[str, Any]:
    """Latency and requests of the lease and generation calls (see the module docstring)."""
    from uniko_memory.config import LeaseConfig
    from uniko_memory.store.lease import CYCLE_LEASE

    lease_cfg = LeaseConfig()
    leases = store.lease_store(lease_cfg)
    out: dict[str, Any] = {"lease_settle_ms": lease_cfg.settle_ms}

    async def measured(name: str, fn: Callable[[], Awaitable[Any]], n: int) -> None:
        mark = reqs.mark()
        out[name] = await _timed(fn, n)
        used = reqs.since(mark)
        out[name]["requests_per_call"] = None if used is None else round(used / n, 2)

    await measured("generation_read", lambda: other.current_generation(AGENT), runs)
    await measured("lease_verify_read", lambda: leases.current(AGENT, CYCLE_LEASE), runs)

    async def claim() -> None:
        lease = await leases.acquire(AGENT, CYCLE_LEASE, "bench", lease_cfg.ttl_secs)
        assert lease is not None
        await leases.release(lease)

    await measured("lease_claim_and_release", claim, max(3, runs // 20))
    it = iter(range(10**9))

    async def commit(s: WeaviateStore) -> None:
        async with s.unit(AGENT) as u:
            u.put(_message(10**8 + next(it), "scale-out probe"))

    await measured("unit_commit_1_message", lambda: commit(store), runs // 2)
    bumps_from = await other.current_generation(AGENT)
    await measured("unit_commit_other_store", lambda: commit(other), runs // 2)
    assert await store.current_generation(AGENT) != bumps_from  # the first store sees them
    out["commit_generation_requests"] = 2  # one read and one write of the record, per commit
    return out


async def _cross_refs(
    client: Any,
    prefix: str,
    args: argparse.Namespace,
    vecs: np.ndarray,
    texts: list[str],
    n_ent: int,
    reqs: Requests,
) -> dict[str, Any]:
    """The same graph as native cross-references (no edge props: they would still need a collection)."""
    from weaviate.classes.config import Configure, DataType, Property, ReferenceProperty
    from weaviate.classes.data import DataObject, DataReference
    from weaviate.classes.query import Filter, QueryReference

    mt = Configure.multi_tenancy(enabled=True, auto_tenant_creation=True)
    ent_name, msg_name = f"{prefix}XrEnt", f"{prefix}XrMsg"
    await client.collections.create(
        ent_name, properties=[Property(name="name", data_type=DataType.TEXT)], multi_tenancy_config=mt
    )
    await client.collections.create(
        msg_name,
        properties=[Property(name="text", data_type=DataType.TEXT)],
        references=[
            ReferenceProperty(name="mentions", target_collection=ent_name),
            ReferenceProperty(name="next", target_collection=msg_name),
        ],
        multi_tenancy_config=mt,
    )
    ent = client.collections.use(ent_name).with_tenant(AGENT)
    msg = client.collections.use(msg_name).with_tenant(AGENT)
    eu = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"e{j}")) for j in range(n_ent)]
    mu = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"m{i}")) for i in range(args.n)]
    await ent.data.insert_many([DataObject(properties={"name": f"e{j}"}, uuid=u) for j, u in enumerate(eu)])
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()
    for start in range(0, args.n, args.unit):
        part = range(start, min(args.n, start + args.unit))
        await msg.data.insert_many([DataObject(properties={"text": texts[i]}, uuid=mu[i]) for i in part])
        refs = [DataReference(from_property="next", from_uuid=mu[i - 1], to_uuid=mu[i]) for i in part if i]
        refs += [
            DataReference(from_property="mentions", from_uuid=mu[i], to_uuid=eu[j])
            for i in part
            for j in rng.choice(n_ent, size=3, replace=False)
        ]
        res = await msg.data.reference_add_many(refs)
        assert not res.has_errors, res.errors
    write_s = time.perf_counter() - t0
    it = iter(range(10**9))

    def nxt() -> int:
        return next(it) % args.n

    out: dict[str, Any] = {"cross_refs_ingest_messages_per_s": round(args.n / write_s, 1)}

    async def out_hop() -> None:  # one request per source collection; ref targets come inline
        await msg.query.fetch_objects(
            filters=Filter.by_id().contains_any(mu[nxt() : nxt() + 5] or mu[:5]),
            return_references=[QueryReference(link_on="mentions"), QueryReference(link_on="next")],
            return_properties=[],
        )

    async def in_hop() -> None:  # one request per (source collection, reference property) pointing here
        await msg.query.fetch_objects(
            filters=Filter.by_ref("mentions").by_id().contains_any(eu[:3]), limit=10_000, return_properties=[]
        )

    for label, fn in (("out_1hop", out_hop), ("in_1hop_entity", in_hop)):
        mark = reqs.mark()
        r = await _timed(fn, args.queries)
        used = reqs.since(mark)
        r["requests_per_hop"] = None if used is None else round(used / args.queries, 2)
        out[f"cross_refs_{label}"] = r
    out["cross_refs_note"] = (
        "no edge props; IN needs one query per (tier, reference property) that can point at the node "
        "(5 tiers point at Entity in the uniko model), OUT one per source tier; BOTH = OUT + IN"
    )
    for name in (msg_name, ent_name):
        await client.collections.delete(name)
    await client.close()
    return out


async def recall_e2e(data: Path, conversations: int, questions: int | None) -> dict[str, Any]:
    """The recall harness end to end (ingest, post-ingest, finalise, consolidate, recall) on the
    Weaviate store through the double, next to the embedded store on the same conversations."""
    from benchmarks.harness.convert import load_any
    from benchmarks.harness.run import BenchConfig, run_benchmark
    from benchmarks.harness.uniko_system import UnikoSystem
    from uniko_memory.config import UnikoConfig
    from uniko_memory.facade import Uniko, default_embedder
    from uniko_memory.knowledge_base import KnowledgeBase

    url = os.environ.get("WEAVIATE_URL")
    double = None if url else WeaviateDouble().start()

    async def weaviate_uniko(
        config: UnikoConfig | None = None, *, embedder: Any = None, nlp: Any = None
    ) -> Uniko:
        cfg = config or UnikoConfig()
        emb = embedder if embedder is not None else default_embedder(cfg)
        if url:
            client = await connect_url(
                url, grpc_url=os.environ.get("WEAVIATE_GRPC_URL"), skip_init_checks=True
            )
        else:
            assert double is not None
            client = double.async_client()
        prefix = "R" + uuid.uuid4().hex[:8].upper()
        store = await WeaviateStore.open(client, prefix=prefix, dim=emb.dim, owns_client=True)
        kb = await KnowledgeBase.from_store(store, cfg, embedder=emb)
        return await Uniko.from_knowledge_base(kb, nlp=nlp)

    class WeaviateUnikoSystem(UnikoSystem):
        async def setup(self, conversation: Any) -> None:
            original = Uniko.in_memory
            Uniko.in_memory = weaviate_uniko  # type: ignore[method-assign,assignment]
            try:
                await super().setup(conversation)
            finally:
                Uniko.in_memory = original  # type: ignore[method-assign]

    dataset = load_any(data, "locomo")
    if questions is not None:
        for conv in dataset.conversations:
            conv.questions = conv.questions[:questions]
    config = BenchConfig(max_conversations=conversations, progress=False)
    report, _ = await run_benchmark(
        dataset, {"uniko-weaviate": WeaviateUnikoSystem, "uniko": UnikoSystem}, config, source=str(data)
    )
    if double is not None:
        double.stop()
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="messages to ingest")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--unit", type=int, default=50, help="messages per unit of work")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--index", default="hnsw", choices=["hnsw", "flat", "dynamic"])
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--no-cross-refs", dest="cross_refs", action="store_false", help="skip part 3's cross-reference copy"
    )
    ap.add_argument(
        "--no-search",
        dest="search",
        action="store_false",
        help="skip parts 2 and 3 (the double searches by brute force: slow at 100,000 objects)",
    )
    ap.add_argument("--recall", type=Path, help="run the recall harness end to end on this dataset instead")
    ap.add_argument("--conversations", type=int, default=1)
    ap.add_argument("--questions", type=int, default=None, help="first N questions per conversation")
    args = ap.parse_args()
    if args.recall:
        report = asyncio.run(recall_e2e(args.recall, args.conversations, args.questions))
    else:
        report = asyncio.run(bench(args))
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
