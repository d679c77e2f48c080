"""Run the retrieval benchmark: every selected system and the baselines in one run.

.venv/bin/python benchmarks/run_bench.py                      # LoCoMo dev split, three baselines
.venv/bin/python benchmarks/run_bench.py --systems baseline-hybrid,uniko --out report.json --md report.md
.venv/bin/python -m benchmarks.run_bench --data longmemeval_s.json --format longmemeval
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness.convert import load_any, sniff_format
from benchmarks.harness.format import DatasetError
from benchmarks.harness.run import BenchConfig, run_benchmark_sync, write_outputs
from benchmarks.harness.systems import DEFAULT_SYSTEMS, SYSTEMS, resolve

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
MISSING_DATA = """\
no dataset at {path}.
Pass --data PATH. For LoCoMo, download data/locomo10.json from https://github.com/snap-research/LoCoMo
(licence CC BY-NC 4.0) and run:  python benchmarks/run_bench.py --data locomo10.json --format locomo
For LongMemEval, use longmemeval_s / longmemeval_oracle JSON with --format longmemeval."""


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="uniko-memory retrieval benchmark (systems and baselines in one run)"
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
        "--categories", default=None, help="comma-separated category names to evaluate (default all)"
    )
    p.add_argument("--item-limits", type=_ints, default=(5, 10, 15))
    p.add_argument("--token-budgets", type=_ints, default=(500, 1000, 2000))
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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    data: Path = args.data or DEFAULT_DATA
    if not data.exists():
        print("error: " + MISSING_DATA.format(path=data), file=sys.stderr)
        return 2
    try:
        systems = resolve(args.systems)
        fmt = sniff_format(data) if args.format == "auto" else args.format
        dataset = load_any(data, fmt)
    except (KeyError, DatasetError) as exc:
        print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 2
    config = BenchConfig(
        item_limits=args.item_limits,
        token_budgets=args.token_budgets,
        containment_budgets=tuple(b for b in (1000, 2000) if b in args.token_budgets)
        or args.token_budgets[-1:],
        hit_rate_k=max(args.item_limits),
        categories=frozenset(c.strip() for c in args.categories.split(",")) if args.categories else None,
        max_conversations=args.conversations,
        keep_bundle_budget=args.keep_bundles,
        progress=not args.no_progress,
    )
    report, records = run_benchmark_sync(dataset, systems, config, source=str(data))
    text = write_outputs(report, records, out=args.out, md=args.md, per_question=args.per_question)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
