"""Are two benchmark runs the same? Every metric compared at 3 decimals.

``fingerprint`` keeps what a run measures about retrieval (dataset counts, every quality aggregate per system and
category, the rendered-token figures, every per-question metric), rounded, and drops what timing changes (latency,
setup and wall time, peak memory, and the comparison rows built from them). ``differences`` lists where two fingerprints disagree.

``check_processes`` (``run_bench.py --check-determinism``) runs the benchmark in fresh processes, each with its own
``PYTHONHASHSEED`` so that an order that depends on string hashing (iterating a set of ids) shows up as a difference;
``check_in_process`` repeats it in this process (fresh systems, so fresh stores) and is what the unit tests use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .format import EvalDataset
from .run import BenchConfig, QuestionRecord, SystemFactory, run_benchmark

DECIMALS = 3
RUN_BENCH = Path(__file__).resolve().parent.parent / "run_bench.py"


def _round(value: Any, nd: int) -> Any:
    if isinstance(value, float):
        return round(value, nd) + 0.0  # -0.0 → 0.0
    if isinstance(value, Mapping):
        return {str(k): _round(v, nd) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, nd) for v in value]
    return value


def _record_json(r: QuestionRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    return r.to_json() if isinstance(r, QuestionRecord) else r


def fingerprint(
    report: Mapping[str, Any],
    records: Iterable[QuestionRecord | Mapping[str, Any]] = (),
    decimals: int = DECIMALS,
) -> dict[str, Any]:
    """The timing-free content of a run, rounded to ``decimals`` (see the module docstring)."""
    dataset = {k: v for k, v in report["dataset"].items() if k != "source"}
    systems = {
        name: {"quality": s["quality"], "rendered": s["rendered"], "questions": s["runtime"]["questions"]}
        for name, s in report["systems"].items()
    }
    per_question: dict[str, dict[str, Any]] = {}
    for rec in records:
        r = _record_json(rec)
        per_question.setdefault(r["system"], {})[f"{r['conversation_id']}|{r['question_id']}"] = r["metrics"]
    out: dict[str, Any] = {"dataset": dataset, "config": report["config"], "systems": systems}
    if per_question:
        out["per_question"] = per_question
    if report.get("llm"):
        out["llm"] = {
            name: {k: v for k, v in s.items() if not k.endswith("tokens_per_question")}
            for name, s in report["llm"]["systems"].items()
        }
    return _round(out, decimals)


def differences(a: Any, b: Any, path: str = "", limit: int = 200) -> list[str]:
    """Where ``a`` and ``b`` disagree, one line per leaf (``path: a != b``), at most ``limit`` lines."""
    out: list[str] = []

    def walk(x: Any, y: Any, where: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            for k in sorted(set(x) | set(y), key=str):
                if len(out) >= limit:
                    return
                sub = f"{where}.{k}" if where else str(k)
                if k not in x:
                    out.append(f"{sub}: missing in run 1")
                elif k not in y:
                    out.append(f"{sub}: missing in run 2")
                else:
                    walk(x[k], y[k], sub)
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (xi, yi) in enumerate(zip(x, y, strict=True)):
                walk(xi, yi, f"{where}[{i}]")
        elif x != y:
            out.append(f"{where}: {x!r} != {y!r}")

    walk(a, b, path)
    return out[:limit]


def count_values(fp: Any) -> int:
    """How many leaf values a fingerprint holds (for the "N values compared" line)."""
    if isinstance(fp, Mapping):
        return sum(count_values(v) for v in fp.values())
    if isinstance(fp, list):
        return sum(count_values(v) for v in fp)
    return 1


@dataclass
class DeterminismResult:
    runs: int
    values: int
    differences: list[str] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    records: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences

    def summary(self, decimals: int = DECIMALS) -> str:
        head = f"determinism: {self.runs} runs, {self.values} values compared at {decimals} decimals: "
        if self.identical:
            return head + "identical"
        lines = [head + f"{len(self.differences)} difference(s)"]
        lines += [f"  {d}" for d in self.differences]
        return "\n".join(lines)


def _compare(fps: Sequence[dict[str, Any]]) -> list[str]:
    diffs: list[str] = []
    for i, fp in enumerate(fps[1:], start=2):
        for d in differences(fps[0], fp):
            diffs.append(d if len(fps) == 2 else f"run {i}: {d}")
    return diffs


async def check_in_process(
    dataset: EvalDataset,
    systems: Mapping[str, SystemFactory],
    config: BenchConfig,
    *,
    runs: int = 2,
    decimals: int = DECIMALS,
) -> DeterminismResult:
    """Run the benchmark ``runs`` times in this process (fresh systems each time) and compare."""
    reports, records, fps = [], [], []
    for _ in range(runs):
        report, recs = await run_benchmark(dataset, systems, config)
        reports.append(report)
        records.append([r.to_json() for r in recs])
        fps.append(fingerprint(report, recs, decimals))
    return DeterminismResult(runs, count_values(fps[0]), _compare(fps), reports, records)


def check_processes(
    argv: Sequence[str],
    *,
    runs: int = 2,
    decimals: int = DECIMALS,
    workdir: str | Path | None = None,
    python: str = sys.executable,
) -> DeterminismResult:
    """Run ``run_bench.py ARGV`` ``runs`` times, each in a fresh process with its own PYTHONHASHSEED, and compare.

    Each run writes its JSON report and per-question records under ``workdir`` (a temporary folder by default).
    A run that fails raises ``RuntimeError`` with the tail of its stderr.
    """
    with tempfile.TemporaryDirectory(prefix="uniko-determinism-") as tmp:
        base = Path(workdir) if workdir is not None else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        reports, records, fps = [], [], []
        for i in range(runs):
            out, pq = base / f"run{i + 1}.json", base / f"run{i + 1}.questions.jsonl"
            cmd = [
                python,
                str(RUN_BENCH),
                *argv,
                "--out",
                str(out),
                "--per-question",
                str(pq),
                "--no-progress",
            ]
            env = {**os.environ, "PYTHONHASHSEED": str(i + 1)}
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
                raise RuntimeError(f"run {i + 1} exited with {proc.returncode}:\n{tail}")
            report = json.loads(out.read_text(encoding="utf-8"))
            recs = [json.loads(line) for line in pq.read_text(encoding="utf-8").splitlines() if line.strip()]
            reports.append(report)
            records.append(recs)
            fps.append(fingerprint(report, recs, decimals))
        return DeterminismResult(runs, count_values(fps[0]), _compare(fps), reports, records)
