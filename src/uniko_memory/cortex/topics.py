"""P6 topics: communities of entities that are talked about together.

Entities co-occur when two MENTIONS edges come from the same live source (Message, Chunk,
Episode, ...); the pair's weight is the number of shared sources (the heaviest
``topic_max_pairs`` pairs are kept). Weighted label propagation (asynchronous, fixed node order,
ties to the smaller label, at most ``topic_max_iterations`` sweeps) finds communities; each one of
at least ``topic_min_community`` entities becomes a Topic whose id hashes its sorted members (a
changed membership is a new Topic). Names are up to three member names, summaries are extractive
(members by type, then the best open Facts about them), embeddings the mean of the members'.
Unlike upstream, a Topic whose membership no longer exists is retired (``retired_at``) and loses
its BELONGS_TO edges, so recall never serves a stale grouping.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel

from ..config import UnikoConfig
from ..model import PUBLIC, Direction, Edge, EdgeType, Entity, Fact, Tier, Topic, make_id
from ..model.time import utcnow
from ..store.filters import IsNull
from ..store.protocol import Store

MAX_NODES = 1_000_000
#: Facts quoted in a topic summary.
SUMMARY_FACTS = 3
_TYPE_LABELS = {
    "person": "People",
    "organization": "Organizations",
    "location": "Places",
    "event": "Events",
    "product": "Products",
    "work_of_art": "Works",
    "date": "Dates",
}


class TopicStats(BaseModel):
    entities: int = 0
    pairs: int = 0
    topics: int = 0
    written: int = 0
    retired: int = 0
    iterations: int = 0


def label_propagation(
    nodes: Sequence[str], weights: Mapping[tuple[str, str], float], max_iterations: int
) -> tuple[dict[str, str], int]:
    """Asynchronous weighted label propagation; returns node → label and the sweeps run."""
    adj: dict[str, dict[str, float]] = defaultdict(dict)
    for (a, b), w in weights.items():
        adj[a][b] = adj[a].get(b, 0.0) + w
        adj[b][a] = adj[b].get(a, 0.0) + w
    labels = {n: n for n in nodes}
    order = sorted(nodes)
    sweeps = 0
    for _ in range(max_iterations):
        sweeps += 1
        changed = False
        for n in order:
            if not adj.get(n):
                continue
            score: dict[str, float] = defaultdict(float)
            for m, w in adj[n].items():
                score[labels[m]] += w
            best = min(score, key=lambda lab: (-score[lab], lab))
            if best != labels[n]:
                labels[n] = best
                changed = True
        if not changed:
            break
    return labels, sweeps


async def cooccurrence(
    store: Store, agent: str, entity_ids: Sequence[str], max_pairs: int
) -> dict[tuple[str, str], float]:
    """(a, b) with a < b → number of live sources mentioning both (heaviest ``max_pairs``)."""
    edges = await store.neighbors(agent, list(entity_ids), [EdgeType.MENTIONS], Direction.IN)
    by_source: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        by_source[e.src].add(e.dst)
    shared = [s for s, ents in by_source.items() if len(ents) > 1]
    live = await store.get_many(agent, shared)
    counts: Counter[tuple[str, str]] = Counter()
    for s in shared:
        node = live.get(s)
        # A Topic is public (its name lists member entities): only public sources group entities,
        # so a name said only in a private or team turn never reaches a Topic.
        if node is None or node.redacted or node.visibility not in ("", PUBLIC):
            continue
        ents = sorted(by_source[s])
        for i, a in enumerate(ents):
            for b in ents[i + 1 :]:
                counts[(a, b)] += 1
    top = sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:max_pairs]
    return {k: float(v) for k, v in top}


def settled_types(entities: Iterable[Entity]) -> dict[str, str]:
    """Each name's type as its mentions settle it: the type it was read as most often. A name read
    as two types equally often settles on none ("other"): the recogniser reads "Lyon" or
    "Easter" as a person now and then, and a topic that lists a city under People states
    something false, where listing it untyped says nothing wrong."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for e in entities:
        counts[e.name.casefold()][e.entity_type] += max(1, e.frequency)
    settled = {}
    for name, by_type in counts.items():
        (best, n), *rest = by_type.most_common()
        settled[name] = "other" if rest and rest[0][1] == n else best
    return settled


def _summary(members: Sequence[Entity], facts: Sequence[Fact], settled: Mapping[str, str]) -> str:
    by_type: dict[str, list[str]] = defaultdict(list)
    for e in members:
        kind = settled.get(e.name.casefold(), e.entity_type)
        by_type[_TYPE_LABELS.get(kind, "Other")].append(e.name)
    parts = [f"{label}: {', '.join(sorted(set(names)))}." for label, names in sorted(by_type.items())]
    parts += [f"{f.statement()}." for f in facts[:SUMMARY_FACTS]]
    return " ".join(parts)


async def detect_topics(
    store: Store,
    config: UnikoConfig,
    embedder: Any,
    agent: str,
    *,
    now: datetime | None = None,
) -> TopicStats:
    """Detect communities, upsert their Topics, retire the ones that no longer exist."""
    cc = config.cortex
    stamp = now or utcnow()
    entities = {
        e.id: e for e in await store.find(agent, Tier.ENTITY, limit=MAX_NODES) if isinstance(e, Entity)
    }
    stats = TopicStats(entities=len(entities))
    settled = settled_types(entities.values())
    weights = await cooccurrence(store, agent, sorted(entities), cc.topic_max_pairs) if entities else {}
    stats.pairs = len(weights)
    nodes = sorted({n for pair in weights for n in pair})
    labels, stats.iterations = label_propagation(nodes, weights, cc.topic_max_iterations)
    communities: dict[str, list[str]] = defaultdict(list)
    for n, lab in labels.items():
        communities[lab].append(n)
    groups = [sorted(m) for m in communities.values() if len(m) >= cc.topic_min_community]
    degree: Counter[str] = Counter()
    for (a, b), w in weights.items():
        degree[a] += int(w)
        degree[b] += int(w)

    member_ids = sorted({m for g in groups for m in g})
    about = await store.neighbors(agent, member_ids, [EdgeType.ABOUT], Direction.IN) if member_ids else []
    fact_ids = sorted({e.src for e in about if e.src.startswith("fct_")})
    facts_of: dict[str, list[Fact]] = defaultdict(list)
    if fact_ids:
        found = await store.get_many(agent, fact_ids)
        for e in about:
            f = found.get(e.src)
            # A Topic is public: it quotes only Facts everyone may see (never a private or team one).
            if isinstance(f, Fact) and not f.redacted and f.valid_to is None and f.visibility in ("", PUBLIC):
                facts_of[e.dst].append(f)
    vectors = await store.get_vectors(agent, member_ids) if member_ids else {}

    wanted: dict[str, tuple[Topic, list[str], np.ndarray | None]] = {}
    for g in groups:
        members = [entities[m] for m in g]
        tid = make_id("top", agent, *g)
        top3 = sorted(members, key=lambda e: (-degree[e.id], -e.frequency, e.name))[:3]
        facts = sorted(
            {f.id: f for m in g for f in facts_of.get(m, [])}.values(),
            key=lambda f: (-f.confidence, -f.observation_count, f.id),
        )
        topic = Topic(
            id=tid,
            agent=agent,
            name=", ".join(e.name for e in top3),
            summary=_summary(members, facts, settled),
            entity_count=len(g),
            fact_count=len(facts),
            created_at=stamp,
        )
        vecs = [vectors[m] for m in g if m in vectors]
        mean = None
        if vecs:
            v = np.mean(np.stack(vecs), axis=0)
            norm = float(np.linalg.norm(v))
            mean = (v / norm).astype(np.float32) if norm > 0 else None
        wanted[tid] = (topic, g, mean)
    stats.topics = len(wanted)

    live_topics = {
        t.id: t for t in await store.find(agent, Tier.TOPIC, IsNull("retired_at"), limit=MAX_NODES)
    }
    existing = await store.get_many(agent, list(wanted))
    stale = sorted(tid for tid in live_topics if tid not in wanted)
    stale_edges = await store.neighbors(agent, stale, [EdgeType.BELONGS_TO], Direction.IN) if stale else []
    missing_vec = [tid for tid, (_, _, mean) in wanted.items() if mean is None and embedder is not None]
    if missing_vec:
        embedded = await embedder.embed_documents([wanted[t][0].search_text() or "" for t in missing_vec])
        for i, tid in enumerate(missing_vec):
            topic, g, _ = wanted[tid]
            wanted[tid] = (topic, g, np.asarray(embedded[i], dtype=np.float32))
    writes = []
    for tid, (topic, g, mean) in sorted(wanted.items()):
        cur = existing.get(tid)
        if isinstance(cur, Topic):
            if cur.redacted:
                continue
            same = (cur.name, cur.summary, cur.entity_count, cur.fact_count, cur.retired_at) == (
                topic.name,
                topic.summary,
                topic.entity_count,
                topic.fact_count,
                None,
            )
            if same:
                continue
            topic = topic.model_copy(update={"created_at": cur.created_at})
        writes.append((topic, g, mean))
    if not writes and not stale:
        return stats
    async with store.unit(agent) as u:
        for topic, g, mean in writes:
            u.put(topic, mean)
            for m in g:
                u.put_edge(Edge(type=EdgeType.BELONGS_TO, src=m, dst=topic.id))
        for tid in stale:
            old = live_topics[tid]
            if not old.redacted:
                u.put(old.model_copy(update={"retired_at": stamp}))
        for e in stale_edges:
            u.delete_edge(EdgeType.BELONGS_TO, e.src, e.dst)
    stats.written = len(writes)
    stats.retired = len(stale)
    return stats
