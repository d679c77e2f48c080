"""The knowledge-update score: strict order, and the by-entry view of a quoted correction."""

from __future__ import annotations

from benchmarks.knowledge_update_bench import KUQuestion, score


def _q() -> KUQuestion:
    return KUQuestion(
        id="q1",
        text="When is the best time to call Tomás?",
        kind="best_time",
        wording="correction",
        status="changed",
        subject="Tomás",
        answer=["after 8"],
        answer_turns=["s2-1"],
        stale=["noon"],
        stale_turns=["s1-1"],
    )


def test_a_quoted_correction_is_old_first_strictly_but_not_by_entry() -> None:
    text = "[3 May]\n- Tomás: I told you noon, scratch that. After 8 is best.\n"
    out = score(text, _q())
    assert out["old_first"] and not out["correct"]
    assert out["correct_by_entry"] and not out["old_first_by_entry"]


def test_an_earlier_entry_with_the_old_value_counts_both_ways() -> None:
    text = "[3 May]\n- Tomás: Call me at noon.\n- Tomás: After 8 is best now.\n"
    out = score(text, _q())
    assert out["old_first"] and out["old_first_by_entry"]
    assert not out["correct_by_entry"]


def test_the_new_value_first_is_correct_both_ways() -> None:
    text = "[3 May]\n- (fact) Tomás: best time after 8\n- Tomás: I told you noon.\n"
    out = score(text, _q())
    assert out["correct"] and out["correct_by_entry"]
