"""``find`` with an equality on an indexed column, or asking for every row, reads the rows an index
of the tier finds, not every node of the agent.

Sorting by id let SQLite walk every node of the agent in id order (to skip the sort), testing
each row's JSON: finalising one session looked up its chunks in 0.5 s at 100,000 turns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from uniko_memory.model import Chunk, Tier
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.filters import Eq

AGENT = "plan"


def _chunk(session: str, i: int) -> Chunk:
    return Chunk(
        id=f"chk_{session}_{i:03d}",
        agent=AGENT,
        parent_id=session,
        parent_tier=Tier.SESSION,
        chunk_type="session",
        index=i,
        text=f"turns {i} of {session}",
        session_id=session,
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EmbeddedStore]:
    s = await EmbeddedStore.open(tmp_path / "p.db", dim=8)
    async with s.unit(AGENT) as u:
        for session in ("ses_a", "ses_b", "ses_c"):
            for i in range(30):
                u.put(_chunk(session, i))
    yield s
    await s.close()


def _plans(store: EmbeddedStore) -> list[str]:
    """The query plans of the ``find`` statements this test runs (traced on the reader)."""
    seen: list[str] = []
    conn = store._reader()
    conn.set_trace_callback(lambda sql: seen.append(sql) if "ORDER BY" in sql else None)
    return seen


def _plan_of(path: Path, sql: str) -> str:
    conn = sqlite3.connect(path)
    try:
        return " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    finally:
        conn.close()


async def test_a_session_equality_uses_the_session_index_and_keeps_the_order(
    store: EmbeddedStore, tmp_path: Path
) -> None:
    traced = _plans(store)
    flt = Eq("session", "ses_b") & Eq("parent_id", "ses_b")
    found = await store.find(AGENT, Tier.CHUNK, flt, limit=100, order_by="id")
    assert [c.id for c in found] == [f"chk_ses_b_{i:03d}" for i in range(30)]
    desc = await store.find(AGENT, Tier.CHUNK, flt, limit=5, order_by="id", descending=True)
    assert [c.id for c in desc] == [f"chk_ses_b_{i:03d}" for i in range(29, 24, -1)]
    assert traced, "the find statement was not traced"
    # The traced text has its parameters bound, so it can be planned as it ran.
    plan = _plan_of(tmp_path / "p.db", traced[0])
    assert "nodes_session" in plan, plan


async def test_a_find_without_an_indexed_equality_still_walks_the_id_order(
    store: EmbeddedStore, tmp_path: Path
) -> None:
    traced = _plans(store)
    found = await store.find(AGENT, Tier.CHUNK, Eq("parent_id", "ses_c"), limit=3, order_by="id")
    assert [c.id for c in found] == [f"chk_ses_c_{i:03d}" for i in range(3)]
    assert "nodes_session" not in _plan_of(tmp_path / "p.db", traced[0])


async def test_a_find_that_wants_every_row_sorts_the_tiers_rows(store: EmbeddedStore, tmp_path: Path) -> None:
    traced = _plans(store)
    found = await store.find(AGENT, Tier.CHUNK, Eq("parent_id", "ses_c"), limit=1_000_000, order_by="id")
    assert [c.id for c in found] == [f"chk_ses_c_{i:03d}" for i in range(30)]
    plan = _plan_of(tmp_path / "p.db", traced[0])
    # The tier's own index, not a walk over every node of the agent in id order.
    assert "nodes_id" not in plan and "tier=?" in plan, plan


async def test_a_created_at_range_reads_the_new_rows_through_their_index(
    store: EmbeddedStore, tmp_path: Path
) -> None:
    from datetime import timedelta

    from uniko_memory.consolidation.load import load_unprocessed
    from uniko_memory.model.time import utcnow
    from uniko_memory.store.filters import Range

    late = _chunk("ses_d", 0).model_copy(update={"created_at": utcnow() + timedelta(hours=1)})
    async with store.unit(AGENT) as u:
        u.put(late)
    since = utcnow() + timedelta(minutes=30)
    traced = _plans(store)
    found = await store.find(
        AGENT, Tier.CHUNK, Range("created_at", gte=since), limit=1_000_000, order_by="time"
    )
    assert [c.id for c in found] == [late.id]
    plan = _plan_of(tmp_path / "p.db", traced[0])
    assert "nodes_created" in plan, plan
    # Consolidation's scan for new Observations asks the same way.
    traced.clear()
    assert await load_unprocessed(store, AGENT, 10, since=utcnow() - timedelta(minutes=1)) == []
    assert any("nodes_created" in _plan_of(tmp_path / "p.db", sql) for sql in traced), traced


async def test_a_store_opened_by_an_earlier_release_gains_the_creation_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    s = await EmbeddedStore.open(path, dim=8)
    async with s.unit(AGENT) as u:
        u.put(_chunk("ses_a", 1))
    await s.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX nodes_created")  # as a store written before the index was
    conn.commit()
    conn.close()
    again = await EmbeddedStore.open(path, dim=8)
    try:
        names = {r[0] for r in again._reader().execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "nodes_created" in names
        assert [c.id for c in await again.find(AGENT, Tier.CHUNK, None, limit=10)] == ["chk_ses_a_001"]
    finally:
        await again.close()
