"""A unit's meta records (``UnitOfWork.set_meta``, issue 40.11: an import's tombstones) are
written with the unit's nodes, all or nothing, on every backend."""

from __future__ import annotations

import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.store.protocol import Store

from .corpus import AGENT, message


class Boom(RuntimeError):
    pass


async def test_meta_set_in_a_unit_is_committed_with_it(store: Store) -> None:
    m = message(AGENT, "m1", "a message written with a meta record")
    async with store.unit(AGENT) as u:
        u.put(m)
        u.set_meta(f"test.meta/{AGENT}", "one")
        u.set_meta(f"test.meta/{AGENT}", "two")  # the last value set wins, as for a node
    assert await store.get(AGENT, m.id) == m
    assert await store.get_meta(f"test.meta/{AGENT}") == "two"
    async with store.unit(AGENT) as u:  # a unit of meta records only
        u.set_meta(f"test.other/{AGENT}", "alone")
    assert await store.get_meta(f"test.other/{AGENT}") == "alone"


async def test_an_exception_in_the_unit_writes_no_meta(store: Store) -> None:
    await store.set_meta(f"test.kept/{AGENT}", "before")
    with pytest.raises(Boom):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "m2", "a doomed message"))
            u.set_meta(f"test.meta/{AGENT}", "doomed")
            u.set_meta(f"test.kept/{AGENT}", "doomed too")
            raise Boom
    assert await store.get_meta(f"test.meta/{AGENT}") is None
    assert await store.get_meta(f"test.kept/{AGENT}") == "before"
    assert await store.count(AGENT) == 0


async def test_a_meta_record_needs_string_key_and_value(store: Store) -> None:
    async with store.unit(AGENT) as u:
        for key, value in (("", "v"), ("k", None), (None, "v")):
            with pytest.raises(ValidationError):
                u.set_meta(key, value)  # type: ignore[arg-type]
