"""Plain synchronous use: ``Uniko.in_memory_sync`` and ``agent.recall_sync``; the cache's own rules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer, private
from uniko_memory.recall import ContextBundle, RecallCache

from ._corpus import AGENT, MAIN

Q = "What is the name of Caroline's cat?"


@pytest.fixture(scope="module")
def uni() -> Iterator[Uniko]:
    u = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:
        agent = u.agent(AGENT)
        for line in MAIN[:8]:
            agent.session(line.session).observe_sync(Turn(sender=line.sender, content=line.text, at=line.at))
        agent.session("s1").observe_sync(
            Turn(
                sender="p2",
                content="My cat's vet code is walrus-77.",
                at=MAIN[7].at,
                visibility=private("p2"),
            )
        )
        agent.flush_sync(timeout=60)
        agent.finalize_session_sync("s1")
        yield u
    finally:
        u.close_sync()


def test_recall_sync_from_plain_code(uni: Uniko) -> None:
    b = uni.agent(AGENT).recall_sync(Q, token_budget=200, limit=5)
    assert isinstance(b, ContextBundle)
    assert 0 < len(b.items) <= 5 and b.total_tokens <= 200
    assert any("Oliver" in i.content for i in b.items)


def test_recall_sync_options_and_cache(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    first = agent.recall_sync(Q, limit=4)
    hits = uni.recall_cache.hits
    second = agent.recall_sync(Q, limit=4)
    assert uni.recall_cache.hits == hits + 1 and first.model_dump() == second.model_dump()
    traced = agent.recall_sync(Q, explain=True, sessions=["s1"], viewer=Viewer(participant_id="p1"))
    assert traced.trace is not None
    assert all("walrus" not in i.content for i in traced.items if i.kind != "chunk")


def test_recall_sync_bad_query(uni: Uniko) -> None:
    with pytest.raises(ValidationError):
        uni.agent(AGENT).recall_sync("")


def test_cache_drops_an_entry_when_a_write_raced_the_recall() -> None:
    cache = RecallCache()
    bundle = ContextBundle(items=[], total_tokens=0)
    key = RecallCache.key(AGENT, Q, {"limit": 15})
    assert cache.put(key, 3, 4, bundle) is False  # a write landed while the recall ran
    assert cache.get(key, 4) is None
    assert cache.put(key, 4, 4, bundle) is True
    assert cache.get(key, 4) is not None
    assert cache.get(key, 5) is None  # a later write: stale, and evicted
    assert cache.get(key, 4) is None


def test_cache_is_bounded_and_expires() -> None:
    cache = RecallCache(max_entries=2, ttl_seconds=0.0)
    bundle = ContextBundle(items=[], total_tokens=0)
    for i in range(3):
        cache.put(str(i), 1, 1, bundle)
    assert len(cache._data) == 2 and "0" not in cache._data
    assert cache.get("2", 1) is None  # ttl 0: already expired
