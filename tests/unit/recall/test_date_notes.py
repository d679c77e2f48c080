"""Date notes inside quoted turns (issue 39.3): the speaker's words are kept, a note is added only
where a phrase names one date, a habit gets none, and a plan gets a future date.

``with_absolute_dates`` appends " (7 May 2023)" after a relative phrase of a quoted turn. Removing
the notes must give back the stored turn exactly: checked on every turn of the bundled LoCoMo
fixture, and of the development split when it sits beside the repository.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from uniko_memory.recall.assemble import with_absolute_dates

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "data" / "locomo_mini.json"
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
#: Every note form ``format_window`` writes: a day, a month, a week, a weekend, a season, a year.
NOTE = re.compile(
    rf" \((?:\d{{1,2}} {_MONTH} \d{{4}}|{_MONTH} \d{{4}}|the week of \d{{1,2}} {_MONTH} \d{{4}}"
    rf"|the weekend of \d{{1,2}} {_MONTH} \d{{4}}|(?:spring|summer|fall|winter) \d{{4}}|\d{{4}})\)"
)
FEB = datetime(2023, 2, 14, 12, tzinfo=UTC)  # a Tuesday


def notes(text: str, ts: datetime = FEB) -> list[str]:
    return NOTE.findall(with_absolute_dates(text, ts))


@pytest.mark.parametrize(
    "text",
    [
        "I take a dance class on Tuesday evenings.",
        "I swim on Mondays and Thursdays.",
        "Every Friday we have pizza night.",
        "We meet on Sunday mornings at the lake.",
    ],
)
def test_a_habit_gets_no_date(text: str) -> None:
    assert notes(text) == []


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("The wedding moved to 14 September.", " (14 September 2023)"),  # a plan: ahead, not last year
        ("The party is on Friday, not Saturday.", " (17 February 2023)"),
        ("I'll fly to Oslo on Sunday.", " (19 February 2023)"),
        ("We went hiking on Sunday.", " (12 February 2023)"),  # told in the past: behind
        ("I was in Rome on 14 September.", " (14 September 2022)"),
    ],
)
def test_a_plan_is_dated_ahead_and_a_past_event_behind(text: str, note: str) -> None:
    assert notes(text) == [note]


def _turns(path: Path) -> list[tuple[str, datetime]]:
    from benchmarks.harness.convert import load_any

    data = load_any(path, "locomo")
    return [(t.text, t.timestamp or s.start) for c in data.conversations for s in c.sessions for t in s.turns]


@pytest.mark.parametrize("path", [FIXTURE, DEV], ids=["fixture", "dev-split"])
def test_removing_the_notes_gives_back_the_stored_turn(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    turns = _turns(path)
    assert turns
    changed = 0
    for text, ts in turns:
        quoted = with_absolute_dates(text, ts)
        assert NOTE.sub("", quoted) == text, (text, quoted)
        changed += quoted != text
    assert changed > 0  # the notes are there to remove


def test_the_fixture_is_locomo_shaped() -> None:
    assert isinstance(json.loads(FIXTURE.read_text()), list)


#: Written apart from the resolver's own rules: a clause that plainly speaks of what is to come.
PLAINLY_AHEAD = re.compile(
    r"\b(?:will|won't|'ll|going to|gonna|plan(?:s|ning)? to|moved to|postponed|rescheduled|pushed back)\b[^.!?;]*$",
    re.IGNORECASE,
)
#: A phrase that names its own direction ("last year", "two days ago") is dated as it says.
PLAINLY_BEHIND = re.compile(r"\b(?:last|ago|yesterday|past|earlier|before)\b", re.IGNORECASE)
PLAINLY_HABIT = re.compile(
    r"\b(?:every|each)\s+$|^s\b|^\s+(?:mornings|afternoons|evenings|nights)\b", re.IGNORECASE
)


@pytest.mark.parametrize("path", [FIXTURE, DEV], ids=["fixture", "dev-split"])
def test_no_note_dates_a_plan_in_the_past_or_a_habit(path: Path) -> None:
    from uniko_memory.nlp.temporal import find_temporal_phrases

    if not path.exists():
        pytest.skip(f"{path} is not here")
    wrong = []
    for text, ts in _turns(path):
        for m in find_temporal_phrases(text, ts):
            before, after = text[: m.start], text[m.end :]
            if PLAINLY_HABIT.search(before) or PLAINLY_HABIT.match(after):
                wrong.append(("habit", text, m.phrase))
            elif (
                not PLAINLY_BEHIND.search(m.phrase)
                and PLAINLY_AHEAD.search(before)
                and m.window.hi <= ts.replace(hour=0, minute=0, second=0, microsecond=0)
            ):
                wrong.append(("plan dated in the past", text, m.phrase))
    assert wrong == []
