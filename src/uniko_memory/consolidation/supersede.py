"""Supersession: a newer value of the same attribute replaces the older one.

The cycle's contradiction rule (``plan``) compares votes of one (subject, predicate) group, so
"lives in Paris" and "moved to Lyon" never met. This step keys statements by *slot*
(``consolidation.slots``: where Maya lives, when Leo's visit is) and by *cessation* ("does not
drink coffee anymore" ends "loves a strong coffee"), and decides, without I/O:

- within a slot, in the order things were said, a value different from the one holding closes
  the holder at the time of the change (for a preference, only when the newer statement says it
  changed: "switched to tea"); the value said last is never closed;
- a statement that something stopped closes the open statements of its subject about that thing.

The closed Fact keeps its provenance and gets ``valid_to``, ``superseded_by`` and a SUPERSEDED_BY
edge to the Fact that replaced it; its Observations are marked ``superseded_at`` so recall can say
so. Nothing is deleted: a question about the past still finds the old value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from ..model import Fact, normalize_key
from .plan import Vote, subject_key
from .slots import SlotReading

#: ``Fact.invalidation_reason`` of a Fact a newer value of its slot replaced.
SUPERSEDED = "superseded"
#: ``Fact.invalidation_reason`` of a Fact a later "no longer" / "stopped" statement ended.
STOPPED = "stopped"
#: Slots whose attribute is a preference: replaced only by a statement that says it changed.
PREFERENCE_ATTRIBUTES = frozenset({"drink"})


@dataclass(frozen=True)
class Entry:
    """One statement in a slot: when it was said, the Fact it supports, its reading."""

    at: datetime
    fact: str
    reading: SlotReading
    change_cue: bool = False
    #: When the change it states took effect (an event dated earlier than it was said).
    effective: datetime | None = None


@dataclass(frozen=True)
class Supersession:
    old: str
    new: str
    at: datetime
    reason: str


def reading_of(fact: Fact) -> SlotReading | None:
    """The slot reading a stored Fact carries (None without one)."""
    if not fact.slot or not fact.slot_value or "/" not in fact.slot:
        return None
    attribute, subject = fact.slot.split("/", 1)
    owner, _, detail = (fact.slot_event or "|").partition("|")
    return SlotReading(
        attribute,
        subject,
        fact.slot_value,
        owner=owner,
        detail=detail,
        functional=attribute not in PREFERENCE_ATTRIBUTES,
    )


def _change_time(effective: datetime | None, said: datetime, old_start: datetime) -> datetime:
    """When the old value stopped holding: the dated change ("moved last week") when that falls
    after the old value was stated, else when the change was said (never an empty interval)."""
    if effective is not None and effective > old_start:
        return effective
    return said


def _threads(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Entries of one slot split by event: Leo's visit and Ana's visit are two threads; an entry
    that names no owner (or no detail) joins the one thread it fits, or stands alone."""
    named: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    vague: list[Entry] = []
    for e in entries:
        r = e.reading
        if r.attribute != "date" or (r.owner and r.detail) or (not r.owner and not r.detail):
            named[(r.owner, r.detail)].append(e)
        else:
            vague.append(e)
    for e in vague:
        r = e.reading
        fits = [
            k
            for k in named
            if (not r.owner or k[0] in ("", r.owner)) and (not r.detail or k[1] in ("", r.detail))
        ]
        named[fits[0] if len(fits) == 1 else (r.owner, r.detail)].append(e)
    # The bare event ("the wedding") joins a single named thread of its kind.
    bare = named.pop(("", ""), [])
    if bare and len(named) == 1:
        next(iter(named.values())).extend(bare)
    elif bare:
        named[("", "")] = bare
    return list(named.values())


def _walk(thread: Sequence[Entry]) -> list[Supersession]:
    ordered = sorted(thread, key=lambda e: (e.at, e.fact))
    final = ordered[-1].reading.value
    out: list[Supersession] = []
    holders: dict[str, Entry] = {}  # fact -> its latest entry, for facts holding the current value
    current: str | None = None
    for e in ordered:
        r = e.reading
        if current is not None and r.value != current and (r.functional or e.change_cue):
            for fact, held in holders.items():
                if held.reading.value != final and fact != e.fact and held.at < e.at:
                    at = _change_time(e.effective, e.at, held.at)
                    out.append(Supersession(fact, e.fact, at, SUPERSEDED))
            holders = {}
        if current is None or (r.value != current and (r.functional or e.change_cue)):
            current = r.value
        holders[e.fact] = e
    return out


def slot_supersessions(entries: Iterable[Entry]) -> list[Supersession]:
    """Every replacement among ``entries`` (this cycle's and the open Facts already stored)."""
    by_slot: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_slot[e.reading.key].append(e)
    out: list[Supersession] = []
    for key in sorted(by_slot):
        for thread in _threads(by_slot[key]):
            out += _walk(thread)
    return out


def _object_words(fact: Fact) -> set[str]:
    return set(normalize_key(fact.object).split())


def cessation_supersessions(
    stops: Sequence[tuple[Vote, str, str]], open_facts: Mapping[str, Fact], effective: Mapping[int, datetime]
) -> list[Supersession]:
    """``stops``: (vote, the thing that stopped, the vote's Fact). Each closes the open Facts of the
    same subject that were said before it, are not themselves negative, and hold that thing."""
    out = []
    for vote, head, by in stops:
        key = subject_key(vote.subject)
        for fact in open_facts.values():
            if fact.id == by or fact.subject_key != key or fact.valid_from >= vote.at:
                continue
            if "not" in fact.predicate.split("_") or head not in _object_words(fact):
                continue
            out.append(
                Supersession(
                    fact.id, by, _change_time(effective.get(id(vote)), vote.at, fact.valid_from), STOPPED
                )
            )
    return out


def merge(found: Iterable[Supersession]) -> dict[str, Supersession]:
    """One replacement per old Fact: the earliest (the value stopped holding then)."""
    out: dict[str, Supersession] = {}
    for s in found:
        if s.old == s.new:
            continue
        if s.old not in out or (s.at, s.new) < (out[s.old].at, out[s.old].new):
            out[s.old] = s
    return out
