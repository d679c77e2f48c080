from datetime import UTC, datetime

import pytest

from uniko_memory.errors import FilterError
from uniko_memory.model import Viewer
from uniko_memory.store import And, Eq, In, IsNull, Not, Or, Range, all_of, visible_to
from uniko_memory.store.embedded.sql_filter import to_sql


def test_sql_translation_is_parameterised() -> None:
    f = Eq("session", "s1") & (In("participant", ("p1", "p2")) | ~Eq("content_type", "code"))
    sql, params = to_sql(f)
    assert "?" in sql and "s1" not in sql
    assert params == ["s1", "p1", "p2", "code"]


def test_time_dimension_uses_epoch() -> None:
    sql, params = to_sql(
        Range("time", gte=datetime(2023, 5, 7, tzinfo=UTC), lt=datetime(2023, 5, 8, tzinfo=UTC))
    )
    assert sql == "(n.ts >= ? AND n.ts < ?)"
    assert params == [1683417600.0, 1683504000.0]


def test_attribute_datetime_compares_as_instant() -> None:
    sql, _ = to_sql(Range("anchor_lo", gte=datetime(2023, 5, 7)))
    assert sql.startswith("(julianday(json_extract(n.data, '$.anchor_lo'))")


def test_null_handling() -> None:
    assert to_sql(Eq("topic", None))[0] == "json_extract(n.data, '$.topic') IS NULL"
    assert to_sql(IsNull("session"))[0] == "n.session IS NULL"
    assert to_sql(In("session", ()))[0] == "0"


@pytest.mark.parametrize(
    "make",
    [
        lambda: Eq("a;drop table nodes", 1),
        lambda: Eq("Session", 1),
        lambda: Eq("x", float("nan")),
        lambda: Eq("x", object()),
        lambda: In("x", "abc"),
        lambda: Range("x"),
        lambda: Range("x", gte=True),
        lambda: And(()),
        lambda: Or((Eq("a", 1), "b")),  # type: ignore[arg-type]
        lambda: Not("x"),  # type: ignore[arg-type]
    ],
)
def test_malformed_filters_raise_filter_error(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FilterError):
        make()


def test_all_of_and_visible_to() -> None:
    assert all_of(None, None) is None
    single = Eq("a", 1)
    assert all_of(None, single) is single
    vis = visible_to(Viewer(participant_id="p1", teams=frozenset({"t"})).admitted_values())
    assert isinstance(vis, In)
    assert set(vis.values) == {"", "public", "private:p1", "team:t"}
