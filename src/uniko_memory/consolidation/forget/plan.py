"""Planning a forget: read the graph once and list every node the job will remove or rewrite.

Nothing is written here. The plan is complete before the first change, because the graph it is read
from (support edges, mentions, NEXT links) disappears with the forgotten nodes: a job resumed after
a crash replays the plan instead of re-reading a half-forgotten graph.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ...model import (
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
from ...model.edges import Edge
from ...model.ids import stable_hash
from ...model.nodes import LIST_SOURCE_RULE
from ...store.filters import Eq
from ...store.protocol import Store
from .journal import tombstones
from .model import Bridge, ForgetPlan

MAX_NODES = 1_000_000


@dataclass
class Extras:
    """What a participant forget adds to the messages it forgets."""

    observations: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)
    participants: list[str] = field(default_factory=list)
    about_messages: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    delete_facts: bool = False


async def _in(store: Store, agent: str, ids: Sequence[str], typ: EdgeType) -> list[Edge]:
    return await store.neighbors(agent, list(ids), [typ], Direction.IN) if ids else []


async def _out(store: Store, agent: str, ids: Sequence[str], typ: EdgeType) -> list[Edge]:
    return await store.neighbors(agent, list(ids), [typ], Direction.OUT) if ids else []


def _live(node: Node | None) -> bool:
    return node is not None and not node.redacted


def _pending(nodes: dict[str, Node], ids: Iterable[str], hard: bool, scrub: set[str]) -> list[str]:
    """The ids whose node still needs the job: any stored node (hard), or an unredacted one or one
    still naming a scrubbed participant (soft)."""
    out = []
    for i in sorted(set(ids)):
        n = nodes.get(i)
        if n is None:
            continue
        if hard or not n.redacted or _names_someone(n, scrub):
            out.append(i)
    return out


def _names_someone(n: Node, scrub: set[str]) -> bool:
    if isinstance(n, Entity):
        return bool(n.name)
    if isinstance(n, Participant):
        return n.id in scrub and bool(n.name or n.external_id)
    if isinstance(n, Message):
        return n.sender_id in scrub and bool(n.sender_name)
    return False


async def plan_messages(
    store: Store, agent: str, message_ids: Sequence[str], *, hard: bool, extras: Extras | None = None
) -> ForgetPlan:
    """The plan for forgetting ``message_ids`` (and, for a participant, ``extras``)."""
    x = extras or Extras()
    scrub = set() if hard else set(x.participants)
    found = await store.get_many(agent, list(message_ids))
    msgs = {i: n for i, n in found.items() if isinstance(n, Message)}
    mids = sorted(msgs)
    obs_ids = sorted(
        {e.src for e in await _in(store, agent, mids, EdgeType.OBSERVED_IN) if e.src.startswith("obs_")}
        | set(x.observations)
    )
    chunk_ids = sorted({e.dst for e in await _out(store, agent, mids, EdgeType.HAS_CHUNK)})
    gone = set(mids) | set(obs_ids) | set(chunk_ids)

    # Facts: which lose their last live support, which only lose some.
    support_in = await _in(store, agent, obs_ids, EdgeType.SUPPORTED_BY)
    fact_ids = sorted({e.src for e in support_in} | set(x.facts))
    facts = {i: f for i, f in (await store.get_many(agent, fact_ids)).items() if isinstance(f, Fact)}
    live_facts = sorted(i for i, f in facts.items() if _live(f))
    support_out = await _out(store, agent, live_facts, EdgeType.SUPPORTED_BY)
    others = sorted({e.dst for e in support_out if e.dst not in gone})
    live_obs = {i for i, n in (await store.get_many(agent, others)).items() if _live(n)}
    remaining: dict[str, set[str]] = defaultdict(set)
    for e in support_out:
        if e.dst in live_obs:
            remaining[e.src].add(e.dst)
    forced = set(x.facts)
    # A compiled list's line carries each of its sources' words: losing any source loses the line
    # (the next consolidation of its owner writes it again from what is left).
    cited: dict[str, int] = defaultdict(int)
    for e in support_out:
        cited[e.src] += 1
    partial = {
        fid
        for fid in live_facts
        if facts[fid].source_rule == LIST_SOURCE_RULE and len(remaining[fid]) < cited[fid]
    }
    lost = [fid for fid in live_facts if fid in forced or not remaining[fid] or fid in partial]
    if x.delete_facts:  # a redacted Fact left by an earlier soft forget goes too
        lost = sorted({*lost, *(fid for fid in facts if fid in forced or not remaining[fid])})
    thinned = {fid: len(remaining[fid]) for fid in live_facts if fid not in lost}

    # Entities mentioned by the forgotten messages that nothing live mentions any more.
    mentioned = sorted({e.dst for e in await _out(store, agent, mids, EdgeType.MENTIONS)})
    sources = await _in(store, agent, mentioned, EdgeType.MENTIONS)
    other_src = sorted({e.src for e in sources if e.src not in gone})
    live_src = {i for i, n in (await store.get_many(agent, other_src)).items() if _live(n)}
    still = {e.dst for e in sources if e.src in live_src}
    entity_ids = sorted({eid for eid in mentioned if eid not in still} | set(x.entities))

    obs_nodes = await store.get_many(agent, obs_ids)
    sessions = sorted(
        {m.session_id for m in msgs.values()}
        | {o.session_id for o in obs_nodes.values() if isinstance(o, Observation) and o.session_id}
    )
    # Session chunks (transcript, observation) quoting what is forgotten: deleted, then rebuilt.
    quoting = await _chunks_covering(store, agent, sessions, set(mids) | set(obs_ids))
    quoting -= set(chunk_ids)

    # Episodes that answered from forgotten nodes, and Topics touching dropped entities.
    forgotten_ids = gone | set(lost) | quoting
    episodes = {
        e.id
        for e in await store.find(agent, Tier.EPISODE, limit=MAX_NODES, include_redacted=hard)
        if isinstance(e, Episode) and forgotten_ids & set(e.state.get("recall_node_ids") or [])
    } | set(x.episodes)
    entities = await store.get_many(agent, entity_ids)
    topics = await _topics(store, agent, sorted(set(entity_ids) | set(mentioned)), entities, facts, lost)

    rebuild = [sid for sid in sessions if await _was_finalized(store, agent, sid)]
    plan = ForgetPlan(
        hard=hard,
        delete_facts=x.delete_facts,
        scrub_people=sorted(scrub),
        name_keys=sorted({stable_hash(n) for n in x.names}),
        facts_lost=sorted(lost),
        facts_forced=sorted(forced & set(lost)),
        facts_thinned=thinned,
        topics=sorted(topics),
        sessions=sessions,
        rebuild=rebuild,
        quoting_chunks=sorted(quoting),
    )
    nodes = {
        **msgs,
        **obs_nodes,
        **await store.get_many(agent, [*chunk_ids, *sorted(episodes), *x.participants]),
        **entities,
    }
    plan.messages = _pending(nodes, mids, hard, scrub)
    plan.about_messages = sorted(set(plan.messages) & set(x.about_messages))
    plan.observations = _pending(nodes, obs_ids, hard, scrub)
    plan.chunks = _pending(nodes, chunk_ids, hard, scrub)
    plan.entities = _pending(nodes, entity_ids, hard, scrub)
    plan.episodes = _pending(nodes, episodes, hard, scrub)
    plan.participants = _pending(nodes, x.participants, hard, scrub)
    if x.names:
        plan.named_sessions = [
            s.id
            for s in await store.find(agent, Tier.SESSION, limit=MAX_NODES)
            if isinstance(s, Session) and set(x.names) & set(s.participant_names)
        ]
    if hard:
        plan.bridges, plan.last_messages = await _relink(store, agent, msgs)
    return plan


async def _topics(
    store: Store,
    agent: str,
    entity_ids: list[str],
    entities: dict[str, Node],
    facts: dict[str, Fact],
    lost: list[str],
) -> set[str]:
    topic_edges = await _out(store, agent, entity_ids, EdgeType.BELONGS_TO)
    topics = {e.dst for e in topic_edges if e.dst.startswith("top_")}
    # Retired topics have no BELONGS_TO edges left: find the ones quoting what is forgotten.
    names = {n.name for n in entities.values() if isinstance(n, Entity) and n.name}
    quoted = [facts[fid].statement() for fid in lost if not facts[fid].redacted] + sorted(names)
    for t in await store.find(agent, Tier.TOPIC, limit=MAX_NODES, include_redacted=True):
        text = t.search_text() or ""
        if any(q and q in text for q in quoted):
            topics.add(t.id)
    return topics


async def _chunks_covering(store: Store, agent: str, sessions: Iterable[str], covered: set[str]) -> set[str]:
    """Session chunks (transcript or observation) of ``sessions`` that carry ``covered``."""
    out: set[str] = set()
    for sid in sessions:
        for c in await store.find(agent, Tier.CHUNK, Eq("session", sid), limit=MAX_NODES):
            if isinstance(c, Chunk) and covered & set(c.covered_ids):
                out.add(c.id)
    return out


async def _was_finalized(store: Store, agent: str, sid: str) -> bool:
    session = await store.get(agent, sid)
    if isinstance(session, Session) and session.finalized_at is not None:
        return True
    return bool(await store.find(agent, Tier.CHUNK, Eq("parent_id", sid), limit=1, include_redacted=True))


async def _relink(
    store: Store, agent: str, msgs: dict[str, Message]
) -> tuple[list[Bridge], dict[str, str | None]]:
    """NEXT edges bridging deleted turns, and each affected session's new last message."""
    ids = sorted(msgs)
    nxt = {e.src: e for e in await _out(store, agent, ids, EdgeType.NEXT)}
    prv = {e.dst: e for e in await _in(store, agent, ids, EdgeType.NEXT)}
    bridges: dict[tuple[str, str], Bridge] = {}
    for mid in ids:
        before, after = prv.get(mid), nxt.get(mid)
        while before is not None and before.src in msgs:  # walk over consecutive deleted turns
            before = prv.get(before.src)
        while after is not None and after.dst in msgs:
            after = nxt.get(after.dst)
        if before is not None and after is not None:
            gap = int(before.props.get("gap_ms", 0)) + int(after.props.get("gap_ms", 0))
            bridges[(before.src, after.dst)] = Bridge(src=before.src, dst=after.dst, gap_ms=gap)
    by_session: dict[str, set[str]] = defaultdict(set)
    for m in msgs.values():
        by_session[m.session_id].add(m.id)
    last: dict[str, str | None] = {}
    found = await store.get_many(agent, sorted(by_session))
    for sid, gone in sorted(by_session.items()):
        s = found.get(sid)
        if not isinstance(s, Session) or s.last_message_id not in gone:
            continue
        left = [
            m.id
            for m in await store.find(
                agent,
                Tier.MESSAGE,
                Eq("session", sid),
                limit=MAX_NODES,
                order_by="seq",
                include_redacted=True,
            )
            if m.id not in msgs
        ]
        last[sid] = left[-1] if left else None
    return [bridges[k] for k in sorted(bridges)], last


async def plan_participant(
    store: Store, agent: str, pid: str, *, hard: bool, about: bool
) -> ForgetPlan | None:
    """The plan for forgetting participant ``pid``; None when nothing of them is stored at all."""
    person = await store.get(agent, pid)
    sent_nodes = await store.find(
        agent, Tier.MESSAGE, Eq("participant", pid), limit=MAX_NODES, include_redacted=True
    )
    named = [m.sender_name for m in sent_nodes if isinstance(m, Message) and m.sender_name]
    name = person.name if isinstance(person, Participant) and person.name else (named[0] if named else "")
    stone = (await tombstones(store, agent)).get(pid)
    if name:
        ent: str | None = entity_id(agent, name, "person")
    elif isinstance(person, Participant):  # forgotten softly before: the name is blanked
        ent = stone.entity if stone is not None else None
    else:  # never stored, or gone (a completed hard forget)
        return None
    sent = [m.id for m in sent_nodes]
    spoken = [
        o.id
        for o in await store.find(
            agent, Tier.OBSERVATION, Eq("participant", pid), limit=MAX_NODES, include_redacted=hard
        )
    ]
    about_edges = await _in(store, agent, [pid, *([ent] if ent else [])], EdgeType.ABOUT)
    about_msgs: list[str] = []
    if about and ent:  # statements by others whose mentions resolve to the person
        mentions = await _in(store, agent, [ent], EdgeType.MENTIONS)
        by_others = await store.get_many(agent, sorted({e.src for e in mentions}))
        about_msgs = sorted(
            i
            for i, m in by_others.items()
            if isinstance(m, Message) and m.sender_id != pid and (hard or not m.redacted)
        )
    recorded = [
        e.id
        for e in await store.find(
            agent, Tier.EPISODE, Eq("participant", pid), limit=MAX_NODES, include_redacted=hard
        )
    ]
    extras = Extras(
        observations=sorted({*spoken, *(e.src for e in about_edges if e.src.startswith("obs_"))}),
        facts=sorted({e.src for e in about_edges if e.src.startswith("fct_")}),
        entities=[ent] if ent and await store.get(agent, ent) is not None else [],
        episodes=recorded,
        participants=[pid] if person is not None else [],
        about_messages=about_msgs,
        names=[name] if name else [],
        delete_facts=hard,
    )
    plan = await plan_messages(store, agent, sorted({*sent, *about_msgs}), hard=hard, extras=extras)
    plan.person_entity = ent
    return plan


def summary_ids(agent: str, sid: str) -> list[str]:
    return [make_id("sum", agent, sid), make_id("sum", agent, sid, "abstractive")]
