"""Bad input gets a clear typed error (a UnikoError subclass) and never loses existing data."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest

from uniko_memory.errors import ClosedError, FilterError, UnikoError, UnknownTier, ValidationError
from uniko_memory.model import Edge, EdgeType, Message, Tier, content_hash
from uniko_memory.store.filters import And, Eq, In, Or, Range
from uniko_memory.store.protocol import Store

from .conftest import VECTOR_ATOL
from .corpus import AGENT, QUOKKA, N, corpus_vectors, ids, load_corpus, message, unit


@pytest.fixture
async def corpus(store: Store):
    return await load_corpus(store)


async def _intact(store: Store, msgs: list[Message], vecs: np.ndarray, added: int = 0) -> None:
    assert await store.count(AGENT, Tier.MESSAGE) == N + added
    assert await store.get(AGENT, msgs[0].id) == msgs[0]
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "quokka")) == [msgs[QUOKKA].id]
    assert (await store.vector_search(AGENT, Tier.MESSAGE, vecs[3], k=1))[0].id == msgs[3].id


# ---------------------------------------------------------------------------- vectors

BAD_VECTORS: dict[str, Any] = {
    "nan": np.array([math.nan, 1, 0, 0, 0, 0, 0, 0], dtype=np.float32),
    "inf": np.array([math.inf, 1, 0, 0, 0, 0, 0, 0], dtype=np.float32),
    "short": unit([1, 0, 0, 0, 0, 0, 0]),
    "long": unit([1, 0, 0, 0, 0, 0, 0, 0, 0]),
    "2d": np.ones((2, 8), dtype=np.float32),
    "empty": np.zeros(0, dtype=np.float32),
    "zero": np.zeros(8, dtype=np.float32),
    "strings": np.array(["a"] * 8),
}


@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
async def test_bad_vector_on_put(store: Store, corpus, kind: str) -> None:
    msgs, vecs = corpus
    new = message(AGENT, f"badvec-{kind}", "should not be stored")
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(new, vector=BAD_VECTORS[kind])
    assert await store.get(AGENT, new.id) is None
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
async def test_bad_vector_on_set_vector(store: Store, corpus, kind: str) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "sv", "also discarded"))
            u.set_vector(msgs[0].id, Tier.MESSAGE, BAD_VECTORS[kind])
    assert await store.get(AGENT, message(AGENT, "sv", "x").id) is None
    got = await store.get_vectors(AGENT, [msgs[0].id])
    np.testing.assert_allclose(got[msgs[0].id], vecs[0], atol=VECTOR_ATOL)
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("kind", sorted(BAD_VECTORS))
async def test_bad_query_vector(store: Store, corpus, kind: str) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        await store.vector_search(AGENT, Tier.MESSAGE, BAD_VECTORS[kind])
    with pytest.raises(ValidationError):
        await store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", BAD_VECTORS[kind])
    await _intact(store, msgs, vecs)


# ---------------------------------------------------------------------------- tiers, k, agent, alpha

SEARCHES: dict[str, Callable[..., Awaitable[Any]]] = {
    "text": lambda s, agent="a", tier=Tier.MESSAGE, k=10, **kw: s.text_search(
        agent, tier, "quokka", k=k, **kw
    ),
    "vector": lambda s, agent="a", tier=Tier.MESSAGE, k=10, **kw: s.vector_search(
        agent, tier, corpus_vectors()[0], k=k, **kw
    ),
    "hybrid": lambda s, agent="a", tier=Tier.MESSAGE, k=10, **kw: s.hybrid_search(
        agent, tier, "quokka", corpus_vectors()[0], k=k, **kw
    ),
}


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("tier", ["messages", "MESSAGE_X", "", "message; DROP TABLE nodes"])
async def test_unknown_tier(store: Store, corpus, search: str, tier: str) -> None:
    msgs, vecs = corpus
    with pytest.raises(UnknownTier):
        await SEARCHES[search](store, agent=AGENT, tier=tier)
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("tier", ["messages", "", "x'--"])
async def test_unknown_tier_find_and_count(store: Store, corpus, tier: str) -> None:
    msgs, vecs = corpus
    with pytest.raises(UnknownTier):
        await store.find(AGENT, tier)  # type: ignore[arg-type]
    with pytest.raises(UnknownTier):
        await store.count(AGENT, tier)  # type: ignore[arg-type]
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("k", [0, -1, -100])
async def test_k_must_be_positive(store: Store, corpus, search: str, k: int) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        await SEARCHES[search](store, agent=AGENT, k=k)
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("alpha", [-0.1, 1.5, math.nan])
async def test_alpha_out_of_range(store: Store, corpus, alpha: float) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        await store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[0], alpha=alpha)
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("agent", ["", "   "], ids=["empty", "blank"])
async def test_empty_agent(store: Store, corpus, agent: str) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        async with store.unit(agent):
            pass
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: store.get(agent, msgs[0].id),
        lambda: store.get_many(agent, [msgs[0].id]),
        lambda: store.find(agent, Tier.MESSAGE),
        lambda: store.count(agent, Tier.MESSAGE),
        lambda: store.text_search(agent, Tier.MESSAGE, "quokka"),
        lambda: store.vector_search(agent, Tier.MESSAGE, vecs[0]),
        lambda: store.hybrid_search(agent, Tier.MESSAGE, "quokka", vecs[0]),
        lambda: store.neighbors(agent, [msgs[0].id]),
        lambda: store.delete(agent, [msgs[0].id]),
        lambda: store.redact(agent, [msgs[0].id]),
        lambda: store.get_vectors(agent, [msgs[0].id]),
    ]
    for call in calls:
        with pytest.raises(ValidationError):
            await call()
    await _intact(store, msgs, vecs)


# ---------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    "build",
    [
        lambda: Eq("a;drop", 1),
        lambda: Eq("Session", "x"),
        lambda: Eq("content type", "x"),
        lambda: Eq("", "x"),
        lambda: Eq("x" * 65, 1),
        lambda: Eq("content_type", math.nan),
        lambda: Range("seq", gte=math.inf),
        lambda: Range("seq"),
        lambda: Range("seq", gte=True),
        lambda: Eq("content_type", ["a", "b"]),
        lambda: Eq("content_type", object()),
        lambda: In("id", "abc"),
        lambda: In("id", (1.0, math.nan)),
        lambda: And(()),
        lambda: Or(()),
        lambda: And((Eq("seq", 1), "seq = 1")),
        lambda: And([Eq("seq", 1)]),
        lambda: Eq("seq", 1) & "x",
    ],
)
def test_malformed_filter_construction(build: Callable[[], Any]) -> None:
    with pytest.raises(FilterError):
        build()


@pytest.mark.parametrize("bad", [{"session": "x"}, "1=1", 42, ["content_type", "code"], Eq])
async def test_non_filter_object_rejected_everywhere(store: Store, corpus, bad: Any) -> None:
    msgs, vecs = corpus
    for call in (
        lambda: store.find(AGENT, Tier.MESSAGE, bad),
        lambda: store.count(AGENT, Tier.MESSAGE, bad),
        lambda: store.text_search(AGENT, Tier.MESSAGE, "quokka", filter=bad),
        lambda: store.vector_search(AGENT, Tier.MESSAGE, vecs[0], filter=bad),
        lambda: store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[0], filter=bad),
    ):
        with pytest.raises(FilterError):
            await call()
    await _intact(store, msgs, vecs)


async def test_filter_on_unknown_attribute_is_typed_error_or_empty(store: Store, corpus) -> None:
    """An attribute no Message has: FilterError, or no match; never a raw backend error."""
    msgs, vecs = corpus
    try:
        got = await store.find(AGENT, Tier.MESSAGE, Eq("no_such_attribute", "x"))
    except FilterError:
        pass
    else:
        assert got == []
    await _intact(store, msgs, vecs)


# ---------------------------------------------------------------------------- nodes and text


async def test_megabyte_text_is_stored_and_searchable(store: Store, corpus) -> None:
    msgs, vecs = corpus
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur"]
    body = " ".join(words[i % len(words)] for i in range(180_000))
    body = body[: (1 << 20) - 40] + " needle-in-haystack ocelot end"
    assert len(body.encode()) >= 1_000_000
    big = message(AGENT, "big", body)
    async with store.unit(AGENT) as u:
        u.put(big, vector=vecs[0])
    got = await store.get(AGENT, big.id)
    assert got is not None and got.content == body
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "ocelot")) == [big.id]
    assert big.id in ids(await store.hybrid_search(AGENT, Tier.MESSAGE, "ocelot", None, k=3))
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "quokka")) == [msgs[QUOKKA].id]


@pytest.mark.parametrize(
    "content",
    [
        "emoji 🦘🚀 and zero\u200bwidth",
        "control \x00 \x01 \x1b[0m chars",
        "lone surrogate \ud800 here",
        "rtl مرحبا and cjk 日本語",
    ],
    ids=["emoji", "control", "surrogate", "scripts"],
)
async def test_odd_content_round_trips_or_is_refused_cleanly(store: Store, corpus, content: str) -> None:
    msgs, vecs = corpus
    m = message(AGENT, f"odd-{content[:5]}", content)
    try:
        async with store.unit(AGENT) as u:
            u.put(m)
    except ValidationError:
        assert await store.get(AGENT, m.id) is None
        added = 0
    else:
        assert await store.get(AGENT, m.id) == m
        added = 1
    await _intact(store, msgs, vecs, added)


async def test_non_json_metadata_refused(store: Store, corpus) -> None:
    """Attributes typed ``dict[str, Any]`` must hold JSON; anything else is a ValidationError."""
    msgs, vecs = corpus
    ok = message(AGENT, "meta-ok", "valid sibling in the same unit")
    bad = message(AGENT, "meta-bad", "bad metadata", metadata={"handle": object()})
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(ok)
            u.put(bad)
    assert await store.get(AGENT, ok.id) is None
    assert await store.get(AGENT, bad.id) is None
    await _intact(store, msgs, vecs)


async def test_non_json_edge_props_refused(store: Store, corpus) -> None:
    """Edge props must hold JSON; a non-JSON value is refused, not silently stringified."""
    msgs, vecs = corpus
    bad = Edge(type=EdgeType.NEXT, src=msgs[0].id, dst=msgs[1].id, props={"handle": object()})
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put_edge(bad)
    assert await store.neighbors(AGENT, [msgs[0].id]) == []
    await _intact(store, msgs, vecs)


async def test_blob_hash_must_match_content(store: Store, corpus) -> None:
    msgs, vecs = corpus
    data = b"some artifact bytes"
    wrong = content_hash(b"other bytes")
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "blob-sib", "sibling"))
            u.put_blob(wrong, data)
    assert await store.get_blob(wrong) is None
    assert await store.get(AGENT, message(AGENT, "blob-sib", "x").id) is None
    await _intact(store, msgs, vecs)


@pytest.mark.parametrize("limit", [0, -5])
async def test_find_limit_must_be_positive(store: Store, corpus, limit: int) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        await store.find(AGENT, Tier.MESSAGE, limit=limit)
    await _intact(store, msgs, vecs)


async def test_put_non_node_rejected(store: Store, corpus) -> None:
    msgs, vecs = corpus
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(msgs[0].model_dump())  # type: ignore[arg-type]
    await _intact(store, msgs, vecs)


async def test_errors_are_uniko_errors(store: Store, corpus) -> None:
    """The typed errors above all share the UnikoError base callers catch."""
    assert issubclass(UnknownTier, UnikoError) and issubclass(FilterError, UnikoError)
    with pytest.raises(UnikoError):
        await store.text_search(AGENT, "nope", "x")  # type: ignore[arg-type]


async def test_use_after_close(harness) -> None:
    store = await harness.open()
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(ClosedError):
        await store.get(AGENT, "msg_x")
    with pytest.raises(ClosedError):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "late", "too late"))
