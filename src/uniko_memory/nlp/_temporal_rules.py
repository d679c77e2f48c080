"""Rule table for the temporal resolver: one regex plus one resolver per phrase family.

Kept separate from ``temporal.py`` so the public types stay small and the table can grow.
Every resolver works on calendar dates (UTC) and returns ``(lo, hi, granularity)`` or
``None`` when the phrase is ambiguous or invalid (never a guessed window).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Literal

from dateutil.relativedelta import relativedelta

Granularity = Literal["day", "week", "month", "season", "year"]
Span = tuple[date, date, Granularity]
Resolver = Callable[[re.Match[str], date, bool], Span | None]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
SEASONS = {"spring": 0, "summer": 1, "fall": 2, "autumn": 2, "winter": 3}
_SEASON_START = (3, 6, 9, 12)
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple": 2, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}  # fmt: skip

# "May" and "March" (and abbreviations) are ordinary words too, so they only count capitalised.
_MON = (
    r"(?P<mon>(?:january|february|april|june|july|august|september|october|november|december"
    r"|(?-i:March|May))\b|(?-i:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\b(?:\.(?=\s*\d))?)"
)
# "Tuesdays" and "Tuesday evenings" are habits, not one day: no date.
_WD = (
    r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?!s)"
    r"(?!\s+(?:mornings|afternoons|evenings|nights)\b)"
)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_SEASON = r"(?P<season>spring|summer|fall|autumn|winter)"
_NUM = (
    r"(?P<n>\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|an?)"
)
_PART = r"(?:early\s+|mid-?\s*|late\s+|(?:the\s+)?(?:beginning|start|end|middle)\s+of\s+)"
_REL = r"(?P<rel>last|this\s+past|past|this\s+coming|coming|this|next)"
# "the last week of May", "the last Friday of the month" name a part of another period.
_NOT_PART_OF = r"(?!\s+(?:of|in)\b)"
_NOT_UNIT = r"(?!\s*(?:%|percent|people|persons|steps|miles|km|kilometers|meters|metres|words|pages|dollars|euros|times|points|calories|feet|pounds|kg|lbs?)\b)"
_FUTURE = re.compile(
    r"\b(?:will|shall|gonna|going\s+to|plan(?:s|ning|ned)?\s+(?:to|on)|hop(?:e|es|ing)\s+to|can(?:no|')t\s+wait"
    r"|looking\s+forward|upcoming|next|goals?\s+(?:is|are)\s+to|aim(?:s|ing)?\s+to|(?<!was\s)(?<!were\s)(?:aiming|training|preparing)\s+for|wants?\s+to|wanna"
    r"|intend(?:s|ing)?\s+to|about\s+to"
    # a present progressive or a timetable verb with a date is an arrangement: "is getting married in
    # April", "the class starts in October", "we're moving to Hamburg in June"
    r"|(?:am|is|are)\s+(?:\w+\s+)?(?!been\b)\w+ing|starts?|begins?|opens?|ends?|finish(?:es)?|closes?|kicks?\s+off|is\s+due)\b"
    r"|['’](?:ll|m\s+(?:\w+\s+)?(?!been\b)\w+ing|re\s+(?:\w+\s+)?(?!been\b)\w+ing)\b"
    # "she's visiting us in November" (after a pronoun only: "Tom's wedding in June" is a possessive)
    r"|\b(?:he|she|it|who|that)['’]s\s+(?:\w+\s+)?(?!been\b)\w+ing\b",
    re.IGNORECASE,
)


# A date something was moved to, or that an arrangement "is" on, lies ahead: "the visit moved to
# 19 July", "the party is on Friday", "postponed until March".
_FORWARD = re.compile(
    r"\b(?:(?:moved|postponed|rescheduled|pushed(?:\s+back)?|changed|brought\s+forward|put\s+off|delayed"
    r"|set|scheduled|booked|planned|pencilled\s+in|penciled\s+in)\s+(?:it\s+|back\s+)?(?:to|until|till|for)"
    r"|(?:is|are|it['’]s|will\s+be)(?:\s+(?:now|still|actually|definitely))?)\s+(?:on\s+|in\s+|for\s+)?$"
    # what a booking is for lies ahead: "we've booked Kea Lodge for three nights in August"
    r"|\b(?:booked|reserved)\b[^.!?;]*?\bfor\b[^.!?;]*$",
    re.IGNORECASE,
)


# A past tense or "ago" in the clause: a bare "in May" / "on Friday" there looks back. An
# "-ed" word after a copula is an adjective ("I'm stressed"), not a past tense.
_PAST = re.compile(
    r"\b(?:was|were|did|had|went|came|got|saw|made|took|met|left|ran|began|bought|brought|told|said"
    r"|found|gave|felt|knew|thought|spent|sent|won|lost|wrote|flew|drove|ate|sat|kept|held|heard"
    r"|paid|sold|caught|ago|yesterday|last)\b"
    r"|(?<!\bam\s)(?<!\bis\s)(?<!\bare\s)(?<!\bbe\s)(?<!['’]m\s)(?<!['’]s\s)(?<!['’]re\s)\b[a-z]{2,}ed\b",
    re.IGNORECASE,
)


def clause_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause around ``text[start:end]``: from the last sentence stop or comma before it to
    the next sentence stop after it (a fronted "In May, we adopted a cat" reads on past its comma)."""
    lo = max(text.rfind(ch, 0, start) for ch in ".!?;,\n") + 1
    his = [i for i in (text.find(ch, end) for ch in ".!?;\n") if i >= 0]
    return lo, min(his, default=len(text))


def is_past_context(text: str, start: int, end: int) -> bool:
    """Whether the clause around ``text[start:end]`` is in the past ("I moved to Lyon in March",
    "the concert on Friday was amazing")."""
    lo, hi = clause_span(text, start, end)
    return bool(_PAST.search(text[lo:start]) or _PAST.search(text[end:hi]))


def is_future_context(text: str, start: int) -> bool:
    """Whether the clause before ``start`` is future-marked ("I'll go on Friday", "the party is
    on Friday", "the visit moved to 19 July")."""
    clause_start = max(text.rfind(ch, 0, start) for ch in ".!?;\n") + 1
    return bool(_FUTURE.search(text, clause_start, start) or _FORWARD.search(text[clause_start:start]))


def _rel(m: re.Match[str]) -> str:
    """Normalise the relative word: 'past'/'this past' mean last, 'coming' means next."""
    rel = " ".join(m.group("rel").lower().split())
    return {"this past": "last", "past": "last", "this coming": "next", "coming": "next"}.get(rel, rel)


def _num(raw: str) -> int:
    raw = " ".join(raw.lower().split())
    return int(raw) if raw.isdigit() else NUMBER_WORDS[raw]


def _month_no(raw: str) -> int:
    return MONTHS[raw.lower().rstrip(".")]


def day_span(d: date) -> Span:
    return (d, d + timedelta(days=1), "day")


def week_span(d: date) -> Span:
    monday = d - timedelta(days=d.weekday())
    return (monday, monday + timedelta(days=7), "week")


def weekend_span(d: date) -> Span:
    """Saturday and Sunday of the Monday-start week containing ``d`` (granularity week)."""
    saturday = d - timedelta(days=d.weekday()) + timedelta(days=5)
    return (saturday, saturday + timedelta(days=2), "week")


def month_span(year: int, month: int) -> Span:
    lo = date(year, month, 1)
    return (lo, lo + relativedelta(months=1), "month")


def year_span(year: int) -> Span:
    return (date(year, 1, 1), date(year + 1, 1, 1), "year")


def season_span(kind: int, year: int) -> Span:
    """Meteorological northern-hemisphere season; winter ``year`` is the year of its December."""
    lo = date(year, _SEASON_START[kind], 1)
    return (lo, lo + relativedelta(months=3), "season")


def _current_season(d: date) -> tuple[int, int]:
    if d.month == 12:
        return d.year, 3
    if d.month <= 2:
        return d.year - 1, 3
    return d.year, (d.month - 3) // 3


# --- resolvers -------------------------------------------------------------------------------


def _relative_day(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    word = " ".join(m.group(0).lower().split())
    offsets = {"the day before yesterday": -2, "the day after tomorrow": 2, "yesterday": -1,
               "last night": -1, "tomorrow": 1}  # fmt: skip
    return day_span(ref + timedelta(days=offsets.get(word, 0)))


def _ago(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    n, unit = _num(m.group("n")), m.group("unit").lower()
    if unit == "day":
        return day_span(ref - timedelta(days=n))
    if unit == "week":
        return week_span(ref - timedelta(weeks=n))
    if unit == "weekend":
        return weekend_span(ref - timedelta(weeks=n))
    if unit == "month":
        back = ref - relativedelta(months=n)
        return month_span(back.year, back.month)
    return year_span(ref.year - n)


def _rel_unit(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    if " ".join(m.group("rel").lower().split()) == "past":
        return None  # "the past week" is the last 7 days, not the previous calendar week
    step = {"last": -1, "this": 0, "next": 1}[_rel(m)]
    return _unit_offset(m.group("unit").lower(), ref, step)


def _before_last(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    return _unit_offset(m.group("unit").lower(), ref, -2)


def _unit_offset(unit: str, ref: date, step: int) -> Span:
    if unit == "week":
        return week_span(ref + timedelta(weeks=step))
    if unit == "weekend":
        return weekend_span(ref + timedelta(weeks=step))
    if unit == "month":
        d = ref + relativedelta(months=step)
        return month_span(d.year, d.month)
    return year_span(ref.year + step)


def _earlier_later(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    """'earlier this month' = [start of month, today]; 'later this month' = (today, end of month)."""
    lo, hi, gran = _unit_offset(m.group("unit").lower(), ref, 0)
    if m.group("dir").lower() == "earlier":
        return (lo, ref + timedelta(days=1), gran)
    return (ref + timedelta(days=1), hi, gran) if ref + timedelta(days=1) < hi else None


def _rel_weekday(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    """last = most recent strictly before today; next = first strictly after; this = in this week."""
    wd, rel = WEEKDAYS.index(m.group("wd").lower()), _rel(m)
    if rel == "last":
        return day_span(ref - timedelta(days=(ref.weekday() - wd - 1) % 7 + 1))
    if rel == "next":
        return day_span(ref + timedelta(days=(wd - ref.weekday() - 1) % 7 + 1))
    return day_span(ref + timedelta(days=wd - ref.weekday()))


def _weekday_of_week(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    step = {"last": -1, "this": 0, "next": 1}[_rel(m)]
    monday = ref - timedelta(days=ref.weekday()) + timedelta(weeks=step)
    return day_span(monday + timedelta(days=WEEKDAYS.index(m.group("wd").lower())))


def _on_weekday(m: re.Match[str], ref: date, future: bool) -> Span | None:
    """'on Friday': the most recent past Friday, or the next one when the clause is future-marked."""
    wd = WEEKDAYS.index(m.group("wd").lower())
    if future:
        return day_span(ref + timedelta(days=(wd - ref.weekday() - 1) % 7 + 1))
    return day_span(ref - timedelta(days=(ref.weekday() - wd - 1) % 7 + 1))


def _rel_month(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    """last May = most recent May before the reference month; next May = first after it."""
    mon, rel = _month_no(m.group("mon")), _rel(m)
    if rel == "last":
        return month_span(ref.year if mon < ref.month else ref.year - 1, mon)
    if rel == "next":
        return month_span(ref.year if mon > ref.month else ref.year + 1, mon)
    return month_span(ref.year, mon)


#: Rules whose phrase alone does not say which way it points ("in May", "on Friday"): with no
#: future or past mark in their clause they name no date ("Twelve years in September", "See you
#: on Friday!"), so no wrong one is written.
def needs_direction(resolver: Resolver) -> bool:
    return resolver in (_in_month, _on_weekday)


def _in_month(m: re.Match[str], ref: date, future: bool) -> Span | None:
    """'in May': the most recent May up to and including the reference month (next one if future)."""
    mon = _month_no(m.group("mon"))
    if future:
        return month_span(ref.year if mon >= ref.month else ref.year + 1, mon)
    return month_span(ref.year if mon <= ref.month else ref.year - 1, mon)


def _month_year(m: re.Match[str], _ref: date, _future: bool) -> Span | None:
    return month_span(int(m.group("year")), _month_no(m.group("mon")))


def _iso_month(m: re.Match[str], _ref: date, _future: bool) -> Span | None:
    month = int(m.group("month"))
    return month_span(int(m.group("year")), month) if 1 <= month <= 12 else None


def _full_date(m: re.Match[str], _ref: date, _future: bool) -> Span | None:
    groups = m.groupdict()
    month = int(groups["month"]) if groups.get("month") else _month_no(groups["mon"])
    try:
        return day_span(date(int(groups["year"]), month, int(groups["day"])))
    except ValueError:
        return None


def _day_month(m: re.Match[str], ref: date, future: bool) -> Span | None:
    """A date without a year: the occurrence nearest to the reference (within half a year); in a
    future-marked clause ("the wedding moved to 14 September"), the first one from the reference on."""
    mon, day = _month_no(m.group("mon")), int(m.group("day"))
    best: date | None = None
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            cand = date(year, mon, day)
        except ValueError:
            continue
        if future and cand < ref:
            continue
        if best is None or abs((cand - ref).days) < abs((best - ref).days):
            best = cand
    return day_span(best) if best else None


def _year(m: re.Match[str], _ref: date, _future: bool) -> Span | None:
    return year_span(int(m.group("year")))


def _rel_season(m: re.Match[str], ref: date, _future: bool) -> Span | None:
    """last/next = the nearest occurrence strictly before/after the current season; this = this year's."""
    kind, rel = SEASONS[m.group("season").lower()], _rel(m)
    cy, ck = _current_season(ref)
    if rel == "last":
        return season_span(kind, cy if kind < ck else cy - 1)
    if rel == "next":
        return season_span(kind, cy if kind > ck else cy + 1)
    if kind == 3:
        return season_span(3, cy if ck == 3 else ref.year)
    return season_span(kind, ref.year)


def _in_season(m: re.Match[str], ref: date, future: bool) -> Span | None:
    kind = SEASONS[m.group("season").lower()]
    cy, ck = _current_season(ref)
    if future:
        return season_span(kind, cy if kind >= ck else cy + 1)
    return season_span(kind, cy if kind <= ck else cy - 1)


def _season_year(m: re.Match[str], _ref: date, _future: bool) -> Span | None:
    """'summer 2022'; 'winter 2022' is ambiguous (Jan–Feb or Dec 2022?) so it yields nothing."""
    kind = SEASONS[m.group("season").lower()]
    return None if kind == 3 else season_span(kind, int(m.group("year")))


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


#: Necessary parts of the rules: a rule whose cue does not occur anywhere in a text cannot match
#: in it (each cue is a sub-pattern the rule's match must contain), so it is not run over that
#: text. 23 full scans a text cost ~1.5 ms on a 1,000-character passage; most passages lack most
#: cues. A rule with cue None always runs (its own pattern is as cheap as a cue).
_MONTH = _c(_MON)
_WEEKDAY = _c(_WD)
_SEASON_CUE = _c(_SEASON)
_YEAR_CUE = _c(_YEAR)
_UNIT = _c(r"week|month|year")
_AGO = _c(r"ago\b")
_DIGIT = re.compile(r"\d")

RULES: tuple[tuple[re.Pattern[str], Resolver, re.Pattern[str] | None], ...] = (
    (_c(r"\bthe\s+day\s+(?:before\s+yesterday|after\s+tomorrow)\b"), _relative_day, None),
    (
        _c(r"\b(?:today|tonight|yesterday|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))\b"),
        _relative_day,
        None,
    ),
    (_c(rf"\b{_NUM}\s+(?P<unit>day|weekend|week|month|year)s?\s+ago\b"), _ago, _AGO),
    (_c(rf"\b{_REL}\s+(?P<unit>weekend|week|month|year)\b{_NOT_PART_OF}"), _rel_unit, _UNIT),
    (_c(r"\bthe\s+(?P<unit>weekend|week|month|year)\s+before\s+last\b"), _before_last, _UNIT),
    (_c(r"\b(?P<dir>earlier|later)\s+this\s+(?P<unit>week|month|year)\b"), _earlier_later, _UNIT),
    (_c(rf"\b{_REL}\s+{_WD}\b{_NOT_PART_OF}"), _rel_weekday, _WEEKDAY),
    (_c(rf"\b(?:on\s+)?{_WD}\s+(?:of\s+)?(?P<rel>last|this|next)\s+week\b"), _weekday_of_week, _WEEKDAY),
    (_c(rf"\bon\s+{_WD}\b"), _on_weekday, _WEEKDAY),
    (_c(rf"\b{_REL}\s+{_MON}(?!\s*\d)"), _rel_month, _MONTH),
    (_c(rf"\b(?:(?:(?:back\s+)?in|during)\s+{_PART}?|{_PART}){_MON}(?!\s*\d)"), _in_month, _MONTH),
    (_c(rf"\b(?:(?:back\s+)?in\s+|during\s+)?{_PART}?{_MON},?\s+(?:of\s+)?{_YEAR}\b"), _month_year, _MONTH),
    (_c(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d\d)\b(?!-\d)"), _iso_month, _DIGIT),
    (_c(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>\d\d?)-(?P<day>\d\d?)\b"), _full_date, _DIGIT),
    (_c(r"\b(?P<month>\d\d?)/(?P<day>\d\d?)/(?P<year>(?:19|20)\d\d)\b"), _full_date, _DIGIT),
    (_c(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MON},?\s+{_YEAR}\b"), _full_date, _MONTH),
    (_c(rf"\b(?:on\s+)?{_MON}\s+(?:the\s+)?{_DAY},?\s+{_YEAR}\b"), _full_date, _MONTH),
    (_c(rf"\b(?:on\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MON}(?![\w-])"), _day_month, _MONTH),
    (_c(rf"\b(?:on\s+)?{_MON}\s+(?:the\s+)?{_DAY}\b(?!,?\s*\d|:)"), _day_month, _MONTH),
    (
        _c(rf"\b(?:(?:back\s+)?in|during|(?:in\s+)?the\s+year(?:\s+of)?)\s+{_YEAR}\b{_NOT_UNIT}"),
        _year,
        _YEAR_CUE,
    ),
    (_c(rf"\b{_REL}\s+{_SEASON}\b"), _rel_season, _SEASON_CUE),
    (
        _c(rf"\b(?:(?:back\s+)?in|during)\s+(?:the\s+)?{_SEASON}\b(?!\s+(?:of\s+)?\d)"),
        _in_season,
        _SEASON_CUE,
    ),
    (_c(rf"\b(?:(?:in|during)\s+)?(?:the\s+)?{_SEASON},?\s+(?:of\s+)?{_YEAR}\b"), _season_year, _SEASON_CUE),
)
