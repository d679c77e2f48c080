"""Carrying out a forget plan: one unit of work, written so that running it again changes nothing.

Everything the plan removes or rewrites goes in a single unit (one SQLite transaction on the
embedded store), Facts first, so a crash leaves either all of it or none of it, and the journal
finishes the job on the next open. Every step reads the node as it is now: a deleted node is not
deleted twice, a Fact already closed is not closed again, a redacted node is not re-redacted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...ingest.restate import take_back
from ...model import Direction, Entity, Fact, Message, Node, Participant, Session
from ...model.edges import Edge, EdgeType
from ...model.ids import stable_hash
from ...store.protocol import Store, UnitOfWork
from ..cycle import confidence
from .model import ForgetPlan
from .plan import summary_ids

SUPPORT_DELETED = "support deleted"
SUPPORT_FORGOTTEN = "support forgotten"
SUBJECT_FORGOTTEN = "subject forgotten"


def blanked(node: Node, scrub: set[str]) -> Node:
    """The redacted copy of ``node``, with the names it carries blanked: an Entity's name (the
    forgotten word itself) and, for a forgotten participant, their name on their Participant and on
    the Messages they sent."""
    red = node.redacted_copy()
    update: dict[str, Any] = {}
    if isinstance(red, Entity):
        update["name"] = ""
    elif isinstance(red, Participant) and red.id in scrub:
        update.update(name="", external_id="")
    elif isinstance(red, Message) and red.sender_id in scrub:
        update["sender_name"] = ""
    return red.model_copy(update=update) if update else red


async def apply_plan(store: Store, agent: str, plan: ForgetPlan, stamp: datetime) -> None:
    # What the forgotten turns gave rise to since the plan (post-ingest resumed after a restart).
    mids = plan.messages
    obs = await store.neighbors(agent, mids, [EdgeType.OBSERVED_IN], Direction.IN) if mids else []
    chunks = await store.neighbors(agent, mids, [EdgeType.HAS_CHUNK], Direction.OUT) if mids else []
    later = {e.src for e in obs if e.src.startswith("obs_")} | {e.dst for e in chunks}
    removed = [*plan.removed(), *sorted(later - set(plan.removed()))]
    bridge_ends = sorted({x for b in plan.bridges for x in (b.src, b.dst)})
    session_ids = sorted(set(plan.named_sessions) | set(plan.last_messages))
    nodes = await store.get_many(
        agent, [*removed, *plan.facts_lost, *plan.facts_thinned, *bridge_ends, *session_ids]
    )
    going = set(removed) if plan.hard else set()
    # Observations the forgotten turns restated (``ingest.restate``) give back what those turns added.
    restated = await store.neighbors(agent, mids, [EdgeType.RESTATED_IN], Direction.IN) if mids else []
    gone_ids = set(removed)
    async with store.unit(agent) as u:
        await take_back(u, [e for e in restated if e.src not in gone_ids])
        _facts(u, plan, nodes, stamp)
        for b in plan.bridges:
            if b.src in nodes and b.dst in nodes and not {b.src, b.dst} & going:
                u.put_edge(Edge(type=EdgeType.NEXT, src=b.src, dst=b.dst, props={"gap_ms": b.gap_ms}))
        keys = set(plan.name_keys)
        for sid in session_ids:
            s = nodes.get(sid)
            if not isinstance(s, Session):
                continue
            update: dict[str, Any] = {}
            names = [n for n in s.participant_names if stable_hash(n) not in keys]
            if names != s.participant_names:
                update["participant_names"] = names
            if sid in plan.last_messages and s.last_message_id != plan.last_messages[sid]:
                update["last_message_id"] = plan.last_messages[sid]
            if update:
                u.put(s.model_copy(update=update))
        scrub = set(plan.scrub_people)
        for nid in removed:
            node = nodes.get(nid)
            if node is None:
                continue
            if plan.hard:
                u.delete_node(nid)
            elif (red := blanked(node, scrub)) != node:
                u.put(red)
        # Derived from what is forgotten: recomputed by the rebuild and the next topic detection.
        for nid in [
            *plan.quoting_chunks,
            *plan.topics,
            *(i for s in plan.sessions for i in summary_ids(agent, s)),
        ]:
            u.delete_node(nid)


def _facts(u: UnitOfWork, plan: ForgetPlan, nodes: dict[str, Node], stamp: datetime) -> None:
    """Facts that lost their support are closed and redacted (deleted, ``delete_facts``); Facts that
    keep some support get their counts lowered."""
    forced = set(plan.facts_forced)
    for fid in plan.facts_lost:
        f = nodes.get(fid)
        if not isinstance(f, Fact):
            continue
        if plan.delete_facts:
            u.delete_node(fid)
            continue
        if f.redacted:
            continue
        reason = SUBJECT_FORGOTTEN if fid in forced else (SUPPORT_DELETED if plan.hard else SUPPORT_FORGOTTEN)
        closed = f.model_copy(
            update={
                "valid_to": f.valid_to or max(stamp, f.valid_from),
                "invalidation_reason": f.invalidation_reason or reason,
                "invalidated_at": f.invalidated_at or stamp,
            }
        )
        u.put(closed.redacted_copy())
    gone = set(plan.observations)
    for fid, n in plan.facts_thinned.items():
        f = nodes.get(fid)
        if not isinstance(f, Fact) or f.redacted:
            continue
        update: dict[str, Any] = {}
        if f.observation_count != n:
            update |= {"observation_count": n, "confidence": confidence(n)}
        if f.text_source is not None and f.text_source in gone:  # its sentence was the forgotten turn's
            update |= {"text": None, "text_source": None}
        if update:
            u.put(f.model_copy(update=update))
