"""Shared fixtures-as-functions for the conformance suite: node factories and a small ranked corpus.

The corpus is 12 Messages with distinct texts and hand-made 8-d unit vectors whose components are
all positive (so every cosine is positive and distinct). Tests assert backend-independent
properties only: ranks, membership and score ranges, never exact BM25 values.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from uniko_memory.model import (
    Chunk,
    Entity,
    Fact,
    Message,
    Observation,
    Tier,
    entity_id,
    make_id,
    message_id,
    participant_id,
    session_id,
)
from uniko_memory.store.protocol import Hit, Store

from .conftest import DIM

AGENT = "agent-alpha"
OTHER = "agent-beta"
BASE_TIME = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SENDERS = ("alice", "bob", "carol")

#: (text, content_type, category). Every text carries the shared token "memo" so a one-word query
#: reaches the whole corpus (filter tests); "quokka" is unique to #5, "weekend" is in #1, #2, #8.
TEXTS: tuple[tuple[str, str, str | None], ...] = (
    ("memo: the quarterly budget review moved to thursday afternoon", "text", None),
    ("memo: alice booked a kayak trip for the weekend", "text", "plans"),
    ("memo: remember to water the ferns every weekend", "text", "plans"),
    ("memo: the deploy pipeline failed because of a missing secret", "code", None),
    ("memo: bob prefers green tea over coffee in the morning", "text", "preferences"),
    ("memo: spotted a quokka at the zoo near the aquarium", "text", None),
    ("memo: the database migration needs a rollback plan", "code", None),
    ("memo: carol is allergic to peanuts and shellfish", "text", "health"),
    ("memo: weekend hiking plan includes the northern ridge trail", "text", "plans"),
    ("memo: refactor the parser to handle nested brackets", "code", None),
    ("memo: the invoice from the printer vendor is overdue", "text", None),
    ("memo: dentist appointment next tuesday at noon", "text", "health"),
)
N = len(TEXTS)
QUOKKA = 5
WEEKEND = (1, 2, 8)


def ts(i: int) -> datetime:
    """Timestamp of corpus message ``i``: one hour apart, whole seconds."""
    return BASE_TIME + timedelta(hours=i)


def ses(agent: str, n: int) -> str:
    return session_id(agent, f"ses-{n}")


def par(agent: str, name: str) -> str:
    return participant_id(agent, name)


def unit(vec: Sequence[float] | np.ndarray) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def corpus_vectors() -> np.ndarray:
    """12 x 8 unit vectors, all components positive, pairwise clearly distinct."""
    rng = np.random.default_rng(20240301)
    m = rng.uniform(0.02, 0.3, size=(N, DIM))
    for i in range(N):
        m[i, i % DIM] += 1.0
        if i >= DIM:
            m[i, (i + 3) % DIM] += 0.7
    m = m / np.linalg.norm(m, axis=1, keepdims=True)
    return m.astype(np.float32)


def message(
    agent: str,
    ext: str,
    content: str,
    *,
    session: int = 1,
    sender: str = "alice",
    when: datetime = BASE_TIME,
    seq: int = 0,
    visibility: str = "public",
    content_type: str = "text",
    category: str | None = None,
    metadata: dict[str, Any] | None = None,
    addressed_to: list[str] | None = None,
) -> Message:
    return Message(
        id=message_id(agent, ext),
        agent=agent,
        visibility=visibility,
        created_at=when,
        external_id=ext,
        session_id=ses(agent, session),
        sender_id=par(agent, sender),
        sender_name=sender.title(),
        addressed_to=addressed_to or [],
        content=content,
        timestamp=when,
        seq=seq,
        content_type=content_type,
        category=category,
        metadata=metadata or {},
    )


def corpus_messages(agent: str = AGENT) -> list[Message]:
    """Corpus #i: session 1 for i < 6 else 2, sender cycles alice/bob/carol, seq = i."""
    return [
        message(
            agent,
            f"ext-{i}",
            text,
            session=1 if i < 6 else 2,
            sender=SENDERS[i % 3],
            when=ts(i),
            seq=i,
            content_type=ctype,
            category=cat,
            metadata={"source": "chat", "index": i},
        )
        for i, (text, ctype, cat) in enumerate(TEXTS)
    ]


async def load_corpus(store: Store, agent: str = AGENT) -> tuple[list[Message], np.ndarray]:
    msgs = corpus_messages(agent)
    vecs = corpus_vectors()
    async with store.unit(agent) as u:
        for m, v in zip(msgs, vecs, strict=True):
            u.put(m, vector=v)
    return msgs, vecs


def observation(agent: str, key: str, content: str, *, when: datetime = BASE_TIME, **kw: Any) -> Observation:
    return Observation(
        id=make_id("obs", agent, key),
        agent=agent,
        content=content,
        observed_at=when,
        created_at=when,
        **kw,
    )


def fact(
    agent: str, subject: str, predicate: str, obj: str, *, when: datetime = BASE_TIME, **kw: Any
) -> Fact:
    return Fact(
        id=make_id("fct", agent, subject, predicate, obj),
        agent=agent,
        subject=subject,
        predicate=predicate,
        object=obj,
        valid_from=when,
        created_at=when,
        **kw,
    )


def entity(
    agent: str, name: str, entity_type: str = "PERSON", *, when: datetime = BASE_TIME, **kw: Any
) -> Entity:
    return Entity(
        id=entity_id(agent, name, entity_type),
        agent=agent,
        name=name,
        entity_type=entity_type,
        first_seen=when,
        last_seen=when,
        created_at=when,
        **kw,
    )


def chunk(agent: str, parent: Message, index: int, text: str, **kw: Any) -> Chunk:
    return Chunk(
        id=make_id("chk", agent, parent.id, "message", str(index)),
        agent=agent,
        parent_id=parent.id,
        parent_tier=Tier.MESSAGE,
        chunk_type="message",
        index=index,
        text=text,
        start=0,
        end=len(text),
        token_count=len(text.split()),
        session_id=parent.session_id,
        start_time=parent.timestamp,
        end_time=parent.timestamp,
        covered_ids=[parent.id],
        **kw,
    )


def ids(hits: Iterable[Hit]) -> list[str]:
    return [h.id for h in hits]


def assert_best_first(hits: Sequence[Hit]) -> None:
    """Score contract: best first, ties broken by node id."""
    for a, b in itertools.pairwise(hits):
        assert a.score >= b.score, f"not best-first: {a.id}={a.score} before {b.id}={b.score}"
        if a.score == b.score:
            assert a.id < b.id, f"tie {a.score} not broken by id: {a.id} before {b.id}"


def assert_unit_interval(hits: Sequence[Hit]) -> None:
    for h in hits:
        assert 0.0 <= h.score <= 1.0, f"{h.id}: score {h.score} outside [0, 1]"
        assert np.isfinite(h.score)


def assert_cosine_order(
    got: Sequence[str], vectors: np.ndarray, query: np.ndarray, node_ids: Sequence[str], atol: float
) -> None:
    """``got`` ranks ``node_ids`` by exact cosine, except where two cosines are within ``2 * atol``
    of each other (a store keeping compact vectors may swap such a near-tie, never more)."""
    assert sorted(got) == sorted(node_ids)
    q = query / np.linalg.norm(query)
    sim = dict(zip(node_ids, (vectors @ q).tolist(), strict=True))
    for earlier, later in itertools.pairwise(got):
        assert sim[earlier] >= sim[later] - 2 * atol, (earlier, sim[earlier], later, sim[later])


def cosine_order(vectors: np.ndarray, query: np.ndarray, node_ids: Sequence[str]) -> list[str]:
    """Brute-force ranking: cosine desc, ties by id."""
    q = query / np.linalg.norm(query)
    sims = vectors @ q
    return [nid for _, nid in sorted(zip((-sims).tolist(), node_ids, strict=True))]
