"""Issue 22 item 4: every ``python`` block of docs/scoping.md runs, as written, with the real
local models (the blocks assert what they show: one user's memory never reaches another's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "scoping.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", PAGE.read_text("utf-8"), flags=re.S | re.M)


def test_the_page_has_both_app_shapes() -> None:
    text = PAGE.read_text("utf-8")
    assert "## One agent per user" in text and "## One agent shared by many users" in text
    for mem0_name in ("user_id", "agent_id", "run_id"):
        assert f"`{mem0_name}`" in text
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("source", BLOCKS, ids=["agent-per-user", "shared-agent"])
def test_example_runs(source: str) -> None:
    code = compile(source, f"{PAGE.name} example", "exec")
    exec(code, {"__name__": "scoping_example"})
