"""The RAM copy of the keyword index (``keyword_index``): FTS5's own (bm25, rowid) list, bit for
bit, on a real store after random puts, rewrites, deletes, redactions and a failed write, with the
overlay merged or not; phrases go to SQL; a reader process keeps no copy.

The reference is FTS5 itself: ``SELECT bm25(fts), rowid FROM fts WHERE fts MATCH ?``.
"""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

import pytest

from tests.conformance.corpus import chunk, message, observation
from uniko_memory.model import Tier
from uniko_memory.store.embedded import EmbeddedStore, keyword_index
from uniko_memory.store.embedded.fts_query import quoted_terms, selective_match
from uniko_memory.store.embedded.keyword_index import KeywordIndex, parse_match

AGENT, OTHER = "agent-k", "agent-l"
DIM = 8
# Stems that porter folds together, diacritics, digits and repeats: the tokenizer's cases.
WORDS = [
    "hiking", "hikes", "hiked", "granite", "café", "cafe", "Oslo", "oslo", "2023", "chess",
    "running", "runs", "harbour", "naïve", "rabbit", "clover", "job", "jobs", "the", "a",
]  # fmt: skip


def _sql(conn, match: str) -> list[tuple[float, int]]:
    rows = conn.execute("SELECT bm25(fts), rowid FROM fts WHERE fts MATCH ?", (match,)).fetchall()
    return sorted((float(s), int(r)) for s, r in rows)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


async def _fill(store: EmbeddedStore, rng: random.Random, n: int, start: int = 0) -> None:
    for agent in (AGENT, OTHER):
        async with store.unit(agent) as u:
            for i in range(start, start + n):
                m = message(agent, f"m{i}", _text(rng), session=i % 5)
                u.put(m)
                if i % 3 == 0:
                    u.put(observation(agent, f"o{i}", _text(rng), message_id=m.id))
                if i % 7 == 0:
                    u.put(chunk(agent, m, 0, _text(rng) + " " + _text(rng)))


async def _check(store: EmbeddedStore, rng: random.Random, queries: int = 40) -> int:
    """Every query's list from the copy equals FTS5's; returns the rows compared."""
    compared = 0
    copy = store._keywords
    assert copy is not None
    assert await store.keyword_index_ready(timeout=30)
    for _ in range(queries):
        terms = quoted_terms(" ".join(rng.sample(WORDS, rng.randint(1, 6))))
        for match in (" OR ".join(terms), await store._read(lambda c, t=terms: selective_match(c, "fts", t))):
            want = await store._read(lambda c, m=match: _sql(c, m))
            got = await store._read(lambda c, m=match: store._keyword_ranked(c, m))
            assert got == want, match
            compared += len(want)
    return compared


@pytest.fixture
async def store(tmp_path: Path):
    s = await EmbeddedStore.open(tmp_path / "k.db", dim=DIM)
    yield s
    await s.close()


async def test_the_copy_scores_as_fts5_does_through_every_kind_of_write(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    await _fill(store, rng, 150)
    assert await _check(store, rng) > 2000  # built from the file on first use
    assert store._keywords is not None and store._keywords.ready
    # Rewrites, new rows, deletes and redactions, followed by the commits: still FTS5's list.
    for round_ in range(4):
        await _fill(store, rng, 40, start=1000 + 100 * round_)  # new rows
        await _fill(store, rng, 20, start=rng.randint(0, 100))  # rewrites of old ones
        await store.delete(AGENT, [f"m{rng.randint(0, 149)}" for _ in range(5)])
        await store.redact(OTHER, [f"m{rng.randint(0, 149)}" for _ in range(5)])
        await _check(store, rng, queries=15)
    # With a tiny merge bound the overlay is folded into the arrays after each commit.
    monkeypatch.setattr(keyword_index, "MERGE_MIN_ROWS", 1)
    for _ in range(3):
        await _fill(store, rng, 30, start=rng.randint(0, 1200))
        await store.delete(AGENT, [f"o{3 * rng.randint(0, 49)}"])
        await _check(store, rng, queries=10)


async def test_searches_are_the_same_with_the_copy_and_without(tmp_path: Path) -> None:
    rng = random.Random(11)
    stores = [
        await EmbeddedStore.open(tmp_path / "with.db", dim=DIM),
        await EmbeddedStore.open(tmp_path / "without.db", dim=DIM, keyword_index=False),
    ]
    try:
        for s in stores:
            await _fill(s, random.Random(4), 120)
        assert stores[1]._keywords is None
        for _ in range(30):
            text = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
            for tier in (Tier.MESSAGE, Tier.OBSERVATION, Tier.CHUNK):
                a, b = [await s.text_search(AGENT, tier, text, k=25) for s in stores]
                assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b]
    finally:
        for s in stores:
            await s.close()


async def test_a_failed_write_leaves_the_copy_equal_to_the_file(store: EmbeddedStore) -> None:
    rng = random.Random(8)
    await _fill(store, rng, 60)
    await _check(store, rng, queries=5)

    def half_way(conn) -> None:
        store._fts_put(conn, 999_999, "granite granite harbour")
        raise RuntimeError("the write fails after its keyword row")

    with pytest.raises(RuntimeError):
        await store._write(half_way)
    assert store._keywords is not None and store._keywords.ready  # rolled back: nothing to rebuild
    assert await _check(store, rng, queries=10) > 0


def test_a_term_fts5_splits_is_a_phrase_left_to_sql() -> None:
    copy = KeywordIndex("porter unicode61 remove_diacritics 2")
    copy.ready = True  # an empty table
    assert copy.ranked('"granite" OR "cafe"') == []
    assert copy.ranked('"snake_case"') is None  # two tokens: a phrase
    assert copy.ranked("granite") is None  # not the quoted form fts_query writes
    assert parse_match('"a" OR "b""c"') == ["a", 'b"c']
    assert parse_match('"a" AND "b"') is None


async def test_a_phrase_query_is_scored_by_sql_with_the_same_result(store: EmbeddedStore) -> None:
    async with store.unit(AGENT) as u:
        u.put(message(AGENT, "p1", "snake case is snake_case", session=1))
        u.put(message(AGENT, "p2", "a snake", session=1))
    assert await store.keyword_index_ready(timeout=30)
    hits = await store.text_search(AGENT, Tier.MESSAGE, "snake_case", k=5)
    assert [h.node.search_text().endswith("snake_case") for h in hits] == [True]  # the phrase only
    assert await store._read(lambda c: store._keyword_ranked(c, '"snake"')) is not None
    assert await store._read(lambda c: store._keyword_ranked(c, '"snake_case"')) is None


async def test_a_reader_process_keeps_no_copy(tmp_path: Path) -> None:
    writer = await EmbeddedStore.open(tmp_path / "r.db", dim=DIM)
    try:
        await _fill(writer, random.Random(2), 30)
        reader = await EmbeddedStore.open(tmp_path / "r.db", dim=DIM, read_only=True)
        try:
            assert reader._keywords is None
            a = await reader.text_search(AGENT, Tier.MESSAGE, "granite oslo", k=10)
            b = await writer.text_search(AGENT, Tier.MESSAGE, "granite oslo", k=10)
            assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b] and a
        finally:
            await reader.close()
    finally:
        await writer.close()


async def test_a_copy_that_fails_to_follow_a_commit_is_rebuilt_and_the_write_stands(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(9)
    await _fill(store, rng, 40)
    await _check(store, rng, queries=3)
    copy = store._keywords
    assert copy is not None and copy.ready

    def broken(changes) -> None:
        raise RuntimeError("the copy cannot take these rows")

    monkeypatch.setattr(copy, "apply", broken)
    late = message(AGENT, "late", "granite harbour granite cafe harbour", session=1)
    async with store.unit(AGENT) as u:  # committed: no error reaches the caller
        u.put(late)
    assert not copy.ready  # dropped, not left stale
    monkeypatch.undo()
    hits = await store.text_search(AGENT, Tier.MESSAGE, "granite harbour", k=50)
    assert late.id in [h.id for h in hits]
    assert await _check(store, rng, queries=10) > 0


def _held_read(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The copy's snapshot read waits until the second event is set (or the store closes)."""
    entered, release = threading.Event(), threading.Event()
    read = KeywordIndex._read

    def held(self: KeywordIndex, conn):
        entered.set()
        while not release.wait(0.01):
            if self._stop:
                break
        return read(self, conn)

    monkeypatch.setattr(KeywordIndex, "_read", held)
    return entered, release


async def test_searches_and_commits_go_on_while_the_copy_is_read_and_it_misses_none(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(12)
    await _fill(store, rng, 80)
    entered, release = _held_read(monkeypatch)
    before = await store.text_search(AGENT, Tier.MESSAGE, "granite oslo", k=20)  # FTS5 scores it
    assert await asyncio.to_thread(entered.wait, 10)  # ... and it began the copy, from a snapshot
    copy = store._keywords
    assert copy is not None and copy.building and not copy.ready
    # Commits after the snapshot: queued for the copy, never waited on.
    await _fill(store, rng, 30, start=500)
    await _fill(store, rng, 10, start=rng.randint(0, 79))
    await store.delete(AGENT, [f"m{rng.randint(0, 79)}" for _ in range(4)])
    await store.redact(OTHER, [f"m{rng.randint(0, 79)}" for _ in range(4)])
    during = await store.text_search(AGENT, Tier.MESSAGE, "granite oslo", k=20)
    assert during and before and copy.building
    release.set()
    assert await store.keyword_index_ready(timeout=30)
    assert await _check(store, rng, queries=20) > 500  # the snapshot plus what was queued: FTS5's


async def test_closing_stops_a_copy_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = await EmbeddedStore.open(tmp_path / "c.db", dim=DIM)
    await _fill(s, random.Random(1), 30)
    entered, _ = _held_read(monkeypatch)
    await s.text_search(AGENT, Tier.MESSAGE, "granite", k=5)
    assert await asyncio.to_thread(entered.wait, 10)
    copy = s._keywords
    assert copy is not None
    await asyncio.wait_for(s.close(), 10)
    assert copy._thread is not None and not copy._thread.is_alive() and not copy.ready
    again = await EmbeddedStore.open(tmp_path / "c.db", dim=DIM)  # the file and its locks are free
    await again.close()


async def test_a_copy_that_cannot_be_built_leaves_fts5_scoring(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_room(self: KeywordIndex, conn):
        raise MemoryError

    monkeypatch.setattr(KeywordIndex, "_read", no_room)
    await _fill(store, random.Random(6), 40)
    want = [(h.id, h.score) for h in await store.text_search(OTHER, Tier.MESSAGE, "granite cafe", k=30)]
    assert await store.keyword_index_ready(timeout=30) is False
    assert store._keywords is not None and store._keywords.failed
    assert "could not be built" in caplog.text
    got = await store.text_search(OTHER, Tier.MESSAGE, "granite cafe", k=30)
    assert [(h.id, h.score) for h in got] == want and want
    assert store._keywords._thread is not None
    assert not store._keywords._thread.is_alive()  # no build is begun again per query
