"""The docs' code runs: every ```python block of a page, top to bottom in one namespace, in a
temporary directory, offline (the default local models). A block right after a
``<!-- no-run: reason -->`` line is skipped (it needs a server or an API key, or is a fragment)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)\n```", re.S)
PAGES = sorted(p for p in DOCS.rglob("*.md") if "```python" in p.read_text(encoding="utf-8"))
#: Pages whose examples are run; the rest (older deep-dive pages) show fragments.
RUN = {"index.md", "concepts", "how-to"}


def blocks(page: Path) -> list[tuple[str, bool]]:
    """(code, runs) for each python block of ``page``."""
    text = "\n" + page.read_text(encoding="utf-8")
    return [(m["code"], not m["before"].startswith("<!-- no-run")) for m in _BLOCK.finditer(text)]


def _runs(page: Path) -> bool:
    rel = page.relative_to(DOCS)
    return rel.parts[0] in RUN or str(rel) in RUN


def test_the_how_tos_have_runnable_examples() -> None:
    for name in ("langchain", "langgraph", "llamaindex", "documents"):
        assert any(runs for _, runs in blocks(DOCS / "how-to" / f"{name}.md")), name
    for page in PAGES:  # every skipped block says why
        for match in re.finditer(r"<!-- no-run(?P<reason>[^>]*)-->", page.read_text(encoding="utf-8")):
            assert match["reason"].strip(" :"), f"{page.name}: a no-run block needs a reason"


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if _runs(p) and any(runs for _, runs in blocks(p))],
    ids=lambda p: str(p.relative_to(DOCS)),
)
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("WEAVIATE_URL", "COHERE_API_KEY", "CO_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    ran = 0
    for number, (code, runs) in enumerate(blocks(page), 1):
        if runs:
            exec(compile(code, f"{page.relative_to(DOCS)} (block {number})", "exec"), namespace)
            ran += 1
    assert ran
    assert os.getcwd() == str(tmp_path)
