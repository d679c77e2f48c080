"""P2 NER cascade: spaCy entities + regex rules + a participant gazetteer, then admission and dedup.

Design §3.2: no LLM on the write path; the model is backed by rules and every speaker/addressee is
always a person entity. Confidences (used by admission and by dedup's "keep the max"):

* gazetteer (participant name in text) 1.0; a capitalised PERSON/PROPN span that is an
  unambiguous ≥3-char prefix of one participant's first name ("Mel" -> "Melanie") 0.9;
* email / URL 0.95 (type ``other``, so they pass the 0.9 gate for ``other``);
* rule dates and measurements 0.9 (never admitted as entities; returned separately);
* spaCy entities 0.85 (so spaCy ``other`` labels such as NORP are gated out);
* a capitalised word addressed after a greeting ("Hey Jo!", "Thanks, Mell!") 0.75 as ``person``;
* quoted titles ("Becoming Nicole") 0.7 as ``work_of_art``; proper-noun runs no model labelled 0.6
  as ``other`` (dropped by strict admission unless they resolve to a participant).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from typing import Literal

from uniko_memory.nlp._ner_rules import (
    CALENDAR,
    GREETINGS,
    Gazetteer,
    canonical_key,
    normalize_entity_name,
    propn_runs,
    quoted_titles,
    structured_mentions,
    vocatives,
)
from uniko_memory.nlp.analysis import Analysis

__all__ = [
    "EntityCount",
    "EntityMention",
    "EntityType",
    "NerResult",
    "admit_entities",
    "canonical_key",
    "deduplicate",
    "extract",
    "extract_entities",
    "normalize_entity_name",
]

EntityType = Literal[
    "person", "organization", "location", "date", "product", "event", "work_of_art", "other", "measurement"
]

SPACY_LABELS: dict[str, EntityType] = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "location",
    "LOC": "location",
    "FAC": "location",
    "DATE": "date",
    "TIME": "date",
    "PRODUCT": "product",
    "EVENT": "event",
    "WORK_OF_ART": "work_of_art",
    "NORP": "other",
    "LANGUAGE": "other",
    "LAW": "other",
    "CARDINAL": "measurement",
    "ORDINAL": "measurement",
    "QUANTITY": "measurement",
    "MONEY": "measurement",
    "PERCENT": "measurement",
}
SPACY_CONFIDENCE = 0.85
OTHER_MIN_CONFIDENCE = 0.9
# Lower value wins when candidate spans overlap (structured rules beat the model, design §3.1).
_PRIORITY = {"gazetteer": 0, "rule:email": 1, "rule:url": 1, "rule:vocative": 2, "spacy": 3, "rule:quoted": 4,
             "rule:date": 5, "rule:measurement": 5, "rule:propn": 6}  # fmt: skip


@dataclass(frozen=True, slots=True)
class EntityMention:
    """One mention: ``name`` is the surface text, ``normalized`` the canonical display name."""

    name: str
    normalized: str
    entity_type: EntityType
    start: int
    end: int
    confidence: float
    source: str

    @property
    def key(self) -> str:
        return canonical_key(self.normalized)


@dataclass(frozen=True, slots=True)
class EntityCount:
    """A deduplicated entity: the max-confidence variant plus the number of mentions."""

    name: str
    key: str
    entity_type: EntityType
    confidence: float
    count: int
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NerResult:
    entities: list[EntityCount]
    mentions: list[EntityMention]
    dates: list[EntityMention]
    measurements: list[EntityMention]


def _mention(text: str, start: int, end: int, etype: EntityType, conf: float, source: str) -> EntityMention:
    surface = text[start:end]
    return EntityMention(surface, normalize_entity_name(surface), etype, start, end, conf, source)


def _candidates(analysis: Analysis, gazetteer: Gazetteer, reference: datetime) -> list[EntityMention]:
    text = analysis.text
    found = [_mention(text, s, e, "person", 1.0, "gazetteer") for s, e, _ in gazetteer.find(text)]
    for start, end, kind in structured_mentions(text, reference):
        etype: EntityType = "other" if kind in ("email", "url") else kind  # type: ignore[assignment]
        conf = 0.95 if etype == "other" else 0.9
        found.append(_mention(text, start, end, etype, conf, f"rule:{kind}"))
    found.extend(_mention(text, s, e, "person", 0.75, "rule:vocative") for s, e in vocatives(text))
    for ent in analysis.entities:
        etype = SPACY_LABELS.get(ent.label, "other")
        if etype not in ("date", "measurement") and not _plausible_name(
            analysis, ent.start_token, ent.end_token
        ):
            continue
        if etype == "person" and _placed(analysis, ent.end_token - 1):
            etype = "location"  # "a nice one in Rotterdam": nobody is *in* a person
        found.append(_mention(text, ent.start, ent.end, etype, SPACY_CONFIDENCE, "spacy"))
    found.extend(_mention(text, s, e, "work_of_art", 0.7, "rule:quoted") for s, e in quoted_titles(text))
    found.extend(_mention(text, s, e, "other", 0.6, "rule:propn") for s, e in propn_runs(analysis))
    return found


#: Prepositions whose object is a place, never a person ("in Rotterdam", "near Lyon").
_PLACE_PREPOSITIONS = frozenset({"in", "near", "outside", "across", "around", "throughout", "within"})


def _placed(analysis: Analysis, last: int) -> bool:
    """Whether the name ending at token ``last`` is the object of a place preposition."""
    tok = analysis.tokens[last]
    if tok.dep != "pobj" or not 0 <= tok.head < len(analysis.tokens):
        return False
    return analysis.tokens[tok.head].text.lower() in _PLACE_PREPOSITIONS


def _plausible_name(analysis: Analysis, start: int, end: int) -> bool:
    """Reject spaCy name spans with no capital letter ("the kids & work"), and spans without a
    proper noun that open a sentence ("Fingers crossed!", "Glad ...": capitalised by position only)."""
    span = analysis.tokens[start:end]
    if not any(ch.isupper() for t in span for ch in t.text):
        return False
    if any(t.pos == "PROPN" for t in span) or not any(t.pos for t in span):
        return True
    return all(start != s for s, _ in analysis.sentence_tokens)


def _select(found: list[EntityMention]) -> list[EntityMention]:
    """Non-overlapping mentions: by source priority, then longer span, then position."""
    found.sort(key=lambda m: (_PRIORITY.get(m.source, 9), m.start - m.end, m.start))
    chosen: list[EntityMention] = []
    for m in found:
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    chosen.sort(key=lambda m: m.start)
    return chosen


def _strip_greeting(m: EntityMention) -> EntityMention | None:
    """'Hey Mel' -> 'Mel'; a span made only of greeting words is not a person."""
    words = list(re.finditer(r"\S+", m.name))
    is_greeting = [w.group(0).casefold().strip(".,!?;:'\"") in GREETINGS for w in words]
    lead, trail = 0, len(words)
    while lead < trail and is_greeting[lead]:
        lead += 1
    while trail > lead and is_greeting[trail - 1]:
        trail -= 1
    if lead == trail:
        return None
    if lead == 0 and trail == len(words):
        return m
    lo, hi = words[lead].start(), words[trail - 1].end()
    surface = m.name[lo:hi]
    return replace(
        m, name=surface, normalized=normalize_entity_name(surface), start=m.start + lo, end=m.start + hi
    )


def _resolve(m: EntityMention, gazetteer: Gazetteer) -> EntityMention:
    """Map a mention onto a participant (exact name, first name or unambiguous prefix)."""
    if m.source == "gazetteer":
        return replace(m, normalized=gazetteer.canonical(m.normalized) or m.normalized)
    exact = gazetteer.canonical(m.normalized)
    if exact is not None:
        return replace(m, normalized=exact, entity_type="person", confidence=max(m.confidence, 1.0))
    if m.entity_type in ("person", "other") and m.normalized[:1].isupper():
        prefix = gazetteer.by_prefix(m.normalized)
        if prefix is not None:
            return replace(m, normalized=prefix, entity_type="person", confidence=max(m.confidence, 0.9))
    return m


def admit_entities(mentions: Iterable[EntityMention], *, strict: bool = True) -> list[EntityMention]:
    """Design §3.2 admission: no dates/measurements, no greeting-only persons, no single characters
    or pure numbers, and (strict) ``other`` only at confidence ≥ 0.9."""
    admitted: list[EntityMention] = []
    for m in mentions:
        if m.entity_type in ("date", "measurement"):
            continue
        if m.entity_type == "person":
            stripped = _strip_greeting(m)
            if stripped is None:
                continue
            m = stripped
        words = [w.strip(".,!?;:'\"") for w in m.normalized.casefold().split()]
        if all(w in GREETINGS or w in CALENDAR for w in words):
            continue
        core = m.normalized.replace(" ", "")
        if len(core) < 2 or not any(ch.isalpha() for ch in core):
            continue
        if strict and m.entity_type == "other" and m.confidence < OTHER_MIN_CONFIDENCE:
            continue
        admitted.append(m)
    return admitted


def deduplicate(mentions: Iterable[EntityMention]) -> list[EntityCount]:
    """Merge by (canonical key, type): keep the max-confidence name, sum the mentions."""
    merged: dict[tuple[str, str], EntityCount] = {}
    for m in mentions:
        k = (m.key, m.entity_type)
        prev = merged.get(k)
        if prev is None:
            merged[k] = EntityCount(m.normalized, m.key, m.entity_type, m.confidence, 1, (m.source,))
            continue
        best = m.normalized if m.confidence > prev.confidence else prev.name
        sources = prev.sources if m.source in prev.sources else (*prev.sources, m.source)
        merged[k] = EntityCount(best, prev.key, prev.entity_type, max(prev.confidence, m.confidence),
                                prev.count + 1, sources)  # fmt: skip
    return list(merged.values())


@lru_cache(maxsize=64)
def _gazetteer(participants: tuple[str, ...]) -> Gazetteer:
    """Built once per participant list (a chat's turns and questions share it); read-only."""
    return Gazetteer(participants)


def extract(
    analysis: Analysis,
    participants: Sequence[str] = (),
    *,
    reference: datetime | None = None,
    strict: bool = True,
) -> NerResult:
    """Run the whole cascade; ``reference`` only anchors rule date detection (default: now)."""
    gazetteer = _gazetteer(tuple(participants))
    chosen = _select(_candidates(analysis, gazetteer, reference or datetime.now(UTC)))
    resolved = [_resolve(m, gazetteer) for m in chosen]
    admitted = admit_entities(resolved, strict=strict)
    dates = [m for m in resolved if m.entity_type == "date"]
    measurements = [m for m in resolved if m.entity_type == "measurement"]
    return NerResult(deduplicate(admitted), admitted, dates, measurements)


def extract_entities(
    analysis: Analysis,
    participants: Sequence[str] = (),
    *,
    reference: datetime | None = None,
    strict: bool = True,
) -> list[EntityMention]:
    """Admitted entity mentions, in text order, with participant names resolved."""
    return extract(analysis, participants, reference=reference, strict=strict).mentions
