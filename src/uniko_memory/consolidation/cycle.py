"""P4: one consolidation cycle, Observations → Facts (no LLM unless a triple source says so).

1. load up to ``batch`` observations with a triple and no inbound PROCESSED edge (oldest first);
2. triples (rules, or an LLM source with rule fallback), grouped by (subject, predicate);
3. the prior open Facts of those groups; object phrasings embedded and clustered;
4. ``plan_group`` decides reinforce / create / close (contradiction);
5. one store unit writes Facts (embedded, "[Month Year]" prefix optional), SUPPORTED_BY{weight},
   ABOUT, INVALIDATES{reason, invalidated_at}, drift flags, and a ConsolidationCycle audit node
   whose PROCESSED edges make a rerun a no-op. Facts are never deleted here.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ..config import UnikoConfig
from ..model import (
    ConsolidationCycle,
    Direction,
    Edge,
    EdgeType,
    Fact,
    Node,
    Observation,
    make_id,
    stable_hash,
)
from ..model.time import utcnow
from ..store.protocol import Store
from .drift import CONTRADICTION, Closure, detect_drift
from .lists import refresh_lists
from .load import load_unprocessed, open_facts_where, prior_open_facts, scan_hint, set_scan_hint, votes_for
from .plan import (
    Group,
    GroupPlan,
    NewFact,
    Vote,
    build_clusters,
    cluster_of_value,
    group_votes,
    plan_group,
    subject_key,
)
from .supersede import Entry, cessation_supersessions, merge, reading_of, slot_supersessions
from .triples import TripleSource

log = logging.getLogger(__name__)

#: Prefixes of the nodes a Fact may be ABOUT.
ABOUT_PREFIXES = ("ent_", "par_")


class CycleStats(BaseModel):
    observations_processed: int = 0
    facts_created: int = 0
    facts_reinforced: int = 0
    facts_invalidated: int = 0
    #: Of ``facts_invalidated``: closed because a newer value of their slot replaced them.
    facts_superseded: int = 0
    drift_alerts: int = 0
    #: Compiled lists (``consolidation.lists``) written anew: a new item or a new list.
    lists_written: int = 0
    cycle_id: str | None = None
    elapsed_ms: float = 0.0

    def __add__(self, other: CycleStats) -> CycleStats:
        return CycleStats(
            observations_processed=self.observations_processed + other.observations_processed,
            facts_created=self.facts_created + other.facts_created,
            facts_reinforced=self.facts_reinforced + other.facts_reinforced,
            facts_invalidated=self.facts_invalidated + other.facts_invalidated,
            facts_superseded=self.facts_superseded + other.facts_superseded,
            drift_alerts=self.drift_alerts + other.drift_alerts,
            lists_written=self.lists_written + other.lists_written,
            cycle_id=other.cycle_id or self.cycle_id,
            elapsed_ms=self.elapsed_ms + other.elapsed_ms,
        )


def confidence(n: int) -> float:
    """Laplace-smoothed confidence after ``n`` supporting observations: (n+1)/(n+2)."""
    return (n + 1) / (n + 2)


def event_start(obs: Observation) -> tuple[datetime, Literal["event", "said"]]:
    """When a Fact from ``obs`` starts: the event the turn dates ("yesterday", "last week") when that
    lies before the turn, else the time it was said (a plan for "next October" starts being true when
    stated; an undated statement claims nothing earlier)."""
    lo = obs.anchor_lo
    if lo is not None and lo <= obs.observed_at:
        return lo, "event"
    return obs.observed_at, "said"


def embed_text(fact: Fact, date_prefix: bool) -> str:
    prefix = f"[{fact.valid_from:%B %Y}] " if date_prefix else ""
    return prefix + fact.triple_text()


async def _embed(embedder: Any, texts: Sequence[str]) -> list[np.ndarray]:
    if not texts:
        return []
    vecs = await embedder.embed_documents(list(texts))
    return [np.asarray(v, dtype=np.float32) for v in vecs]


# ---------------------------------------------------------------------------------- ids
async def _allocate_ids(store: Store, agent: str, new: Sequence[NewFact]) -> None:
    """Deterministic ids; a triple that already has a (closed or redacted) Fact gets a dated id."""
    taken: set[str] = set()

    def base(nf: NewFact, *extra: str) -> str:
        keys = [nf.group.subject_key, nf.group.predicate, _norm(nf.object)]
        if nf.group.visibility != "public":
            keys.append(nf.group.visibility)
        return make_id("fct", agent, *keys, *extra)

    wanted = [[base(nf), base(nf, nf.valid_from.isoformat())] for nf in new]
    existing = set(await store.get_many(agent, [c for cands in wanted for c in cands]))
    for nf, cands in zip(new, wanted, strict=True):
        choice = next((c for c in cands if c not in existing and c not in taken), None)
        n = 2
        while choice is None:
            c = base(nf, nf.valid_from.isoformat(), str(n))
            if c not in taken and await store.get(agent, c) is None:
                choice = c
            n += 1
        nf.id = choice
        taken.add(choice)


def _norm(text: str) -> str:
    from ..model import normalize_key

    return normalize_key(text)


# ---------------------------------------------------------------------------------- the cycle
async def run_cycle(
    store: Store,
    config: UnikoConfig,
    embedder: Any,
    agent: str,
    *,
    batch: int | None = None,
    triples: TripleSource | None = None,
    now: datetime | None = None,
) -> CycleStats:
    """Run one consolidation cycle for ``agent``; a cycle with nothing to do writes nothing."""
    t0 = time.perf_counter()
    limit = batch or config.pipeline.consolidation_batch_size
    for attempt in range(2):
        scan_start = utcnow()
        hint = scan_hint(store, agent, scan_start)
        observations = await load_unprocessed(store, agent, limit, since=hint.since)
        if len(observations) < limit:  # the whole backlog is in hand: later scans can start here
            set_scan_hint(store, agent, scan_start, hint)
        if not observations:
            return CycleStats()
        stats = await _cycle(store, config, embedder, agent, observations, triples, now or utcnow())
        if stats is not None and config.consolidation.compiled_lists:
            stats.lists_written = await refresh_lists(
                store, config.consolidation, embedder, agent, observations, now or utcnow()
            )
        if stats is not None:
            stats.elapsed_ms = round((time.perf_counter() - t0) * 1000, 3)
            return stats
        log.debug("consolidation: evidence changed during cycle %d for %s; retrying", attempt, agent)
    return CycleStats(elapsed_ms=round((time.perf_counter() - t0) * 1000, 3))


@dataclass
class _Outcome:
    """The Facts a cycle writes, their new support, and what it created / reinforced / closed."""

    facts: dict[str, Fact] = field(default_factory=dict)
    support: dict[str, list[Vote]] = field(default_factory=lambda: defaultdict(list))
    created: list[str] = field(default_factory=list)
    reinforced: list[str] = field(default_factory=list)
    invalidated: list[str] = field(default_factory=list)
    invalidates: list[Edge] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)


async def _plan(
    embedder: Any, config: UnikoConfig, groups: Sequence[Group], prior: dict[tuple[str, str, str], list[Fact]]
) -> list[GroupPlan]:
    """Cluster each group's objects and decide. Only groups with something to cluster (more than
    one phrasing, or a prior Fact) have their objects embedded."""
    cc = config.consolidation
    vectors: dict[str, np.ndarray] = {}
    if cc.cluster_objects and embedder is not None:
        needed: set[str] = set()
        for g in groups:
            keys_g = {v.object_key for v in g.votes}
            if len(keys_g) > 1 or prior.get(g.key):
                needed |= keys_g | {_norm(f.object) for f in prior.get(g.key, [])}
        keys = sorted(needed)
        vectors = dict(zip(keys, await _embed(embedder, keys), strict=True))
    plans = []
    for g in groups:
        assign, sums = build_clusters([v.object_key for v in g.votes], vectors, cc.cluster_cosine)
        prior_cluster = {
            f.id: cluster_of_value(
                _norm(f.object), vectors.get(_norm(f.object)), assign, sums, cc.cluster_cosine
            )
            for f in prior.get(g.key, [])
        }
        single = not cc.single_valued_predicates or g.predicate in cc.single_valued_predicates
        # a share above 1 can never be exceeded: multi-valued predicates only reinforce or add
        share = cc.contradiction_share if single else 1.01
        plans.append(plan_group(g, prior.get(g.key, []), assign, prior_cluster, share))
    return plans


def _materialize(agent: str, config: UnikoConfig, plans: Sequence[GroupPlan], now: datetime) -> _Outcome:
    cc = config.consolidation
    out = _Outcome()
    for nf in (nf for p in plans for nf in p.new):
        n = len(nf.votes)
        shown = nf.surface.obs
        start, basis = event_start(nf.votes[0].obs)
        out.facts[nf.id] = Fact(
            id=nf.id,
            agent=agent,
            subject=nf.subject,
            subject_key=nf.group.subject_key,
            predicate=nf.group.predicate,
            object=nf.object,
            confidence=confidence(n),
            observation_count=n,
            valid_from=start,
            time_basis=basis,
            certainty="definite" if n >= cc.definite_at_observations else "approximate",
            visibility=nf.group.visibility,
            text=shown.content or None,
            text_source=shown.id if shown.content else None,
            **slot_fields(nf.votes),
        )
        out.support[nf.id] = list(nf.votes)
        out.created.append(nf.id)
    for r in (r for p in plans for r in p.reinforce):
        base = out.facts.get(r.fact.id, r.fact)
        n = base.observation_count + len(r.votes)
        update: dict[str, Any] = {
            "observation_count": n,
            "confidence": confidence(n),
            "certainty": "definite" if n >= cc.definite_at_observations else base.certainty,
        }
        if not base.text:  # written before Facts kept a sentence, or its sentence was forgotten
            fresh = next((v.obs for v in r.votes if v.obs.content), None)
            if fresh is not None:
                update |= {"text": fresh.content, "text_source": fresh.id}
        out.facts[r.fact.id] = base.model_copy(update=update)
        out.support[r.fact.id].extend(r.votes)
        if r.fact.id not in out.reinforced:
            out.reinforced.append(r.fact.id)
    for c in (c for p in plans for c in p.close):
        fid = c.target.id
        closing = out.facts.get(fid) or (c.target if isinstance(c.target, Fact) else None)
        if closing is None:
            continue
        out.facts[fid] = closing.model_copy(
            update={"valid_to": c.at, "invalidation_reason": CONTRADICTION, "invalidated_at": now}
        )
        out.invalidated.append(fid)
        if c.by is not None and c.by.id != fid:
            props = {"reason": CONTRADICTION, "invalidated_at": now.isoformat()}
            out.invalidates.append(Edge(type=EdgeType.INVALIDATES, src=c.by.id, dst=fid, props=props))
    return out


async def _cycle(
    store: Store,
    config: UnikoConfig,
    embedder: Any,
    agent: str,
    observations: list[Observation],
    source: TripleSource | None,
    now: datetime,
) -> CycleStats | None:
    cc = config.consolidation
    groups = group_votes(await votes_for(source, observations))
    prior = await prior_open_facts(store, agent, groups)
    plans = await _plan(embedder, config, groups, prior)
    await _allocate_ids(store, agent, [nf for p in plans for nf in p.new])
    out = _materialize(agent, config, plans, now)
    marked = await _supersede(store, agent, out, now)
    facts, created = out.facts, out.created

    # Vectors: Facts embedded (new ones); SUPPORTED_BY weight = clamp(cos(Fact, Observation), 0, 1).
    fact_vecs: dict[str, np.ndarray] = {}
    obs_vecs: dict[str, np.ndarray] = {}
    obs_ids = [o.id for o in observations]
    supported = sorted({v.obs.id for vs in out.support.values() for v in vs})
    if embedder is not None and facts:
        have = await store.get_vectors(agent, [fid for fid in facts if fid not in created])
        todo = [fid for fid in facts if fid not in have]
        texts = [embed_text(facts[fid], cc.date_augment_embedding) for fid in todo]
        fact_vecs = {**have, **dict(zip(todo, await _embed(embedder, texts), strict=True))}
        obs_vecs = await store.get_vectors(agent, supported)
        missing = [o for o in observations if o.id in set(supported) and o.id not in obs_vecs]
        found = await _embed(embedder, [o.content for o in missing])
        obs_vecs.update(dict(zip([o.id for o in missing], found, strict=True)))

    # ABOUT: a Fact is about what its supporting observations are about.
    about_of_obs: dict[str, list[str]] = defaultdict(list)
    for e in await store.neighbors(agent, supported, [EdgeType.ABOUT], Direction.OUT):
        if e.dst.startswith(ABOUT_PREFIXES):
            about_of_obs[e.src].append(e.dst)
    fact_about = {
        fid: sorted({t for v in vs for t in about_of_obs.get(v.obs.id, [])})
        for fid, vs in out.support.items()
    }
    old = [fid for fid in out.invalidated if fid not in created]
    for e in await store.neighbors(agent, old, [EdgeType.ABOUT]):
        fact_about.setdefault(e.src, [])
        if e.dst not in fact_about[e.src]:
            fact_about[e.src].append(e.dst)

    # A value that changed (a move, a new job) is life, not instability: drift counts contradictions.
    replaced = set(out.superseded)
    closures = [
        Closure(fid, facts[fid].subject, facts[fid].valid_to or now, fact_about.get(fid, []))
        for fid in out.invalidated
        if fid not in replaced
    ]
    entities, alerts = await detect_drift(store, agent, closures, cc)
    involved = sorted({t for fid in facts for t in fact_about.get(fid, [])} | {e.id for e in entities})
    stats = CycleStats(
        observations_processed=len(observations),
        facts_created=len(created),
        facts_reinforced=len(out.reinforced),
        facts_invalidated=len(out.invalidated),
        facts_superseded=len(out.superseded),
        drift_alerts=alerts,
        cycle_id=make_id("cyc", agent, stable_hash(*obs_ids)),
    )
    assert stats.cycle_id is not None
    cycle = ConsolidationCycle(
        id=stats.cycle_id,
        agent=agent,
        started_at=now,
        finished_at=utcnow(),
        **stats.model_dump(include={"observations_processed", "facts_created", "facts_reinforced"}),
        facts_invalidated=stats.facts_invalidated,
        drift_alerts=alerts,
    )
    async with store.unit(agent) as u:
        # Evidence forgotten while the cycle computed must not become knowledge: start over.
        live = await store.get_many(agent, obs_ids)
        if any(not isinstance(live.get(i), Observation) or live[i].redacted for i in obs_ids):
            return None
        prior_ids = [fid for fid in facts if fid not in created]
        current = await store.get_many(agent, prior_ids)
        if any(_gone(current.get(fid)) for fid in prior_ids):
            return None
        for fid, fact in facts.items():
            u.put(fact, fact_vecs.get(fid))
        for fid, vs in out.support.items():
            fv = fact_vecs.get(fid)
            for v in vs:
                ov = obs_vecs.get(v.obs.id)
                w = 1.0 if fv is None or ov is None else float(np.clip(np.dot(fv, ov), 0.0, 1.0))
                props = {"weight": round(w, 6)}
                u.put_edge(Edge(type=EdgeType.SUPPORTED_BY, src=fid, dst=v.obs.id, props=props))
            for t in fact_about.get(fid, []):
                u.put_edge(Edge(type=EdgeType.ABOUT, src=fid, dst=t))
        for e in out.invalidates:
            u.put_edge(e)
        # Observations of a superseded value say so (recall marks them); a forgotten one stays so.
        live_marked = await store.get_many(agent, list(marked))
        for oid, node in live_marked.items():
            if isinstance(node, Observation) and not node.redacted:
                at, by = marked[oid]
                u.put(node.model_copy(update={"superseded_at": at, "superseded_by": by}))
        for ent in entities:
            u.put(ent)
        u.put(cycle)
        audit = [(EdgeType.PROCESSED, obs_ids), (EdgeType.CREATED, created), (EdgeType.INVOLVED, involved)]
        audit += [(EdgeType.REINFORCED, out.reinforced), (EdgeType.INVALIDATED, out.invalidated)]
        for typ, ids in audit:
            for nid in ids:
                u.put_edge(Edge(type=typ, src=cycle.id, dst=nid))
    return stats


def slot_fields(votes: Sequence[Vote]) -> dict[str, Any]:
    """A new Fact's slot: the first reading of its votes (``consolidation.slots``)."""
    reading = next((r for v in votes for r in v.slots), None)
    if reading is None:
        return {}
    event = f"{reading.owner}|{reading.detail}" if reading.attribute == "date" else None
    return {"slot": reading.key, "slot_value": reading.value, "slot_event": event}


async def _supersede(
    store: Store, agent: str, out: _Outcome, now: datetime
) -> dict[str, tuple[datetime, str]]:
    """Close the Facts a newer value replaced (``consolidation.supersede``) in ``out``; returns the
    Observations to mark, with when and by which Fact."""
    entries: list[Entry] = []
    stops: list[tuple[Vote, str, str]] = []
    effective: dict[int, datetime] = {}
    for fid, votes in out.support.items():
        for v in votes:
            effective[id(v)] = event_start(v.obs)[0]
            entries += [Entry(v.at, fid, r, v.change_cue, effective[id(v)]) for r in v.slots]
            if v.stopped:
                stops.append((v, v.stopped, fid))
    if not entries and not stops:
        return {}
    slots = sorted({e.reading.key for e in entries})
    stored = await open_facts_where(store, agent, "slot", slots) if slots else {}
    if stops:
        stored |= await open_facts_where(
            store, agent, "subject_key", [subject_key(v.subject) for v, _, _ in stops]
        )
    known = {**stored, **out.facts}
    for fid, fact in known.items():
        reading = reading_of(fact)
        if reading is not None and (fid not in out.created) and reading.key in slots:
            entries.append(Entry(fact.valid_from, fid, reading))
    open_now = {fid: f for fid, f in known.items() if f.valid_to is None}
    found = merge([*slot_supersessions(entries), *cessation_supersessions(stops, open_now, effective)])
    marked: dict[str, tuple[datetime, str]] = {}
    stored_old: dict[str, tuple[datetime, str]] = {}
    for old_id, sup in sorted(found.items()):
        old = known.get(old_id)
        if old is None or old.valid_to is not None or sup.at <= old.valid_from or sup.new not in known:
            continue
        out.facts[old_id] = old.model_copy(
            update={
                "valid_to": sup.at,
                "invalidation_reason": sup.reason,
                "invalidated_at": now,
                "superseded_by": sup.new,
            }
        )
        out.invalidated.append(old_id)
        out.superseded.append(old_id)
        props = {"at": sup.at.isoformat(), "reason": sup.reason}
        out.invalidates.append(Edge(type=EdgeType.SUPERSEDED_BY, src=old_id, dst=sup.new, props=props))
        for v in out.support.get(old_id, []):
            marked[v.obs.id] = (sup.at, sup.new)
        if old_id not in out.support:
            stored_old[old_id] = (sup.at, sup.new)
    if stored_old:  # the Observations behind Facts of earlier cycles: one edge read for all
        for e in await store.neighbors(agent, sorted(stored_old), [EdgeType.SUPPORTED_BY], Direction.OUT):
            marked[e.dst] = stored_old[e.src]
    return marked


def _gone(node: Node | None) -> bool:
    return node is None or node.redacted or (isinstance(node, Fact) and node.valid_to is not None)
