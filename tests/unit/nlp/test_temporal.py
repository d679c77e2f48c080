"""Table-driven tests for the temporal resolver (reference: Monday 8 May 2023, 13:56 UTC)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.nlp.temporal import (
    TemporalWindow,
    absolute_phrase,
    find_temporal_phrases,
    format_window,
    resolve_temporal,
    rewrite_temporal,
)

REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday

# (text, expected lo, expected hi (exclusive), granularity, format_window text)
CASES: list[tuple[str, date, date, str, str]] = [
    ("what did I do today", date(2023, 5, 8), date(2023, 5, 9), "day", "8 May 2023"),
    ("I went there yesterday", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("see you tomorrow", date(2023, 5, 9), date(2023, 5, 10), "day", "9 May 2023"),
    ("the day before yesterday", date(2023, 5, 6), date(2023, 5, 7), "day", "6 May 2023"),
    ("last night was fun", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("last Friday", date(2023, 5, 5), date(2023, 5, 6), "day", "5 May 2023"),
    ("last Monday", date(2023, 5, 1), date(2023, 5, 2), "day", "1 May 2023"),
    ("this Wednesday", date(2023, 5, 10), date(2023, 5, 11), "day", "10 May 2023"),
    ("next Tuesday", date(2023, 5, 9), date(2023, 5, 10), "day", "9 May 2023"),
    ("this past Saturday", date(2023, 5, 6), date(2023, 5, 7), "day", "6 May 2023"),
    ("I painted on Sunday", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("I'll call her on Friday", date(2023, 5, 12), date(2023, 5, 13), "day", "12 May 2023"),
    ("on Monday last week", date(2023, 5, 1), date(2023, 5, 2), "day", "1 May 2023"),
    ("3 days ago", date(2023, 5, 5), date(2023, 5, 6), "day", "5 May 2023"),
    ("two days ago", date(2023, 5, 6), date(2023, 5, 7), "day", "6 May 2023"),
    ("a few days ago", date(2023, 5, 5), date(2023, 5, 6), "day", "5 May 2023"),
    ("a week ago", date(2023, 5, 1), date(2023, 5, 8), "week", "the week of 1 May 2023"),
    ("a couple of weeks ago", date(2023, 4, 24), date(2023, 5, 1), "week", "the week of 24 April 2023"),
    ("last week", date(2023, 5, 1), date(2023, 5, 8), "week", "the week of 1 May 2023"),
    ("this week", date(2023, 5, 8), date(2023, 5, 15), "week", "the week of 8 May 2023"),
    ("next week", date(2023, 5, 15), date(2023, 5, 22), "week", "the week of 15 May 2023"),
    ("the week before last", date(2023, 4, 24), date(2023, 5, 1), "week", "the week of 24 April 2023"),
    ("last weekend", date(2023, 5, 6), date(2023, 5, 8), "week", "the weekend of 6 May 2023"),
    ("two weekends ago", date(2023, 4, 29), date(2023, 5, 1), "week", "the weekend of 29 April 2023"),
    ("this weekend", date(2023, 5, 13), date(2023, 5, 15), "week", "the weekend of 13 May 2023"),
    ("last month", date(2023, 4, 1), date(2023, 5, 1), "month", "April 2023"),
    ("next month", date(2023, 6, 1), date(2023, 7, 1), "month", "June 2023"),
    ("two months ago", date(2023, 3, 1), date(2023, 4, 1), "month", "March 2023"),
    ("twelve months ago", date(2022, 5, 1), date(2022, 6, 1), "month", "May 2022"),
    ("last May", date(2022, 5, 1), date(2022, 6, 1), "month", "May 2022"),
    ("last March", date(2023, 3, 1), date(2023, 4, 1), "month", "March 2023"),
    ("in May", date(2023, 5, 1), date(2023, 6, 1), "month", "May 2023"),
    ("in June", date(2022, 6, 1), date(2022, 7, 1), "month", "June 2022"),
    ("I'm going to Paris in June", date(2023, 6, 1), date(2023, 7, 1), "month", "June 2023"),
    ("in early April", date(2023, 4, 1), date(2023, 5, 1), "month", "April 2023"),
    ("in March 2022", date(2022, 3, 1), date(2022, 4, 1), "month", "March 2022"),
    ("October 2021", date(2021, 10, 1), date(2021, 11, 1), "month", "October 2021"),
    ("2022-11", date(2022, 11, 1), date(2022, 12, 1), "month", "November 2022"),
    ("last year", date(2022, 1, 1), date(2023, 1, 1), "year", "2022"),
    ("this year", date(2023, 1, 1), date(2024, 1, 1), "year", "2023"),
    ("two years ago", date(2021, 1, 1), date(2022, 1, 1), "year", "2021"),
    ("in 2022", date(2022, 1, 1), date(2023, 1, 1), "year", "2022"),
    ("in the year 2019", date(2019, 1, 1), date(2020, 1, 1), "year", "2019"),
    ("earlier this year", date(2023, 1, 1), date(2023, 5, 9), "year", "2023"),
    ("on 7 May 2023", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("May 7, 2023", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("the 7th of May, 2023", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("7 May", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("May 7th", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("December 20th", date(2022, 12, 20), date(2022, 12, 21), "day", "20 December 2022"),
    ("2023-05-07", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("05/07/2023", date(2023, 5, 7), date(2023, 5, 8), "day", "7 May 2023"),
    ("this summer", date(2023, 6, 1), date(2023, 9, 1), "season", "summer 2023"),
    ("last summer", date(2022, 6, 1), date(2022, 9, 1), "season", "summer 2022"),
    ("next spring", date(2024, 3, 1), date(2024, 6, 1), "season", "spring 2024"),
    ("last winter", date(2022, 12, 1), date(2023, 3, 1), "season", "winter 2022/23"),
    ("last fall", date(2022, 9, 1), date(2022, 12, 1), "season", "fall 2022"),
    ("last autumn", date(2022, 9, 1), date(2022, 12, 1), "season", "fall 2022"),
    ("in the summer of 2021", date(2021, 6, 1), date(2021, 9, 1), "season", "summer 2021"),
]


@pytest.mark.parametrize(("text", "lo", "hi", "gran", "rendered"), CASES, ids=[c[0] for c in CASES])
def test_resolve(text: str, lo: date, hi: date, gran: str, rendered: str) -> None:
    window = resolve_temporal(text, REF)
    assert window is not None, text
    assert (window.lo.date(), window.hi.date(), window.granularity) == (lo, hi, gran)
    assert window.lo.tzinfo is not None and window.lo.utcoffset() == timedelta(0)
    assert format_window(window) == rendered


NEGATIVE = [
    "recently",
    "lately",
    "the other day",
    "several weeks ago",
    "May I ask you something?",
    "they march on",
    "I may go later",
    "in may",
    "I have 2022 steps left in 2000 steps",
    "on Mondays I swim",
    "We met at 7",
    "winter 2022",
    "the last week of May",
    "the past week",
    "the last Friday of the month",
    "31 February 2023",
    "13/45/2023",
    "",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_no_window(text: str) -> None:
    assert resolve_temporal(text, REF) is None


def test_find_all_phrases_with_spans() -> None:
    text = "I went to a support group yesterday and I'm painting again next week."
    matches = find_temporal_phrases(text, REF)
    assert [m.phrase for m in matches] == ["yesterday", "next week"]
    for m in matches:
        assert text[m.start : m.end] == m.phrase
    assert format_window(matches[0].window) == "7 May 2023"


def test_longest_match_wins() -> None:
    matches = find_temporal_phrases("the day before yesterday", REF)
    assert len(matches) == 1 and matches[0].window.lo.date() == date(2023, 5, 6)


def test_most_specific_window_wins() -> None:
    window = resolve_temporal("in 2023, what did she do on 7 May 2023?", REF)
    assert window is not None and window.granularity == "day"


def test_open_bound_is_not_the_query_window() -> None:
    assert resolve_temporal("what has she done since last May?", REF) is None
    assert find_temporal_phrases("since last May", REF)[0].phrase == "last May"


def test_naive_and_offset_references() -> None:
    naive = resolve_temporal("yesterday", datetime(2023, 5, 8, 10))
    aware = resolve_temporal("yesterday", datetime(2023, 5, 8, 1, tzinfo=timezone(timedelta(hours=5))))
    assert naive is not None and naive.lo == datetime(2023, 5, 7, tzinfo=UTC)
    # 01:00 at +05:00 is 7 May 20:00 UTC; arithmetic is in UTC.
    assert aware is not None and aware.lo == datetime(2023, 5, 6, tzinfo=UTC)


def test_winter_spans_year_boundary() -> None:
    january = datetime(2024, 1, 15, tzinfo=UTC)
    window = resolve_temporal("this winter", january)
    assert window is not None
    assert (window.lo.date(), window.hi.date()) == (date(2023, 12, 1), date(2024, 3, 1))
    last = resolve_temporal("last winter", january)
    assert last is not None and last.lo.date() == date(2022, 12, 1)


def test_rewrite_and_absolute_phrase() -> None:
    assert rewrite_temporal("I went to a support group yesterday.", REF) == (
        "I went to a support group on 7 May 2023."
    )
    assert rewrite_temporal("I've painted since last May", REF) == "I've painted since May 2022"
    assert rewrite_temporal("Nothing here", REF) == "Nothing here"
    window = resolve_temporal("last month", REF)
    assert window is not None and absolute_phrase(window) == "in April 2023"


def test_window_helpers_and_validation() -> None:
    window = resolve_temporal("yesterday", REF)
    assert window is not None
    assert window.contains(datetime(2023, 5, 7, 23, 59))
    assert not window.contains(datetime(2023, 5, 8, tzinfo=UTC))
    assert window.overlaps(datetime(2023, 5, 6, 12), datetime(2023, 5, 7, 1))
    with pytest.raises(ValidationError):
        TemporalWindow(window.hi, window.lo, "day", "bad")
    with pytest.raises(ValidationError):
        TemporalWindow(datetime(2023, 1, 1), datetime(2023, 1, 2), "day", "naive")


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("Hugh and I? Twelve years in September.", None),  # an anniversary ahead or behind: no note
        ("See you on Friday!", None),
        ("Exams in September, so I'm stressed.", None),  # "stressed" is no past tense
        ("Are you still aiming for Lisbon in October?", "October 2024"),  # an aim looks ahead
        ("I moved to Lyon in March.", "March 2024"),
        ("In May, we adopted a cat.", "May 2024"),
        ("The concert on Friday was amazing.", "5 July 2024"),
        ("I'm going to Paris in August.", "August 2024"),
        ("We've booked Kea Lodge for three nights in February.", "February 2025"),
    ],
)
def test_a_note_names_a_date_only_when_the_clause_says_which_way(text: str, note: str | None) -> None:
    """Issue 39.3: a bare month or weekday with no tense or plan around it points nowhere in
    particular; a quoted turn's note must never be wrong, so it is left out."""
    ref = datetime(2024, 7, 7, 12, tzinfo=UTC)  # a Sunday
    found = [format_window(m.window) for m in find_temporal_phrases(text, ref, strict=True)]
    assert found == ([note] if note else [])


def test_a_question_still_gets_a_window_for_a_bare_month() -> None:
    """A question's window only steers a search: "in June" reads as the last June."""
    window = resolve_temporal("Any news in June?", datetime(2024, 7, 7, tzinfo=UTC))
    assert window is not None and window.lo.month == 6
