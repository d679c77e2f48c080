"""Temporal resolver: turn "yesterday", "last May", "two weekends ago" into absolute windows.

Recall filters by ``[lo, hi)`` windows (design §7.2) and P3 rewrites relative phrases into
absolute text (design §3.3), so a phrase that cannot be resolved unambiguously yields nothing
rather than a guessed window. The rules live in ``_temporal_rules.py``; the choices are:

* all calendar arithmetic is in UTC; naive datetimes are taken as UTC;
* weeks run Monday–Sunday; a weekend is that week's Saturday–Sunday (granularity ``week``);
* ``last <weekday>`` / ``on <weekday>``: the most recent such day strictly before the reference day;
  ``next <weekday>``: the first one strictly after it; ``this <weekday>``: the one in this week;
  ``on <weekday>`` and ``in <month|season>`` look forward instead when the clause is future-marked
  ("I'll", "will", "going to", "next", ...);
* ``last May``: the most recent May before the reference month; ``in May``: the most recent May
  up to and including the reference month; a day without a year ("May 7th"): the nearest occurrence;
* ``N weeks/months/years ago``: the week/month/year containing that point; ``a`` = 1, ``a couple
  (of)`` = 2, ``a few`` = 3; numeric dates ``05/07/2023`` are US order (month/day/year);
* seasons are northern-hemisphere meteorological (spring = Mar–May, ..., winter = Dec–Feb, named by
  the year of its December); ``last summer`` = the latest summer before the current season;
* vague phrases ("recently", "lately", "the other day", "several weeks ago") and bare month words
  without context ("May I ask", "march on") are never matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from uniko_memory.errors import ValidationError
from uniko_memory.nlp._temporal_rules import (
    RULES,
    Granularity,
    is_future_context,
    is_past_context,
    needs_direction,
)

__all__ = [
    "Granularity",
    "TemporalMatch",
    "TemporalWindow",
    "absolute_phrase",
    "find_temporal_phrases",
    "format_window",
    "resolve_temporal",
    "rewrite_temporal",
]

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")  # fmt: skip
_SEASON_NAMES = {3: "spring", 6: "summer", 9: "fall", 12: "winter"}
_SPECIFICITY = {"day": 0, "week": 1, "month": 2, "season": 3, "year": 4}
# A window after these words is an open bound ("since May"), not the period the query asks about.
_OPEN_BOUND = re.compile(r"\b(?:since|until|till|before|after|by|from|to|through)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TemporalWindow:
    """A half-open UTC window ``[lo, hi)`` with the granularity and the phrase that produced it."""

    lo: datetime
    hi: datetime
    granularity: Granularity
    phrase: str

    def __post_init__(self) -> None:
        if self.lo.tzinfo is None or self.hi.tzinfo is None:
            raise ValidationError("TemporalWindow bounds must be timezone-aware")
        if self.lo >= self.hi:
            raise ValidationError(f"empty temporal window [{self.lo}, {self.hi})")

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (naive = UTC) falls inside the window."""
        return self.lo <= _as_utc(moment) < self.hi

    def overlaps(self, lo: datetime, hi: datetime) -> bool:
        """Whether ``[lo, hi)`` (naive = UTC) intersects the window."""
        return _as_utc(lo) < self.hi and self.lo < _as_utc(hi)


@dataclass(frozen=True, slots=True)
class TemporalMatch:
    """One temporal phrase found in text: its character span ``[start, end)`` and window."""

    start: int
    end: int
    phrase: str
    window: TemporalWindow


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _midnight(d: date) -> datetime:
    return datetime.combine(d, time(0), tzinfo=UTC)


def find_temporal_phrases(text: str, reference: datetime, *, strict: bool = False) -> list[TemporalMatch]:
    """Every resolvable temporal phrase in ``text``, left to right, without overlaps.

    When rules overlap, the longest span wins ("the day before yesterday" over "yesterday",
    "in May 2023" over "in May"). ``strict`` is for text that states a date to a reader (a note
    in a quoted turn, a statement): a phrase that does not say which way it points ("Twelve years
    in September", "See you on Friday!") names none there. A question's window (``strict`` off)
    still reads it, the nearest past one first: a guess that only steers a search.
    """
    if not text:
        return []
    ref_day = _as_utc(reference).date()
    # A phrase that matched but cannot be resolved ("31 February 2023", "winter 2022") stays in
    # the candidate list as a blocker, so a shorter rule cannot read a wrong window out of it.
    candidates: list[tuple[int, int, TemporalWindow | None]] = []
    present: dict[re.Pattern[str], bool] = {}
    for pattern, resolver, cue in RULES:
        if cue is not None:
            if cue not in present:
                present[cue] = cue.search(text) is not None
            if not present[cue]:
                continue
        for m in pattern.finditer(text):
            future = is_future_context(text, m.start())
            try:
                span = resolver(m, ref_day, future)
            except (ValueError, OverflowError):  # out-of-range dates (year 1, year 9999)
                span = None
            if (
                strict
                and span is not None
                and not future
                and needs_direction(resolver)
                and not (span[0] <= ref_day < span[1])  # this very month or day: no direction needed
                and not is_past_context(text, m.start(), m.end())
            ):
                span = None  # a blocker: no shorter rule reads a date out of it either
            window = None
            if span is not None:
                lo, hi, gran = span
                window = TemporalWindow(_midnight(lo), _midnight(hi), gran, m.group(0))
            candidates.append((m.start(), m.end(), window))
    candidates.sort(key=lambda c: (c[0] - c[1], c[0]))
    chosen: list[tuple[int, int, TemporalWindow | None]] = []
    for start, end, window in candidates:
        if all(end <= s or start >= e for s, e, _ in chosen):
            chosen.append((start, end, window))
    chosen.sort(key=lambda c: c[0])
    return [TemporalMatch(s, e, w.phrase, w) for s, e, w in chosen if w is not None]


def resolve_temporal(text: str, reference: datetime) -> TemporalWindow | None:
    """The most specific window in ``text`` (earliest on ties), or None.

    Phrases used as open bounds ("since May", "before 2020") are skipped: their window is not
    the period being asked about.
    """
    matches = [m for m in find_temporal_phrases(text, reference) if not _OPEN_BOUND.search(text, 0, m.start)]
    if not matches:
        return None
    return min(matches, key=lambda m: (_SPECIFICITY[m.window.granularity], m.start)).window


def _day_text(d: date) -> str:
    return f"{d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"


def format_window(window: TemporalWindow) -> str:
    """Absolute text: "7 May 2023", "the week of 1 May 2023", "the weekend of 6 May 2023",
    "May 2023", "summer 2023", "winter 2022/23", "2023"."""
    lo = window.lo.astimezone(UTC).date()
    gran = window.granularity
    if gran == "day":
        return _day_text(lo)
    if gran == "week":
        hi = window.hi.astimezone(UTC).date()
        if lo.weekday() == 5 and (hi - lo) == timedelta(days=2):
            return f"the weekend of {_day_text(lo)}"
        return f"the week of {_day_text(lo)}"
    if gran == "month":
        return f"{_MONTH_NAMES[lo.month - 1]} {lo.year}"
    if gran == "season":
        name = _SEASON_NAMES.get(lo.month, "season")
        return f"winter {lo.year}/{(lo.year + 1) % 100:02d}" if name == "winter" else f"{name} {lo.year}"
    return str(lo.year)


def absolute_phrase(window: TemporalWindow) -> str:
    """``format_window`` with the preposition a sentence needs: "on 7 May 2023", "in May 2023"."""
    text = format_window(window)
    if window.granularity == "day":
        return f"on {text}"
    if window.granularity == "week":
        return f"during {text}"
    return f"in {text}"


_LEADING_PREP = re.compile(
    r"\b(?:since|until|till|before|after|by|from|to|through|of|during|in|on|for|at|around|about)\s*$",
    re.IGNORECASE,
)


def rewrite_temporal(text: str, reference: datetime) -> str:
    """Replace every relative phrase with absolute text ("yesterday" -> "on 7 May 2023").

    After a preposition already in the text ("since last May") only the bare date is inserted.
    """
    out: list[str] = []
    pos = 0
    for m in find_temporal_phrases(text, reference, strict=True):
        before = text[pos : m.start]
        bare = _LEADING_PREP.search(text, 0, m.start) is not None
        out.append(before)
        new = format_window(m.window) if bare else absolute_phrase(m.window)
        out.append(new[:1].upper() + new[1:] if m.phrase[:1].isupper() else new)
        pos = m.end
    out.append(text[pos:])
    return "".join(out)
