"""Forgetting: redact or delete evidence, then re-evaluate everything derived from it.

Three entry points share one core:

- ``forget_messages(..., hard=False)``: redact Messages, their Observations and message Chunks;
- ``forget_messages(..., hard=True)``: delete them (the NEXT chain is re-linked around a deleted turn);
- ``forget_participant``: every Message they sent, every Observation they spoke or that is ABOUT
  them, every Fact ABOUT them, the Episodes they recorded, their Participant and person Entity.

Then: a Fact that loses its last live support has its validity closed and is redacted (its words
came from the forgotten turn; a closed Fact is still read by the temporal and graph channels);
a Fact that keeps support gets its counts lowered; Entities no longer mentioned anywhere are
dropped; Episodes whose recall used forgotten nodes are dropped; Topics touching the forgotten
Entities and the affected sessions' Summaries are deleted (they are recomputed by the caller's
``rebuild_session`` and the next topic detection). Nothing forgotten is read by recall again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from ..config import UnikoConfig
from ..model import (
    Chunk,
    Direction,
    EdgeType,
    Entity,
    Episode,
    Fact,
    Message,
    Node,
    Observation,
    Participant,
    Session,
    Tier,
    entity_id,
    make_id,
)
from ..model.edges import Edge
from ..model.time import utcnow
from ..store.filters import Eq
from ..store.protocol import Store, UnitOfWork
from .cycle import confidence

SUPPORT_DELETED = "support deleted"
SUPPORT_FORGOTTEN = "support forgotten"
SUBJECT_FORGOTTEN = "subject forgotten"
MAX_NODES = 1_000_000

RebuildSession = Callable[[str], Awaitable[object]]


class ForgetReport(BaseModel):
    messages: int = 0
    observations: int = 0
    chunks: int = 0
    facts_closed: int = 0
    facts_updated: int = 0
    entities_dropped: int = 0
    episodes_dropped: int = 0
    topics_dropped: int = 0
    sessions_rebuilt: list[str] = Field(default_factory=list)


async def _in(store: Store, agent: str, ids: Sequence[str], typ: EdgeType) -> list[Edge]:
    return await store.neighbors(agent, list(ids), [typ], Direction.IN) if ids else []


async def _out(store: Store, agent: str, ids: Sequence[str], typ: EdgeType) -> list[Edge]:
    return await store.neighbors(agent, list(ids), [typ], Direction.OUT) if ids else []


def _live(node: Node | None) -> bool:
    return node is not None and not node.redacted


async def forget_messages(
    store: Store,
    config: UnikoConfig,
    agent: str,
    message_ids: Sequence[str],
    *,
    hard: bool,
    rebuild_session: RebuildSession | None = None,
    extra_observations: Iterable[str] = (),
    extra_facts: Iterable[str] = (),
    extra_nodes: Iterable[str] = (),
    delete_facts: bool = False,
    now: datetime | None = None,
) -> ForgetReport:
    """Forget (redact) or delete messages and what was derived from them; see the module docstring."""
    stamp = now or utcnow()
    report = ForgetReport()
    msgs = {
        i: n for i, n in (await store.get_many(agent, list(message_ids))).items() if isinstance(n, Message)
    }
    mids = sorted(msgs)
    obs_ids = sorted(
        {e.src for e in await _in(store, agent, mids, EdgeType.OBSERVED_IN) if e.src.startswith("obs_")}
        | set(extra_observations)
    )
    chunk_ids = sorted({e.dst for e in await _out(store, agent, mids, EdgeType.HAS_CHUNK)})
    gone = set(mids) | set(obs_ids) | set(chunk_ids)

    # Facts: which lose their last live support, which only lose some.
    support_in = await _in(store, agent, obs_ids, EdgeType.SUPPORTED_BY)
    fact_ids = sorted({e.src for e in support_in} | set(extra_facts))
    facts = {
        i: f for i, f in (await store.get_many(agent, fact_ids)).items() if isinstance(f, Fact) and _live(f)
    }
    support_out = await _out(store, agent, list(facts), EdgeType.SUPPORTED_BY)
    remaining: dict[str, set[str]] = defaultdict(set)
    others = sorted({e.dst for e in support_out if e.dst not in gone})
    live_obs = {i for i, n in (await store.get_many(agent, others)).items() if _live(n)}
    for e in support_out:
        if e.dst in live_obs:
            remaining[e.src].add(e.dst)
    forced = set(extra_facts)
    lost = sorted(fid for fid in facts if fid in forced or not remaining[fid])
    thinned = sorted(fid for fid in facts if fid not in lost)

    # Entities mentioned by the forgotten messages that nothing live mentions any more.
    mention_out = await _out(store, agent, mids, EdgeType.MENTIONS)
    mentioned = sorted({e.dst for e in mention_out})
    sources = await _in(store, agent, mentioned, EdgeType.MENTIONS)
    other_src = sorted({e.src for e in sources if e.src not in gone})
    live_src = {i for i, n in (await store.get_many(agent, other_src)).items() if _live(n)}
    still = {e.dst for e in sources if e.src in live_src}
    orphan_entities = [eid for eid in mentioned if eid not in still]
    entity_nodes = set(orphan_entities) | {n for n in extra_nodes if n.startswith("ent_")}

    # Episodes that answered from forgotten nodes (including transcript and observation chunks that
    # quoted the forgotten turns: they are rebuilt under the same ids), and Topics touching dropped
    # entities.
    quoting = await _chunks_covering(store, agent, msgs.values(), set(mids) | set(obs_ids))
    forgotten_ids = gone | set(lost) | quoting
    episodes = [
        e.id
        for e in await store.find(agent, Tier.EPISODE, limit=MAX_NODES)
        if isinstance(e, Episode) and forgotten_ids & set(e.state.get("recall_node_ids") or [])
    ]
    episodes += [n for n in extra_nodes if n.startswith("epi_")]
    topic_edges = await _out(store, agent, sorted(entity_nodes | set(mentioned)), EdgeType.BELONGS_TO)
    topics = {e.dst for e in topic_edges if e.dst.startswith("top_")}
    # Retired topics have no BELONGS_TO edges left: find the ones quoting what is forgotten.
    names = {
        n.name for n in (await store.get_many(agent, sorted(entity_nodes))).values() if isinstance(n, Entity)
    }
    quoted = [facts[fid].statement() for fid in lost] + sorted(names)
    for t in await store.find(agent, Tier.TOPIC, limit=MAX_NODES, include_redacted=True):
        text = t.search_text() or ""
        if any(q and q in text for q in quoted):
            topics.add(t.id)

    sessions = sorted({m.session_id for m in msgs.values()})
    # Facts first (close + redact), while their support edges still exist.
    async with store.unit(agent) as u:
        for fid in lost:
            f = facts[fid]
            reason = SUBJECT_FORGOTTEN if fid in forced else (SUPPORT_DELETED if hard else SUPPORT_FORGOTTEN)
            u.put(
                f.model_copy(
                    update={
                        "valid_to": f.valid_to or max(stamp, f.valid_from),
                        "invalidation_reason": f.invalidation_reason or reason,
                        "invalidated_at": f.invalidated_at or stamp,
                    }
                )
            )
        for fid in thinned:
            n = len(remaining[fid])
            f = facts[fid]
            u.put(f.model_copy(update={"observation_count": n, "confidence": confidence(n)}))
        if hard:
            await _relink(store, u, agent, msgs)
    if delete_facts:
        await store.delete(agent, lost)
    else:
        await store.redact(agent, lost)
    report.facts_closed, report.facts_updated = len(lost), len(thinned)

    derived = [*obs_ids, *chunk_ids]
    other = [n for n in extra_nodes if not n.startswith(("ent_", "epi_"))]
    if hard:
        await store.delete(agent, [*mids, *derived, *other, *entity_nodes, *episodes])
    else:
        await store.redact(agent, [*mids, *derived, *other, *entity_nodes, *episodes])
    await store.delete(agent, sorted(topics))  # derived groupings: recomputed by the next detection
    report.messages, report.observations, report.chunks = len(mids), len(obs_ids), len(chunk_ids)
    report.entities_dropped, report.episodes_dropped, report.topics_dropped = (
        len(entity_nodes),
        len(episodes),
        len(topics),
    )
    for sid in sessions:
        await store.delete(agent, [make_id("sum", agent, sid), make_id("sum", agent, sid, "abstractive")])
        if rebuild_session is not None and await _was_finalized(store, agent, sid):
            await rebuild_session(sid)
            report.sessions_rebuilt.append(sid)
    return report


async def _chunks_covering(store: Store, agent: str, msgs: Iterable[Message], covered: set[str]) -> set[str]:
    """Session chunks (transcript or observation) of the messages' sessions that carry ``covered``."""
    out: set[str] = set()
    for sid in sorted({m.session_id for m in msgs}):
        for c in await store.find(agent, Tier.CHUNK, Eq("session", sid), limit=MAX_NODES):
            if isinstance(c, Chunk) and covered & set(c.covered_ids):
                out.add(c.id)
    return out


async def _was_finalized(store: Store, agent: str, sid: str) -> bool:
    session = await store.get(agent, sid)
    if isinstance(session, Session) and session.finalized_at is not None:
        return True
    return bool(await store.find(agent, Tier.CHUNK, Eq("parent_id", sid), limit=1, include_redacted=True))


async def _relink(store: Store, u: UnitOfWork, agent: str, msgs: dict[str, Message]) -> None:
    """Bridge the NEXT chain around deleted turns and keep each session's last message real."""
    ids = sorted(msgs)
    nxt = {e.src: e for e in await _out(store, agent, ids, EdgeType.NEXT)}
    prv = {e.dst: e for e in await _in(store, agent, ids, EdgeType.NEXT)}
    for mid in ids:
        before, after = prv.get(mid), nxt.get(mid)
        # walk over consecutive deleted turns
        while before is not None and before.src in msgs:
            before = prv.get(before.src)
        while after is not None and after.dst in msgs:
            after = nxt.get(after.dst)
        if before is not None and after is not None:
            gap = int(before.props.get("gap_ms", 0)) + int(after.props.get("gap_ms", 0))
            u.put_edge(Edge(type=EdgeType.NEXT, src=before.src, dst=after.dst, props={"gap_ms": gap}))
    by_session: dict[str, list[Message]] = defaultdict(list)
    for m in msgs.values():
        by_session[m.session_id].append(m)
    sessions = await store.get_many(agent, list(by_session))
    for sid, gone_msgs in by_session.items():
        s = sessions.get(sid)
        if not isinstance(s, Session) or s.last_message_id not in {m.id for m in gone_msgs}:
            continue
        left = [
            m
            for m in await store.find(
                agent, Tier.MESSAGE, Eq("session", sid), limit=MAX_NODES, order_by="seq"
            )
            if m.id not in msgs
        ]
        u.put(s.model_copy(update={"last_message_id": left[-1].id if left else None}))


async def forget_participant(
    store: Store,
    config: UnikoConfig,
    agent: str,
    pid: str,
    *,
    hard: bool = False,
    rebuild_session: RebuildSession | None = None,
    now: datetime | None = None,
) -> ForgetReport:
    """GDPR: everything a participant said, everything stored about them, and the Participant."""
    person = await store.get(agent, pid)
    if not isinstance(person, Participant):
        from ..errors import NotFound

        raise NotFound(f"no participant {pid!r} for agent {agent!r}")
    sent = [m.id for m in await store.find(agent, Tier.MESSAGE, Eq("participant", pid), limit=MAX_NODES)]
    spoken = [
        o.id for o in await store.find(agent, Tier.OBSERVATION, Eq("participant", pid), limit=MAX_NODES)
    ]
    ent = entity_id(agent, person.name, "person")
    about = await _in(store, agent, [pid, ent], EdgeType.ABOUT)
    about_obs = [e.src for e in about if e.src.startswith("obs_")]
    about_facts = [e.src for e in about if e.src.startswith("fct_")]
    recorded = [e.id for e in await store.find(agent, Tier.EPISODE, Eq("participant", pid), limit=MAX_NODES)]
    extra: list[str] = [*recorded, pid]
    if await store.get(agent, ent) is not None:
        extra.append(ent)
    touched = {m.session_id for m in await _sessions_of(store, agent, sent)}
    touched |= {
        o.session_id
        for o in (await store.get_many(agent, [*spoken, *about_obs])).values()
        if isinstance(o, Observation) and o.session_id
    }
    # Sessions they took part in forget their name too.
    name = person.name
    async with store.unit(agent) as u:
        for s in await store.find(agent, Tier.SESSION, limit=MAX_NODES):
            if isinstance(s, Session) and name in s.participant_names:
                u.put(
                    s.model_copy(update={"participant_names": [n for n in s.participant_names if n != name]})
                )
    report = await forget_messages(
        store,
        config,
        agent,
        sent,
        hard=hard,
        rebuild_session=None,
        extra_observations=[*spoken, *about_obs],
        extra_facts=about_facts,
        extra_nodes=extra,
        delete_facts=hard,
        now=now,
    )
    # Observations about them in other sessions change those sessions' observation chunks too.
    for sid in sorted(touched):
        await store.delete(agent, [make_id("sum", agent, sid), make_id("sum", agent, sid, "abstractive")])
        if rebuild_session is not None and await _was_finalized(store, agent, sid):
            await rebuild_session(sid)
            report.sessions_rebuilt.append(sid)
    return report


async def _sessions_of(store: Store, agent: str, message_ids: Sequence[str]) -> list[Message]:
    found = await store.get_many(agent, list(message_ids))
    return [m for m in found.values() if isinstance(m, Message)]
