"""Turn any user text into a safe FTS5 query: tokens quoted and OR-ed, never operators."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from ..text_query import clean_text, search_terms

_TOKEN = re.compile(r"\w+", re.UNICODE)


def query_tokens(text: str) -> list[str]:
    """The text's search terms, words split on ``\\w+`` (runs of Unicode letters, digits, ``_``)."""
    return search_terms(_TOKEN.findall(clean_text(text)))


def quoted_terms(text: str) -> list[str]:
    """The text's searchable tokens, each quoted as an FTS5 string (never an operator)."""
    return ['"' + t.replace('"', '""') + '"' for t in query_tokens(text)]


def term_rows(conn: sqlite3.Connection, table: str, terms: list[str]) -> tuple[int, list[int]]:
    """``max(rowid)`` of ``table`` and each term's row count, in one statement (doclists only)."""
    counts = "".join(f", (SELECT count(*) FROM {table} WHERE {table} MATCH ?)" for _ in terms)
    row = conn.execute(f"SELECT (SELECT max(rowid) FROM {table}){counts}", terms).fetchone()
    return row[0] or 0, [int(n) for n in row[1:]]


def selective_match(
    conn: sqlite3.Connection,
    table: str,
    terms: list[str],
    counted: Callable[[list[str]], tuple[int, list[int]]] | None = None,
) -> str:
    """An OR of the terms that can move a BM25 score, or of all of them when none can.

    FTS5's bm25 floors a term's IDF at 1e-6 once it is in half of the rows or more (a speaker's
    name in a two-person chat): such a term changes no ranking, yet every row it matches is scored
    and sorted. Counting each term's rows is cheap (doclists only). ``max(rowid)`` bounds the row
    count from above, so only terms whose IDF is certainly floored are dropped. ``counted``
    (default ``term_rows``) gives ``max(rowid)`` and the counts, e.g. from a memo.
    """
    if len(terms) < 2:
        return " OR ".join(terms)
    rows, counts = counted(terms) if counted is not None else term_rows(conn, table, terms)
    keep = [t for t, n in zip(terms, counts, strict=True) if n > 0 and 2 * n < rows]
    return " OR ".join(keep or terms)
