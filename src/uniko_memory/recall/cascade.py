"""The three-phase, coverage-gated recall cascade.

Phase 1 reads compiled knowledge (Facts, Procedures, Topics); Phase 2 the episodic tier
(Observations, Messages, Episodes) with the temporal and graph channels; Phase 3 the session,
observation and artifact chunks. Each phase is fused by weighted RRF into ONE pool: evidence a
phase found is never thrown away when a later phase runs. Gates use calibrated inputs (cosine
relevance, facet matches, tier diversity), so they mean what the seed says, and the cascade still
stops early when the compiled or episodic view already covers the question.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..model import Direction, EdgeType, Message, Node, Tier
from ..model import Session as SessionNode
from ..model.text import without_surrogates
from ..providers.token_counter import TokenCounter, default_token_counter
from ..store.filters import Eq, Filter, In, Range
from ..store.protocol import Hit, Store
from .assemble import Packed, node_to_item, pack
from .config import RecallConfig
from .coverage import compute_coverage
from .graph import neighbourhood, personalized_pagerank, top_evidence
from .intent import IntentProfile
from .items import ContextBundle, RecallItem, RecallSource
from .passages import quote_passages
from .scope import OutOfScope, Scope

#: How many tiers each phase can return (the diversity denominator of its coverage).
PHASE_TIERS = {1: 3, 2: 3, 3: 2}
#: Rough characters per token, to size a candidate pool against the budget without tokenising it.
CHARS_PER_TOKEN = 4.0
#: Rough tokens of one bundle item, to size what an item limit asks of the pool.
TOKENS_PER_ITEM = 60
#: Candidates considered for the bundle, best first (packing is greedy over them).
MAX_BUNDLE_CANDIDATES = 200
#: Packs whose refused items are re-packed before all candidates' sources are checked at once.
REPACK_ROUNDS = 2


@dataclass
class Candidate:
    node: Node
    channels: dict[str, tuple[int, float]] = field(default_factory=dict)
    fused: float = 0.0
    relevance: float = 0.0


def family_of(channel: str) -> str:
    """Lists of one family are alternatives (max), families add up: correlated lists don't pile up."""
    name = channel.split(":", 1)[0]
    if name.endswith("_vec") and name.split("_")[0] in ("fact", "procedure", "topic"):
        return "phase1"
    if name.endswith("_vec"):
        return "vector"
    if name.endswith("_bm25"):
        return "bm25"
    if name == "chunk_messages":
        return name
    if "chunks" in name:
        return "chunks"
    return name  # graph, temporal, neighbours


@dataclass
class Pool:
    """Every candidate of this recall with the ranked lists that found it (ranks may tie)."""

    cands: dict[str, Candidate] = field(default_factory=dict)
    lists: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def add(self, channel: str, hits: list[Hit]) -> None:
        if not hits:
            return
        self.lists[channel] = [(h.id, rank) for rank, h in enumerate(hits, start=1)]
        for rank, h in enumerate(hits, start=1):
            c = self.cands.get(h.id)
            if c is None:
                c = self.cands[h.id] = Candidate(h.node)
            c.channels[channel] = (rank, h.score)

    def add_ranked(self, channel: str, ranked: list[tuple[str, int]]) -> None:
        """A list with explicit (possibly tied) ranks over nodes already in the pool."""
        kept = [(nid, r) for nid, r in ranked if nid in self.cands]
        if kept:
            self.lists[channel] = kept

    def fuse(self, cfg: RecallConfig) -> list[Candidate]:
        """Σ over channel families of the family's best ``weight / (k + rank)``, times the tier weight."""
        best: dict[tuple[str, str], float] = {}
        for ch, ranked in self.lists.items():
            fam = family_of(ch)
            w = cfg.channel_weights.get(fam, 1.0)
            for nid, rank in ranked:
                v = w / (cfg.rrf_k + rank)
                if v > best.get((nid, fam), 0.0):
                    best[(nid, fam)] = v
        scores: dict[str, float] = defaultdict(float)
        for (nid, _), v in best.items():
            scores[nid] += v
        for nid, c in self.cands.items():
            c.fused = scores.get(nid, 0.0) * cfg.tier_weights.get(c.node.tier.value, 0.5)
        return sorted(self.cands.values(), key=lambda c: (-c.fused, c.node.id))


class Cascade:
    def __init__(
        self,
        store: Store,
        agent: str,
        cfg: RecallConfig,
        intent: IntentProfile,
        reranker: Any = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.store = store
        self.counter = counter or default_token_counter()
        self.agent = agent
        self.cfg = cfg
        self.intent = intent
        self.scope = Scope(agent, cfg)
        self.reranker = reranker
        self.pool = Pool()
        self.trace: dict[str, Any] = {"intent": intent.summary(), "phases": {}}
        self.timings: dict[str, float] = {}
        #: What did not work for this recall and what it fell back to (shown in the bundle).
        self.degraded: list[str] = list(intent.degraded)

    # ------------------------------------------------------------------ channels
    async def _vector(
        self,
        tier: Tier,
        k: int,
        extra: Filter | None = None,
        variant: str = "original",
        vec: np.ndarray | None = None,
    ) -> list[Hit]:
        vec = vec if vec is not None else self.intent.vectors.get(variant)
        flt = self.scope.combine(tier, extra)
        if vec is None or k <= 0 or isinstance(flt, OutOfScope):
            return []
        hits = await self.store.vector_search(self.agent, tier, vec, k=k, filter=flt)
        return [h for h in hits if h.score >= self.cfg.min_score]

    async def _text(
        self,
        tier: Tier,
        k: int,
        extra: Filter | None = None,
        variant: str = "keywords",
        text: str | None = None,
    ) -> list[Hit]:
        text = text or dict(self.intent.variants).get(variant) or self.intent.query
        flt = self.scope.combine(tier, extra)
        if k <= 0 or isinstance(flt, OutOfScope):
            return []
        return await self.store.text_search(self.agent, tier, text, k=k, filter=flt)

    async def _hybrid(self, tier: Tier, k: int, extra: Filter | None, variant: str) -> list[Hit]:
        flt = self.scope.combine(tier, extra)
        if k <= 0 or isinstance(flt, OutOfScope):
            return []
        text = dict(self.intent.variants).get(variant, self.intent.query)
        vec = self.intent.vectors.get(variant, self.intent.primary_vector)
        total = self.cfg.vector_weight + self.cfg.bm25_weight
        alpha = self.cfg.vector_weight / total if total > 0 else 0.5
        return await self.store.hybrid_search(self.agent, tier, text, vec, alpha=alpha, k=k, filter=flt)

    # ------------------------------------------------------------------ phases
    async def phase1(self) -> list[Candidate]:
        c = self.cfg
        lists = await asyncio.gather(
            self._vector(Tier.FACT, c.breadth(c.phase1_fact_k), Eq("valid_to", None)),
            self._vector(Tier.PROCEDURE, c.phase1_procedure_k, Eq("status", "active")),
            self._vector(Tier.TOPIC, c.phase1_topic_k, Eq("retired_at", None)),
        )
        p1 = Pool()
        for name, hits in zip(("fact_vec", "procedure_vec", "topic_vec"), lists, strict=True):
            p1.add(name, hits)
            self.pool.add(name, hits)
        ranked = p1.fuse(c)
        for cand in ranked:
            cand.relevance = max(s for _, s in cand.channels.values())
        return ranked

    async def phase2(self) -> None:
        c, it = self.cfg, self.intent
        jobs: dict[str, Any] = {
            "episode_vec": self._vector(Tier.EPISODE, c.breadth(c.phase2_episode_k)),
            "observation_vec": self._vector(Tier.OBSERVATION, c.breadth(c.phase2_observation_k)),
            "message_vec": self._vector(Tier.MESSAGE, c.breadth(c.phase2_message_k)),
            "observation_bm25": self._text(Tier.OBSERVATION, c.breadth(c.phase2_observation_k)),
            "message_bm25": self._text(Tier.MESSAGE, c.breadth(c.phase2_message_k)),
            # Passages of long Messages (recall.passages): their words, searchable as themselves.
            "message_chunks": self._hybrid(
                Tier.CHUNK, c.breadth(c.phase2_message_k), Eq("chunk_type", "message"), "keywords"
            ),
        }
        for pid in it.participant_ids[:2]:  # the named people's own words and statements
            text, vec = it.without_name.get(pid, ("", None)) if c.speaker_query_without_name else ("", None)
            jobs[f"speaker_message_vec:{pid}"] = self._vector(
                Tier.MESSAGE, c.breadth(c.phase2_message_k), Eq("participant", pid), vec=vec
            )
            jobs[f"speaker_message_bm25:{pid}"] = self._text(
                Tier.MESSAGE, c.breadth(c.phase2_message_k), Eq("participant", pid), text=text or None
            )
        if c.temporal_enabled and it.temporal_window:
            jobs["temporal"] = self._temporal()
        if c.graph_enabled and it.entity_ids:
            jobs["graph"] = self._graph()
        results = await asyncio.gather(*jobs.values())
        for name, hits in zip(jobs, results, strict=True):
            self.pool.add(name, hits)
        if c.neighbor_expansion:
            await self._neighbours()

    async def _temporal(self) -> list[Hit]:
        assert self.intent.temporal_window is not None
        lo, hi = self.intent.temporal_window
        k = self.cfg.phase2_temporal_k
        facts = self._find(
            Tier.FACT, Range("valid_from", lt=hi) & (Eq("valid_to", None) | Range("valid_to", gt=lo)), k
        )
        obs = self._find(Tier.OBSERVATION, Range("anchor_lo", lt=hi) & Range("anchor_hi", gt=lo), k)
        eps = self._find(Tier.EPISODE, Range("time", gte=lo, lt=hi), k // 2)
        msgs = self._find(Tier.MESSAGE, Range("time", gte=lo, lt=hi), k)
        found = await asyncio.gather(facts, obs, eps, msgs)
        nodes = [n for group in found for n in group]
        return self._rank_by_relevance(nodes)

    async def _find(self, tier: Tier, extra: Filter, k: int) -> list[Node]:
        flt = self.scope.combine(tier, extra)
        if isinstance(flt, OutOfScope) or k <= 0:
            return []
        return await self.store.find(self.agent, tier, flt, limit=max(k * 5, 50))

    def _rank_by_relevance(self, nodes: list[Node]) -> list[Hit]:
        """Flat-scored channel hits ordered by the query's word overlap (stable, cheap)."""
        words = {w.lower() for w in self.intent.keywords}

        def overlap(n: Node) -> int:
            text = (n.search_text() or "").lower()
            return sum(1 for w in words if w in text)

        nodes.sort(key=lambda n: (-overlap(n), n.id))
        return [Hit(n, 1.0) for n in nodes[: self.cfg.phase2_temporal_k]]

    async def _graph(self) -> list[Hit]:
        c = self.cfg
        # Participants are hubs (every turn they sent or heard): a walk from them is not about the
        # question and costs most of the graph's reads. Speaker-scoped lists cover them instead.
        seeds = self.intent.seed_ids if c.graph_seed_participants else self.intent.entity_ids
        edges = await neighbourhood(self.store, self.agent, seeds, hops=2, max_nodes=4000)
        rank = personalized_pagerank(
            edges,
            seeds,
            c.graph_edge_weights,
            damping=c.graph_damping,
            max_iter=c.graph_max_iter,
        )
        best = top_evidence(rank, seeds, c.graph_top_k * 4)
        return await self._admit([nid for nid, _ in best], [s for _, s in best], c.graph_top_k)

    async def _admit(self, ids: list[str], scores: list[float], k: int) -> list[Hit]:
        """Load nodes found by id (graph, neighbours) through the scope filters: no side door."""
        by_tier: dict[Tier, list[str]] = defaultdict(list)
        nodes = await self.store.get_many(self.agent, ids)
        for nid in ids:
            n = nodes.get(nid)
            if n is not None and not n.redacted:
                by_tier[n.tier].append(nid)
        allowed: set[str] = set()
        for tier, tids in by_tier.items():
            base = self.scope.filter_for(tier)
            if base is None:  # nothing to check beyond what get_many did (agent, not redacted)
                allowed.update(tids)
                continue
            flt = self.scope.combine(tier, In("id", tuple(tids)))
            if isinstance(flt, OutOfScope):
                continue
            found = await self.store.find(self.agent, tier, flt, limit=len(tids))
            allowed.update(n.id for n in found)
        hits = [Hit(nodes[i], s) for i, s in zip(ids, scores, strict=True) if i in allowed]
        return hits[:k]

    async def _neighbours(self) -> None:
        """Turns right before/after the strongest message hits (a question and its answer)."""
        ranked = [c for c in self.pool.fuse(self.cfg) if isinstance(c.node, Message)][
            : self.cfg.neighbor_parents
        ]
        if not ranked:
            return
        edges = await self.store.neighbor_keys(
            self.agent, [c.node.id for c in ranked], [EdgeType.NEXT], Direction.BOTH
        )
        order: list[str] = []
        for parent in ranked:
            for src, _, dst in edges:
                other = dst if src == parent.node.id else src if dst == parent.node.id else None
                if other and other not in self.pool.cands and other not in order:
                    order.append(other)
        hits = await self._admit(order, [1.0] * len(order), len(order))
        self.pool.add("neighbours", hits)

    async def phase3(self) -> None:
        c = self.cfg
        jobs: dict[str, Any] = {}
        names = [v for v, _ in self.intent.variants]
        if "keywords" in names:  # keywords text + the question's vector already is the original's hybrid
            names.remove("original")
        for variant in names:
            jobs[f"session_chunks:{variant}"] = self._hybrid(
                Tier.CHUNK, c.breadth(c.phase3_session_chunk_k), Eq("chunk_type", "session"), variant
            )
            jobs[f"observation_chunks:{variant}"] = self._hybrid(
                Tier.CHUNK, c.breadth(c.phase3_observation_chunk_k), Eq("chunk_type", "observation"), variant
            )
            jobs[f"artifact_chunks:{variant}"] = self._hybrid(
                Tier.CHUNK, c.phase3_artifact_chunk_k, In("chunk_type", ("artifact", "page")), variant
            )
        results = await asyncio.gather(*jobs.values())
        for name, hits in zip(jobs, results, strict=True):
            self.pool.add(name, hits)
        if c.chunk_to_message:
            self._chunks_to_messages()

    def _chunks_to_messages(self) -> None:
        """A session chunk's rank flows to the Messages it carries (only those it really carries)."""
        chunk_lists = [name for name in self.pool.lists if name.startswith("session_chunks:")]
        for name in chunk_lists:
            ranked: dict[str, int] = {}
            for cid, rank in self.pool.lists[name]:
                for m in getattr(self.pool.cands[cid].node, "covered_ids", []):
                    ranked.setdefault(m, rank)  # every carried turn shares the chunk's rank
            self.pool.add_ranked(f"chunk_messages:{name}", sorted(ranked.items(), key=lambda x: (x[1], x[0])))

    async def relevance(self, cands: list[Candidate]) -> None:
        """Calibrated relevance: the cosine between the query and each candidate's stored vector."""
        q = self.intent.primary_vector
        if q is None or not cands:
            return
        vecs = await self.store.get_vectors(self.agent, [c.node.id for c in cands])
        for c in cands:
            v = vecs.get(c.node.id)
            c.relevance = float(np.clip(np.dot(v, q), 0.0, 1.0)) if v is not None else 0.0


async def run_cascade(
    store: Store,
    agent: str,
    cfg: RecallConfig,
    intent: IntentProfile,
    reranker: Any = None,
    counter: TokenCounter | None = None,
) -> ContextBundle:
    cas = Cascade(store, agent, cfg, intent, reranker, counter)
    t0 = time.perf_counter()
    trace = cas.trace

    ranked1 = await cas.phase1()
    cov1 = compute_coverage(ranked1, intent, tiers_in_phase=PHASE_TIERS[1])
    drift = bool(cfg.drift_override_enabled and intent.unstable_entities)
    trace["phases"]["1"] = {"items": len(ranked1), "coverage": cov1, "drift_override": drift}
    trace["phases"]["1"]["pool_tokens"] = round(_pool_tokens(ranked1))
    if (
        ranked1
        and cov1 >= cfg.phase1_coverage_gate
        and len(ranked1) >= cfg.gate_min_items
        and not drift
        and _enough_for_budget(ranked1, cfg)
    ):
        return await _finish(cas, ranked1, phase1_only=True, t0=t0)

    await cas.phase2()
    ranked2 = cas.pool.fuse(cfg)
    head = ranked2[: max(cfg.gate_min_items * 2, 6)]
    await cas.relevance(head)
    cov2 = compute_coverage(head, intent, tiers_in_phase=PHASE_TIERS[2])
    trace["phases"]["2"] = {"items": len(ranked2), "coverage": cov2, "lists": _lists(cas)}
    trace["phases"]["2"]["pool_tokens"] = round(_pool_tokens(ranked2))
    if (
        len(ranked2) >= cfg.gate_min_items
        and cov2 >= cfg.phase2_coverage_gate
        and _enough_for_budget(ranked2, cfg)
    ):
        final = _apply_phase1(cas, ranked1, ranked2)
        return await _finish(cas, final, phase2_only=True, t0=t0)

    await cas.phase3()
    ranked3 = cas.pool.fuse(cfg)
    trace["phases"]["3"] = {"items": len(ranked3), "lists": _lists(cas)}
    final = _apply_phase1(cas, ranked1, ranked3)
    return await _finish(cas, final, t0=t0)


def _pool_tokens(cands: list[Candidate]) -> float:
    return sum(len(c.node.search_text() or "") for c in cands) / CHARS_PER_TOKEN


def _enough_for_budget(cands: list[Candidate], cfg: RecallConfig) -> bool:
    """A phase may end the cascade only if its candidates hold ``gate_budget_factor`` times the
    evidence the bundle can take: covered-but-thin results (a handful of short Facts for a
    2,000-token bundle) broaden instead of returning a half-empty bundle."""
    wanted = cfg.token_budget if cfg.limit is None else min(cfg.token_budget, cfg.limit * TOKENS_PER_ITEM)
    return _pool_tokens(cands) >= cfg.gate_budget_factor * wanted


def _lists(cas: Cascade) -> dict[str, int]:
    return {name: len(ids) for name, ids in cas.pool.lists.items()}


def _apply_phase1(cas: Cascade, phase1: list[Candidate], ranked: list[Candidate]) -> list[Candidate]:
    """Phase-1 knowledge in the final ranking: Merge (top 3 kept), Boost (lifts its evidence), Off."""
    strategy = cas.cfg.phase1_strategy
    facts = [c for c in phase1 if c.node.tier in (Tier.FACT, Tier.PROCEDURE, Tier.TOPIC)]
    if strategy == "off" or not facts:
        return [c for c in ranked if c.node.tier not in (Tier.FACT, Tier.PROCEDURE, Tier.TOPIC)]
    if strategy == "merge":
        keep = {c.node.id for c in facts[:3]}
        return sorted(
            [
                c
                for c in ranked
                if c.node.tier not in (Tier.FACT, Tier.PROCEDURE, Tier.TOPIC) or c.node.id in keep
            ],
            key=lambda c: (-c.fused, c.node.id),
        )
    return ranked  # boost: applied in _finish once the supporting evidence is known


async def _finish(
    cas: Cascade,
    ranked: list[Candidate],
    *,
    phase1_only: bool = False,
    phase2_only: bool = False,
    t0: float,
) -> ContextBundle:
    cfg = cas.cfg
    if cfg.phase1_strategy == "boost" and not phase1_only:
        ranked = await _boost(cas, ranked)
    ranked = await quote_passages(cas, ranked[:MAX_BUNDLE_CANDIDATES])
    items: list[RecallItem] = []
    for cand in ranked[:MAX_BUNDLE_CANDIDATES]:
        item = node_to_item(
            cand.node, cand.fused if not phase1_only else cand.relevance, sorted(cand.channels)
        )
        if item is None or item.kind == "summary":
            continue
        if (
            item.kind == "chunk"
            and not cfg.chunk_items
            and item.sources
            and item.sources[0].kind == "message"
        ):
            continue
        items.append(item)
    await _fact_sources(cas, items)
    items = await _rerank(cas, items)

    def pack_items(candidates: list[RecallItem]) -> Packed:
        return pack(
            candidates,
            limit=cfg.limit,
            token_budget=cfg.token_budget,
            mmr_lambda=cfg.mmr_lambda,
            duplicate_threshold=cfg.mmr_duplicate_threshold,
            chunk_share=cfg.chunk_budget_share,
            counter=cas.counter,
            layout=cfg.layout,
            statement_carries_turn=cfg.statement_carries_turn,
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
    top = max((i.score for i in packed.items), default=0.0)
    for i in packed.items:  # scores relative to the best item: 1.0 for it, in (0, 1] for the rest
        i.fused = i.score
        i.score = round(i.score / top, 6) if top > 0 else 0.0
    chosen = {i.node_id for i in packed.items}
    final_cands = [c for c in ranked if c.node.id in chosen]
    await cas.relevance([c for c in final_cands if c.relevance == 0.0])
    coverage = compute_coverage(final_cands, cas.intent, tiers_in_phase=PHASE_TIERS[1 if phase1_only else 2])
    trace = None
    if cfg.explain:
        trace = cas.trace
        trace["channels"] = {
            name: [
                {"id": nid, "rank": r, "score": round(cas.pool.cands[nid].channels.get(name, (r, 0.0))[1], 6)}
                for nid, r in lst[:50]
            ]
            for name, lst in cas.pool.lists.items()
        }
        trace["dropped"] = {**packed.dropped, **refused}
        trace["degraded"] = list(cas.degraded)
        trace["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 3)
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
    """Facts cite the Messages behind them: Fact -SUPPORTED_BY-> Observation -OBSERVED_IN-> Message."""
    facts = [i for i in items if i.kind == "fact"]
    if not facts:
        return
    support = await cas.store.neighbor_keys(cas.agent, [f.node_id for f in facts], [EdgeType.SUPPORTED_BY])
    observed = await cas.store.neighbor_keys(cas.agent, [d for _, _, d in support], [EdgeType.OBSERVED_IN])
    msg_of: dict[str, list[str]] = defaultdict(list)
    for src, _, dst in observed:
        msg_of[src].append(dst)
    by_fact: dict[str, list[str]] = defaultdict(list)
    for fact, _, obs in support:
        for m in msg_of.get(obs, []):
            if m not in by_fact[fact]:
                by_fact[fact].append(m)
    for f in facts:
        f.sources = [RecallSource(message_id=m) for m in by_fact.get(f.node_id, [])]


async def _check_sources(cas: Cascade, items: list[RecallItem]) -> dict[str, str]:
    """Re-check the items' evidence in the store before they can enter the bundle: the refused.

    An item whose source Message is gone, redacted, or not visible to the viewer is refused, so a
    derived node (observation, chunk, fact) can never carry content its source no longer allows.
    """
    ids = sorted({m for i in items for m in i.message_ids()})
    if not ids:
        return {}
    sources = await cas.store.get_many(cas.agent, ids)
    viewer = cas.cfg.viewer
    ok = {m for m, n in sources.items() if not n.redacted and (viewer is None or viewer.admits(n.visibility))}
    return {
        i.node_id: "source deleted, redacted or not visible"
        for i in items
        if not all(m in ok for m in i.message_ids())
    }


async def _boost(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    """Boost: α × fact score lifts the Observations and Messages that support a relevant Phase-1 Fact.

    Only Facts that match the question (cosine ≥ ``boost_min_relevance``) lift anything, and the lift
    is scaled by the lifted node's tier weight, so a weakly related Fact cannot push the turn that
    answers the question out of the bundle.
    """
    facts = [c for c in ranked if c.node.tier is Tier.FACT]
    await cas.relevance(facts[:10])
    facts = [c for c in facts[:10] if c.relevance >= cas.cfg.boost_min_relevance][:5]
    if not facts:
        return ranked
    support = await cas.store.neighbors(cas.agent, [c.node.id for c in facts], [EdgeType.SUPPORTED_BY])
    obs_ids = [e.dst for e in support]
    msgs = await cas.store.neighbors(cas.agent, obs_ids, [EdgeType.OBSERVED_IN]) if obs_ids else []
    lift: dict[str, float] = defaultdict(float)
    fact_score = {c.node.id: c.fused for c in facts}
    obs_to_fact = {e.dst: e.src for e in support}
    for e in support:
        lift[e.dst] += cas.cfg.phase1_boost_alpha * fact_score[e.src]
    for e in msgs:
        lift[e.dst] += cas.cfg.phase1_boost_alpha * fact_score[obs_to_fact[e.src]]
    for c in ranked:
        c.fused += lift.get(c.node.id, 0.0) * cas.cfg.tier_weights.get(c.node.tier.value, 0.5)
    return sorted(ranked, key=lambda c: (-c.fused, c.node.id))


async def _rerank(cas: Cascade, items: list[RecallItem]) -> list[RecallItem]:
    if not cas.cfg.reranker_enabled or cas.reranker is None or not items:
        return items
    from ..providers.rerank import rerank_with_fallback

    head = items[: cas.cfg.reranker_top_n]
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


def validate_query(query: object, cfg: RecallConfig) -> str:
    """The query as recall uses it: lone surrogates become U+FFFD (as in a stored turn)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("the query must be a non-empty string")
    if len(query) > cfg.max_query_chars:
        raise ValidationError(
            f"the query has {len(query):,} characters, over the limit of {cfg.max_query_chars:,}"
        )
    return without_surrogates(str(query))
