"""The slots a question asks about: "Where does Maya live now?" asks for ``residence/maya``.

Consolidation keys Facts by slot (``consolidation.slots``: attribute/subject, the value a newer
statement supersedes). A question that names a person and an attribute reads that slot's Facts
directly (the ``fact_slot`` channel of Phase 1): the value that holds now is found by its key, not
only by its words ("diet" is not a word of "switched to pescatarian"). The word table is closed,
general English; the subjects are the question's names (and "Maya's brother" forms).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import normalize_key

#: Question words -> the attribute they ask for.
ATTRIBUTE_WORDS: dict[str, tuple[str, ...]] = {
    "residence": (
        "live",
        "lives",
        "living",
        "lived",
        "moved",
        "move",
        "based",
        "home",
        "city",
        "town",
        "neighbourhood",
        "neighborhood",
        "reside",
    ),
    "employer": ("work", "works", "working", "employer", "company", "firm", "office", "boss", "job"),
    "job": ("job", "profession", "occupation", "role", "position", "title", "living"),
    "partner": (
        "dating",
        "seeing",
        "partner",
        "girlfriend",
        "boyfriend",
        "married",
        "marry",
        "relationship",
        "engaged",
        "single",
        "wife",
        "husband",
        "together",
        "fiance",
        "fiancee",
    ),
    "diet": ("diet", "eat", "eats", "eating", "vegetarian", "vegan", "meat", "food", "cook", "dietary"),
    "drink": ("drink", "drinks", "drinking", "coffee", "tea", "beverage"),
}
_HOW_MANY = re.compile(r"\bhow many (?:\w+ )?(\w+)", re.IGNORECASE)
_FAVOURITE = re.compile(r"\bfav(?:ou)?rite (\w+(?: \w+)?)", re.IGNORECASE)
_WORD = re.compile(r"[\w'-]+")
#: Occasions a "when" question can ask the date of (the slot lexicon's events, the common ones).
_WHEN = re.compile(r"\b(?:when|what date|what day|which day|still on)\b", re.IGNORECASE)


def _singular(noun: str) -> str:
    noun = noun.casefold()
    if noun == "children":
        return "child"
    return noun.removesuffix("s") if len(noun) > 3 else noun


def question_slots(question: str, names: Sequence[str], events: frozenset[str]) -> list[str]:
    """The slot keys ("residence/maya", "date/visit") ``question`` asks about, given the names it
    mentions and the event nouns the slots know."""
    words = {w.casefold() for w in _WORD.findall(question)}
    subjects: list[str] = []
    for name in names:
        key = normalize_key(name)
        subjects.append(key.split()[0] if " " in key else key)
        for m in re.finditer(rf"(?<!\w){re.escape(name)}['’]s (\w+)", question, re.IGNORECASE):
            subjects.append(f"{key}'s {m[1].casefold()}")
    attributes = [a for a, cues in ATTRIBUTE_WORDS.items() if words & set(cues)]
    if many := _HOW_MANY.search(question):
        attributes.append(f"count of {_singular(many[1])}")
    if favourite := _FAVOURITE.search(question):
        attributes.append(f"favourite {favourite[1].casefold()}")
    keys = [f"{a}/{s}" for a in attributes for s in dict.fromkeys(subjects)]
    if _WHEN.search(question) or "date" in words or "cancelled" in words or "off" in words:
        keys += [f"date/{e}" for e in sorted(words & events)]
    return list(dict.fromkeys(keys))
