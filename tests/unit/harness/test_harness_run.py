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
    DEFAULT_TOKEN_BUDGET,
    TOKEN_COUNTER,
    BenchConfig,
    MemorySystem,
    build_comparison,
    reference_time,
    render_markdown,
    run_benchmark,
    write_outputs,
)

THREE = ("D1:1", "D2:1", "D2:2")


def _text(turns: dict, ids) -> str:
    return "\n".join(f"{turns[t][0].speaker}: {turns[t][0].text}" for t in ids)


def _tiny_turns() -> dict:
    conv = load_any(Path(__file__).parents[2] / "data" / "harness" / "locomo_tiny.json", "locomo")
    return {t.id: (t, s.id) for s in conv.conversations[0].sessions for t in s.turns}


#: Budgets that hold exactly the first one and the first two of THREE (as ``Scripted`` renders them).
ONE = TOKEN_COUNTER.count(_text(_tiny_turns(), THREE[:1]))
TWO = TOKEN_COUNTER.count(_text(_tiny_turns(), THREE[:2]))
CONFIG = BenchConfig(item_limits=(1, 2), token_budgets=(ONE, TWO), hit_rate_k=2, progress=False)


class Scripted:
    """Ranks the same three turns for every question, D1:1, D2:1, D2:2, and renders them one per line:
    as many as fit ``token_budget`` (counted as the runner counts), or the first ``limit``."""

    call_path = "scripted"

    def __init__(self) -> None:
        self.calls: list[tuple[int | None, int | None]] = []
        self.setups: list[str] = []
        self.closed = False

    async def setup(self, conversation: Conversation) -> None:
        self.turns = {t.id: (t, s.id) for s in conversation.sessions for t in s.turns}
        self.setups.append(conversation.id)

    def _pick(self, limit: int | None, token_budget: int | None) -> list[str]:
        if limit is not None:
            return list(THREE[:limit])
        budget = token_budget if token_budget is not None else DEFAULT_TOKEN_BUDGET
        ids: list[str] = []
        for t in THREE:
            if TOKEN_COUNTER.count(_text(self.turns, [*ids, t])) > budget:
                break
            ids.append(t)
        return ids

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
        ids = self._pick(limit, token_budget)
        items = [
            RetrievedItem(
                content=f"{self.turns[t][0].speaker}: {self.turns[t][0].text}",
                covered_turn_ids=frozenset({t}),
                session_ids=frozenset({self.turns[t][1]}),
            )
            for t in ids
        ]
        return RetrievalResult(items=items, text=_text(self.turns, ids), latency_s=0.01)

    async def close(self) -> None:
        self.closed = True


class Overflowing(Scripted):
    """Says it packed for the budget but hands back all three turns every time (and claims a count)."""

    def _pick(self, limit: int | None, token_budget: int | None) -> list[str]:
        return list(THREE)

    async def retrieve(self, question: Question, reference_ts: datetime, **kw) -> RetrievalResult:
        res = await super().retrieve(question, reference_ts, **kw)
        res.reported_tokens = kw.get("token_budget") or DEFAULT_TOKEN_BUDGET
        return res


class Textless(Scripted):
    async def retrieve(self, question: Question, reference_ts: datetime, **kw) -> RetrievalResult:
        res = await super().retrieve(question, reference_ts, **kw)
        res.text = None  # type: ignore[assignment]
        return res


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

    assert ONE < TWO
    report, records = await run_benchmark(_dataset(data_dir), {"baseline-x": factory}, CONFIG)
    assert len(made) == 1 and made[0].closed and made[0].setups == ["conv-t1"]
    # per question: one call per budget (token_budget=N only), then one per item limit (limit=k only)
    assert made[0].calls == [(None, ONE), (None, TWO), (1, None), (2, None)] * 5
    assert made[0].reference_ts == _dataset(data_dir).conversations[0].sessions[-1].start
    q = report["systems"]["baseline-x"]["quality"]
    b1, b2 = f"{ONE}tok", f"{TWO}tok"
    assert report["dataset"]["eligible"] == {"evidence": 3, "session": 3, "answer": 3}
    # the text at ONE holds D1:1, at TWO D1:1 and D2:1: gold D1:1 / D1:1+D2:2 / D2:1
    assert q[f"evidence_all@{b1}"]["overall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert q[f"evidence_all@{b2}"]["overall"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert q[f"evidence_all@{b2}"]["by_category"] == {"multi-hop": 1.0, "single-hop": 1.0, "temporal": 0.5}
    assert q[f"evidence_any@{b1}"]["overall"] == pytest.approx(2 / 3)
    assert q["evidence_all@1"]["overall"] == pytest.approx(q[f"evidence_all@{b1}"]["overall"])
    assert q["evidence_all@2"]["overall"] == pytest.approx(q[f"evidence_all@{b2}"]["overall"])
    assert q["evidence_hit@2"]["overall"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert q["session_recall_all@1"]["overall"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert q["session_recall_any@2"]["overall"] == 1.0
    assert q["session_ndcg@2"]["overall"] == pytest.approx((1 + 1 + 1 / math.log2(3)) / 3)
    # containment on the text: "Rex" at both budgets, "violin" only at TWO, "7 May 2023" never
    assert q[f"answer_contains@{b1}"]["overall"] == pytest.approx(1 / 3)
    assert q[f"answer_contains@{b2}"]["overall"] == pytest.approx(2 / 3)
    assert q[f"evidence_all@{b2}"]["n"] == 3
    rendered = report["systems"]["baseline-x"]["rendered"]
    assert rendered[b1] == {
        "budget": ONE,
        "n": 5,
        "mean": ONE,
        "p50": ONE,
        "max": ONE,
        "over_budget": 0,
        "over_budget_pct": 0.0,
        "items_mean": 1.0,
        "own_count_differs": None,
    }
    assert rendered["2"]["budget"] == DEFAULT_TOKEN_BUDGET and rendered["2"]["max"] == TWO
    assert report["systems"]["baseline-x"]["over_budget"] == 0 and report["budget_violations"] == {}
    rt = report["systems"]["baseline-x"]["runtime"]
    assert rt["questions"] == 5 and rt["latency_p50_s"] == pytest.approx(0.01)
    assert {r.question_id for r in records} == {f"conv-t1:q{i}" for i in (0, 1, 2, 4, 5)}
    abst = next(r for r in records if r.question_id == "conv-t1:q4")
    assert not any(k.startswith(("evidence", "session", "answer")) for k in abst.metrics)
    assert abst.metrics[f"rendered_tokens@{b2}"] == TWO  # token figures cover every question


async def test_a_text_over_its_budget_is_recorded_and_flagged(data_dir: Path) -> None:
    report, records = await run_benchmark(
        _dataset(data_dir), {"baseline-x": Scripted, "over": Overflowing}, CONFIG
    )
    over = report["systems"]["over"]["rendered"]
    three = TOKEN_COUNTER.count(_text(_tiny_turns(), THREE))
    assert over[f"{ONE}tok"]["over_budget"] == 5 and over[f"{ONE}tok"]["over_budget_pct"] == 100.0
    assert over[f"{ONE}tok"]["max"] == three > ONE
    assert over["1"]["over_budget"] == 0  # three turns are within the default budget
    assert over[f"{ONE}tok"]["own_count_differs"] == 5  # it claimed ONE tokens; the harness counted more
    assert report["budget_violations"] == {"over": 10}
    assert all(r.metrics[f"over_budget@{TWO}tok"] == 1.0 for r in records if r.system == "over")
    assert "**BUDGET EXCEEDED**: `over` 10 text(s) over their budget" in render_markdown(report)


async def test_a_system_must_return_its_text(data_dir: Path) -> None:
    with pytest.raises(TypeError, match="prompt text"):
        await run_benchmark(_dataset(data_dir), {"x": Textless}, CONFIG)


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
    assert row["ratios"]["uniko"] == {"vs_best": 1.5, "vs_hybrid": 1.5, "vs_peer": None}
    lat = comp["rows"]["latency p50 s"]
    assert lat["best_baseline"] == "baseline-bm25" and lat["lower_is_better"]
    assert lat["ratios"]["uniko"] == {"vs_best": 4.0, "vs_hybrid": 2.0, "vs_peer": None}


async def test_report_outputs(data_dir: Path, tmp_path: Path) -> None:
    systems = {"baseline-a": Scripted, "baseline-hybrid": Scripted, "mine": Scripted}
    report, records = await run_benchmark(_dataset(data_dir), systems, CONFIG, source="tiny")
    md = render_markdown(report)
    assert "| metric | baseline-a | baseline-hybrid | mine | mine / best baseline | mine / hybrid |" in md
    assert f"| evidence_all@{TWO}tok | **0.833** | 0.833 | 0.833 | 1.00 | 1.00 |" in md
    assert "| evidence_all@2 | **0.833** | 0.833 | 0.833 | 1.00 | 1.00 |" in md  # diagnostics
    assert md.index(f"evidence_all@{TWO}tok") < md.index("## Diagnostics") < md.index("| evidence_all@2 |")
    assert f"| mine | token_budget={ONE} | {ONE} | {ONE}.0 | {ONE} | {ONE} | 0 (0.0%) | 1.0 | – |" in md
    # per category (multi-hop, single-hop, temporal): "7 May 2023" is never contained, 0 / 0 has no ratio
    assert f"| answer_contains@{TWO}tok | mine / hybrid | 1.00 | 1.00 | – |" in md
    assert "- `mine`: scripted" in md and "BUDGET EXCEEDED" not in md
    out, mdp, pq = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "q.jsonl"
    text = write_outputs(report, records, out=out, md=mdp, per_question=pq)
    assert text == md and mdp.read_text().strip() == md.strip()
    loaded = json.loads(out.read_text())
    assert loaded["schema"] == "uniko-memory-bench/2"
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
    return BM25Baseline()


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
    assert report["config"]["token_counter"] == "minilm" and report["budget_violations"] == {}


def test_cli_fails_when_a_text_is_over_its_budget(
    data_dir: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setitem(registry.SYSTEMS, "over", Overflowing)
    out = tmp_path / "r.json"
    argv = ["--data", str(data_dir / "locomo_tiny.json"), "--systems", "over", "--no-progress"]
    assert run_bench.main([*argv, "--token-budgets", f"{ONE},2000", "--out", str(out)]) == 1
    assert "over: 5 rendered text(s) over their token budget" in capsys.readouterr().err
    assert json.loads(out.read_text())["budget_violations"] == {"over": 5}  # the report is still written
    assert run_bench.main([*argv, "--token-budgets", "2000", "--item-limits", ""]) == 0


def test_cli_errors(tmp_path: Path, capsys) -> None:
    assert run_bench.main(["--data", str(tmp_path / "absent.json")]) == 2
    assert "locomo10.json" in capsys.readouterr().err
    assert run_bench.main(["--data", str(tmp_path / "absent.json"), "--systems", "nope"]) == 2
    f = tmp_path / "x.json"
    f.write_text("[]")
    assert run_bench.main(["--data", str(f), "--systems", "nope"]) == 2
    assert "unknown system" in capsys.readouterr().err
