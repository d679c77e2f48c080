"""Run the retrieval benchmark: every selected system and the baselines in one run.

.venv/bin/python benchmarks/run_bench.py                      # LoCoMo dev split, three baselines
.venv/bin/python benchmarks/run_bench.py --systems baseline-hybrid,uniko --out report.json --md report.md
.venv/bin/python benchmarks/run_bench.py --systems uniko,uniko-noconsol   # with and without consolidation
.venv/bin/python benchmarks/run_bench.py --systems uniko,baseline-hybrid,baseline-mem0   # + the peer (extra 'peers')
.venv/bin/python benchmarks/run_bench.py --conversation-ids conv-30 --questions 20 --check-determinism
.venv/bin/python benchmarks/run_bench.py --systems uniko --judge-model openai:gpt-4o-mini   # + LLM answers, graded
.venv/bin/python -m benchmarks.run_bench --data longmemeval_s.json --format longmemeval
uniko bench ...                                               # the same, from a source checkout

Every system (baselines included) is scored on the exact prompt text it returns at each token budget, counted
with one tokenizer; uniko is asked through the default call path, ``agent.recall(question, token_budget=N,
reference_ts=...)``. Exit status 1 when any system's text went over its budget (the report is still written).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.convert import load_any, sniff_format
from benchmarks.harness.format import DatasetError, EvalDataset
from benchmarks.harness.models import ModelSpecError, build_chat_model
from benchmarks.harness.run import (
    BenchConfig,
    QuestionRecord,
    render_markdown,
    run_benchmark_sync,
    select_conversations,
    write_outputs,
)
from benchmarks.harness.systems import DEFAULT_SYSTEMS, SYSTEMS, resolve_available

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
DEFAULT_JUDGE_BUDGET = 1000
MISSING_DATA = """\
no dataset at {path}.
Pass --data PATH (make bench DATA=PATH). For LoCoMo, download data/locomo10.json from https://github.com/snap-research/LoCoMo
(licence CC BY-NC 4.0) and run:  python benchmarks/run_bench.py --data locomo10.json --format locomo
For LongMemEval, use longmemeval_s / longmemeval_oracle JSON with --format longmemeval."""
#: Flags the parent of a determinism check handles itself (value count each); the child runs never see them.
_PARENT_ONLY = {
    "--check-determinism": 0,
    "--repeat": 1,
    "--out": 1,
    "--md": 1,
    "--per-question": 1,
    "--judge-out": 1,
}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def _names(text: str) -> frozenset[str]:
    return frozenset(x.strip() for x in text.split(",") if x.strip())


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="uniko-memory retrieval benchmark (systems and baselines in one run)"
    )
    p.add_argument("--data", type=Path, default=None, help=f"dataset file (default: {DEFAULT_DATA})")
    p.add_argument("--format", choices=["locomo", "longmemeval", "generic", "auto"], default="auto")
    p.add_argument(
        "--systems",
        default=",".join(DEFAULT_SYSTEMS),
        help=f"comma-separated, from: {', '.join(sorted(SYSTEMS))}",
    )
    p.add_argument("--conversations", type=int, default=None, help="only the first N conversations (by id)")
    p.add_argument(
        "--conversation-ids", type=_names, default=None, help="only these conversations (comma-separated ids)"
    )
    p.add_argument(
        "--questions", type=int, default=None, help="only the first N questions of each conversation"
    )
    p.add_argument(
        "--categories", default=None, help="comma-separated category names to evaluate (default all)"
    )
    p.add_argument(
        "--token-budgets",
        type=_ints,
        default=(500, 1000, 2000, 4000, 8000),
        help="the headline: one call per budget N with token_budget=N, scored on its rendered text",
    )
    p.add_argument(
        "--item-limits",
        type=_ints,
        default=(5, 10, 15),
        help="diagnostics: one call per k with limit=k at the default budget ('' for none)",
    )
    p.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--md", type=Path, default=None, help="write the Markdown report here")
    p.add_argument("--per-question", type=Path, default=None, help="write per-question records (JSONL) here")
    p.add_argument(
        "--keep-bundles",
        type=int,
        default=None,
        metavar="TOKENS",
        help="store each question's bundle text at this token budget in the --per-question records (LLM stage)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    det = p.add_argument_group("determinism")
    det.add_argument(
        "--check-determinism",
        action="store_true",
        help="run everything --repeat times, each in a fresh process with its own hash seed, and compare every "
        "metric at 3 decimals; exit 1 on any difference",
    )
    det.add_argument("--repeat", type=int, default=2, help="runs for --check-determinism (default 2)")
    llm = p.add_argument_group("LLM stage (answers from the bundles, graded CORRECT / WRONG)")
    llm.add_argument(
        "--judge-model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="grade with this chat model, e.g. openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, "
        "cohere:command-r (needs the provider's langchain package and API key)",
    )
    llm.add_argument(
        "--answer-model",
        default=None,
        metavar="PROVIDER:MODEL",
        help="answer with this model (default: the judge)",
    )
    llm.add_argument(
        "--judge-systems", type=_names, default=None, help="systems to judge (default: every system run)"
    )
    llm.add_argument(
        "--judge-budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help=f"bundle budget the answers are written from (default: --keep-bundles or {DEFAULT_JUDGE_BUDGET})",
    )
    llm.add_argument("--judge-concurrency", type=int, default=4, help="model calls in flight (default 4)")
    llm.add_argument("--judge-out", type=Path, default=None, help="write every judged answer (JSONL) here")
    return p


def _err(text: str) -> None:
    print(f"error: {text}", file=sys.stderr)


def child_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` without the flags only the parent of a determinism check handles (``_PARENT_ONLY``)."""
    out: list[str] = []
    skip = 0
    for arg in argv:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in _PARENT_ONLY:
            skip = 0 if "=" in arg else _PARENT_ONLY[name]
            continue
        out.append(arg)
    return out


def run_llm(
    args: argparse.Namespace, dataset: EvalDataset, records: Sequence[QuestionRecord], systems: Sequence[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Answer and grade every kept bundle of the judged systems; (report["llm"], judged answers as JSON)."""
    from benchmarks.harness.judge import cases_from_records, run_llm_stage

    judge = build_chat_model(args.judge_model)
    answer = build_chat_model(args.answer_model) if args.answer_model else judge
    out: dict[str, Any] = {
        "answer_model": args.answer_model or args.judge_model,
        "judge_model": args.judge_model,
        "bundle_budget": args.judge_budget,
        "systems": {},
    }
    judged: list[dict[str, Any]] = []

    async def stage() -> None:  # one event loop for every call: provider clients bind to the loop
        for name in systems:
            cases = cases_from_records(dataset, records, system=name)
            summary, results = await run_llm_stage(cases, answer, judge, concurrency=args.judge_concurrency)
            out["systems"][name] = summary
            judged.extend({"system": name, **r.__dict__} for r in results)

    asyncio.run(stage())
    return out, judged


def _check_determinism(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from benchmarks.harness.determinism import check_processes

    if args.repeat < 2:
        _err("--repeat must be at least 2 for --check-determinism")
        return 2
    try:
        result = check_processes(child_argv(argv), runs=args.repeat)
    except RuntimeError as exc:
        _err(f"determinism check: {exc}")
        return 2
    first = result.reports[0]
    text = render_markdown(first)
    outputs = (
        (args.out, json.dumps(first, indent=1, sort_keys=True, ensure_ascii=False) + "\n"),
        (args.md, text + "\n"),
        (
            args.per_question,
            "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in result.records[0]),
        ),
    )
    for target, content in outputs:
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
    print(text)
    print(result.summary())
    return max(0 if result.identical else 1, _budget_verdict(first))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(prog).parse_args(argv)
    data: Path = args.data or DEFAULT_DATA
    if not data.exists():
        _err(MISSING_DATA.format(path=data))
        return 2
    try:
        systems, skipped = resolve_available(args.systems)
        for line in skipped:
            print(line, file=sys.stderr)
        if not systems:
            raise KeyError("no system left to run")
        judged_systems = [n for n in systems if args.judge_systems is None or n in args.judge_systems]
        if args.judge_systems is not None and set(args.judge_systems) - set(systems):
            raise KeyError(
                f"--judge-systems names systems not run: {sorted(set(args.judge_systems) - set(systems))}"
            )
        if args.judge_model:
            # fail on a bad spec, a missing package or API key before any retrieval work
            build_chat_model(args.judge_model)
            if args.answer_model:
                build_chat_model(args.answer_model)
        elif args.answer_model:
            raise ModelSpecError("--answer-model needs --judge-model")
        fmt = sniff_format(data) if args.format == "auto" else args.format
        dataset = load_any(data, fmt)
    except (KeyError, DatasetError, ModelSpecError) as exc:
        _err(exc.args[0] if isinstance(exc, KeyError) else str(exc))
        return 2
    if args.check_determinism:
        return _check_determinism(args, argv)
    if args.judge_model and args.judge_budget is None:
        args.judge_budget = args.keep_bundles or DEFAULT_JUDGE_BUDGET
    config = BenchConfig(
        item_limits=args.item_limits,
        token_budgets=args.token_budgets,
        hit_rate_k=max(args.item_limits) if args.item_limits else None,
        categories=frozenset(c.strip() for c in args.categories.split(",")) if args.categories else None,
        max_conversations=args.conversations,
        conversation_ids=args.conversation_ids,
        max_questions=args.questions,
        keep_bundle_budget=args.judge_budget if args.judge_model else args.keep_bundles,
        progress=not args.no_progress,
    )
    try:
        select_conversations(dataset, config)  # an unknown --conversation-ids entry fails here
    except KeyError as exc:
        _err(exc.args[0])
        return 2
    report, records = run_benchmark_sync(dataset, systems, config, source=str(data))
    if args.judge_model:
        report["llm"], judged = run_llm(args, dataset, records, judged_systems)
        if args.judge_out is not None:
            args.judge_out.parent.mkdir(parents=True, exist_ok=True)
            with args.judge_out.open("w", encoding="utf-8") as fh:
                for j in judged:
                    fh.write(json.dumps(j, sort_keys=True, ensure_ascii=False) + "\n")
    text = write_outputs(report, records, out=args.out, md=args.md, per_question=args.per_question)
    print(text)
    return _budget_verdict(report)


def _budget_verdict(report: dict[str, Any]) -> int:
    """1 (and a message) when any system's text went over its budget: those figures do not hold."""
    violations = report.get("budget_violations") or {}
    for name, n in violations.items():
        _err(f"{name}: {n} rendered text(s) over their token budget (see 'Rendered tokens' in the report)")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
