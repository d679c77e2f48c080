"""The statement shape checks (benchmarks/statement_checks.py) and the statement gold fixture (issue 19)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from benchmarks.statement_checks import (
    GRAMMAR_KINDS,
    LEMMA_KINDS,
    case_issues,
    grammar_failures,
    has_keyword,
    issues,
    stem,
    unsupported_words,
)

GOLD = Path(__file__).resolve().parents[2] / "data" / "statement_gold.jsonl"

BAD = [
    ("Priya adopt grey cat", "lemma_verb"),
    ("Priya never like jazz", "lemma_verb"),
    ("Wallaby Lane have asthma", "lemma_verb"),
    ("The cat hide under the sofa", "lemma_verb"),
    ("Priya's weekends be busy", "bare_be"),
    ("Jon be sure investing Jon's time in Jon's business will pay off eventually", "bare_be"),
    ("Gina be so happy to see Gina's words motivating Jon", "bare_be"),
    ("Caroline be to go do some research", "bare_be"),
    ("Priya's roommate hide under sofa", "dangling_possessive"),
    ("Priya Priya went home", "doubled_subject"),
    ("Priya she went home", "doubled_subject"),
    ("lol Priya went home", "bad_start"),
    (", Priya went to Leeds", "bad_start"),
    ("the necklace stand for love", "bad_start"),
    ("Melanie shares a photo of arafed woman on a bench", "caption_garbage"),
    ("Melanie says shares a photo: a photography of two children", "caption_garbage"),
    ("Priya went to the the park", "repeated_word"),
    ("Priya loves my cat", "first_person"),
    ("Priya went", "too_short"),
    ("Sofia forgots to say that the tulips are sprouting", "bad_inflection"),
    ("Nadia be totally absorbed", "bare_be"),
    ("Nadia get support", "lemma_verb"),
]

GOOD = [
    "Priya adopted a grey cat",
    "Priya's weekends are busy",
    "Tomas' goal is to finish under two hours in October 2024",
    "Priya's job offer came from Northwind Analytics",
    "Priya helped Tomas move house",
    "Priya and Tomas go hiking every Sunday",
    "Priya's kids love the beach",
    "Priya will be there",
    "Priya wants to be a nurse",
    "Priya does not like jazz",
    "Priya used to be scared of heights",
    "Leena works nights at St Mary's",
    "Caroline says Melanie is so brave to run a marathon",
    "Caroline went to a LGBTQ support group on 7 May 2023",
    "Taking care of themselves is vital",
    "Melanie says painting helps Melanie relax and be creative",
    "Caroline says 'Embracing Identity' is about finding comfort",
    "Kwame's Toyota Corolla has only 40,000 miles",
    "42 Wallaby Lane is Erin's address",
    "Priya quit her job at the bakery on 14 May 2024",
    "Mochi hides under the sofa all day",
    # objects of causative / perception / ditransitive verbs, nouns after adjectives, acronyms,
    # a capitalised opener and a plural noun that is also a past form are not lemma errors
    "Leila says yoga helps Leila be calmer",
    "Sam says the letter gives Sam hope",
    "Dev says watching Ana dance was the best part",
    "Omar will let Dana know Omar's thoughts",
    "With help from friends, Rosa finished the race",
    "Kai's first match was tense",
    "Ravi mostly plays CS:GO online",
]


@pytest.mark.parametrize(("text", "kind"), BAD)
def test_bad_statements_are_flagged(text: str, kind: str) -> None:
    kinds = {i.kind for i in issues(text)}
    assert kind in kinds, (text, kinds)
    assert grammar_failures(text)


@pytest.mark.parametrize("text", GOOD)
def test_good_statements_pass(text: str) -> None:
    assert grammar_failures(text) == [], text


def test_kind_sets() -> None:
    assert LEMMA_KINDS <= GRAMMAR_KINDS
    assert {i.kind for i in issues("By the way, Priya's favourite colour is green")} == {"filler"}
    assert grammar_failures("By the way, Priya's favourite colour is green") == []


def test_name_case_needs_the_source() -> None:
    assert [i.kind for i in case_issues("Priya moved to porto", "I moved to Porto last year.")] == [
        "name_case"
    ]
    assert case_issues("Chloe says salt has a bald patch", "Salt has a bald patch.", ["Salt"])
    assert case_issues("Priya moved to Porto", "I moved to Porto last year.") == []
    # the words of a multi-word title are common words elsewhere ("New Orleans", "new bakeries")
    assert case_issues("Lena loves new bakeries in New Orleans", "I love new bakeries in New Orleans.") == []


def test_keywords_and_stems() -> None:
    assert stem("hides") == stem("hiding") == stem("hide")
    assert stem("adopted") == stem("adopts")
    assert stem("felt") == stem("feel")
    assert has_keyword("grey cat", "Priya adopted a grey cat")
    assert not has_keyword("grey cat", "Priya adopted a cat that is grey")
    assert has_keyword("not", "Jonas hasn't been to the dentist")
    assert has_keyword("master's", "Omar is applying for a master's in Toronto")
    assert has_keyword("40,000 miles", "The car has only 40,000 miles")
    assert not has_keyword("Northwind", "Priya started a new job")


def test_unsupported_words() -> None:
    src = ["I got a new job offer from Northwind Analytics yesterday"]
    assert (
        unsupported_words(
            "Priya got a new job offer from Northwind Analytics on 1 March 2024", src, ["Priya"]
        )
        == []
    )
    assert unsupported_words(
        "Priya's roommate hides under the sofa", ["She hides under the sofa."], ["Priya"]
    ) == ["roommate"]


def _window_ok(value: str) -> bool:
    one = r"\d{4}(?:-\d{2}(?:-\d{2})?|-W\d{2})?"
    return re.fullmatch(rf"{one}(?:/{one})?", value) is not None


def test_gold_fixture_parses_and_is_valid() -> None:
    rows = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 200
    assert len({r["turn"] for r in rows}) == len(rows)
    no_statement = sum(1 for r in rows if not r["expected"])
    assert 0 < no_statement < len(rows)
    sessions: dict[str, str] = {}
    for r in rows:
        assert set(r) == {
            "conversation",
            "session",
            "turn",
            "speaker",
            "addressee",
            "timestamp",
            "text",
            "expected",
        }
        assert r["speaker"] and r["addressee"] and r["speaker"] != r["addressee"]
        assert r["text"].strip()
        assert datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")).tzinfo is not None
        assert r["session"].startswith(r["conversation"]) and r["turn"].startswith(r["session"])
        previous = sessions.get(r["session"])
        assert previous is None or previous <= r["timestamp"], r["turn"]
        sessions[r["session"]] = r["timestamp"]
        for e in r["expected"]:
            assert set(e) <= {"subject", "text", "keywords", "date", "alt_subjects"}, e
            assert e["subject"].strip() and e["text"].strip()
            assert e["text"][0].isupper() or e["text"][0].isdigit(), e["text"]
            assert 1 <= len(e["keywords"]) <= 4, e
            assert all(isinstance(k, str) and k.strip() for k in e["keywords"])
            assert e["date"] is None or _window_ok(e["date"]), e["date"]
            assert all(isinstance(a, str) and a for a in e.get("alt_subjects", []))
            for k in e["keywords"]:
                assert has_keyword(k, e["text"]), (
                    k,
                    e["text"],
                )  # the reference sentence carries its keywords
