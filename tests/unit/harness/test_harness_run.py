from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import pytest
from benchmarks import run_bench
from benchmarks.harness import systems as registry
from benchmarks.harness.baselines import BM25Baseline, HybridBaseline
from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Conversation, Question
from benchmarks.harness.metrics import RetrievalResult, RetrievedItem
from benchmarks.harness.run import (
    BenchConfig,
    MemorySystem,
    build_comparison,
    reference_time,
    render_markdown,
    run_benchmark,
    write_outputs,
)

CONFIG = BenchConfig(
    item_limits=(1, 2), token_budgets=(15, 25), containment_budgets=(25,), hit_rate_k=2, progress=False
)


class Scripted:
    """Returns the same three turns for every question: D1:1, D2:1, D2:2 (10 tokens each)."""

    recall_per_budget = False

    def __init__(self, scale: float = 1.0) -> None:
        self.calls: list[tuple[int | None, int | None]] = []
        self.setups: list[str] = []
        self.closed = False

    async def setup(self, conversation: Conversation) -> None:
        self.turns = {t.id: (t, s.id) for s in conversation.sessions for t in s.turns}
        self.setups.append(conversation.id)

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        self.calls.append((limit, token_budget))
        self.reference_ts = reference_ts
        items = [
            RetrievedItem(
                content=f"{self.turns[t][0].speaker}: {self.turns[t][0].text}",
                covered_turn_ids=frozenset({t}),
                session_ids=frozenset({self.turns[t][1]}),
                tokens=10,
            )
            for t in ("D1:1", "D2:1", "D2:2")
        ]
        return RetrievalResult(items=items, latency_s=0.01)

    async def close(self) -> None:
        self.closed = True


class PerBudget(Scripted):
    recall_per_budget = True


def _dataset(data_dir: Path):
    return load_any(data_dir / "locomo_tiny.json", "locomo")


def test_protocol_is_satisfied() -> None:
    assert isinstance(Scripted(), MemorySystem)
    assert isinstance(BM25Baseline(), MemorySystem)
    assert isinstance(HybridBaseline(), MemorySystem)


def test_reference_time(data_dir: Path) -> None:
    conv = _dataset(data_dir).conversations[0]
    q = conv.questions[0]
    assert reference_time(conv, q) == conv.sessions[-1].start
    lme = load_any(data_dir / "longmemeval_tiny.json", "longmemeval").conversations[0]
    assert reference_time(lme, lme.questions[0]) == lme.questions[0].question_time


async def test_runner_metrics_hand_computed(data_dir: Path) -> None:
    made: list[Scripted] = []

    def factory() -> Scripted:
        made.append(Scripted())
        return made[-1]

    report, records = await run_benchmark(_dataset(data_dir), {"baseline-x": factory}, CONFIG)
    assert len(made) == 1 and made[0].closed and made[0].setups == ["conv-t1"]
    assert made[0].calls == [(2, 25)] * 5  # one call per question, max limit and max budget
    assert made[0].reference_ts == _dataset(data_dir).conversations[0].sessions[-1].start
    q = report["systems"]["baseline-x"]["quality"]
    assert report["dataset"]["eligible"] == {"evidence": 3, "session": 3, "answer": 3}
    assert q["evidence_all@1"]["overall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert q["evidence_all@2"]["overall"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert q["evidence_all@2"]["by_category"] == {"multi-hop": 1.0, "single-hop": 1.0, "temporal": 0.5}
    assert q["evidence_any@1"]["overall"] == pytest.approx(2 / 3)
    assert q["evidence_all@15tok"]["overall"] == pytest.approx(q["evidence_all@1"]["overall"])
    assert q["evidence_all@25tok"]["overall"] == pytest.approx(q["evidence_all@2"]["overall"])
    assert q["evidence_hit@2"]["overall"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert q["session_recall_all@1"]["overall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert q["session_recall_any@2"]["overall"] == 1.0
    assert q["session_ndcg@2"]["overall"] == pytest.approx((1 + 1 + 1 / math.log2(3)) / 3)
    assert q["answer_contains@25tok"]["overall"] == pytest.approx(2 / 3)  # "Rex", "violin"; not "7 May 2023"
    assert q["evidence_all@2"]["n"] == 3
    cost = report["systems"]["baseline-x"]["cost"]
    assert cost["bundle_tokens@15tok"]["mean"] == 10 and cost["bundle_items@25tok"]["mean"] == 2
    rt = report["systems"]["baseline-x"]["runtime"]
    assert rt["questions"] == 5 and rt["latency_p50_s"] == pytest.approx(0.01)
    assert {r.question_id for r in records} == {f"conv-t1:q{i}" for i in (0, 1, 2, 4, 5)}
    abst = next(r for r in records if r.question_id == "conv-t1:q4")
    assert not any(k.startswith(("evidence", "session", "answer")) for k in abst.metrics)


async def test_per_budget_systems_get_one_call_per_budget(data_dir: Path) -> None:
    made: list[PerBudget] = []

    def factory() -> PerBudget:
        made.append(PerBudget())
        return made[-1]

    report, _ = await run_benchmark(_dataset(data_dir), {"ours": factory}, CONFIG)
    assert made[0].calls[:3] == [(2, None), (None, 15), (None, 25)]
    # the budget walk is applied to what comes back: 30 tokens returned for budget 15 → one item
    assert report["systems"]["ours"]["cost"]["bundle_tokens@15tok"]["mean"] == 10


def test_comparison_ratios() -> None:
    figures = {
        "baseline-bm25": {"evidence_all@5": 0.5, "latency p50 s": 0.01},
        "baseline-hybrid": {"evidence_all@5": 0.6, "latency p50 s": 0.02},
        "uniko": {"evidence_all@5": 0.9, "latency p50 s": 0.04},
    }
    comp = build_comparison(figures)
    assert comp["ours"] == ["uniko"] and comp["baselines"] == ["baseline-bm25", "baseline-hybrid"]
    row = comp["rows"]["evidence_all@5"]
    assert row["best_baseline"] == "baseline-hybrid"
    assert row["ratios"]["uniko"] == {"vs_best": 1.5, "vs_hybrid": 1.5}
    lat = comp["rows"]["latency p50 s"]
    assert lat["best_baseline"] == "baseline-bm25" and lat["lower_is_better"]
    assert lat["ratios"]["uniko"] == {"vs_best": 4.0, "vs_hybrid": 2.0}


async def test_report_outputs(data_dir: Path, tmp_path: Path) -> None:
    systems = {"baseline-a": Scripted, "baseline-hybrid": Scripted, "mine": Scripted}
    report, records = await run_benchmark(_dataset(data_dir), systems, CONFIG, source="tiny")
    md = render_markdown(report)
    assert "| metric | baseline-a | baseline-hybrid | mine | mine / best baseline | mine / hybrid |" in md
    assert "| evidence_all@2 | **0.833** | 0.833 | 0.833 | 1.00 | 1.00 |" in md
    assert "temporal" in md
    out, mdp, pq = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "q.jsonl"
    text = write_outputs(report, records, out=out, md=mdp, per_question=pq)
    assert text == md and mdp.read_text().strip() == md.strip()
    loaded = json.loads(out.read_text())
    assert loaded["schema"] == "uniko-memory-bench/1"
    assert set(loaded["systems"]) == set(systems)
    assert len(pq.read_text().splitlines()) == 15


async def test_deterministic(data_dir: Path) -> None:
    def strip(report):
        for s in report["systems"].values():
            s.pop("runtime")
        report.pop("wall_s")
        report.pop("comparison")
        return report

    a, _ = await run_benchmark(_dataset(data_dir), {"baseline-bm25": _bm25}, CONFIG)
    b, _ = await run_benchmark(_dataset(data_dir), {"baseline-bm25": _bm25}, CONFIG)
    assert strip(a) == strip(b)


def _bm25() -> BM25Baseline:
    return BM25Baseline(token_counter=lambda texts: [len(t.split()) for t in texts])


def test_cli(data_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(registry.SYSTEMS, "baseline-bm25", _bm25)
    monkeypatch.setitem(registry.SYSTEMS, "fake", Scripted)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    rc = run_bench.main(
        [
            "--data",
            str(data_dir / "locomo_tiny.json"),
            "--systems",
            "baseline-bm25,fake",
            "--out",
            str(out),
            "--md",
            str(md),
            "--no-progress",
        ]
    )
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["config"]["item_limits"] == [5, 10, 15]
    assert report["comparison"]["ours"] == ["fake"]
    assert "fake / best baseline" in capsys.readouterr().out
    assert md.exists()


def test_cli_errors(tmp_path: Path, capsys) -> None:
    assert run_bench.main(["--data", str(tmp_path / "absent.json")]) == 2
    assert "locomo10.json" in capsys.readouterr().err
    assert run_bench.main(["--data", str(tmp_path / "absent.json"), "--systems", "nope"]) == 2
    f = tmp_path / "x.json"
    f.write_text("[]")
    assert run_bench.main(["--data", str(f), "--systems", "nope"]) == 2
    assert "unknown system" in capsys.readouterr().err
