"""``uniko bench``: the retrieval benchmark harness of a source checkout."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .output import _err

BENCH_ROOT_ENV = "UNIKO_BENCH_ROOT"
_BENCH_MARKERS = (
    "benchmarks/run_bench.py",
    "benchmarks/harness/run.py",
    "benchmarks/harness/uniko_system.py",
)
BENCH_MISSING = f"""\
the benchmark harness is not available: it is not part of the installed package (a wheel ships
only uniko_memory) but lives in benchmarks/ of a uniko-memory source checkout. Run `uniko bench`
inside a checkout (or set {BENCH_ROOT_ENV}=<checkout>) with its dev dependencies installed
(`uv sync`), or run `python benchmarks/run_bench.py` there."""


class BenchUnavailable(RuntimeError):
    """The benchmark harness cannot be found or loaded; the message says what to do."""


def is_bench_root(path: Path) -> bool:
    return all((path / m).is_file() for m in _BENCH_MARKERS)


def find_bench_root(
    *, env: dict[str, str] | None = None, module_file: str | Path = __file__, cwd: Path | None = None
) -> Path:
    """The checkout holding ``benchmarks/run_bench.py``: ``$UNIKO_BENCH_ROOT`` if set, else the
    checkout this module lives in (``src/uniko_memory/cli/cmd_bench.py``), else the current directory or a
    parent. Raises ``BenchUnavailable``."""
    environ = os.environ if env is None else env
    explicit = environ.get(BENCH_ROOT_ENV)
    if explicit:
        root = Path(explicit).expanduser().resolve()
        if not is_bench_root(root):
            raise BenchUnavailable(f"{BENCH_ROOT_ENV}={explicit}: no benchmarks/run_bench.py harness there")
        return root
    here = (cwd or Path.cwd()).resolve()
    for candidate in (Path(module_file).resolve().parents[3], here, *here.parents):
        if is_bench_root(candidate):
            return candidate
    raise BenchUnavailable(BENCH_MISSING)


def load_bench(root: Path) -> Any:
    """Import ``benchmarks.run_bench`` from the checkout at ``root``."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("benchmarks.run_bench")
    except ImportError as exc:
        raise BenchUnavailable(
            f"cannot load the harness from {root / 'benchmarks'}: {exc}; "
            "install the dev dependencies of the checkout (`uv sync`)"
        ) from None
    loaded = Path(module.__file__ or "").resolve()
    if loaded != (root / "benchmarks" / "run_bench.py").resolve():
        raise BenchUnavailable(
            f"another 'benchmarks' package is already imported ({loaded}); cannot load {root}"
        )
    return module


def bench(argv: Sequence[str]) -> int:
    """``uniko bench ARGS`` = ``python benchmarks/run_bench.py ARGS`` (same options, same exit codes)."""
    try:
        run_bench = load_bench(find_bench_root())
    except BenchUnavailable as exc:
        _err(f"uniko bench: {exc}")
        return 2
    rc: int = run_bench.main(list(argv), prog="uniko bench")
    return rc
