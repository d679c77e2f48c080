"""The relevance floor: what keeps a narrow question's bundle from being padded with noise.

Packing fills the budget greedily with whatever ranks next, so "Where does Maya work?" asked with
2,000 tokens gets every turn that ranked anywhere. A cosine floor does not separate those well: a
Message's vector carries its speaker's name, so an unrelated turn of the person asked about scores
about as high as a relevant one (``RecallChannels.min_score`` only drops vector hits below a
cosine, and for that reason sits near 0). Three signals separate them better, and they are cheap:

* **words**: the item shares a content word of the question (its keywords and entity references,
  lightly stemmed: "works" / "work" / "worker"; stop words and every participant's name left out,
  as those occur everywhere);
* **channel**: a channel that found it ties it to the question without its words: the reply to a
  turn the keyword search found ("What does Ana do to relax?" - "Any plans?" - "I went hiking"),
  or the named participant's own turns searched with the name taken out of the question;
* **rank**: its fused score is at least ``floor`` x the best candidate's: what the fusion ranks
  near the head stays, whatever its words.

An item passes on any one of them (``RelevanceFloor.admits``). A question with no content word
left (only names and stop words) has nothing to match, so the floor does not apply to it; nor does
it to a budget above ``RecallPacking.relevance_floor_max_budget``, which a long-context caller
asked for to be filled. Measured on the LoCoMo dev split in ``docs/concepts/recall.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from .expansion import _stop_words

if TYPE_CHECKING:
    from ..config import RecallPacking
    from .intent import IntentProfile
    from .items import RecallItem

#: The reason ``explain`` gives for an item the floor kept out of the bundle.
BELOW_FLOOR = "below the relevance floor"
#: The channels (list names before any ":participant") whose hits are tied to the question
#: without sharing its words: replies to keyword hits, and a named participant's own turns
#: searched without the name.
ANCHOR_CHANNELS = frozenset({"message_replies_bm25", "speaker_message_replies_bm25", "speaker_message_vec"})

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: Suffixes the light stemmer strips (the first that fits), with what replaces them.
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
#: Two stems of at least this many letters match when one starts the other ("adopt", "adoption").
_PREFIX_MIN = 4


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, rule-only stem: lower case, no possessive, no plural / -ing / -ed, no final "e"
    ("likes", "liked", "liking" -> "lik"). Both sides of the comparison use it, so it only needs
    to be consistent, not linguistically right."""
    w = word.lower().replace("’", "'").removesuffix("'s")
    if w.isdigit():
        return w
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            w = w[: -len(suffix)] + repl
            break
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


@lru_cache(maxsize=8192)  # the same memories come back across recalls
def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in _WORD.findall(text))


def question_terms(
    keywords: Iterable[str], entity_refs: Iterable[str] = (), participant_names: Iterable[str] = ()
) -> frozenset[str]:
    """The stems an on-topic item shares with the question: its keywords' and entity references'
    words, less stop words and every word of a participant's name."""
    stop = _stop_words()
    people = {stem(part) for name in participant_names for part in _WORD.findall(name)}
    words = [w for text in (*keywords, *entity_refs) for w in _WORD.findall(text)]
    return frozenset(s for w in words if w.lower() not in stop and (s := stem(w)) not in people)


def shares_term(text: str, terms: frozenset[str]) -> bool:
    """Whether ``text`` has a word whose stem is one of ``terms``, or starts one or is started by
    one (both at least ``_PREFIX_MIN`` letters: "work" / "worker")."""
    stems = _stems(text)
    if not terms.isdisjoint(stems):
        return True
    return any(
        len(t) >= _PREFIX_MIN and len(s) >= _PREFIX_MIN and (s.startswith(t) or t.startswith(s))
        for t in terms
        for s in stems
    )


def anchored(channels: Iterable[str]) -> bool:
    """Whether one of ``channels`` (an item's) ties it to the question without its words."""
    return any(c.split(":", 1)[0] in ANCHOR_CHANNELS for c in channels)


@dataclass(frozen=True)
class RelevanceFloor:
    """The floor for one question (see the module docstring)."""

    #: The question's content stems (``question_terms``).
    terms: frozenset[str]
    #: The share of the best candidate's score that admits an item on rank alone.
    floor: float

    def admits(self, item: RecallItem, relative: float) -> bool:
        """Whether ``item``, scored ``relative`` x the best candidate, may be packed."""
        return relative >= self.floor or anchored(item.channels) or shares_term(item.content, self.terms)


def relevance_floor(
    intent: IntentProfile, packing: RecallPacking, token_budget: int
) -> RelevanceFloor | None:
    """The floor ``assemble.pack`` applies to this recall; None where it does not apply: off
    (``relevance_floor`` 0), a budget over ``relevance_floor_max_budget``, or a question with no
    content word to match."""
    cap = packing.relevance_floor_max_budget
    if packing.relevance_floor <= 0.0 or (cap is not None and token_budget > cap):
        return None
    terms = question_terms(intent.keywords, intent.entity_refs, intent.participant_names)
    return RelevanceFloor(terms, packing.relevance_floor) if terms else None
