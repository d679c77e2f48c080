"""Weighted personalised PageRank from the query's entity seeds over their graph neighbourhood.

The neighbourhood is read hop by hop (one store call per hop) and capped, so the cost follows the
seeds, not the size of the memory. Edges are walked in both directions with weight μ(edge type).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..model import Direction, EdgeType
from ..store.protocol import Store

#: Node-id prefixes of tiers that are seeds or structure, never returned as evidence.
STRUCTURAL_PREFIXES = ("ent_", "par_", "ses_")
#: The consolidation audit trail (what a cycle processed, created, touched) and content blobs are
#: bookkeeping, not relations between memories: a cycle node links every Observation and Fact it
#: handled, so walking it spreads a seed's mass over the whole memory and costs most of the reads.
BOOKKEEPING_EDGES = frozenset(
    {
        EdgeType.PROCESSED,
        EdgeType.CREATED,
        EdgeType.REINFORCED,
        EdgeType.INVALIDATED,
        EdgeType.INVOLVED,
        EdgeType.HAS_CONTENT,
        EdgeType.RESTATED_IN,  # a restatement is not evidence the turn holds the Observation's words
    }
)
WALK_EDGES = tuple(t for t in EdgeType if t not in BOOKKEEPING_EDGES)


async def neighbourhood(
    store: Store,
    agent: str,
    seeds: Sequence[str],
    hops: int,
    max_nodes: int,
    edge_types: Sequence[EdgeType] = WALK_EDGES,
    *,
    max_edges: int | None = None,
    read_batch: int = 64,
) -> list[tuple[str, str, str]]:
    """Edges (src, type, dst) of ``edge_types`` within ``hops`` of the seeds, reading at most
    ``max_nodes`` nodes and (``max_edges``, None: no cap) about that many edges.

    A frontier is read ``read_batch`` nodes at a time until the walk holds ``max_edges`` edges:
    in a large memory the second hop reaches entities mentioned thousands of times, and reading
    every edge of ~4,000 such nodes took 0.2-0.6 s a recall at 100,000 turns. Below the cap the
    walk is the same as reading the frontier whole; at the cap the kept edges are the first
    ``max_edges`` in (src, type, dst) order of those read."""
    seen: set[str] = set(seeds)
    frontier = list(seeds)
    edges: dict[tuple[str, str, str], None] = {}
    for _ in range(hops):
        if not frontier:
            break
        room = None if max_edges is None else max_edges - len(edges)
        if room is not None and room <= 0:
            break
        found: set[tuple[str, str, str]] = set()
        fresh = 0  # found edges the walk does not hold yet
        step = len(frontier) if room is None else max(1, read_batch)
        for start in range(0, len(frontier), step):
            part = frontier[start : start + step]
            for key in await store.neighbor_keys(agent, part, edge_types, Direction.BOTH):
                if key not in found:
                    found.add(key)
                    fresh += key not in edges
            if room is not None and fresh >= room:
                break
        # Store order is unspecified; the walk must be deterministic. An edge held already adds
        # nothing: its ends were offered to ``seen`` when it came.
        ordered = [k for k in sorted(found) if k not in edges][:room]
        nxt: list[str] = []
        for key in ordered:
            edges[key] = None
            for n in (key[0], key[2]):
                if n not in seen and len(seen) < max_nodes:
                    seen.add(n)
                    nxt.append(n)
        frontier = nxt
    return list(edges)


def personalized_pagerank(
    edges: Sequence[tuple[str, str, str]],
    seeds: Sequence[str],
    weights: Mapping[str, float],
    *,
    damping: float = 0.85,
    max_iter: int = 30,
    tol: float = 1e-6,
) -> dict[str, float]:
    """Power iteration with teleport to the seeds; stops at max-Δ < ``tol`` or ``max_iter``.

    Edges are undirected with weight μ(type); a node's mass splits over its edges by weight;
    mass at a node without edges returns to the seeds.
    """
    if not seeds:
        return {}
    index: dict[str, int] = {}
    for s in seeds:
        index.setdefault(s, len(index))
    src_l, dst_l, w_l = [], [], []
    for a, typ, b in edges:
        w = weights.get(typ, 1.0)
        if w <= 0 or a == b:
            continue
        ia = index.setdefault(a, len(index))
        ib = index.setdefault(b, len(index))
        src_l += [ia, ib]
        dst_l += [ib, ia]
        w_l += [w, w]
    n = len(index)
    src = np.asarray(src_l, dtype=np.int64)
    dst = np.asarray(dst_l, dtype=np.int64)
    wt = np.asarray(w_l, dtype=np.float64)
    out_w = np.bincount(src, weights=wt, minlength=n) if len(src) else np.zeros(n)
    share = wt / out_w[src] if len(src) else wt
    teleport = np.zeros(n)
    for s in seeds:
        teleport[index[s]] = 1.0
    teleport /= teleport.sum()
    dangling = out_w <= 0
    rank = teleport.copy()
    for _ in range(max_iter):
        spread = np.bincount(dst, weights=rank[src] * share, minlength=n) if len(src) else np.zeros(n)
        nxt = damping * spread + ((1 - damping) + damping * rank[dangling].sum()) * teleport
        delta = float(np.abs(nxt - rank).max())
        rank = nxt
        if delta < tol:
            break
    names = list(index)
    return {names[i]: float(rank[i]) for i in np.nonzero(rank)[0]}


def top_evidence(rank: Mapping[str, float], seeds: Sequence[str], k: int) -> list[tuple[str, float]]:
    seedset = set(seeds)
    items = [
        (n, s)
        for n, s in rank.items()
        if n not in seedset and not n.startswith(STRUCTURAL_PREFIXES) and s > 0
    ]
    items.sort(key=lambda x: (-x[1], x[0]))
    return items[:k]
