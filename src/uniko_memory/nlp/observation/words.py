"""English word forms the observation rules produce: agreement, contractions, lemmas, keys, names.

A statement is a rewrite of what someone said, so its verbs, clitics and possessives must come
out as a person would write them; these helpers hold that inflection in one place, free of any
parse, so each can be tested on plain strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from uniko_memory.nlp.ner import normalize_entity_name
from uniko_memory.nlp.observation.lexicon import CONTRACTIONS, IRREGULAR_3SG

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = [
    "expand_contraction",
    "lemma_of",
    "normalize_name",
    "person_form",
    "repair_lemma",
    "snake",
    "third_singular",
]

_VOWELS = frozenset("aeiou")
_VOWEL_GROUP = re.compile(r"[aeiou]+")
_DOUBLED = re.compile(r"([bdgkmnprtv])\1$")
_SNAKE = re.compile(r"[^a-z0-9]+")


def third_singular(word: str) -> str:
    """Third-person singular present of a base-form verb: love -> loves, try -> tries, go -> goes."""
    low = word.lower()
    if low in IRREGULAR_3SG:
        out = IRREGULAR_3SG[low]
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    elif low.endswith("y") and len(low) > 1 and low[-2] not in _VOWELS:
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    return out.capitalize() if word[:1].isupper() else out


def expand_contraction(text: str, tag: str, lemma: str) -> str | None:
    """The spelled-out form of a clitic token ("'m" -> "am", "'d" -> "would"/"had"), else None."""
    low = text.lower()
    if low in ("'s", "’s"):
        if lemma == "be":
            return "is"
        if lemma == "have":
            return "has"
        if lemma == "us":
            return "us"
        return None
    if low in ("'d", "’d"):
        return "would" if tag == "MD" else "had"
    if low in ("na", "ta") and tag == "TO":
        return "to"
    if low in ("ca", "wo", "sha") and tag != "MD":
        return None
    if low in ("gon", "wan") and tag.startswith("VB"):
        return CONTRACTIONS[low]
    if low in ("gon", "wan"):
        return None
    return CONTRACTIONS.get(low)


def lemma_of(tok: Token) -> str:
    """The lemma a predicate key uses: reduced forms ("gonna", "'m") mapped, -ing/-ed slips fixed."""
    low = tok.lower_
    if low in ("gon", "gonna"):
        return "go"
    if low in ("wan", "wanna"):
        return "want"
    if low in ("'m", "’m", "'re", "’re"):
        return "be"
    lemma = str(tok.lemma_).lower()
    return repair_lemma(low, lemma) if tok.tag_ in ("VBG", "VBD", "VBN") else lemma


def repair_lemma(word: str, lemma: str) -> str:
    """Fix the small model's -ing/-ed lemma slips: "prepping" -> "prep" (not "preppe"),
    "hoping" -> "hope" (not "hop"); other lemmas are returned unchanged."""
    suffix = "ing" if word.endswith("ing") else "ed" if word.endswith("ed") else ""
    stem = word[: -len(suffix)] if suffix else ""
    if len(stem) < 2:
        return lemma
    if _DOUBLED.search(stem) and lemma == stem + "e":  # "blogging" -> "blogge" should be "blog"
        return stem[:-1]
    monosyllable_cvc = (
        len(_VOWEL_GROUP.findall(stem)) == 1 and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", stem) is not None
    )
    if suffix == "ing" and lemma == stem and monosyllable_cvc:  # undoubled CVC: a silent e was dropped
        return stem + "e"
    return lemma


def snake(parts: Iterable[str]) -> str:
    """Join predicate parts as a snake_case key ("not", "go", "to" -> "not_go_to")."""
    return _SNAKE.sub("_", "_".join(p for p in parts if p).lower()).strip("_")


def person_form(name: str, form: str) -> str:
    """A participant's name in a pronoun's place: possessives take "'s" (or "'"), a reflexive
    becomes "themselves" (the speaker's gender is unknown)."""
    if form in ("poss", "poss_abs"):
        return f"{name}'" if name.endswith("s") else f"{name}'s"
    if form == "refl":
        return "themselves"
    return name


def normalize_name(name: str) -> str:
    """An entity name as the NER layer normalises it, so statements and NER name things alike."""
    return normalize_entity_name(name)
