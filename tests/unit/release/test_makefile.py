"""Issue 22: ``make bench DATA=...`` passes the dataset on, and says what to do without one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    # -o setup: the environment is already synced (this runs inside it)
    return subprocess.run(
        ["make", "-s", "-o", "setup", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_bench_without_a_dataset_says_how_to_pass_one() -> None:
    done = _make("bench", "DEFAULT_DATA=/nonexistent/locomo_dev.json")
    assert done.returncode != 0
    assert "no dataset given and the default one is missing (/nonexistent/locomo_dev.json)" in done.stderr
    assert "make bench DATA=path/to/locomo10.json" in done.stderr


def test_bench_passes_data_and_args_to_the_harness() -> None:
    done = _make("-n", "bench", "DATA=/data/locomo10.json", "ARGS=--format locomo --questions 3")
    assert done.returncode == 0
    assert 'benchmarks/run_bench.py --data "/data/locomo10.json" --format locomo --questions 3' in done.stdout


def test_demo_keeps_its_store_at_a_path() -> None:
    done = _make("-n", "demo", "DEMO_PATH=/tmp/x.db")
    assert "uniko demo --path /tmp/x.db" in done.stdout
