"""A sentence's stance, for write-time near-duplicates (``IngestConfig.observation_restate_*``).

"Caroline likes jazz" and "Caroline no longer likes jazz" are close by any embedding, yet one
contradicts the other: a restatement must keep the stance. A stance is negated when the sentence
holds a negation cue (a word, or a phrase such as "no longer"); two sentences restate each other
only when both are negated or neither is. Deliberately coarse: a false "different stance" only
keeps a copy (today's behaviour), a false "same stance" would hide a contradiction.
"""

from __future__ import annotations

import re

#: Words that negate or end what the sentence says ("stopped", "quit": a change of stance).
NEGATION_WORDS = frozenset(
    {"not", "no", "never", "nobody", "nothing", "none", "neither", "nor", "nowhere", "without",
     "cannot", "anymore", "stopped", "quit", "quitting", "stopping", "ex", "formerly", "former"}
)  # fmt: skip
#: Phrases that do the same in several words.
NEGATION_PHRASES = ("no longer", "any more", "gave up", "give up", "used to")
_WORD = re.compile(r"[a-z]+n't|[a-z]+")


def is_negated(text: str) -> bool:
    """Whether ``text`` holds a negation cue ("not", "n't", "never", "no longer", "used to", ...)."""
    low = text.lower().replace("\u2019", "'")
    words = _WORD.findall(low)
    if any(w in NEGATION_WORDS or w.endswith("n't") for w in words):
        return True
    joined = " ".join(words)
    return any(re.search(rf"\b{p}\b", joined) for p in NEGATION_PHRASES)


def same_stance(a: str, b: str) -> bool:
    """Both sentences affirm, or both negate: only then may one restate the other."""
    return is_negated(a) == is_negated(b)
