"""Turn any user text into a safe FTS5 query: tokens quoted and OR-ed, never operators."""

from __future__ import annotations

import re
import sqlite3

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TOKENS = 64

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
    ]
)


def clean_text(text: str) -> str:
    """Replace lone surrogates (not encodable as UTF-8) so SQLite accepts any Python string."""
    return text.encode("utf-8", "replace").decode("utf-8")


def query_tokens(text: str) -> list[str]:
    words = [w.lower() for w in _TOKEN.findall(clean_text(text))]
    content = [w for w in words if w not in STOPWORDS]
    chosen = content or words
    seen: dict[str, None] = {}
    for w in chosen:
        seen.setdefault(w, None)
    return list(seen)[:MAX_QUERY_TOKENS]


def quoted_terms(text: str) -> list[str]:
    """The text's searchable tokens, each quoted as an FTS5 string (never an operator)."""
    return ['"' + t.replace('"', '""') + '"' for t in query_tokens(text)]


def selective_match(conn: sqlite3.Connection, table: str, terms: list[str]) -> str:
    """An OR of the terms that can move a BM25 score, or of all of them when none can.

    FTS5's bm25 floors a term's IDF at 1e-6 once it is in half of the rows or more (a speaker's
    name in a two-person chat): such a term changes no ranking, yet every row it matches is scored
    and sorted. Counting each term's rows is cheap (doclists only). ``max(rowid)`` bounds the row
    count from above, so only terms whose IDF is certainly floored are dropped.
    """
    if len(terms) < 2:
        return " OR ".join(terms)
    counts = ",".join(f"(SELECT count(*) FROM {table} WHERE {table} MATCH ?)" for _ in terms)
    row = conn.execute(f"SELECT (SELECT max(rowid) FROM {table}), {counts}", terms).fetchone()
    rows = row[0] or 0
    keep = [t for t, n in zip(terms, row[1:], strict=True) if n > 0 and 2 * n < rows]
    return " OR ".join(keep or terms)
