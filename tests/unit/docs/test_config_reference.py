"""The configuration reference page is generated from the pydantic models: it must be current, and
every field must say what it does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_config_field_has_a_description() -> None:
    _, missing = _script().render()
    assert missing == [], f"add a #: comment or Field(description=...) to: {missing}"


def test_the_page_is_current() -> None:
    script = _script()
    page, _ = script.render()
    assert script.PAGE.read_text(encoding="utf-8") == page, "run: python scripts/config_reference.py"


def test_the_page_covers_every_group_and_per_call_option() -> None:
    from uniko_memory import UnikoConfig
    from uniko_memory.recall import RecallConfig

    page, _ = _script().render()
    for group in UnikoConfig.model_fields:
        assert f"## `UnikoConfig.{group}`" in page
    for option in ("token_budget", "limit", "sessions", "viewer", "reference_ts"):
        assert f"| `{option}` |" in page
    assert "phase2_coverage_gate" in page and len(RecallConfig.model_fields) > 10


def test_a_field_without_a_description_is_reported() -> None:
    from pydantic import BaseModel, Field

    script = _script()

    class Documented(BaseModel):
        #: Said above.
        a: int = 1
        b: int = Field(2, description="Said in the field.")
        c: int = 3  #: Said at the end.
        d: int = 4

    found = {
        name: script.description(Documented, name, info) for name, info in Documented.model_fields.items()
    }
    assert found == {"a": "Said above.", "b": "Said in the field.", "c": "Said at the end.", "d": None}
