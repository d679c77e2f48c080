"""Turn any user text into a safe FTS5 query: tokens quoted and OR-ed, never operators."""

from __future__ import annotations

import re

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


def build_match(text: str) -> str | None:
    """An OR of quoted tokens, or None when the text has no searchable token."""
    tokens = query_tokens(text)
    if not tokens:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
