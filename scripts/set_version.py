"""Move the version of all four packages together: ``python scripts/set_version.py 0.2.0``
(``make version VERSION=0.2.0``).

The core's ``pyproject.toml`` is the one version source (``uniko_memory.__version__`` reads the
installed metadata); the three integrations carry the same number and pin the core to
``>=VERSION,<NEXT_MINOR``. This rewrites those lines; ``tests/unit/release/test_versions.py``
fails when they drift apart. Run ``uv lock`` afterwards.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "pyproject.toml"
INTEGRATIONS = sorted((ROOT / "integrations").glob("*/pyproject.toml"))
_VERSION = re.compile(r'^version = "[^"]*"$', re.M)
_PIN = re.compile(r'^    "uniko-memory[<>=!~,.0-9a-z ]*",$', re.M)
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(?:a|b|rc)\d+)?$")


def core_pin(version: str) -> str:
    """The requirement an integration of ``version`` puts on the core: same minor series."""
    m = _SEMVER.match(version)
    if not m:
        raise ValueError(f"not a release version: {version!r} (use MAJOR.MINOR.PATCH)")
    major, minor = int(m.group(1)), int(m.group(2))
    return f"uniko-memory>={version},<{major}.{minor + 1}"


def set_version(version: str) -> list[Path]:
    pin = core_pin(version)
    changed = []
    for path in [CORE, *INTEGRATIONS]:
        text = path.read_text("utf-8")
        new = _VERSION.sub(f'version = "{version}"', text, count=1)
        if path != CORE:
            new = _PIN.sub(f'    "{pin}",', new, count=1)
        if new != text:
            path.write_text(new, "utf-8")
            changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/set_version.py MAJOR.MINOR.PATCH", file=sys.stderr)
        return 2
    try:
        changed = set_version(argv[0])
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    for path in changed:
        print(f"updated {path.relative_to(ROOT)}")
    print("now run: uv lock")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
