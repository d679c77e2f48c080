"""F39 drift: an entity whose Facts keep being contradicted is flagged ``unstable``.

For every Fact a cycle closes by contradiction, the subject's Entity (or the Participant of that
name, mirrored onto a person Entity, which is what recall's drift override reads) gets its lifetime
``invalidation_count`` raised; when more than ``drift_invalidations`` contradictions about it fall
in a rolling ``drift_window_days`` window (evidence time, so replayed history drifts as it did
when it happened), it is marked unstable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..config import ConsolidationConfig
from ..model import Direction, EdgeType, Entity, Fact, Node, Participant, entity_id
from ..nlp.ner import canonical_key
from ..store.protocol import Store

#: ``Fact.invalidation_reason`` of a consolidation contradiction (the only reason drift counts).
CONTRADICTION = "consolidation contradiction"


@dataclass
class Closure:
    """A Fact closed by this cycle: its subject, when, and the nodes it is ABOUT."""

    fact_id: str
    subject: str
    at: datetime
    about: list[str]


def _subject_targets(
    subject: str, about: Sequence[str], nodes: Mapping[str, Node]
) -> list[Entity | Participant]:
    key = canonical_key(subject)
    out: list[Entity | Participant] = []
    for nid in about:
        n = nodes.get(nid)
        if isinstance(n, (Entity, Participant)) and not n.redacted and canonical_key(n.name) == key:
            out.append(n)
    return out


async def detect_drift(
    store: Store,
    agent: str,
    closures: Sequence[Closure],
    cfg: ConsolidationConfig,
) -> tuple[list[Entity], int]:
    """The Entities to write (counters, flags) and the number of new drift alerts."""
    if not closures:
        return [], 0
    nodes = await store.get_many(agent, sorted({t for c in closures for t in c.about}))
    # entity id -> (entity or None, [participant ids of that name], closures about it)
    per_entity: dict[str, list[Closure]] = defaultdict(list)
    sources: dict[str, set[str]] = defaultdict(set)
    names: dict[str, Entity | Participant] = {}
    for c in closures:
        for target in _subject_targets(c.subject, c.about, nodes):
            eid = target.id if isinstance(target, Entity) else entity_id(agent, target.name, "person")
            per_entity[eid].append(c)
            sources[eid].update({target.id, eid})
            names.setdefault(eid, target)
    if not per_entity:
        return [], 0
    existing = await store.get_many(agent, list(per_entity))
    closing_now = {c.fact_id for c in closures}
    out: list[Entity] = []
    alerts = 0
    window = timedelta(days=cfg.drift_window_days)
    for eid, mine in sorted(per_entity.items()):
        about_edges = await store.neighbors(agent, sorted(sources[eid]), [EdgeType.ABOUT], Direction.IN)
        fact_ids = sorted({e.src for e in about_edges if e.src not in closing_now})
        earlier = await store.get_many(agent, fact_ids) if fact_ids else {}
        name = names[eid].name
        key = canonical_key(name)
        times = [
            f.valid_to
            for f in earlier.values()
            if isinstance(f, Fact)
            and f.invalidation_reason == CONTRADICTION
            and f.valid_to is not None
            and canonical_key(f.subject) == key
        ]
        unique_mine = {c.fact_id: c.at for c in mine}
        times += list(unique_mine.values())
        latest = max(unique_mine.values())
        in_window = sum(1 for t in times if latest - window <= t <= latest)
        current = existing.get(eid)
        if isinstance(current, Entity) and current.redacted:
            continue
        if isinstance(current, Entity):
            ent = current
        else:
            ent = Entity(
                id=eid,
                agent=agent,
                name=name,
                entity_type="person",
                first_seen=min(unique_mine.values()),
                last_seen=latest,
            )
        unstable = ent.unstable or in_window > cfg.drift_invalidations
        if unstable and not ent.unstable:
            alerts += 1
        last = ent.last_invalidation_at
        out.append(
            ent.model_copy(
                update={
                    "invalidation_count": ent.invalidation_count + len(unique_mine),
                    "last_invalidation_at": latest if last is None else max(last, latest),
                    "unstable": unstable,
                }
            )
        )
    return out, alerts
