"""A Fact's words as a sentence when no Observation's sentence is at hand.

A Fact's triple is structured data (``predicate`` is a lemma chain such as ``go_to`` or ``not_be``);
shown raw it reads "Priya adopt grey cat". A Fact normally renders from the sentence of the
Observation that first supported it (``Fact.text``); this template is the fallback (Facts written
before that field existed, or whose sentence was forgotten with its turn): present tense, third
person, with "does not" / "is not" for a negated predicate and a modal kept as it is.
"""

from __future__ import annotations

import re

MODALS = frozenset({"will", "would", "can", "could", "should", "might", "may", "must", "shall"})
_IRREGULAR = {"be": "is", "have": "has", "do": "does", "go": "goes"}
_PLURAL_BE = {"be": "are", "have": "have", "do": "do", "go": "go"}
_ES_ENDINGS = ("s", "sh", "ch", "x", "z", "o")
# Already inflected: "-s" (not "-ss" / "-us": "miss", "focus"), or a past "-ed" (not "-eed": "need").
_INFLECTED = re.compile(r"(?:[^su]s|[^e]ed)$")
# A subject that reads as several things ("pets", "the kids", "Anna and Tom"): the verb does not take -s.
_PLURAL_SUBJECT = re.compile(r"(?:\band\b|(?<!')(?<!s)s)$", re.IGNORECASE)
_PRONOUN_PLURAL = frozenset({"they", "we", "you", "i"})


def third_person(verb: str, *, plural: bool = False) -> str:
    """Present tense of a lemma after a third-person subject: "adopt" -> "adopts", "be" -> "is"."""
    if plural:
        return _PLURAL_BE.get(verb, verb)
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if _INFLECTED.search(verb):  # a predicate written inflected ("works_at", "adopted"): as it is
        return verb
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(_ES_ENDINGS):
        return verb + "es"
    return verb + "s"


def _is_plural(subject: str) -> bool:
    words = subject.strip().split()
    if not words:
        return False
    last = words[-1]
    if last.lower() in _PRONOUN_PLURAL or " and " in f" {subject.lower()} ":
        return True
    if last[:1].isupper() or last.endswith(("'s", "ss", "us", "is")):  # names, possessives, "class"
        return False
    return bool(_PLURAL_SUBJECT.search(last))


def tensed_statement(subject: str, predicate: str, obj: str) -> str:
    """``("Priya", "adopt", "grey cat")`` -> "Priya adopts grey cat"; ``not_be`` -> "is not"."""
    parts = [p for p in predicate.split("_") if p]
    plural = _is_plural(subject)
    if not parts:
        words = []
    elif parts[0] in MODALS:
        words = parts
    elif parts[0] == "not" and len(parts) > 1:
        head = parts[1]
        if head == "be":
            words = ["are" if plural else "is", "not", *parts[2:]]
        else:
            words = ["do" if plural else "does", "not", *parts[1:]]
    else:
        words = [third_person(parts[0], plural=plural), *parts[1:]]
    return " ".join(w for w in (subject.strip(), *words, obj.strip()) if w)
