"""Issue 22: the packages install from their built wheels and work, outside the checkout.

``make dist``'s build (``uv build --all-packages``) runs into a temporary folder; the four wheels go
into a fresh virtual environment (``uv venv`` + ``uv pip install``, from uv's cache when it has
every package, else from the registry; torch is refused); ``scripts/install_smoke.py`` then runs
there from outside the checkout: import, ingest, recall, the ``uniko`` command, the LangChain and
LlamaIndex retrievers. About 15 s with a warm uv cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("uniko_memory", "langchain_uniko", "llama_index_retrievers_uniko", "llama_index_memory_uniko")
#: The core's extras the smoke test needs: the offline default models and the progress bar.
CORE_EXTRAS = "local,spacy,cli"

pytestmark = pytest.mark.install


def _uv() -> list[str]:
    if os.environ.get("UV"):  # set by `uv run` (the Makefile's way in)
        return [os.environ["UV"]]
    found = shutil.which("uv")
    if found:
        return [found]
    return ["python3", "-m", "uv"]


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False, **kwargs)  # type: ignore[call-overload,no-any-return]


def _ok(proc: subprocess.CompletedProcess[str], what: str) -> None:
    assert proc.returncode == 0, (
        f"{what} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )


def test_built_wheels_install_into_a_fresh_venv_and_work(tmp_path: Path) -> None:
    uv = _uv()
    dist = tmp_path / "dist"
    _ok(_run([*uv, "build", "--all-packages", "--quiet", "-o", str(dist)], cwd=ROOT), "uv build")
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    assert sorted(w.name.split("-")[0] for w in wheels) == sorted(PACKAGES)
    assert sorted(s.name.rsplit("-", 1)[0] for s in sdists) == sorted(PACKAGES)
    core_sdist = next(s for s in sdists if s.name.startswith("uniko_memory-"))
    with tarfile.open(core_sdist) as tar:
        tops = {Path(name).parts[1] for name in tar.getnames() if len(Path(name).parts) > 2}
    assert tops == {"src", "docs"}, f"the core sdist ships only the package and its docs, not {tops}"

    venv = tmp_path / "venv"
    _ok(_run([*uv, "venv", "--quiet", "--python", sys.executable, str(venv)]), "uv venv")
    python = venv / "bin" / "python"
    no_torch = tmp_path / "constraints.txt"
    no_torch.write_text("torch<0\n")
    core = next(w for w in wheels if w.name.startswith("uniko_memory-"))
    requirements = [f"{core}[{CORE_EXTRAS}]", *(str(w) for w in wheels if w != core)]
    install = [*uv, "pip", "install", "--quiet", "--python", str(python), "-c", str(no_torch), *requirements]
    proc = _run([*install, "--offline"])
    if proc.returncode != 0:  # something is not in uv's cache: fetch it from the registry
        proc = _run(install)
    _ok(proc, "uv pip install")
    listed = _run([*uv, "pip", "list", "--python", str(python)])
    assert "torch " not in listed.stdout

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    smoke = _run([str(python), str(ROOT / "scripts" / "install_smoke.py")], cwd=tmp_path, env=env)
    _ok(smoke, "the smoke test in the fresh venv")
    for step in ("import", "ingest", "recall", "langchain retriever", "llamaindex retriever", "uniko demo"):
        assert f"ok {step}" in smoke.stdout
