"""The knowledge-update benchmark's fixture and score (issue 39.6): both parts load and hold what
they claim, and the score reads order and the "no longer true" mark as documented."""

from __future__ import annotations

import pytest
from benchmarks.knowledge_update_bench import KUQuestion, load, score


@pytest.mark.parametrize("part", ["a", "b"])
def test_each_part_holds_conversations_with_every_kind_of_question(part: str) -> None:
    data = load(part)
    assert len(data.conversations) == 15
    questions = [q for c in data.conversations for q in c.questions]
    assert len(questions) >= 64
    assert {q.status for q in questions} == {"changed", "unchanged", "past"}
    changed = [q for q in questions if q.status == "changed"]
    assert {q.wording for q in changed} == {"explicit", "correction", "negation", "cancellation", "implicit"}
    for conv in data.conversations:  # answer and stale strings sit in their turns
        text = {t.id: t.text.casefold() for s in conv.sessions for t in s.turns}
        for q in conv.questions:
            assert all(any(a.casefold() in text[t] for t in q.answer_turns) for a in q.answer), (
                conv.id,
                q.id,
            )
            assert all(any(s.casefold() in text[t] for t in q.stale_turns) for s in q.stale), (conv.id, q.id)


Q = KUQuestion(
    id="q",
    text="What does Maya eat?",
    kind="diet",
    wording="explicit",
    status="changed",
    subject="Maya",
    answer=["pescatarian"],
    answer_turns=["s2-1"],
    stale=["vegetarian"],
    stale_turns=["s1-1"],
)


def test_the_current_value_first_is_correct_and_the_old_one_first_is_not() -> None:
    assert score("- Maya is pescatarian now\n- Maya: I'm vegetarian", Q) == {
        "correct": True,
        "old_first": False,
        "answer_in": True,
        "correct_by_entry": True,
        "old_first_by_entry": False,
    }
    assert score("- Maya: I'm vegetarian\n- Maya is pescatarian now", Q)["old_first"] is True
    assert score("- Maya: I'm vegetarian", Q) == {
        "correct": False,
        "old_first": True,
        "answer_in": False,
        "correct_by_entry": False,
        "old_first_by_entry": True,
    }


def test_an_old_value_marked_no_longer_true_does_not_count_against() -> None:
    text = "- (observation) Maya is vegetarian (no longer true from 10 June 2024)\n- Maya is pescatarian"
    assert score(text, Q)["correct"] is True


def test_strings_match_on_word_boundaries_with_ordinals_folded() -> None:
    q = Q.model_copy(update={"answer": ["19 July"], "stale": ["9 July"]})
    assert score("The visit moved to July 19th, not the 9th... 19 July it is", q)["answer_in"] is True
    assert score("moved to 19 July (was 9 July)", q)["correct"] is True
