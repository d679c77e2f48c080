"""Two runs on the same data give the same metrics (3 decimals): fingerprints, diffs, the uniko system, the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from benchmarks import run_bench
from benchmarks.harness.baselines import BM25Baseline
from benchmarks.harness.convert import load_any
from benchmarks.harness.determinism import (
    check_in_process,
    check_processes,
    count_values,
    differences,
    fingerprint,
)
from benchmarks.harness.run import BenchConfig, run_benchmark
from benchmarks.harness.uniko_system import DETERMINISTIC_PIPELINE, UnikoSystem, bench_config
from tests.unit.ingest._support import FakeEmbedder

from uniko_memory.config import UnikoConfig

CONFIG = BenchConfig(item_limits=(1, 3), token_budgets=(150, 400), hit_rate_k=3, progress=False)


def _tiny(data_dir: Path):
    return load_any(data_dir / "locomo_tiny.json", "locomo")


def _bm25() -> BM25Baseline:
    return BM25Baseline()


def _uniko() -> UnikoSystem:
    return UnikoSystem(embedder=FakeEmbedder())


async def test_fingerprint_drops_timing_and_rounds(data_dir: Path) -> None:
    report, records = await run_benchmark(_tiny(data_dir), {"baseline-bm25": _bm25}, CONFIG)
    fp = fingerprint(report, records)
    assert set(fp) == {"dataset", "config", "systems", "per_question"}
    assert "source" not in fp["dataset"] and "runtime" not in fp["systems"]["baseline-bm25"]
    assert len(fp["per_question"]["baseline-bm25"]) == 5
    assert all(
        v == round(v, 3)
        for m in fp["per_question"]["baseline-bm25"].values()
        for v in m.values()
        if isinstance(v, float)
    )
    slower = copy.deepcopy(report)
    slower["systems"]["baseline-bm25"]["runtime"]["latency_p50_s"] *= 10
    slower["wall_s"] += 5
    assert differences(fp, fingerprint(slower, records)) == []
    # a change below the third decimal is not a difference; one at the third is
    tweaked = copy.deepcopy(report)
    q = tweaked["systems"]["baseline-bm25"]["quality"]["evidence_all@3"]
    q["overall"] += 0.0001
    assert differences(fp, fingerprint(tweaked, records)) == []
    q["overall"] += 0.01
    diffs = differences(fp, fingerprint(tweaked, records))
    assert len(diffs) == 1 and diffs[0].startswith("systems.baseline-bm25.quality.evidence_all@3.overall: ")
    assert count_values(fp) > 50


def test_differences_name_missing_keys_and_cap_their_number() -> None:
    a = {"x": {"m": 1.0, "n": [1, 2]}, "only_a": 1}
    b = {"x": {"m": 2.0, "n": [1, 3]}, "only_b": 1}
    assert differences(a, b) == [
        "only_a: missing in run 2",
        "only_b: missing in run 1",
        "x.m: 1.0 != 2.0",
        "x.n[1]: 2 != 3",
    ]
    assert len(differences({str(i): i for i in range(50)}, {}, limit=10)) == 10


async def test_uniko_twice_on_the_tiny_conversation_gives_identical_metric_json(data_dir: Path) -> None:
    result = await check_in_process(_tiny(data_dir), {"uniko": _uniko, "baseline-bm25": _bm25}, CONFIG)
    assert result.identical, result.summary()
    fps = [fingerprint(r, recs) for r, recs in zip(result.reports, result.records, strict=True)]
    assert json.dumps(fps[0], sort_keys=True) == json.dumps(fps[1], sort_keys=True)
    assert result.summary().endswith("identical")
    assert "evidence_all@3" in fps[0]["systems"]["uniko"]["quality"]


def test_harness_switches_the_timing_driven_triggers_off() -> None:
    cfg = bench_config()
    for key, value in DETERMINISTIC_PIPELINE.items():
        assert getattr(cfg.pipeline, key) == value
    assert bench_config({"pipeline": {"consolidation_threshold": 5}}).pipeline.consolidation_threshold == 5
    shipped = UnikoConfig().model_dump(exclude={"pipeline"})
    assert cfg.model_dump(exclude={"pipeline"}) == shipped  # everything else keeps the shipped defaults


@pytest.mark.slow
def test_check_processes_runs_fresh_processes_with_their_own_hash_seed(
    data_dir: Path, tmp_path: Path
) -> None:
    """The real models, two processes (PYTHONHASHSEED 1 and 2): identical metric JSON."""
    argv = ["--data", str(data_dir / "locomo_tiny.json"), "--systems", "uniko,baseline-bm25"]
    result = check_processes(argv, workdir=tmp_path)
    assert result.identical, result.summary()
    assert (tmp_path / "run1.json").exists() and (tmp_path / "run2.questions.jsonl").exists()
    a, b = (json.loads((tmp_path / f"run{i}.json").read_text()) for i in (1, 2))
    assert a["systems"]["uniko"]["quality"] == b["systems"]["uniko"]["quality"]


def test_check_processes_reports_a_failing_run(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="run 1 exited with 2"):
        check_processes(["--data", str(tmp_path / "absent.json")], workdir=tmp_path)


def test_cli_flags_for_the_determinism_check(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--data",
        "d.json",
        "--out",
        "r.json",
        "--md=r.md",
        "--check-determinism",
        "--repeat",
        "3",
        "--no-progress",
    ]
    assert run_bench.child_argv(argv) == ["--data", "d.json", "--no-progress"]
    data = str(data_dir / "locomo_tiny.json")
    assert run_bench.main(["--data", data, "--check-determinism", "--repeat", "1"]) == 2
    assert "--repeat must be at least 2" in capsys.readouterr().err

    seen: dict[str, object] = {}

    def fake_check(child: list[str], *, runs: int):  # the process runs themselves are tested above
        seen.update(child=child, runs=runs)
        return _result_from(data_dir, identical=len(child) > 0)

    monkeypatch.setattr("benchmarks.harness.determinism.check_processes", fake_check)
    out, pq = tmp_path / "r.json", tmp_path / "q.jsonl"
    flags = ["--check-determinism", "--out", str(out), "--per-question", str(pq)]
    rc = run_bench.main(["--data", data, "--systems", "baseline-bm25", *flags])
    assert rc == 0 and seen == {"child": ["--data", data, "--systems", "baseline-bm25"], "runs": 2}
    assert json.loads(out.read_text())["schema"] == "uniko-memory-bench/2"
    assert len(pq.read_text().splitlines()) == 5
    assert capsys.readouterr().out.rstrip().endswith("identical")


def _result_from(data_dir: Path, identical: bool):
    import asyncio

    from benchmarks.harness.determinism import DeterminismResult

    report, records = asyncio.run(run_benchmark(_tiny(data_dir), {"baseline-bm25": _bm25}, CONFIG))
    return DeterminismResult(
        runs=2,
        values=count_values(fingerprint(report, records)),
        differences=[] if identical else ["x: 1 != 2"],
        reports=[report, report],
        records=[[r.to_json() for r in records]] * 2,
    )
