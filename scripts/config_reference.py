"""Render the configuration reference (docs/reference/configuration.md) from the pydantic models.

Every group of ``UnikoConfig`` (and the groups inside them), ``RecallConfig``'s per-call scope and
``LeaseConfig`` become a table of field, type, default and description. A field's description is its
``Field(description=...)`` or, the house style, the ``#:`` comment lines right above it (or a
``#:`` comment at the end of its line). ``--check`` exits 1 when the page on disk differs from what
the models give, or when a field has no description; without it the page is (re)written.

    python scripts/config_reference.py           # write the page
    python scripts/config_reference.py --check   # what `make docs` runs
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "configuration.md"

_FIELD_LINE = re.compile(r"^(?P<indent>\s+)(?P<name>[A-Za-z_]\w*)\s*:\s*[^=]")
_TRAILING = re.compile(r"#:\s?(?P<text>.*)$")


def comment_descriptions(cls: type) -> dict[str, str]:
    """``#:`` comments of the fields ``cls`` itself declares, by field name.

    The ``#:`` lines right above a field describe it (Sphinx's convention), and so does a ``#:``
    comment at the end of its line; a comment never carries over to the field after.
    """
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    out: dict[str, str] = {}
    pending: list[str] = []
    for line in source.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = _FIELD_LINE.match(line)
        if match and len(match.group("indent")) == 4:
            trailing = _TRAILING.search(line)
            texts = [*pending, trailing.group("text").strip()] if trailing else pending
            if texts:
                out[match.group("name")] = " ".join(t for t in texts if t)
        if stripped and not stripped.startswith("#"):
            pending = []
    return out


def description(model: type[BaseModel], name: str, info: FieldInfo) -> str | None:
    """The field's ``description``, else its ``#:`` comment, else (a group) its class's docstring."""
    if info.description:
        return " ".join(info.description.split())
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and name in inspect.get_annotations(cls):
            text = comment_descriptions(cls).get(name)
            if text:
                return text
            break
    groups = nested_models(info.annotation)
    if len(groups) == 1 and "__doc__" in groups[0].__dict__ and groups[0].__doc__:
        first = inspect.getdoc(groups[0]) or ""
        return " ".join(first.split("\n\n")[0].split()) + f" (`{groups[0].__name__}`, below)"
    return None


def type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return type_name(typing.get_args(annotation)[0])
    if origin is not None:
        args = ", ".join(type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        try:
            value = info.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
        if isinstance(value, BaseModel):
            return "(see its group)"
    elif info.default is PydanticUndefined:
        return "(required)"
    else:
        value = info.default
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in nested_models(arg)]


def groups() -> list[tuple[str, type[BaseModel], list[str] | None]]:
    """(heading path, model, fields to show or None for all) in page order."""
    from uniko_memory.config import LeaseConfig, RecallTuning, UnikoConfig
    from uniko_memory.recall import RecallConfig

    out: list[tuple[str, type[BaseModel], list[str] | None]] = []
    seen: set[type[BaseModel]] = set()

    def walk(path: str, model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.add(model)
        out.append((path, model, None))
        for name, info in model.model_fields.items():
            for sub in nested_models(info.annotation):
                walk(f"{path}.{name}", sub)

    walk("UnikoConfig", UnikoConfig)
    if LeaseConfig not in seen:
        walk("LeaseConfig", LeaseConfig)
    scope = [n for n in RecallConfig.model_fields if n not in RecallTuning.model_fields]
    out.append(("RecallConfig (per-call scope)", RecallConfig, scope))
    return out


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> tuple[str, list[str]]:
    """The page, and ``Model.field`` for every field without a description."""
    missing: list[str] = []
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by scripts/config_reference.py from the pydantic models; do not edit by hand."
        " `make docs` fails when this page is stale. -->",
        "",
        "Every setting of `UnikoConfig`, group by group, with its type, default and meaning; then the",
        "per-call options of `RecallConfig` (`agent.recall(query, **options)`). Build a configuration",
        'from a dict, `UnikoConfig.build({"recall": {"phases": {"phase2_coverage_gate": 0.5}}})`, or',
        'start from a preset, `UnikoConfig.preset("fast")`; validation lists every problem at once',
        "(`ConfigError`).",
        "",
    ]
    for path, model, only in groups():
        doc = inspect.getdoc(model) or ""
        own_doc = doc if model.__doc__ and "__doc__" in model.__dict__ else ""
        lines += [f"## `{path}`", "", f"`{model.__module__}.{model.__qualname__}`", ""]
        if own_doc:
            lines += [" ".join(own_doc.split("\n\n")[0].split()), ""]
        lines += ["| Field | Type | Default | Description |", "|---|---|---|---|"]
        for name, info in model.model_fields.items():
            if only is not None and name not in only:
                continue
            text = description(model, name, info)
            if not text:
                missing.append(f"{model.__qualname__}.{name}")
            lines.append(
                f"| `{name}` | `{cell(type_name(info.annotation))}` | `{cell(default_text(info))}` | {cell(text or '')} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n", missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if the page is stale or a field lacks a description"
    )
    args = parser.parse_args(argv)
    page, missing = render()
    if missing:
        print(
            "config fields without a description (add a #: comment or Field(description=...)):",
            file=sys.stderr,
        )
        for name in missing:
            print(f"  {name}", file=sys.stderr)
    if args.check:
        stale = not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page
        if stale:
            print(
                f"{PAGE.relative_to(ROOT)} is stale: run python scripts/config_reference.py", file=sys.stderr
            )
        return 1 if stale or missing else 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(page.splitlines())} lines)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
