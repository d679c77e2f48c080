"""A dictionary-indexed stand-in for spaCy's ``attribute_ruler`` (tag -> POS/morph mapping).

In en_core_web_sm the attribute ruler runs ~180 token patterns through the generic ``Matcher``,
which costs about as much as the parser on short chat turns (its set predicates are evaluated
in Python for every token). This component applies the *same* patterns, in the same precedence
order (later rules win), but finds candidates through dict lookups on LOWER/TAG. It is used only
when every pattern uses constraints it understands; otherwise the original ruler stays.
Equivalence with the original is checked by the unit tests and the NLP benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Token attributes the stand-in can test: their position in the per-token row built in __call__.
_FIELDS = {"LOWER": 0, "ORTH": 1, "TAG": 2, "DEP": 3, "POS": 4, "IS_SPACE": 5}
_SETTABLE = {"POS", "TAG", "DEP", "LEMMA", "MORPH"}

Spec = dict[str, Any]
# (rule index, token specs, offset of the indexed token, target index within the pattern)
Compiled = tuple[int, list[Spec], int, int]


def _supported(spec: Spec) -> bool:
    for key, value in spec.items():
        if key not in _FIELDS:
            return False
        if isinstance(value, dict) and not (set(value) <= {"IN", "NOT_IN", "REGEX"}):
            return False
    return True


def _spec_matches(row: tuple[Any, ...], spec: Spec) -> bool:
    for key, want in spec.items():
        have = row[_FIELDS[key]]
        if isinstance(want, dict):
            if "IN" in want and have not in want["IN"]:
                return False
            if "NOT_IN" in want and have in want["NOT_IN"]:
                return False
            if "REGEX" in want and not re.search(want["REGEX"], have):  # re caches compiled patterns
                return False
        elif have != want:
            return False
    return True


def _index_keys(spec: Spec) -> list[tuple[str, Any]] | None:
    """Dict keys under which a token spec can be found: equality or IN on LOWER/ORTH/TAG/DEP."""
    for attr in ("LOWER", "ORTH", "TAG", "DEP", "IS_SPACE"):
        value = spec.get(attr)
        if isinstance(value, str | bool):
            return [(attr, value)]
        if isinstance(value, dict) and "IN" in value:
            return [(attr, v) for v in value["IN"]]
    return None


class FastAttributeRuler:
    """Callable pipeline component reproducing an ``AttributeRuler``'s patterns."""

    def __init__(self, entries: Iterable[dict[str, Any]]) -> None:
        self.attrs: list[dict[str, Any]] = []
        self.index: dict[tuple[str, str], list[Compiled]] = {}
        self.generic: list[Compiled] = []
        for rule, entry in enumerate(entries):
            attrs = dict(entry["attrs"])
            if not set(attrs) <= _SETTABLE:
                raise ValueError(f"unsupported attributes {sorted(attrs)}")
            self.attrs.append(attrs)
            for pattern in entry["patterns"]:
                if not pattern or not all(_supported(spec) for spec in pattern):
                    raise ValueError(f"unsupported pattern {pattern!r}")
                target = entry.get("index", 0)
                target = target + len(pattern) if target < 0 else target
                self._add(rule, list(pattern), target)

    def _add(self, rule: int, pattern: list[Spec], target: int) -> None:
        for offset, spec in enumerate(pattern):
            keys = _index_keys(spec)
            if keys is not None:
                for key in keys:
                    self.index.setdefault(key, []).append((rule, pattern, offset, target))
                return
        self.generic.append((rule, pattern, 0, target))

    def __call__(self, doc: Any) -> Any:
        rows = [(t.lower_, t.text, t.tag_, t.dep_, t.pos_, t.is_space) for t in doc]
        n = len(rows)
        index = self.index
        hits: dict[int, set[int]] = {}
        for i, row in enumerate(rows):
            for key in (
                ("LOWER", row[0]),
                ("ORTH", row[1]),
                ("TAG", row[2]),
                ("DEP", row[3]),
                ("IS_SPACE", row[5]),
            ):
                for rule, pattern, offset, target in index.get(key, ()):
                    self._try(rows, n, i - offset, rule, pattern, target, hits)
            for rule, pattern, _, target in self.generic:
                self._try(rows, n, i, rule, pattern, target, hits)
        for i, rules in hits.items():
            token = doc[i]
            for rule in sorted(rules):
                for attr, value in self.attrs[rule].items():
                    _set(token, attr, value)
        return doc

    @staticmethod
    def _try(
        rows: list[tuple[Any, ...]],
        n: int,
        start: int,
        rule: int,
        pattern: list[Spec],
        target: int,
        hits: dict[int, set[int]],
    ) -> None:
        if start < 0 or start + len(pattern) > n or target >= len(pattern):
            return
        if all(_spec_matches(rows[start + k], spec) for k, spec in enumerate(pattern)):
            hits.setdefault(start + target, set()).add(rule)


def _set(token: Any, attr: str, value: Any) -> None:
    if attr == "POS":
        token.pos_ = value
    elif attr == "TAG":
        token.tag_ = value
    elif attr == "DEP":
        token.dep_ = value
    elif attr == "LEMMA":
        token.lemma_ = value
    else:  # MORPH
        token.set_morph(None if value == "_" else value)


FACTORY = "uniko_fast_attribute_ruler"


def _make(nlp: Any, name: str) -> FastAttributeRuler:
    return FastAttributeRuler(nlp.get_pipe("attribute_ruler").patterns)


def accelerate(nlp: Any) -> bool:
    """Put ``FastAttributeRuler`` in place of ``attribute_ruler``; False if not applicable."""
    if "attribute_ruler" not in nlp.pipe_names:
        return False
    try:
        FastAttributeRuler(nlp.get_pipe("attribute_ruler").patterns)
    except (ValueError, KeyError, TypeError):
        return False
    from spacy.language import Language

    if not Language.has_factory(FACTORY):
        Language.factory(FACTORY, func=_make)
    nlp.add_pipe(FACTORY, after="attribute_ruler")
    nlp.disable_pipe("attribute_ruler")
    return True
