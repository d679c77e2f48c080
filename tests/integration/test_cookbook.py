"""The cookbook notebooks: each ``cookbook/*.py`` (jupytext percent format) is paired with an
``.ipynb`` generated from it, and every notebook runs top to bottom offline in a fresh kernel.

Offline means: no model keys and no Weaviate URL reach the kernel, so the notebooks take their
documented fallbacks (fake chat models, MockLLM, the bundled embedder, skipped live cells).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

COOKBOOK = Path(__file__).resolve().parents[2] / "cookbook"
SOURCES = sorted(COOKBOOK.glob("[0-9]*.py"))
OFFLINE_UNSET = ("OPENAI_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "WEAVIATE_URL", "WEAVIATE_API_KEY")
#: Generous per-notebook ceiling (each runs in ~10-25 s on a 2-core machine); a regression guard.
MAX_SECONDS = 150


def _code_cells(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"]


def test_the_cookbook_has_notebooks() -> None:
    assert len(SOURCES) >= 6


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_ipynb_is_generated_from_the_py(source: Path) -> None:
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"run: jupytext --to ipynb {source.relative_to(COOKBOOK.parent)}"
    expected = jupytext.read(source)
    actual = nbformat.read(paired, as_version=4)
    assert _code_cells(actual) == _code_cells(expected), f"{paired.name} is stale: re-run jupytext --to ipynb"
    assert [c.cell_type for c in actual.cells] == [c.cell_type for c in expected.cells]


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A kernelspec for this interpreter, so the notebooks see the project's environment."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "uniko-cookbook"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "uniko", "language": "python"})
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(root))
    yield "uniko-cookbook"
    mp.undo()


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_runs_offline(
    source: Path, kernel_name: str, monkeypatch: pytest.MonkeyPatch, record_property: object
) -> None:
    for name in OFFLINE_UNSET:
        monkeypatch.delenv(name, raising=False)
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name=kernel_name, resources={"metadata": {"path": str(COOKBOOK)}}
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    record_property("seconds", round(elapsed, 1))  # type: ignore[operator]
    print(f"{source.name}: {elapsed:.1f} s")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert elapsed < MAX_SECONDS
