"""The temporal rules' cues: a rule is skipped on a text without its cue, and that never changes
what ``find_temporal_phrases`` finds (each cue is a part every match of its rule contains)."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime

import pytest

from uniko_memory.nlp import _temporal_rules as rules
from uniko_memory.nlp import temporal

MONTHS = ["January", "march", "May", "may", "Sept.", "Sep", "oct", "December", "MAR"]
WEEKDAYS = ["Monday", "friday", "SUNDAY", "Wednesdays"]
SEASONS = ["spring", "Summer", "fall", "autumn", "winter"]
NUMBERS = ["3", "one", "a couple of", "a few", "an", "12", "150"]
UNITS = ["day", "days", "weekend", "week", "weeks", "month", "year", "years"]
RELS = ["last", "this past", "past", "this coming", "coming", "this", "next"]
PREFIXES = ["", "on ", "in ", "back in ", "during ", "early ", "mid-", "late ", "the end of ", "the "]
YEARS = ["2019", "2023", "1999", "2100"]


def _phrases() -> list[str]:
    out = [
        "the day before yesterday",
        "the day after tomorrow",
        "last night",
        "this morning",
        "today",
        "2023-05",
        "2023-05-07",
        "5/7/2023",
        "the week before last",
        "earlier this month",
        "later this year",
        "in the year of 2020",
        "back in 2019",
        "summer 2022",
        "winter, 2021",
    ]
    out += [f"{n} {u} ago" for n, u in itertools.product(NUMBERS, UNITS)]
    out += [f"{r} {u}" for r, u in itertools.product(RELS, UNITS)]
    out += [f"{r} {w}" for r, w in itertools.product(RELS, WEEKDAYS)]
    out += [f"on {w} of {r} week" for w, r in itertools.product(WEEKDAYS, ["last", "this", "next"])]
    out += [f"{p}{m}" for p, m in itertools.product(PREFIXES, MONTHS)]
    out += [f"{p}{m}, {y}" for p, m, y in itertools.product(PREFIXES, MONTHS, YEARS)]
    out += [f"the {d} of {m} {y}" for d, m, y in itertools.product(["1st", "22", "31"], MONTHS, YEARS)]
    out += [f"{m} the {d}, {y}" for d, m, y in itertools.product(["1st", "22"], MONTHS, YEARS)]
    out += [f"{m} {d}" for d, m in itertools.product(["3", "22nd"], MONTHS)]
    out += [f"{r} {s}" for r, s in itertools.product(RELS, SEASONS)]
    out += [f"{p}{s}" for p, s in itertools.product(["in the ", "during ", "back in "], SEASONS)]
    return out


def _texts() -> list[str]:
    rng = random.Random(11)
    phrases = _phrases()
    filler = [
        "we",
        "went",
        "to",
        "the",
        "lake",
        "and",
        "it",
        "was",
        "lovely",
        ",",
        "I",
        "will",
        "plan",
        "to",
        "go",
        "again",
        "because",
    ]
    texts = list(phrases)
    for _ in range(600):
        words = rng.sample(filler, rng.randint(0, 8))
        for p in rng.sample(phrases, rng.randint(0, 3)):
            words.insert(rng.randint(0, len(words)), p)
        text = " ".join(words)
        texts.append(rng.choice([text, text.upper(), text.lower(), text.capitalize()]))
    return texts


def test_a_rule_matches_only_where_its_cue_occurs() -> None:
    checked = 0
    for text in _texts():
        for pattern, _, cue in rules.RULES:
            if cue is not None and pattern.search(text):
                assert cue.search(text), (pattern.pattern, text)
                checked += 1
    assert checked > 1000  # every family was exercised, not just a few


@pytest.mark.parametrize(
    "reference", [datetime(2023, 5, 8, tzinfo=UTC), datetime(2022, 12, 31, 15, tzinfo=UTC)]
)
def test_skipping_rules_by_cue_finds_the_same_phrases(
    monkeypatch: pytest.MonkeyPatch, reference: datetime
) -> None:
    texts = _texts()
    gated = [temporal.find_temporal_phrases(t, reference) for t in texts]
    monkeypatch.setattr(temporal, "RULES", tuple((p, r, None) for p, r, _ in rules.RULES))
    every_rule = [temporal.find_temporal_phrases(t, reference) for t in texts]
    assert gated == every_rule
    assert sum(map(len, gated)) > len(texts) // 2  # the texts hold phrases to find
