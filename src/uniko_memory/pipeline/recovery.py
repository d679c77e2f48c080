"""Rebuild post-ingest work items from the store (dead-letter retries, restart recovery)."""

from __future__ import annotations

from collections.abc import Sequence

from ..ingest.atomic import PostIngestItem
from ..model import Chunk, Direction, EdgeType, Entity, Message, Observation, Participant, Tier
from ..nlp.ner import canonical_key
from ..store.filters import Eq
from ..store.protocol import Store


async def items_for_messages(store: Store, agent: str, message_ids: Sequence[str]) -> list[PostIngestItem]:
    nodes = await store.get_many(agent, list(message_ids))
    messages = [n for i in message_ids if isinstance(n := nodes.get(i), Message) and not n.redacted]
    if not messages:
        return []
    people_ids = {p for m in messages for p in (m.sender_id, *m.addressed_to)}
    people = await store.get_many(agent, sorted(people_ids))
    mentions = await store.neighbors(agent, [m.id for m in messages], [EdgeType.MENTIONS, EdgeType.HAS_CHUNK])
    targets = await store.get_many(agent, sorted({e.dst for e in mentions}))
    items = []
    for m in sorted(messages, key=lambda m: (m.session_id, m.seq)):
        pids = {}
        for pid in (m.sender_id, *m.addressed_to):
            p = people.get(pid)
            if isinstance(p, Participant):
                pids[canonical_key(p.name)] = pid
        addressee = people.get(m.addressed_to[0]) if m.addressed_to else None
        ents: dict[str, str] = {}
        chunks: list[str] = []
        for e in mentions:
            if e.src != m.id:
                continue
            t = targets.get(e.dst)
            if isinstance(t, Entity):
                ents[canonical_key(t.name)] = t.id
            elif isinstance(t, Chunk):
                chunks.append(t.id)
        items.append(
            PostIngestItem(
                agent=agent,
                message=m,
                speaker=m.sender_name,
                addressee=addressee.name if isinstance(addressee, Participant) else None,
                entity_ids=ents,
                participant_ids=pids,
                chunk_ids=sorted(chunks),
            )
        )
    return items


async def observations_for_messages(
    store: Store, agent: str, message_ids: Sequence[str]
) -> list[Observation]:
    """The (unredacted) Observations drawn from these Messages, via their OBSERVED_IN edges."""
    edges = await store.neighbors(agent, list(message_ids), [EdgeType.OBSERVED_IN], Direction.IN)
    nodes = await store.get_many(agent, sorted({e.src for e in edges}))
    return [n for n in nodes.values() if isinstance(n, Observation) and not n.redacted]


async def pending_message_ids(store: Store, agent: str, limit: int = 100_000) -> list[str]:
    """Messages committed but not yet through post-ingest (e.g. the process stopped first)."""
    nodes = await store.find(agent, Tier.MESSAGE, Eq("post_ingest_done", False), limit=limit)
    return [n.id for n in nodes]
