"""From the cascade's final ranking to the ``ContextBundle``.

Long Messages are quoted by their passages (``recall.passages``), candidates become items with
their provenance (Facts cite the Messages behind them), the optional reranker reorders the head,
``assemble.pack`` packs the budget, and every packed item's evidence is re-checked in the store
before it can leave: an item whose source turn is gone, redacted or hidden from the viewer is
refused and the bundle repacked without it. Scores are then made relative to the best item.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING

from ..model import EdgeType, Viewer
from ..model import Session as SessionNode
from .assemble import Packed, node_to_item, pack
from .explain import trace_of
from .feedback import apply_policy
from .fusion import Candidate
from .items import ContextBundle, RecallItem, message_source
from .passages import quote_passages
from .relevance import relevance_floor

if TYPE_CHECKING:
    from ..store.protocol import Store
    from .phases import Cascade

#: Packs whose refused items are re-packed before all candidates' sources are checked at once
#: (bounds the store reads; the result is the same as checking everything first).
REPACK_ROUNDS = 2


async def finish(
    cas: Cascade,
    ranked: list[Candidate],
    *,
    phase1_only: bool = False,
    phase2_only: bool = False,
    t0: float,
) -> ContextBundle:
    cfg = cas.cfg
    pk = cfg.packing
    # Feedback multipliers, after fusion: they reorder, never remove (``recall.feedback``).
    ranked = await apply_policy(cas.store, cas.agent, cfg, ranked, cas.counter)
    ranked = await quote_passages(cas, ranked[: pk.max_candidates])
    items: list[RecallItem] = []
    for cand in ranked[: pk.max_candidates]:
        item = node_to_item(
            cand.node,
            cand.fused if not phase1_only else cand.relevance,
            sorted(cand.channels),
            as_of=cas.intent.reference_ts,
        )
        if item is None or item.kind == "summary":
            continue
        if item.kind == "chunk" and not pk.chunk_items and item.sources and item.sources[0].kind == "message":
            continue
        items.append(item)
    await _fact_sources(cas, items)
    items = await _rerank(cas, items)

    floor = relevance_floor(cas.intent, pk, cfg.token_budget)

    def pack_items(candidates: list[RecallItem]) -> Packed:
        return pack(
            candidates,
            limit=cfg.limit,
            token_budget=cfg.token_budget,
            mmr_lambda=pk.mmr_lambda,
            duplicate_threshold=pk.mmr_duplicate_threshold,
            chunk_share=pk.chunk_budget_share,
            counter=cas.counter,
            layout=cfg.layout,
            statement_carries_turn=pk.statement_carries_turn,
            mmr_window=pk.mmr_window,
            similarity_floor=pk.mmr_similarity_floor,
            type_shares=pk.type_shares,
            floor=floor,
        )

    # Evidence is re-checked for what was packed only; a refusal repacks without the item, which
    # is what packing the checked list would have given. After REPACK_ROUNDS every candidate is
    # checked at once, so refusals cannot cost a store read per item.
    refused: dict[str, str] = {}
    packed = pack_items(items)
    for round_ in range(REPACK_ROUNDS + 1):
        whole = round_ == REPACK_ROUNDS
        gone = await _check_sources(cas, items if whole else packed.items)
        if not gone:
            break
        refused.update(gone)
        items = [i for i in items if i.node_id not in gone]
        packed = pack_items(items)
    await _label_sessions(cas, packed.items)
    chosen = {i.node_id for i in packed.items}
    final_cands = [c for c in ranked if c.node.id in chosen]
    await cas.relevance([c for c in final_cands if c.relevance == 0.0])
    absolute = {c.node.id: c.relevance for c in final_cands}
    top = max((i.score for i in packed.items), default=0.0)
    for i in packed.items:
        # ``score``: the query's cosine with the item's stored vector, in [0, 1] and comparable
        # across queries (a caller can threshold on it); ``relative_score``: the ranking score
        # over the bundle's best item (1.0 for it); ``fused``: the raw fusion score.
        i.fused = i.score
        i.relative_score = round(i.score / top, 6) if top > 0 else 0.0
        i.score = round(absolute.get(i.node_id, 0.0), 6)
    coverage = cas.coverage(final_cands, 1 if phase1_only else 2)
    trace = None
    if cfg.explain:
        trace = trace_of(cas, packed, refused, elapsed_ms=(time.perf_counter() - t0) * 1000)
    return ContextBundle(
        items=packed.items,
        total_tokens=packed.total_tokens,
        token_budget=cfg.token_budget,
        token_counter=cas.counter.name,
        layout=cfg.layout,
        phase1_only=phase1_only,
        phase2_only=phase2_only,
        coverage=round(coverage, 4),
        degraded=list(cas.degraded),
        trace=trace,
    )


async def _label_sessions(cas: Cascade, items: list[RecallItem]) -> None:
    ids = sorted({i.session_id for i in items if i.session_id})
    if not ids:
        return
    nodes = await cas.store.get_many(cas.agent, ids)
    for i in items:
        node = nodes.get(i.session_id or "")
        if isinstance(node, SessionNode):
            i.session = node.external_id


async def _fact_sources(cas: Cascade, items: list[RecallItem]) -> None:
    await fact_sources(cas.store, cas.agent, items)


async def fact_sources(store: Store, agent: str, items: list[RecallItem]) -> None:
    """Facts cite the Messages behind them: Fact -SUPPORTED_BY-> Observation -OBSERVED_IN-> Message.

    Public: every read surface that shows Facts (recall, the wake-up) cites them the same way."""
    facts = [i for i in items if i.kind == "fact"]
    if not facts:
        return
    support = await store.neighbor_keys(agent, [f.node_id for f in facts], [EdgeType.SUPPORTED_BY])
    observed = await store.neighbor_keys(agent, [d for _, _, d in support], [EdgeType.OBSERVED_IN])
    msg_of: dict[str, list[str]] = defaultdict(list)
    for src, _, dst in observed:
        msg_of[src].append(dst)
    by_fact: dict[str, list[str]] = defaultdict(list)
    for fact, _, obs in support:
        for m in msg_of.get(obs, []):
            if m not in by_fact[fact]:
                by_fact[fact].append(m)
    for f in facts:
        f.sources = [message_source(m) for m in by_fact.get(f.node_id, [])]


async def _check_sources(cas: Cascade, items: list[RecallItem]) -> dict[str, str]:
    return await check_sources(cas.store, cas.agent, cas.cfg.viewer, items)


async def check_sources(
    store: Store, agent: str, viewer: Viewer | None, items: list[RecallItem]
) -> dict[str, str]:
    """Re-check the items' evidence in the store before they can enter the bundle: the refused.

    An item whose source Message is gone, redacted, or not visible to the viewer is refused, so a
    derived node (observation, chunk, fact) can never carry content its source no longer allows.
    Public: every read surface (recall, the wake-up) refuses the same items.
    """
    ids = sorted({m for i in items for m in i.message_ids()})
    if not ids:
        return {}
    sources = await store.get_many(agent, ids)
    ok = {m for m, n in sources.items() if not n.redacted and (viewer is None or viewer.admits(n.visibility))}
    return {
        i.node_id: "source deleted, redacted or not visible"
        for i in items
        if not all(m in ok for m in i.message_ids())
    }


async def _rerank(cas: Cascade, items: list[RecallItem]) -> list[RecallItem]:
    rr = cas.cfg.rerank
    if not rr.enabled or cas.reranker is None or not items:
        return items
    from ..providers.rerank import rerank_with_fallback

    head = items[: rr.top_n]
    order = await rerank_with_fallback(cas.reranker, cas.intent.query, [i.content for i in head])
    if order is None:
        cas.trace["rerank"] = "failed; fused order kept"
        cas.degraded.append("reranker failed: fused order kept")
        return items
    top = max((i.score for i in items), default=1.0)
    reranked = []
    for pos, r in enumerate(order):
        item = head[r.index]
        item.score = top + (len(order) - pos)  # keep the reranked head above the tail
        reranked.append(item)
    rest = [i for i in items if i not in reranked]
    return reranked + rest
