"""Translate the store's filter language into weaviate-client ``Filter`` objects, per tier.

The embedded store evaluates filters with SQL three-valued logic (a comparison with NULL is
unknown, and ``NOT unknown`` is still unknown). Weaviate has no NULL logic (and no ``Not`` before
1.3x), so every node is translated into the pair ``(pos, neg)``: a Weaviate filter for "this is
TRUE" and one for "this is FALSE". ``Not`` swaps them, ``And``/``Or`` follow De Morgan, and the
negation of a comparison adds ``is_none(False)`` so NULLs stay out, exactly as in SQL.

Each side is ``True`` / ``False`` when known without asking the server (the ``tier`` dimension, an
attribute the tier's model doesn't have: NULL), so no request goes out for a filter that can't match.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ...errors import FilterError
from ...model import Tier
from ...model.time import to_epoch, to_utc
from ..filters import And, Eq, Filter, In, IsNull, Not, Or, Range, Scalar
from .schema import AttrSpec, field_text, tier_attrs

#: A translated side: a weaviate filter, or a constant.
Side = Any
Op = Literal["eq", "gt", "gte", "lt", "lte"]

_DIMENSIONS: dict[str, tuple[str, str, bool]] = {
    # field: (property, kind, nullable)
    "id": ("node_id", "text", False),
    "session": ("session", "text", True),
    "participant": ("participant", "text", True),
    "visibility": ("visibility", "text", False),
    "time": ("time", "time", True),
    "redacted": ("redacted", "bool", False),
}


@dataclass(frozen=True)
class _Column:
    prop: str
    kind: str  # text | number | bool | date | time
    nullable: bool


def _wf() -> Any:
    from weaviate.classes.query import Filter as WFilter

    return WFilter


def all_of(parts: list[Side]) -> Side:
    kept = []
    for p in parts:
        if p is False:
            return False
        if p is not True:
            kept.append(p)
    if not kept:
        return True
    return kept[0] if len(kept) == 1 else _wf().all_of(kept)


def any_of(parts: list[Side]) -> Side:
    kept = []
    for p in parts:
        if p is True:
            return True
        if p is not False:
            kept.append(p)
    if not kept:
        return False
    return kept[0] if len(kept) == 1 else _wf().any_of(kept)


def _rank(v: Scalar) -> int:
    """SQLite's cross-type order: NULL < numbers < text."""
    return 1 if isinstance(v, (bool, int, float)) else 2


def _sql_cmp(a: Scalar, b: Scalar) -> int | None:
    """-1/0/1 as SQLite compares two values; None when either is NULL."""
    if a is None or b is None:
        return None
    if isinstance(a, datetime) or isinstance(b, datetime):
        return None
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    x: Any = float(a) if ra == 1 else a
    y: Any = float(b) if rb == 1 else b
    return (x > y) - (x < y)


def _holds(c: int, op: Op) -> bool:
    return {"eq": c == 0, "gt": c > 0, "gte": c >= 0, "lt": c < 0, "lte": c <= 0}[op]


_NEG: dict[Op, Op] = {"gt": "lte", "gte": "lt", "lt": "gte", "lte": "gt", "eq": "eq"}


class FilterTranslator:
    """Translates for one tier (the tier fixes which attributes exist and how they are typed)."""

    def __init__(self, tier: Tier) -> None:
        self.tier = tier
        self.attrs: dict[str, AttrSpec] = tier_attrs(tier)

    # ------------------------------------------------------------------ entry point
    def translate(self, f: Filter | None) -> Side:
        """The TRUE side: a weaviate filter, ``True`` (no filter) or ``False`` (matches nothing)."""
        if f is None:
            return True
        return self._walk(f)[0]

    def _walk(self, f: Filter) -> tuple[Side, Side]:
        if isinstance(f, Eq):
            if f.value is None:
                return self._is_null(f.field)
            return self._compare(f.field, "eq", f.value)
        if isinstance(f, In):
            if not f.values:
                return False, True
            pairs = [
                self._is_null(f.field) if v is None else self._compare(f.field, "eq", v) for v in f.values
            ]
            pos = self._contains_any(f.field, f.values)
            if pos is None:
                pos = any_of([p for p, _ in pairs])
            return pos, all_of([n for _, n in pairs])
        if isinstance(f, Range):
            pairs = []
            for bound in ("gte", "gt", "lt", "lte"):
                value = getattr(f, bound)
                if value is not None:
                    pairs.append(self._compare(f.field, bound, value))
            return all_of([p for p, _ in pairs]), any_of([n for _, n in pairs])
        if isinstance(f, IsNull):
            return self._is_null(f.field)
        if isinstance(f, And):
            parts = [self._walk(p) for p in f.parts]
            return all_of([p for p, _ in parts]), any_of([n for _, n in parts])
        if isinstance(f, Or):
            parts = [self._walk(p) for p in f.parts]
            return any_of([p for p, _ in parts]), all_of([n for _, n in parts])
        if isinstance(f, Not):
            pos, neg = self._walk(f.part)
            return neg, pos
        raise FilterError(f"unsupported filter node {type(f).__name__}")

    # ------------------------------------------------------------------ columns
    def _column(self, field: str) -> _Column | str | None:
        """A typed column; ``"tier"``; ``"opaque"`` (dict/list attribute); None (no such attribute: NULL)."""
        if field == "tier":
            return "tier"
        if field in _DIMENSIONS:
            prop, kind, nullable = _DIMENSIONS[field]
            return _Column(prop, kind, nullable)
        spec = self.attrs.get(field)
        if spec is None:
            return None
        if spec.kind == "opaque":
            return "opaque"
        return _Column(spec.prop, spec.kind, spec.optional)

    def _is_null(self, field: str) -> tuple[Side, Side]:
        col = self._column(field)
        if col is None:
            return True, False
        if col == "tier" or col == "opaque":
            return False, True
        assert isinstance(col, _Column)
        if not col.nullable:
            return False, True
        prop = _wf().by_property(col.prop)
        return prop.is_none(True), _wf().by_property(col.prop).is_none(False)

    def _not_null(self, col: _Column) -> Side:
        return _wf().by_property(col.prop).is_none(False) if col.nullable else True

    def _compare(self, field: str, op: Op, value: Scalar) -> tuple[Side, Side]:
        col = self._column(field)
        if col is None:
            return False, False  # NULL compared with anything is unknown
        if col == "tier":
            c = _sql_cmp(self.tier.value, value)
            if c is None:
                return False, False
            return _holds(c, op), not _holds(c, op)
        if col == "opaque":
            raise FilterError(f"{field!r} holds a dict or list: only IsNull filters apply to it on Weaviate")
        assert isinstance(col, _Column)
        return self._typed(col, field, op, value)

    def _typed(self, col: _Column, field: str, op: Op, value: Scalar) -> tuple[Side, Side]:
        kind = col.kind
        if kind == "time":
            if isinstance(value, datetime):
                return self._atom(col, op, to_epoch(value))
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return self._atom(col, op, float(value))
            raise FilterError("the 'time' dimension compares with datetimes or epoch seconds")
        if kind == "date":
            if not isinstance(value, datetime):
                raise FilterError(f"the date attribute {field!r} compares with datetimes only")
            return self._atom(col, op, to_utc(value))
        if isinstance(value, datetime):
            return False, False
        if kind == "text":
            if isinstance(value, str):
                return self._atom(col, op, field_text(value))
            return self._by_order(col, op, 2, value)
        if kind == "number":
            if isinstance(value, str):
                return self._by_order(col, op, 1, value)
            return self._atom(col, op, float(value or 0))  # value is never None here
        if kind == "bool":
            if isinstance(value, str):
                return self._by_order(col, op, 1, value)
            sat = [b for b in (False, True) if _holds(_sql_cmp(int(b), value) or 0, op)]
            eq = _wf().by_property
            pos = any_of([eq(col.prop).equal(b) for b in sat])
            neg = any_of([eq(col.prop).equal(b) for b in (False, True) if b not in sat])
            return pos, neg
        raise FilterError(f"cannot filter on {field!r}")  # pragma: no cover

    def _by_order(self, col: _Column, op: Op, col_rank: int, value: Scalar) -> tuple[Side, Side]:
        """A comparison across SQLite type classes: decided by the class order alone."""
        c = -1 if col_rank < _rank(value) else 1
        yes = _holds(c, op)
        nn = self._not_null(col)
        return (nn if yes else False), (False if yes else nn)

    def _atom(self, col: _Column, op: Op, v: Any) -> tuple[Side, Side]:
        p = _wf().by_property(col.prop)
        pos = {
            "eq": p.equal,
            "gt": p.greater_than,
            "gte": p.greater_or_equal,
            "lt": p.less_than,
            "lte": p.less_or_equal,
        }[op](v)
        q = _wf().by_property(col.prop)
        if op == "eq":
            neg = all_of([q.not_equal(v), self._not_null(col)])
        else:
            neg = {
                "gt": q.greater_than,
                "gte": q.greater_or_equal,
                "lt": q.less_than,
                "lte": q.less_or_equal,
            }[_NEG[op]](v)
        return pos, neg

    def _contains_any(self, field: str, values: tuple[Scalar, ...]) -> Side | None:
        """One ``contains_any`` for a long In() over a text or number column (None: not applicable)."""
        if len(values) < 4 or any(v is None for v in values):
            return None
        col = self._column(field)
        if not isinstance(col, _Column):
            return None
        if col.kind == "text" and all(isinstance(v, str) for v in values):
            encoded = sorted({field_text(str(v)) for v in values})
            return _wf().by_property(col.prop).contains_any(encoded)
        if col.kind == "number" and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
        ):
            return _wf().by_property(col.prop).contains_any(sorted({float(v) for v in values}))  # type: ignore[arg-type]
        return None
