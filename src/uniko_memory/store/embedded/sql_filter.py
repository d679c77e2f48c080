"""Translate the filter language into a parameterised SQL predicate over ``nodes n``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...errors import FilterError
from ...model.time import to_epoch
from ..filters import And, Eq, Filter, In, IsNull, Not, Or, Range, Scalar

_COLUMNS = {
    "id": "n.id",
    "tier": "n.tier",
    "session": "n.session",
    "participant": "n.participant",
    "time": "n.ts",
    "visibility": "n.visibility",
    "redacted": "n.redacted",
    "chunk_type": "n.chunk_type",  # also a column (schema.NODE_FIELD_COLUMNS)
}


def _is_time_column(field: str) -> bool:
    return field == "time"


def _expr(field: str, value: Scalar) -> tuple[str, Any]:
    """The SQL expression for ``field`` and the value converted to compare with it."""
    if field in _COLUMNS:
        col = _COLUMNS[field]
        if _is_time_column(field):
            if isinstance(value, datetime):
                return col, to_epoch(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return col, float(value)
            if value is None:
                return col, None
            raise FilterError("the 'time' dimension compares with datetimes or epoch seconds")
        if isinstance(value, bool):
            return col, int(value)
        return col, value
    path = f"json_extract(n.data, '$.{field}')"
    if isinstance(value, datetime):
        # ISO strings differ in precision; compare as instants.
        return f"julianday({path})", _julian(value)
    if isinstance(value, bool):
        return path, int(value)
    return path, value


def _julian(value: datetime) -> float:
    return to_epoch(value) / 86400.0 + 2440587.5


def to_sql(f: Filter | None) -> tuple[str, list[Any]]:
    """``(predicate, params)``; ``("1", [])`` for no filter."""
    if f is None:
        return "1", []
    params: list[Any] = []
    sql = _walk(f, params)
    return sql, params


def _walk(f: Filter, params: list[Any]) -> str:
    if isinstance(f, Eq):
        col, val = _expr(f.field, f.value)
        if val is None:
            return f"{col} IS NULL"
        params.append(val)
        return f"{col} = ?"
    if isinstance(f, In):
        if not f.values:
            return "0"
        non_null = [v for v in f.values if v is not None]
        parts = []
        if non_null:
            converted = [_expr(f.field, v) for v in non_null]
            col = converted[0][0]
            params.extend(v for _, v in converted)
            parts.append(f"{col} IN ({','.join('?' * len(converted))})")
        if len(non_null) != len(f.values):
            parts.append(f"{_expr(f.field, None)[0]} IS NULL")
        return "(" + " OR ".join(parts) + ")"
    if isinstance(f, Range):
        clauses = []
        for bound, op in (("gte", ">="), ("gt", ">"), ("lt", "<"), ("lte", "<=")):
            value = getattr(f, bound)
            if value is None:
                continue
            col, val = _expr(f.field, value)
            params.append(val)
            clauses.append(f"{col} {op} ?")
        return "(" + " AND ".join(clauses) + ")"
    if isinstance(f, IsNull):
        return f"{_expr(f.field, None)[0]} IS NULL"
    if isinstance(f, And):
        return "(" + " AND ".join(_walk(p, params) for p in f.parts) + ")"
    if isinstance(f, Or):
        return "(" + " OR ".join(_walk(p, params) for p in f.parts) + ")"
    if isinstance(f, Not):
        return f"(NOT {_walk(f.part, params)})"
    raise FilterError(f"unsupported filter node {type(f).__name__}")
