"""Pseudo-relevance feedback: the words a question does not say, read from its first hits.

"What does Caroline do to relax?" shares no word with "I went hiking in the mountains last
weekend"; the first turns the question does find ("...painting helps me unwind...") share
words with the ones it misses. The words most of the best hits have in common, and the question
lacks, are searched again with it as one more keyword list (``RecallChannels.prf_docs``), of a
family of its own (``channel_weights["prf"]``).

No model and no weights: words are counted in the hits' own text, each hit weighted by its rank
(1 / rank); a word must occur in at least ``min_docs`` hits (one hit's topic is not the
question's), and names of the conversation's people are left out (they occur everywhere).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import cache

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]{2,}")


@cache
def _stop_words() -> frozenset[str]:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:  # the rule-only install: a small list of the commonest function words
        return frozenset(
            [
                "the",
                "and",
                "for",
                "are",
                "but",
                "not",
                "you",
                "all",
                "any",
                "can",
                "had",
                "her",
                "was",
                "one",
                "our",
                "out",
                "has",
                "his",
                "how",
                "its",
                "may",
                "new",
                "now",
                "old",
                "see",
                "two",
                "who",
                "did",
                "get",
                "let",
                "say",
                "she",
                "too",
                "use",
                "that",
                "with",
                "have",
                "this",
                "will",
                "your",
                "from",
                "they",
                "been",
                "were",
                "what",
                "when",
                "which",
                "their",
                "there",
                "about",
                "would",
                "could",
                "should",
                "just",
                "like",
                "really",
            ]
        )
    return frozenset(w.lower() for w in STOP_WORDS)


def _norm(word: str) -> str:
    w = word.lower().replace("’", "'")
    w = w.removesuffix("'s")
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def expansion_terms(
    question: str,
    docs: Sequence[str],
    *,
    names: Iterable[str] = (),
    max_terms: int = 6,
    min_docs: int = 2,
) -> list[str]:
    """The words the best ``docs`` (best first) share and ``question`` lacks, best first."""
    stop = _stop_words()
    asked = {_norm(w) for w in _WORD.findall(question)}
    people = {_norm(part) for n in names for part in _WORD.findall(n)}
    weight: dict[str, float] = defaultdict(float)
    seen_in: dict[str, int] = defaultdict(int)
    surface: dict[str, str] = {}
    for rank, doc in enumerate(docs, start=1):
        for key in {_norm(w): w for w in _WORD.findall(doc)}.items():
            norm, word = key
            if norm in stop or norm in asked or norm in people or word.lower() in stop:
                continue
            weight[norm] += 1.0 / rank
            seen_in[norm] += 1
            surface.setdefault(norm, word.lower())
    ranked = sorted((w for w in weight if seen_in[w] >= min_docs), key=lambda w: (-weight[w], w))
    return [surface[w] for w in ranked[:max_terms]]
