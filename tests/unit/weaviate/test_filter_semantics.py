"""The filter translation keeps the embedded store's SQL semantics (three-valued NULL logic, type
rules, constant folding): random filter trees give the same ``find``/``count`` on both backends."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conformance.corpus import AGENT, BASE_TIME, corpus_messages, load_corpus, par, ses, ts
from tests.weaviate_double import WeaviateDouble
from uniko_memory.errors import FilterError
from uniko_memory.model import Tier
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.filters import And, Eq, Filter, In, IsNull, Not, Or, Range
from uniko_memory.store.weaviate import WeaviateStore

FIELDS = {
    "id": lambda r: r.choice([m.id for m in corpus_messages()] + ["msg_missing"]),
    "session": lambda r: ses(AGENT, r.choice([1, 2, 3])),
    "participant": lambda r: par(AGENT, r.choice(["alice", "bob", "zed"])),
    "time": lambda r: ts(r.randrange(-1, 13)) if r.random() < 0.7 else ts(r.randrange(0, 12)).timestamp(),
    "visibility": lambda r: r.choice(["public", "", "private:p1"]),
    "redacted": lambda r: r.choice([True, False, 0, 1]),
    "tier": lambda r: r.choice(["message", "fact", "a", "z"]),
    "content_type": lambda r: r.choice(["text", "code", "d", 3, True]),
    "category": lambda r: r.choice(["plans", "health", "x", None, 2.5]),
    "seq": lambda r: r.choice([0, 3, 5.5, 11, -1, "7", True]),
    "post_ingest_done": lambda r: r.choice([True, False, 0, 1, 0.5]),
    "created_at": lambda r: BASE_TIME + timedelta(minutes=r.choice([-5, 0, 5])),
    "no_such_attr": lambda r: r.choice(["x", 1, None]),
    "metadata": lambda r: r.choice(["{}", 1]),
}
RANGEABLE = ["time", "seq", "created_at", "content_type", "tier", "no_such_attr", "post_ingest_done"]


def _leaf(r: random.Random) -> Filter:
    kind = r.random()
    if kind < 0.4:
        field = r.choice(list(FIELDS))
        return Eq(field, FIELDS[field](r))
    if kind < 0.6:
        field = r.choice(list(FIELDS))
        return In(field, tuple(FIELDS[field](r) for _ in range(r.randrange(0, 6))))
    if kind < 0.85:
        field = r.choice(RANGEABLE)
        bounds = {}
        while not bounds or r.random() < 0.4:
            v = FIELDS[field](r)
            if v is None or isinstance(v, bool):
                continue
            bounds[r.choice(["gte", "gt", "lt", "lte"])] = v
        return Range(field, **bounds)
    return IsNull(r.choice(["category", "session", "no_such_attr", "metadata", "id", "time"]))


def _tree(r: random.Random, depth: int) -> Filter:
    if depth == 0 or r.random() < 0.3:
        return _leaf(r)
    op = r.random()
    if op < 0.3:
        return Not(_tree(r, depth - 1))
    parts = tuple(_tree(r, depth - 1) for _ in range(r.randrange(1, 4)))
    return And(parts) if op < 0.65 else Or(parts)


@pytest.fixture
async def pair(store: WeaviateStore, tmp_path: Path) -> AsyncIterator[tuple[EmbeddedStore, WeaviateStore]]:
    sqlite = await EmbeddedStore.open(tmp_path / "ref.db", dim=8)
    for s in (sqlite, store):
        msgs, _ = await load_corpus(s)
        await s.redact(AGENT, [msgs[4].id])
    yield sqlite, store
    await sqlite.close()


def _compatible(f: Filter) -> bool:
    """Datetime comparisons with a text value: the embedded store compares strings, we refuse (FilterError)."""
    from uniko_memory.errors import FilterError
    from uniko_memory.store.weaviate.filter_map import FilterTranslator

    try:
        FilterTranslator(Tier.MESSAGE).translate(f)
    except FilterError:
        return False
    return True


async def test_random_filters_agree_with_the_embedded_store(pair, double: WeaviateDouble) -> None:
    sqlite, weav = pair
    r = random.Random(20240301)
    checked = 0
    for _ in range(150):
        f = _tree(r, 3)
        if not _compatible(f):
            continue
        for include_redacted in (False, True):
            want = {
                n.id for n in await sqlite.find(AGENT, Tier.MESSAGE, f, include_redacted=include_redacted)
            }
            got = {n.id for n in await weav.find(AGENT, Tier.MESSAGE, f, include_redacted=include_redacted)}
            assert got == want, f"{f!r} include_redacted={include_redacted}"
        assert await weav.count(AGENT, Tier.MESSAGE, f) == await sqlite.count(AGENT, Tier.MESSAGE, f), repr(f)
        checked += 1
    assert checked > 100


async def test_find_order_matches_the_embedded_store(pair) -> None:
    sqlite, weav = pair
    for order_by in (
        "time",
        "id",
        "seq",
        "category",
        "content_type",
        "no_such_attr",
        "redacted",
        "created_at",
    ):
        for descending in (False, True):
            a = [
                n.id for n in await sqlite.find(AGENT, Tier.MESSAGE, order_by=order_by, descending=descending)
            ]
            b = [n.id for n in await weav.find(AGENT, Tier.MESSAGE, order_by=order_by, descending=descending)]
            assert a == b, (order_by, descending)
    with pytest.raises(FilterError):  # a dict attribute: SQLite orders by its JSON text, Weaviate can't
        await weav.find(AGENT, Tier.MESSAGE, order_by="metadata")
