"""FTS5 query building: quoting, and dropping terms whose BM25 weight FTS5 floors to ~0."""

from __future__ import annotations

import sqlite3

import pytest

from uniko_memory.store.embedded.fts_query import quoted_terms, selective_match


@pytest.fixture
def conn() -> sqlite3.Connection:
    c = sqlite3.connect(":memory:")
    c.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2')")
    rows = [f"caroline said something about topic {i}" for i in range(8)]
    rows += ["melanie paints sunsets", "melanie runs", "caroline paints pottery"]
    c.executemany("INSERT INTO fts(text) VALUES (?)", [(r,) for r in rows])
    return c


def test_terms_are_quoted_never_operators() -> None:
    assert quoted_terms('NEAR(a b) OR "x" AND') == ['"near"', '"b"', '"x"']
    assert quoted_terms("the and of") == ['"the"', '"and"', '"of"']  # stopwords only: kept
    assert quoted_terms("?!") == []


def test_a_term_in_half_of_the_rows_or_more_is_dropped(conn: sqlite3.Connection) -> None:
    # "caroline" is in 9 of 11 rows: its IDF is floored, it cannot change a ranking.
    assert selective_match(conn, "fts", ['"caroline"', '"paints"']) == '"paints"'


def test_terms_matching_nothing_are_dropped_but_never_all(conn: sqlite3.Connection) -> None:
    assert selective_match(conn, "fts", ['"zebra"', '"melanie"']) == '"melanie"'
    assert selective_match(conn, "fts", ['"caroline"', '"said"']) == '"caroline" OR "said"'
    assert selective_match(conn, "fts", ['"caroline"']) == '"caroline"'


def test_the_ranking_of_what_matters_is_unchanged(conn: sqlite3.Connection) -> None:
    q = "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT 3"
    full = '"caroline" OR "paints" OR "pottery"'
    pruned = selective_match(conn, "fts", ['"caroline"', '"paints"', '"pottery"'])
    assert pruned == '"paints" OR "pottery"'
    assert conn.execute(q, (pruned,)).fetchall()[:2] == conn.execute(q, (full,)).fetchall()[:2]
