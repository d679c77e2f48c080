"""Data types of P3 observation extraction: drafts, antecedents and the cross-turn pronoun state.

Re-exported by :mod:`uniko_memory.nlp.observations`; kept apart so the rule modules can use them
without an import cycle, and so a caller that only stores drafts need not load the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from uniko_memory.nlp.temporal import TemporalWindow

__all__ = [
    "Antecedent",
    "AntecedentKind",
    "Gender",
    "ObservationDraft",
    "PronounState",
    "known",
    "unambiguous",
]

AntecedentKind = Literal["person", "thing", "plural"]
Gender = Literal["f", "m"] | None


@dataclass(slots=True)
class ObservationDraft:
    """One third-person statement extracted from a turn, before it is stored as an Observation.

    ``content`` is a grammatical third-person sentence with pronouns resolved and relative dates
    made absolute; ``subject`` / ``predicate`` / ``object`` is its triple (``predicate`` is a
    snake_case, lemma-based key, ``object`` has its articles stripped); ``temporal_phrase`` is the
    phrase as said ("yesterday") and ``anchor`` its absolute window; ``entities`` are the
    normalized names the statement is ABOUT; ``sentence`` is the source sentence.
    """

    content: str
    subject: str
    predicate: str
    object: str | None
    temporal_phrase: str | None
    anchor: TemporalWindow | None
    entities: list[str]
    sentence: str
    confidence: float


@dataclass(frozen=True, slots=True)
class Antecedent:
    """Something a later third-person pronoun can point to.

    ``text`` is how it is rendered in place of the pronoun ("Caroline's sister", "the LGBTQ
    support group"); ``entity`` is its normalized entity name when it is a named person/thing;
    ``human`` marks people (also plural ones: "my kids"); ``rank`` is its salience from its
    grammatical role (subject 3, object 2, prepositional object 1); ``tick`` the sentence
    counter of :class:`PronounState` when it was last mentioned. ``unknown`` marks a pronoun
    that could not be resolved ("Is it near the station?"): it stays the most salient referent
    of its sentence, so a later "it" that would land on it resolves to nothing, not to the
    station.
    """

    text: str
    kind: AntecedentKind
    entity: str | None = None
    gender: Gender = None
    human: bool = False
    rank: int = 0
    tick: int = 0
    unknown: bool = False


def known(antecedent: Antecedent | None) -> Antecedent | None:
    """``antecedent`` unless it is an unresolved pronoun's placeholder (then None: abstain)."""
    return None if antecedent is None or antecedent.unknown else antecedent


def unambiguous(candidates: list[Antecedent], gender: Gender) -> Antecedent | None:
    """The one person a he / she can mean among equally recent ``candidates``, or None.

    Several people (or a person and a pet) mentioned together leave "she" open ("My roommate got a
    cat. She hides under the sofa"): the statement is better not made than made about the wrong
    one. A gender that only one of them has settles it ("My mum took my son ... she").
    """
    distinct = list({a.text.lower(): a for a in candidates}.values())
    if len(distinct) == 1:
        return known(distinct[0])
    if gender is not None:
        exact = [a for a in distinct if a.gender == gender]
        if len(exact) == 1:
            return known(exact[0])
    return None


@dataclass(slots=True)
class PronounState:
    """Recent third-person antecedents of one session, newest last.

    Carry one instance across the sentences and turns of a session; every analysed sentence
    updates it (and advances ``tick``), including sentences that yield no observation
    (questions, fillers). Antecedents expire: a person after ``person_window`` sentences, a
    thing or plural after ``thing_window`` sentences ("it" rarely reaches further back).
    """

    recent: list[Antecedent] = field(default_factory=list)
    tick: int = 0
    max_items: int = 8
    person_window: int = 6
    thing_window: int = 2

    def note(self, antecedent: Antecedent) -> None:
        """Make ``antecedent`` the most recent one (moving it up if already known)."""
        antecedent = replace(antecedent, tick=self.tick)
        key = (antecedent.text.lower(), antecedent.kind)  # a pet is noted as a thing and as a "she"
        self.recent = [a for a in self.recent if (a.text.lower(), a.kind) != key]
        self.recent.append(antecedent)
        if len(self.recent) > self.max_items:
            del self.recent[: len(self.recent) - self.max_items]

    def advance(self) -> None:
        """Mark the end of one sentence."""
        self.tick += 1

    def resolve(
        self, kind: AntecedentKind, gender: Gender = None, *, human_only: bool = False
    ) -> Antecedent | None:
        """The most salient live antecedent of ``kind`` whose gender does not contradict
        ``gender``: the latest sentence first, then subject over object over the rest, then the
        later mention. ``human_only`` keeps only people."""
        window = self.person_window if kind == "person" else self.thing_window
        live: list[tuple[tuple[int, int, int], Antecedent]] = []
        for order, antecedent in enumerate(self.recent):
            if antecedent.kind != kind or self.tick - antecedent.tick > window:
                continue
            if gender is not None and antecedent.gender is not None and antecedent.gender != gender:
                continue
            if human_only and not antecedent.human:
                continue
            live.append(((antecedent.tick, antecedent.rank, order), antecedent))
        if not live:
            return None
        if kind == "person":
            newest = max(key[0] for key, _ in live)
            return unambiguous([a for key, a in live if key[0] == newest], gender)
        return known(max(live, key=lambda pair: pair[0])[1])

    @property
    def person(self) -> Antecedent | None:
        """The last singular person mentioned."""
        return self.resolve("person")

    @property
    def thing(self) -> Antecedent | None:
        """The last singular non-person thing mentioned."""
        return self.resolve("thing")

    def clear(self) -> None:
        """Forget every antecedent (start of a new session)."""
        self.recent.clear()
        self.tick = 0
