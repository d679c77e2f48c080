"""scripts/audit.sh with a fake pip-audit on PATH: offline is a notice, a vulnerability a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "audit.sh"
SKIPPED = "audit skipped: vulnerability database unreachable"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

CLEAN = {"dependencies": [{"name": "requests", "version": "2.34.2", "vulns": []}], "fixes": []}
VULNERABLE = {
    "dependencies": [
        {"name": "requests", "version": "2.34.2", "vulns": []},
        {
            "name": "jinja2",
            "version": "3.1.0",
            "vulns": [{"id": "GHSA-h5c8-rqwp-cp95", "fix_versions": ["3.1.3"], "aliases": []}],
        },
    ],
    "fixes": [],
}
NOT_FOUND = {
    "dependencies": [
        {"name": n, "skip_reason": f"Dependency not found on PyPI and could not be audited: {n} (1.0)"}
        for n in ("requests", "jinja2")
    ],
    "fixes": [],
}
TRACEBACK = """Traceback (most recent call last):
  File "pip_audit/_service/osv.py", line 80, in query
requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.osv.dev', port=443): Max retries
exceeded with url: /v1/query (Caused by NameResolutionError("Failed to resolve 'api.osv.dev'"))
"""


def run_audit(tmp_path: Path, body: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the script with ``pip-audit`` on PATH being a bash script with ``body``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "pip-audit"
    fake.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "{tmp_path}/args"\n{body}\n')
    fake.chmod(0o755)
    req = tmp_path / "requirements.txt"
    req.write_text("requests==2.34.2\njinja2==3.1.0\n")
    environ = {k: v for k, v in os.environ.items() if k not in ("PIP_AUDIT", "UV")}
    environ.update(
        PATH=f"{bin_dir}{os.pathsep}{environ.get('PATH', '')}",
        AUDIT_REQUIREMENTS=str(req),
        PYTHON=sys.executable,
        **env,
    )
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=60, check=False
    )
    args_file = tmp_path / "args"
    return done, args_file.read_text().split("\n") if args_file.exists() else []


def reply(report: Any, rc: int) -> str:
    return f"cat <<'JSON'\n{json.dumps(report)}\nJSON\nexit {rc}"


def test_network_error_is_a_notice(tmp_path: Path) -> None:
    done, args = run_audit(tmp_path, f"cat >&2 <<'ERR'\n{TRACEBACK}ERR\nexit 1")
    assert done.returncode == 0, done.stderr
    assert SKIPPED in done.stdout
    assert "--no-deps" in args and "--disable-pip" in args and "--timeout" in args
    assert str(tmp_path / "requirements.txt") in args


def test_nothing_found_anywhere_is_a_notice(tmp_path: Path) -> None:
    """A proxy or mirror answering 404 for every package: the database was not reached."""
    done, _ = run_audit(tmp_path, reply(NOT_FOUND, 0))
    assert done.returncode == 0 and SKIPPED in done.stdout


def test_a_hanging_audit_is_cut_off(tmp_path: Path) -> None:
    if shutil.which("timeout") is None:
        pytest.skip("needs coreutils timeout")
    t0 = time.monotonic()
    done, _ = run_audit(tmp_path, "exec sleep 30", AUDIT_TIMEOUT="1")
    assert time.monotonic() - t0 < 15
    assert done.returncode == 0 and SKIPPED in done.stdout and "within 1 s" in done.stdout


def test_vulnerabilities_fail(tmp_path: Path) -> None:
    done, _ = run_audit(tmp_path, reply(VULNERABLE, 1))
    assert done.returncode == 1
    assert "jinja2 3.1.0: GHSA-h5c8-rqwp-cp95 (fixed in: 3.1.3)" in done.stdout
    assert SKIPPED not in done.stdout


def test_clean_passes(tmp_path: Path) -> None:
    done, _ = run_audit(tmp_path, reply(CLEAN, 0))
    assert done.returncode == 0, done.stderr
    assert "audit passed: no known vulnerabilities in 1 audited packages" in done.stdout


def test_an_unexpected_error_fails(tmp_path: Path) -> None:
    done, _ = run_audit(tmp_path, "echo 'Invalid requirement: jinja2=3.1.0' >&2\nexit 1")
    assert done.returncode == 1 and "Invalid requirement" in done.stderr
