from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.harness.convert import load_any
from benchmarks.harness.judge import (
    JudgeCase,
    answer_and_judge,
    cases_from_records,
    parse_judge_label,
    run_llm_stage,
)
from benchmarks.harness.run import TOKEN_COUNTER, BenchConfig, run_benchmark
from langchain_core.language_models.fake_chat_models import FakeListChatModel


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('{"reason": "same date", "label": "CORRECT"}', "CORRECT"),
        ('```json\n{"label": "wrong"}\n```', "WRONG"),
        ('Format: {"label": "CORRECT"} ... final: {"label": "WRONG"}', "WRONG"),
        ('{"label": "maybe"} I think it is CORRECT', "CORRECT"),
        ("It is not WRONG, it is CORRECT", "CORRECT"),
        ("CORRECT? No. WRONG", "WRONG"),
        ("the answer looks correct", "AMBIGUOUS"),  # lower case prose is not a label
        ("", "AMBIGUOUS"),
        ("{broken json CORRECT", "CORRECT"),
    ],
)
def test_parse_judge_label(text: str, label: str) -> None:
    assert parse_judge_label(text) == label


def _counter(text: str) -> int:
    return len(text.split())


CASE = JudgeCase(
    question_id="q1",
    category="temporal",
    question="When did Ann adopt Rex?",
    gold_answer="7 May 2023",
    bundle_text="(1:56 pm on 8 May, 2023) Ann: I adopted a puppy named Rex yesterday!",
    question_date="1 July 2023",
)


async def test_answer_and_judge() -> None:
    answer_model = FakeListChatModel(responses=["On 7 May 2023."])
    judge_model = FakeListChatModel(responses=['{"reason": "same day", "label": "CORRECT"}'])
    res = await answer_and_judge(CASE, answer_model, judge_model, token_counter=_counter)
    assert res.answer == "On 7 May 2023." and res.correct and res.label == "CORRECT"
    assert res.estimated_tokens and res.answer_tokens > 0 and res.judge_tokens > 0


async def test_run_llm_stage_accuracy() -> None:
    cases = [CASE, JudgeCase("q2", "single-hop", "Pet name?", "Rex", "Ann: my puppy Rex", None)]
    answer_model = FakeListChatModel(responses=["7 May 2023", "I don't know"])
    judge_model = FakeListChatModel(responses=["CORRECT", "hmm, unclear"])
    summary, results = await run_llm_stage(cases, answer_model, judge_model, token_counter=_counter)
    assert [r.label for r in results] == ["CORRECT", "AMBIGUOUS"]
    assert summary["accuracy"] == 0.5 and summary["n"] == 2 and summary["ambiguous"] == 1
    assert summary["accuracy_by_category"] == {"single-hop": 0.0, "temporal": 1.0}
    assert summary["tokens_estimated"] is True
    assert summary["answer_tokens_per_question"] > 0


async def test_cases_from_runner_records(data_dir: Path) -> None:
    from benchmarks.harness.baselines import BM25Baseline

    ds = load_any(data_dir / "locomo_tiny.json", "locomo")
    config = BenchConfig(token_budgets=(1000,), item_limits=(), keep_bundle_budget=150, progress=False)
    report, records = await run_benchmark(ds, {"baseline-bm25": BM25Baseline}, config)
    assert report["systems"]["baseline-bm25"]["rendered"]["150tok"]["over_budget"] == 0  # checked too
    cases = cases_from_records(ds, records)
    assert [c.question_id for c in cases] == ["conv-t1:q0", "conv-t1:q1", "conv-t1:q2"]  # abstention skipped
    assert all(c.bundle_text and c.question_date == "20 June 2023" for c in cases)
    # the kept text is the rendered text at the kept budget (not a scored one), within it
    assert all(0 < TOKEN_COUNTER.count(c.bundle_text) <= 150 for c in cases)
    assert all(c.bundle_text.endswith("</memory>") for c in cases)
