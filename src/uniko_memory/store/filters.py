"""A small filter language that every backend translates (SQL for SQLite, ``Filter`` for Weaviate).

Fields are either the dimension columns every node has (``id``, ``tier``, ``session``,
``participant``, ``time``, ``visibility``, ``redacted``) or a top-level attribute of the node model.
Malformed filters raise ``FilterError`` at construction, never at query time on a backend.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from ..errors import FilterError
from ..model.time import to_utc

Scalar: TypeAlias = str | int | float | bool | datetime | None

#: The dimension columns; everything else is a node attribute.
DIMENSIONS = frozenset({"id", "tier", "session", "participant", "time", "visibility", "redacted"})
_FIELD = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
MAX_IN_VALUES = 50_000


def _check_field(field: str) -> str:
    if not isinstance(field, str) or not _FIELD.match(field):
        raise FilterError(f"invalid filter field {field!r}: use a lower-case identifier")
    return field


def _check_value(value: object) -> Scalar:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise FilterError("filter values must be finite numbers")
        return value
    if isinstance(value, datetime):
        return to_utc(value)
    raise FilterError(f"unsupported filter value type {type(value).__name__}")


class Filter:
    """Base of the filter AST. Combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Filter) -> Filter:
        return And((self, other))

    def __or__(self, other: Filter) -> Filter:
        return Or((self, other))

    def __invert__(self) -> Filter:
        return Not(self)


@dataclass(frozen=True)
class Eq(Filter):
    field: str
    value: Scalar

    def __post_init__(self) -> None:
        _check_field(self.field)
        object.__setattr__(self, "value", _check_value(self.value))


@dataclass(frozen=True)
class In(Filter):
    field: str
    values: tuple[Scalar, ...]

    def __post_init__(self) -> None:
        _check_field(self.field)
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Iterable):
            raise FilterError("In() needs a collection of values")
        vals = tuple(_check_value(v) for v in self.values)
        if len(vals) > MAX_IN_VALUES:
            raise FilterError(f"In() takes at most {MAX_IN_VALUES} values")
        object.__setattr__(self, "values", vals)


@dataclass(frozen=True)
class Range(Filter):
    """Half-open range ``[gte, lt)``; either bound may be None. Also ``gt``/``lte`` for completeness."""

    field: str
    gte: Scalar = None
    lt: Scalar = None
    gt: Scalar = None
    lte: Scalar = None

    def __post_init__(self) -> None:
        _check_field(self.field)
        for name in ("gte", "lt", "gt", "lte"):
            v = _check_value(getattr(self, name))
            if isinstance(v, bool):
                raise FilterError("range bounds must be numbers or datetimes")
            object.__setattr__(self, name, v)
        if all(getattr(self, n) is None for n in ("gte", "lt", "gt", "lte")):
            raise FilterError("Range() needs at least one bound")


@dataclass(frozen=True)
class IsNull(Filter):
    field: str

    def __post_init__(self) -> None:
        _check_field(self.field)


@dataclass(frozen=True)
class And(Filter):
    parts: tuple[Filter, ...]

    def __post_init__(self) -> None:
        _check_parts(self.parts)


@dataclass(frozen=True)
class Or(Filter):
    parts: tuple[Filter, ...]

    def __post_init__(self) -> None:
        _check_parts(self.parts)


@dataclass(frozen=True)
class Not(Filter):
    part: Filter

    def __post_init__(self) -> None:
        if not isinstance(self.part, Filter):
            raise FilterError(f"Not() takes a Filter, got {type(self.part).__name__}")


def _check_parts(parts: object) -> None:
    if not isinstance(parts, tuple) or not parts:
        raise FilterError("And()/Or() need a non-empty tuple of filters")
    for p in parts:
        if not isinstance(p, Filter):
            raise FilterError(f"And()/Or() take Filters, got {type(p).__name__}")


def all_of(*parts: Filter | None) -> Filter | None:
    """AND of the given filters, skipping None; None when nothing is left."""
    kept = tuple(p for p in parts if p is not None)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else And(kept)


def visible_to(values: Iterable[str]) -> Filter:
    """Restrict to nodes whose visibility is one of ``values`` (see ``Viewer.admitted_values``)."""
    return In("visibility", tuple(sorted(values)))


def validate(f: object) -> Filter | None:
    if f is None:
        return None
    if not isinstance(f, Filter):
        raise FilterError(f"expected a Filter, got {type(f).__name__}")
    return f
