"""The channels of one recall: the store searches each phase issues, all through the scope filters.

Plain channels are one store search of one tier (vector, BM25, hybrid). The others build a list
from the question's structure: the temporal channel (nodes inside the question's time window,
ordered by word overlap), the graph channel (personalised PageRank from the question's entities,
``recall.graph``), the neighbours of the strongest turns, the replies to question turns the
keyword search found, and the Messages a transcript chunk carries. Nodes found by id (graph,
neighbours, replies) are admitted through the same scope filters as any search (``admit``): no
side door.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import numpy as np

from ..model import Direction, EdgeType, Message, Node, Tier
from ..store.filters import Eq, Filter, In, Range
from ..store.protocol import Hit, Store
from .config import RecallConfig
from .fusion import Pool
from .graph import neighbourhood, personalized_pagerank, top_evidence
from .intent import IntentProfile
from .scope import OutOfScope, Scope

#: The keyword lists of Messages whose questions' replies join the pool (``Channels.replies``).
REPLY_SOURCE_LISTS = ("message_bm25", "speaker_message_bm25")


class Channels:
    """Store searches for one recall of ``agent`` (``cfg``, ``intent`` and ``scope`` fixed)."""

    def __init__(
        self, store: Store, agent: str, cfg: RecallConfig, intent: IntentProfile, scope: Scope
    ) -> None:
        self.store = store
        self.agent = agent
        self.cfg = cfg
        self.intent = intent
        self.scope = scope

    # ------------------------------------------------------------------ plain searches
    async def vector(
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
        return [h for h in hits if h.score >= self.cfg.channels.min_score]

    async def text(
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

    async def hybrid(self, tier: Tier, k: int, extra: Filter | None, variant: str) -> list[Hit]:
        flt = self.scope.combine(tier, extra)
        if k <= 0 or isinstance(flt, OutOfScope):
            return []
        text = dict(self.intent.variants).get(variant, self.intent.query)
        vec = self.intent.vectors.get(variant, self.intent.primary_vector)
        f = self.cfg.fusion
        total = f.vector_weight + f.bm25_weight
        alpha = f.vector_weight / total if total > 0 else 0.5
        return await self.store.hybrid_search(self.agent, tier, text, vec, alpha=alpha, k=k, filter=flt)

    # ------------------------------------------------------------------ temporal
    async def temporal(self) -> list[Hit]:
        """Facts valid, Observations anchored, Episodes and Messages sent inside the question's window."""
        assert self.intent.temporal_window is not None
        lo, hi = self.intent.temporal_window
        b = self.cfg.breadth
        k = b.temporal_k
        facts = self._find(
            Tier.FACT, Range("valid_from", lt=hi) & (Eq("valid_to", None) | Range("valid_to", gt=lo)), k
        )
        obs = self._find(Tier.OBSERVATION, Range("anchor_lo", lt=hi) & Range("anchor_hi", gt=lo), k)
        eps = self._find(Tier.EPISODE, Range("time", gte=lo, lt=hi), b.temporal_episode_k)
        msgs = self._find(Tier.MESSAGE, Range("time", gte=lo, lt=hi), k)
        found = await asyncio.gather(facts, obs, eps, msgs)
        nodes = [n for group in found for n in group]
        return self._rank_by_relevance(nodes)

    async def _find(self, tier: Tier, extra: Filter, k: int) -> list[Node]:
        flt = self.scope.combine(tier, extra)
        if isinstance(flt, OutOfScope) or k <= 0:
            return []
        ch = self.cfg.channels
        limit = max(k * ch.temporal_fetch_factor, ch.temporal_fetch_min)
        return await self.store.find(self.agent, tier, flt, limit=limit)

    def _rank_by_relevance(self, nodes: list[Node]) -> list[Hit]:
        """Flat-scored channel hits ordered by the query's word overlap (stable, cheap)."""
        words = {w.lower() for w in self.intent.keywords}

        def overlap(n: Node) -> int:
            text = (n.search_text() or "").lower()
            return sum(1 for w in words if w in text)

        nodes.sort(key=lambda n: (-overlap(n), n.id))
        return [Hit(n, 1.0) for n in nodes[: self.cfg.breadth.temporal_k]]

    # ------------------------------------------------------------------ slots
    async def slot_facts(self, valid: Filter) -> list[Hit]:
        """The Facts of the slots the question names (``IntentProfile.slot_keys``), valid at the
        recall's moment, newest first. Scored 0: found by key, they say nothing of relevance
        (the coverage gates read cosines), and rank by their place in the list."""
        keys = self.intent.slot_keys
        if not keys or self.cfg.fusion.channel_weights.get("slots", 0.0) <= 0:
            return []
        nodes = await self._find(Tier.FACT, In("slot", tuple(keys)) & valid, self.cfg.breadth.fact_k)
        nodes.sort(key=lambda n: (-n.time_key().timestamp() if n.time_key() else 0.0, n.id))
        return [Hit(n, 0.0) for n in nodes[: self.cfg.breadth.fact_k]]

    # ------------------------------------------------------------------ graph
    async def graph(self, seeds: list[str]) -> list[Hit]:
        """Personalised PageRank from ``seeds`` (``graph_seeds``) over their neighbourhood."""
        g = self.cfg.graph
        if not seeds:
            return []
        edges = await neighbourhood(
            self.store,
            self.agent,
            seeds,
            hops=g.hops,
            max_nodes=g.max_nodes,
            max_edges=g.max_edges or None,
            read_batch=g.edge_read_batch,
        )
        rank = personalized_pagerank(
            edges,
            seeds,
            g.edge_weights,
            damping=g.damping,
            max_iter=g.max_iter,
            tol=g.tolerance,
        )
        best = top_evidence(rank, seeds, g.top_k * g.candidates_per_k)
        return await self.admit([nid for nid, _ in best], [s for _, s in best], g.top_k)

    async def admit(self, ids: list[str], scores: list[float], k: int) -> list[Hit]:
        """Load nodes found by id (graph, neighbours, replies) through the scope filters: no side door."""
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

    # ------------------------------------------------------------------ lists over the pool
    async def neighbours(self, pool: Pool) -> None:
        """Turns right before/after the strongest message hits (a question and its answer)."""
        ranked = [c for c in pool.fuse(self.cfg) if isinstance(c.node, Message)][
            : self.cfg.channels.neighbor_parents
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
                if other and other not in pool.cands and other not in order:
                    order.append(other)
        hits = await self.admit(order, [1.0] * len(order), len(order))
        pool.add("neighbours", hits)

    async def replies(self, pool: Pool) -> None:
        """The turn that answers a question the keyword search found ("How long have you had
        them?" -> "Three years now"), at its question's rank: a reply is often too terse to be
        found by its own words. One list per keyword list of Messages, in the bm25 family (a
        candidate's best rank there counts). A follow-up by the asker is not an answer, and every
        reply enters through ``admit``: scope filters apply, forgotten turns stay out."""
        lists = [n for n in pool.lists if n.split(":", 1)[0] in REPLY_SOURCE_LISTS]
        asks = {n: [(nid, r) for nid, r in pool.lists[n] if _asks(pool.cands[nid].node)] for n in lists}
        wanted = sorted({nid for found in asks.values() for nid, _ in found})
        if not wanted:
            return
        edges = await self.store.neighbor_keys(self.agent, wanted, [EdgeType.NEXT], Direction.OUT)
        reply = {src: dst for src, _, dst in edges}
        order = list(dict.fromkeys(reply[q] for q in wanted if q in reply))
        admitted = {h.node.id: h for h in await self.admit(order, [1.0] * len(order), len(order))}
        for name, found in asks.items():
            hits: list[Hit] = []
            ranks: list[int] = []
            for q, rank in found:
                h = admitted.get(reply.get(q, ""))
                if h is not None and _sender(h.node) != _sender(pool.cands[q].node):
                    hits.append(h)
                    ranks.append(rank)
            pool.add_at(name.replace("_bm25", "_replies_bm25", 1), hits, ranks)

    @staticmethod
    def chunks_to_messages(pool: Pool) -> None:
        """A session chunk's rank flows to the Messages it carries (only those it really carries)."""
        chunk_lists = [name for name in pool.lists if name.startswith("session_chunks:")]
        for name in chunk_lists:
            ranked: dict[str, int] = {}
            for cid, rank in pool.lists[name]:
                for m in getattr(pool.cands[cid].node, "covered_ids", []):
                    ranked.setdefault(m, rank)  # every carried turn shares the chunk's rank
            pool.add_ranked(f"chunk_messages:{name}", sorted(ranked.items(), key=lambda x: (x[1], x[0])))


def graph_seeds(intent: IntentProfile, cfg: RecallConfig) -> list[str]:
    """Where the walk starts. Participants, and the Entities that name them, are hubs (every turn
    they sent, heard or are mentioned in): a walk from them is not about the question and costs
    most of the graph's reads. Speaker-scoped lists cover them instead."""
    if cfg.graph.seed_participants:
        return intent.seed_ids
    hubs = set(intent.participant_entity_ids)
    return [e for e in intent.entity_ids if e not in hubs]


def _asks(node: Node) -> bool:
    """A Message that ends with a question mark."""
    return isinstance(node, Message) and node.content.rstrip().endswith("?")


def _sender(node: Node) -> str | None:
    return node.sender_id if isinstance(node, Message) else None
