"""The three-phase, coverage-gated recall cascade.

Phase 1 reads compiled knowledge (Facts, Procedures, Topics); Phase 2 the episodic tier
(Observations, Messages, Episodes) with the temporal and graph channels; Phase 3 the session,
observation and artifact chunks. Each phase is fused by weighted RRF into ONE pool
(``recall.fusion``): evidence a phase found is never thrown away when a later phase runs. Gates
use calibrated inputs (cosine relevance, facet matches, tier diversity: ``recall.coverage``), so
they mean what the seed says, and the cascade still stops early when the compiled or episodic view
already covers the question. Every number here is a field of ``RecallPhases`` / ``RecallBreadth``.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import numpy as np

from ..model import EdgeType, Entity, Tier
from ..providers.token_counter import TokenCounter, default_token_counter
from ..store.filters import Eq, Filter, In, Range
from ..store.protocol import Hit, Store
from .assemble import superseded_at
from .bundle import finish
from .channels import Channels, graph_seeds
from .config import RecallConfig
from .coverage import compute_coverage
from .directives import asks_about_conduct, favour_directives
from .expansion import expansion_terms
from .fusion import Candidate, Pool, by_fused
from .intent import IntentDraft, IntentProfile
from .items import ContextBundle
from .present import asks_about_now, favour_newer
from .scope import Scope

#: How many tiers each phase can return (the diversity denominator of its coverage).
PHASE_TIERS = {1: 3, 2: 3, 3: 2}
#: The tiers of compiled knowledge (Phase 1).
KNOWLEDGE_TIERS = (Tier.FACT, Tier.PROCEDURE, Tier.TOPIC)


class Cascade:
    """The state of one recall: its channels, the one pool, the trace and what degraded."""

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
        self.channels = Channels(store, agent, cfg, intent, self.scope)
        self.reranker = reranker
        self.pool = Pool()
        #: Lists searched before the cascade (``prefetch_keywords``), by list name.
        self.prefetched: dict[str, list[Hit]] = {}
        self.trace: dict[str, Any] = {"intent": intent.summary(), "phases": {}}
        #: What did not work for this recall and what it fell back to (shown in the bundle).
        self.degraded: list[str] = list(intent.degraded)

    def coverage(self, cands: list[Candidate], phase: int) -> float:
        return compute_coverage(
            cands, self.intent, tiers_in_phase=PHASE_TIERS[phase], weights=self.cfg.phases
        )

    # ------------------------------------------------------------------ phases
    async def phase1(self) -> list[Candidate]:
        c, ch = self.cfg, self.channels
        b = c.breadth
        lists = await asyncio.gather(
            ch.vector(Tier.FACT, c.scaled_k(b.fact_k), valid_facts(c)),
            ch.vector(Tier.PROCEDURE, b.procedure_k, Eq("status", "active")),
            ch.vector(Tier.TOPIC, b.topic_k, Eq("retired_at", None)),
            ch.slot_facts(valid_facts(c)),
        )
        p1 = Pool()
        for name, hits in zip(("fact_vec", "procedure_vec", "topic_vec", "fact_slot"), lists, strict=True):
            p1.add(name, hits)
            self.pool.add(name, hits)
        ranked = p1.fuse(c)
        for cand in ranked:
            cand.relevance = max(s for _, s in cand.channels.values())
        return ranked

    def phase2_jobs(self) -> dict[str, Callable[[], Awaitable[list[Hit]]]]:
        """Phase 2's lists, in the order they enter the pool (it fixes the order of the fusion's
        sums). The ``_bm25`` ones need no vector (``prefetch_keywords``)."""
        c, it, ch = self.cfg, self.intent, self.channels
        b = c.breadth
        jobs: dict[str, Callable[[], Awaitable[list[Hit]]]] = {
            "episode_vec": lambda: ch.vector(Tier.EPISODE, c.scaled_k(b.episode_k)),
            "observation_vec": lambda: ch.vector(Tier.OBSERVATION, c.scaled_k(b.observation_k)),
            "message_vec": lambda: ch.vector(Tier.MESSAGE, c.scaled_k(b.message_k)),
            "observation_bm25": lambda: ch.text(Tier.OBSERVATION, c.scaled_k(b.observation_k)),
            "message_bm25": lambda: ch.text(Tier.MESSAGE, c.scaled_k(b.message_k)),
            # Passages of long Messages (recall.passages): their words, searchable as themselves.
            "message_chunks": lambda: ch.hybrid(
                Tier.CHUNK, c.scaled_k(b.message_k), Eq("chunk_type", "message"), "keywords"
            ),
        }
        without = c.channels.speaker_query_without_name
        for pid in it.participant_ids[: c.channels.speaker_participants]:
            # the named people's own words and statements (the vector is read when the job runs)
            speaker = Eq("participant", pid)

            def vector(pid: str = pid, speaker: Filter = speaker) -> Awaitable[list[Hit]]:
                vec = it.without_name.get(pid, ("", None))[1] if without else None
                return ch.vector(Tier.MESSAGE, c.scaled_k(b.message_k), speaker, vec=vec)

            def text(pid: str = pid, speaker: Filter = speaker) -> Awaitable[list[Hit]]:
                words = it.without_name.get(pid, ("", None))[0] if without else ""
                return ch.text(Tier.MESSAGE, c.scaled_k(b.message_k), speaker, text=words or None)

            jobs[f"speaker_message_vec:{pid}"] = vector
            jobs[f"speaker_message_bm25:{pid}"] = text
        if c.channels.temporal_enabled and it.temporal_window:
            jobs["temporal"] = ch.temporal
        if c.graph.enabled and (seeds := graph_seeds(it, c)):
            jobs["graph"] = lambda: ch.graph(seeds)
        return jobs

    async def prefetch_keywords(self, draft: IntentDraft) -> None:
        """Run Phase 2's keyword searches while the question's vectors are computed in a worker
        thread (this thread would only wait), then complete the draft. Phase 2 almost always runs;
        when Phase 1 ends the cascade, the lists are dropped unread."""
        try:
            for name, job in self.phase2_jobs().items():
                if name.split(":", 1)[0].endswith("_bm25"):
                    self.prefetched[name] = await job()
        except BaseException:
            draft.cancel()
            raise
        await draft.complete()
        self.degraded = list(self.intent.degraded)

    async def phase2(self) -> None:
        c, ch = self.cfg, self.channels
        jobs = self.phase2_jobs()
        todo = {name: job() for name, job in jobs.items() if name not in self.prefetched}
        results = dict(zip(todo, await asyncio.gather(*todo.values()), strict=True))
        for name in jobs:
            self.pool.add(name, self.prefetched[name] if name in self.prefetched else results[name])
        if c.channels.prf_docs > 0:
            await self.expand()
        if c.channels.reply_expansion:
            await ch.replies(self.pool)
        if c.channels.neighbor_expansion:
            await ch.neighbours(self.pool)

    async def expand(self) -> None:
        """One more keyword list over Messages: the question plus the words its best Message hits
        share (``recall.expansion``)."""
        c, it = self.cfg, self.intent
        order: list[str] = []
        for pair in zip(
            self.pool.lists.get("message_vec", []), self.pool.lists.get("message_bm25", []), strict=False
        ):
            order += [nid for nid, _ in pair if nid not in order]
        docs = [
            str(getattr(self.pool.cands[nid].node, "content", ""))
            for nid in order[: c.channels.prf_docs]
            if nid in self.pool.cands
        ]
        terms = expansion_terms(
            it.query,
            docs,
            names=[*it.participant_names, *it.entity_refs],
            max_terms=c.channels.prf_terms,
            min_docs=c.channels.prf_min_docs,
        )
        if not terms:
            return
        base = dict(it.variants).get("keywords") or it.query
        hits = await self.channels.text(
            Tier.MESSAGE, c.scaled_k(c.breadth.message_k), text=f"{base} {' '.join(terms)}"
        )
        self.pool.add("message_prf", hits)
        self.trace.setdefault("expansion", terms)

    async def phase3(self) -> None:
        c, ch = self.cfg, self.channels
        b = c.breadth
        jobs: dict[str, Any] = {}
        names = [v for v, _ in self.intent.variants]
        if "keywords" in names:  # keywords text + the question's vector already is the original's hybrid
            names.remove("original")
        for variant in names:
            jobs[f"session_chunks:{variant}"] = ch.hybrid(
                Tier.CHUNK, c.scaled_k(b.session_chunk_k), Eq("chunk_type", "session"), variant
            )
            jobs[f"observation_chunks:{variant}"] = ch.hybrid(
                Tier.CHUNK, c.scaled_k(b.observation_chunk_k), Eq("chunk_type", "observation"), variant
            )
            jobs[f"artifact_chunks:{variant}"] = ch.hybrid(
                Tier.CHUNK, b.artifact_chunk_k, In("chunk_type", ("artifact", "page")), variant
            )
        results = await asyncio.gather(*jobs.values())
        for name, hits in zip(jobs, results, strict=True):
            self.pool.add(name, hits)
        if c.channels.chunk_to_message:
            ch.chunks_to_messages(self.pool)

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
    intent: IntentProfile | IntentDraft,
    reranker: Any = None,
    counter: TokenCounter | None = None,
) -> ContextBundle:
    """The cascade for ``intent``; a draft's keyword lists are searched while its vectors finish."""
    t0 = time.perf_counter()
    if isinstance(intent, IntentDraft):
        cas = Cascade(store, agent, cfg, intent.profile, reranker, counter)
        await cas.prefetch_keywords(intent)
        intent = intent.profile
    else:
        cas = Cascade(store, agent, cfg, intent, reranker, counter)
    trace = cas.trace
    gates = cfg.phases

    ranked1 = await cas.phase1()
    cov1 = cas.coverage(ranked1, 1)
    drift = bool(gates.drift_override_enabled and intent.unstable_entities)
    trace["phases"]["1"] = {"items": len(ranked1), "coverage": cov1, "drift_override": drift}
    trace["phases"]["1"]["pool_tokens"] = round(pool_tokens(ranked1, cfg))
    if (
        ranked1
        and cov1 >= gates.phase1_coverage_gate
        and len(ranked1) >= gates.gate_min_items
        and not drift
        and enough_for_budget(ranked1, cfg)
    ):
        return await finish(cas, await answer_typed(cas, ranked1), phase1_only=True, t0=t0)

    await cas.phase2()
    ranked2 = cas.pool.fuse(cfg)
    head = ranked2[: max(gates.gate_min_items * gates.gate_head_per_item, gates.gate_head_min)]
    await cas.relevance(head)
    cov2 = cas.coverage(head, 2)
    trace["phases"]["2"] = {"items": len(ranked2), "coverage": cov2, "lists": cas.pool.sizes()}
    trace["phases"]["2"]["pool_tokens"] = round(pool_tokens(ranked2, cfg))
    if (
        len(ranked2) >= gates.gate_min_items
        and cov2 >= gates.phase2_coverage_gate
        and enough_for_budget(ranked2, cfg)
    ):
        final = apply_phase1(cas, ranked1, ranked2)
        return await finish(cas, await _boosted(cas, final), phase2_only=True, t0=t0)

    await cas.phase3()
    ranked3 = cas.pool.fuse(cfg)
    trace["phases"]["3"] = {"items": len(ranked3), "lists": cas.pool.sizes()}
    final = apply_phase1(cas, ranked1, ranked3)
    return await finish(cas, await _boosted(cas, final), t0=t0)


def valid_facts(cfg: RecallConfig) -> Filter:
    """The Facts Phase 1 reads: open ones, or with a ``reference_ts`` the ones valid then
    (bitemporal: a question asked as of last June gets the value that held last June)."""
    ref = cfg.reference_ts
    if ref is None:
        return Eq("valid_to", None)
    start = Range("valid_from", lt=ref + timedelta(seconds=cfg.breadth.fact_validity_slack_secs))
    return start & (Eq("valid_to", None) | Range("valid_to", gt=ref))


def demote_superseded(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    """A statement a newer value replaced before the recall's moment ranks at
    ``RecallFusion.superseded_weight`` of its score: it reorders, never hides."""
    weight = cas.cfg.fusion.superseded_weight
    if weight >= 1.0:
        return ranked
    ref = cas.intent.reference_ts
    changed = False
    for c in ranked:
        at = superseded_at(c.node)
        if at is not None and at <= ref:
            c.fused *= weight
            changed = True
    return by_fused(ranked) if changed else ranked


def pool_tokens(cands: list[Candidate], cfg: RecallConfig) -> float:
    """The candidates' text in tokens, estimated at ``RecallPhases.chars_per_token``."""
    return sum(c.text_chars() for c in cands) / cfg.phases.chars_per_token


def enough_for_budget(cands: list[Candidate], cfg: RecallConfig) -> bool:
    """A phase may end the cascade only if its candidates hold ``gate_budget_factor`` times the
    evidence the bundle can take: covered-but-thin results (a handful of short Facts for a
    2,000-token bundle) broaden instead of returning a half-empty bundle."""
    p = cfg.phases
    wanted = cfg.token_budget if cfg.limit is None else min(cfg.token_budget, cfg.limit * p.tokens_per_item)
    return pool_tokens(cands, cfg) >= p.gate_budget_factor * wanted


def apply_phase1(cas: Cascade, phase1: list[Candidate], ranked: list[Candidate]) -> list[Candidate]:
    """Phase-1 knowledge in the final ranking: Merge (the best kept), Boost (lifts its evidence), Off."""
    p = cas.cfg.phases
    facts = [c for c in phase1 if c.node.tier in KNOWLEDGE_TIERS]
    if p.phase1_strategy == "off" or not facts:
        return [c for c in ranked if c.node.tier not in KNOWLEDGE_TIERS]
    if p.phase1_strategy == "merge":
        keep = {c.node.id for c in facts[: p.merge_keep]}
        return by_fused([c for c in ranked if c.node.tier not in KNOWLEDGE_TIERS or c.node.id in keep])
    return ranked  # boost: applied by _boosted once the supporting evidence is known


async def _boosted(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    if cas.cfg.phases.phase1_strategy == "boost":
        ranked = await boost(cas, ranked)
    return await answer_typed(cas, ranked)


async def answer_typed(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    """Lift the candidates that carry an entity of the type the question asks for ("Where does
    Priya work?" -> a place; "Which company ..." -> an organisation; "When ..." -> a date): the
    turn that names the employer outranks one that only talks about work. The lift multiplies the
    fused score (``RecallFusion.answer_type_boost``) of the best ``answer_type_top_n``."""
    f = cas.cfg.fusion
    ranked = demote_superseded(cas, ranked)
    intent = cas.intent
    if f.now_recency > 0 and asks_about_now(intent.query, intent.temporal_window is not None):
        ranked = favour_newer(ranked, f.now_recency, f.now_recency_top_n)
    if f.directive_boost > 0 and asks_about_conduct(intent.query):
        ranked = favour_directives(ranked, f.directive_boost, f.directive_top_n)
    wanted = cas.intent.expected_answer_type
    head = ranked[: f.answer_type_top_n]
    if not wanted or f.answer_type_boost <= 0 or not head:
        return ranked
    edges = await cas.store.neighbors(
        cas.agent, [c.node.id for c in head], [EdgeType.MENTIONS, EdgeType.ABOUT]
    )
    entities = await cas.store.get_many(cas.agent, sorted({e.dst for e in edges}))
    typed = {
        e.src
        for e in edges
        if isinstance(ent := entities.get(e.dst), Entity) and ent.entity_type == wanted and not ent.redacted
    }
    lifted = [c for c in head if c.node.id in typed]
    cas.trace["answer_type"] = {"type": wanted, "lifted": len(lifted)}
    if not lifted:
        return ranked
    for c in lifted:
        c.fused *= 1.0 + f.answer_type_boost
    return by_fused(ranked)


async def boost(cas: Cascade, ranked: list[Candidate]) -> list[Candidate]:
    """Boost: α × fact score lifts the Observations and Messages that support a relevant Phase-1 Fact.

    Only Facts that match the question (cosine ≥ ``boost_min_relevance``) lift anything, and the lift
    is scaled by the lifted node's tier weight, so a weakly related Fact cannot push the turn that
    answers the question out of the bundle.
    """
    p, f = cas.cfg.phases, cas.cfg.fusion
    facts = [c for c in ranked if c.node.tier is Tier.FACT]
    await cas.relevance(facts[: p.boost_candidates])
    relevant = [c for c in facts[: p.boost_candidates] if c.relevance >= p.boost_min_relevance]
    facts = relevant[: p.boost_max_facts]
    if not facts:
        return ranked
    support = await cas.store.neighbors(cas.agent, [c.node.id for c in facts], [EdgeType.SUPPORTED_BY])
    obs_ids = [e.dst for e in support]
    msgs = await cas.store.neighbors(cas.agent, obs_ids, [EdgeType.OBSERVED_IN]) if obs_ids else []
    lift: dict[str, float] = defaultdict(float)
    fact_score = {c.node.id: c.fused for c in facts}
    obs_to_fact = {e.dst: e.src for e in support}
    for e in support:
        lift[e.dst] += p.boost_alpha * fact_score[e.src]
    for e in msgs:
        lift[e.dst] += p.boost_alpha * fact_score[obs_to_fact[e.src]]
    for c in ranked:
        c.fused += lift.get(c.node.id, 0.0) * f.tier_weights.get(c.node.tier.value, f.default_tier_weight)
    return by_fused(ranked)
