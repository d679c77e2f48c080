"""Issue 22: the four packages move together (one version, integrations pin the core's series)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

import uniko_memory

ROOT = Path(__file__).resolve().parents[3]
INTEGRATIONS = sorted((ROOT / "integrations").glob("*/pyproject.toml"))


def _project(path: Path) -> dict[str, object]:
    project: dict[str, object] = tomllib.loads(path.read_text("utf-8"))["project"]
    return project


def _set_version() -> ModuleType:
    spec = importlib.util.spec_from_file_location("set_version", ROOT / "scripts" / "set_version.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_three_integrations_are_found() -> None:
    names = {_project(p)["name"] for p in INTEGRATIONS}
    assert names == {"langchain-uniko", "llama-index-retrievers-uniko", "llama-index-memory-uniko"}


def test_all_four_packages_share_the_core_version() -> None:
    version = _project(ROOT / "pyproject.toml")["version"]
    assert uniko_memory.__version__ == version  # read from the installed metadata, not a copy
    for path in INTEGRATIONS:
        assert _project(path)["version"] == version, f"{path.parent.name} is not at {version}"


def test_integrations_pin_the_core_series_they_were_released_with() -> None:
    version = str(_project(ROOT / "pyproject.toml")["version"])
    pin = _set_version().core_pin(version)
    for path in INTEGRATIONS:
        deps = [d for d in _project(path)["dependencies"] if str(d).startswith("uniko-memory")]  # type: ignore[attr-defined]
        assert deps == [pin], f"{path.parent.name} pins {deps}, expected [{pin!r}]"


def test_set_version_rejects_what_is_not_a_release() -> None:
    module = _set_version()
    assert module.core_pin("1.4.2") == "uniko-memory>=1.4.2,<1.5"
    assert module.core_pin("0.2.0rc1") == "uniko-memory>=0.2.0rc1,<0.3"
    with pytest.raises(ValueError, match="not a release version"):
        module.core_pin("latest")
