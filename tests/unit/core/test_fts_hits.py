"""The shared BM25 pass (``fts_hits``): the same rows in the same order as the single SQL statement
it replaced, for every tier and filter, ties included; and a write is seen by the next search.

Real ``EmbeddedStore`` on disk; the reference is the statement the store ran before.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conformance.corpus import chunk, message, observation
from uniko_memory.model import Tier
from uniko_memory.store import Eq, In
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.embedded.fts_query import quoted_terms, selective_match
from uniko_memory.store.embedded.sql_filter import to_sql

AGENT, OTHER = "agent-h", "agent-i"
DIM = 8
WORDS = [
    "porto",
    "cat",
    "ravi",
    "hiking",
    "granite",
    "peak",
    "sourdough",
    "oslo",
    "chess",
    "harbour",
    "rabbit",
    "clover",
    "job",
]


def _reference(conn, agent: str, tier: str, text: str, k: int, flt) -> list[tuple[str, float]]:
    where, params = to_sql(flt)
    match = selective_match(conn, "fts", quoted_terms(text))
    q = (
        "SELECT n.id, -bm25(fts) AS s FROM fts CROSS JOIN nodes n ON n.rowid = fts.rowid "
        f"WHERE fts MATCH ? AND n.agent=? AND n.tier=? AND n.redacted=0 AND {where} "
        "ORDER BY bm25(fts), n.id LIMIT ?"
    )
    return [(r[0], float(r[1])) for r in conn.execute(q, (match, agent, tier, *params, k))]


@pytest.fixture(params=[True, False], ids=["ram-copy", "fts5-scores"])
async def store(tmp_path: Path, request: pytest.FixtureRequest):
    rng = random.Random(5)
    s = await EmbeddedStore.open(tmp_path / "h.db", dim=DIM, keyword_index=request.param)
    for agent in (AGENT, OTHER):
        async with s.unit(agent) as u:
            for i in range(300):
                # Few words, many repeats: identical texts give identical scores (ties by id).
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                m = message(agent, f"m{i}", text, session=i % 7)
                u.put(m)
                if i % 3 == 0:
                    u.put(observation(agent, f"o{i}", f"{text} indeed", message_id=m.id))
                if i % 10 == 0:
                    u.put(chunk(agent, m, 0, f"{text} {rng.choice(WORDS)}"))
    yield s
    await s.close()


async def test_the_shared_pass_gives_the_statements_rows_in_its_order(store: EmbeddedStore) -> None:
    rng = random.Random(9)
    filters = [
        None,
        Eq("chunk_type", "message"),
        In("chunk_type", ["message", "session"]),
        Eq("chunk_type", "page"),
    ]
    checked = 0
    for _ in range(60):
        text = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        for tier in (Tier.MESSAGE, Tier.OBSERVATION, Tier.CHUNK):
            for flt in filters if tier is Tier.CHUNK else [None]:
                for k in (1, 5, 40, 500):
                    want = await store._read(
                        lambda c, t=tier, f=flt, k=k, x=text: _reference(c, AGENT, t.value, x, k, f)
                    )
                    got = await store._read(
                        lambda c, t=tier, f=flt, k=k, x=text: store._text_ids(
                            c, AGENT, t.value, quoted_terms(x), k, f
                        )
                    )
                    assert got == want, (text, tier, flt, k)
                    checked += len(want)
    assert checked > 1000  # the corpus really matches


async def test_a_write_is_seen_by_the_next_search(store: EmbeddedStore) -> None:
    before = await store.text_search(AGENT, Tier.MESSAGE, "zanzibar", k=5)
    assert before == []
    new = message(AGENT, "fresh", "zanzibar porto", session=1)
    async with store.unit(AGENT) as u:
        u.put(new)
    assert [h.id for h in await store.text_search(AGENT, Tier.MESSAGE, "zanzibar", k=5)] == [new.id]
    assert await store.delete(AGENT, [new.id]) == 1
    assert await store.text_search(AGENT, Tier.MESSAGE, "zanzibar", k=5) == []


async def test_usage_and_meta_writes_keep_the_memo_content_writes_drop_it(store: EmbeddedStore) -> None:
    from uniko_memory.model import UsageDelta

    statements: list[str] = []
    conn = store._reader()
    conn.set_trace_callback(statements.append)

    copied: list[str] = []
    if (inner := store._fts_hits._scorer) is not None:  # the RAM copy scores: count its passes too

        def counting(c, m):
            found = inner(c, m)
            if found is not None:
                copied.append(m)
            return found

        store._fts_hits._scorer = counting

    def scored() -> int:
        """BM25 passes run since the last call (each scores every match once)."""
        n = sum("bm25(fts), rowid FROM fts" in s for s in statements) + len(copied)
        statements.clear()
        copied.clear()
        return n

    # With the copy, the passes below are scored from it (built beforehand), else by FTS5.
    assert await store.keyword_index_ready(timeout=30) is (store._keywords is not None)
    chunks_of = Eq("chunk_type", "message")
    first = await store.text_search(AGENT, Tier.CHUNK, "porto cat", k=5, filter=chunks_of)
    assert scored() == 1
    await store.record_usage(AGENT, {first[0].id: UsageDelta(access_count=1)})
    await store.set_meta("note", "x")
    # A recall's own read tracking and a meta write change no row a search reads: the memo holds.
    assert await store.text_search(AGENT, Tier.CHUNK, "porto cat", k=5, filter=chunks_of) == first
    assert scored() == 0
    m = message(AGENT, "porto-new", "porto cat porto cat", session=2)
    async with store.unit(AGENT) as u:
        u.put(chunk(AGENT, m, 0, "porto cat porto cat porto"))
    again = await store.text_search(AGENT, Tier.CHUNK, "porto cat", k=5, filter=chunks_of)
    assert scored() == 1
    assert again[0].id != first[0].id and again[0].node.text.startswith("porto cat porto cat")


async def test_term_counts_are_counted_once_until_the_content_changes(store: EmbeddedStore) -> None:
    from uniko_memory.store.embedded.fts_query import term_rows

    statements: list[str] = []
    conn = store._reader()
    conn.set_trace_callback(statements.append)
    hits = store._fts_hits
    terms = quoted_terms("porto harbour zanzibar")

    def counted(ts: list[str]) -> tuple[int, list[int]]:
        statements.clear()
        return hits.term_rows(conn, ts)

    first = counted(terms)
    assert first == term_rows(conn, "fts", terms) and first[1][2] == 0
    assert counted(terms) == first and statements == []  # kept: no statement
    assert counted(terms[1:]) == (first[0], first[1][1:]) and statements == []
    async with store.unit(AGENT) as u:  # a content write: every count is stale
        u.put(message(AGENT, "zz", "zanzibar zanzibar", session=3))
    after = counted(terms)
    assert after == term_rows(conn, "fts", terms) and after[1][2] == 1 and statements


async def test_a_tiers_admitted_rows_are_read_once_however_many_queries_pass(store: EmbeddedStore) -> None:
    """The rows a small tier admits are the same for every query: the other searches of a recall
    (more query texts than the per-query memo keeps) must not push them out, so that each search
    reads them again."""
    statements: list[str] = []
    conn = store._reader()
    conn.set_trace_callback(statements.append)
    # Each text matches more rows than the tier holds (its admitted rows are read and kept).
    texts = [" ".join(w for w in WORDS if w not in (a, b)) for a in WORDS for b in WORDS if a < b]
    for round_ in range(3):
        for text in texts[round_ * 12 : round_ * 12 + 12]:  # a recall's other searches
            await store.text_search(AGENT, Tier.MESSAGE, text, k=3)
        await store.text_search(AGENT, Tier.OBSERVATION, texts[-1 - round_], k=3)

    def tier_reads() -> int:
        return sum(
            s.startswith("SELECT n.rowid, n.id FROM nodes n WHERE") and "'observation'" in s
            for s in statements
        )

    assert tier_reads() == 1  # once, not once per search
    async with store.unit(AGENT) as u:  # a content write: read again
        u.put(message(AGENT, "zz", "porto cat", session=3))
    statements.clear()
    await store.text_search(AGENT, Tier.OBSERVATION, texts[0], k=3)
    assert tier_reads() == 1


async def test_a_tier_read_often_stays_kept_while_others_come_and_go(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept tiers are least recently used out, not first in first out: a tier asked for by
    every recall stays while the rarer filters pass through."""
    from uniko_memory.store.embedded import fts_hits

    monkeypatch.setattr(fts_hits, "TIERS_KEPT", 4)
    statements: list[str] = []
    conn = store._reader()
    conn.set_trace_callback(statements.append)
    text = " ".join(WORDS)  # matches more rows than either tier holds
    filters = [Eq("chunk_type", "message"), Eq("chunk_type", "session"), Eq("chunk_type", "page")]
    for flt in filters * 2:
        await store.text_search(AGENT, Tier.OBSERVATION, text, k=3)
        await store.text_search(AGENT, Tier.CHUNK, text, k=3, filter=flt)
    reads = [s for s in statements if s.startswith("SELECT n.rowid, n.id FROM nodes n WHERE")]
    assert sum("'observation'" in s for s in reads) == 1
    assert sum("'chunk'" in s for s in reads) > len(filters)  # the rarer ones did go and come back
