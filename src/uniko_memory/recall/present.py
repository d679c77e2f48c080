"""Questions about the present: "Where does Maya live now?" wants the newest of what fits.

A value that changed is said twice, and both turns fit the question about equally well; the words
cannot tell which holds now, the dates can. When a question says it asks about the present state
("now", "these days", "currently", "still", "any more", and it is not asked in the past tense or
about a time window), the newer of its best candidates rank a little higher: a reorder among the best, never a filter, so an old value the question
really wants still fits behind the new one. A question that only names an attribute ("Where does
Aroha live?") is not enough: most such values never changed, and the one mention of them is old.
"""

from __future__ import annotations

import re

from .fusion import Candidate, by_fused

#: Words that ask about the state now.
_NOW = re.compile(
    r"\b(now|nowadays|these days|currently|current|at the moment|at present|presently|still|"
    r"any ?more|latest|any longer|so far)\b",
    re.IGNORECASE,
)
#: Words that ask about the past (or a change itself): then the newest is not what is wanted.
_PAST = re.compile(
    r"\b(did|was|were|had|used to|before|previously|originally|at first|first|initially|ago|"
    r"last (year|month|week|time)|back then|earlier|old|former|formerly|change|changed|switch|"
    r"switched|move from|moved from)\b",
    re.IGNORECASE,
)


def asks_about_now(query: str, windowed: bool) -> bool:
    """Whether ``query`` asks what holds at the moment of the recall (see the module docstring)."""
    return not windowed and bool(_NOW.search(query)) and not _PAST.search(query)


def favour_newer(ranked: list[Candidate], weight: float, top_n: int) -> list[Candidate]:
    """The best ``top_n`` candidates with a time: fused x (1 - weight * (1 - p)), p the candidate's
    place in time among them (newest 1, oldest 0). Candidates without a time keep their score."""
    head = [c for c in ranked[:top_n] if c.node.time_key() is not None]
    if weight <= 0 or len(head) < 2:
        return ranked
    times = sorted({c.node.time_key() for c in head})
    if len(times) < 2:
        return ranked
    place = {t: i / (len(times) - 1) for i, t in enumerate(times)}
    for c in head:
        c.fused *= 1.0 - weight * (1.0 - place[c.node.time_key()])
    return by_fused(ranked)
