"""Ranking, score contract, filters and FTS-syntax safety of text, vector and hybrid search."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from uniko_memory.model import Message, Tier
from uniko_memory.store.filters import Eq, In, IsNull, Not, Or, Range
from uniko_memory.store.protocol import Hit, Store

from .conftest import VECTOR_ATOL
from .corpus import (
    AGENT,
    QUOKKA,
    WEEKEND,
    N,
    assert_best_first,
    assert_cosine_order,
    assert_unit_interval,
    chunk,
    corpus_messages,
    entity,
    fact,
    ids,
    load_corpus,
    message,
    observation,
    par,
    ses,
    ts,
    unit,
)


@pytest.fixture
async def corpus(store: Store) -> tuple[list[Message], np.ndarray]:
    return await load_corpus(store)


def _strictly_above_min(hits: list[Hit]) -> list[str]:
    """Ids of hits whose score is above the list's minimum: after min-max those are exactly the > 0."""
    lo = min(h.score for h in hits)
    return [h.id for h in hits if h.score > lo + 1e-9 * max(1.0, abs(lo))]


# ---------------------------------------------------------------------------- text search


async def test_text_rare_token_ranks_first(store: Store, corpus) -> None:
    msgs, _ = corpus
    hits = await store.text_search(AGENT, Tier.MESSAGE, "weekend quokka")
    assert hits, "a two-word query must match documents containing either word"
    assert hits[0].id == msgs[QUOKKA].id
    assert set(ids(hits)) == {msgs[i].id for i in (QUOKKA, *WEEKEND)}
    assert all(h.score > 0 for h in hits)
    assert all(np.isfinite(h.score) for h in hits)
    assert_best_first(hits)
    assert all(isinstance(h.node, Message) for h in hits)
    assert hits[0].node == msgs[QUOKKA]


async def test_text_search_matches_any_term(store: Store, corpus) -> None:
    """BM25 retrieval is OR-of-terms: an unknown extra word doesn't empty the result."""
    msgs, _ = corpus
    hits = await store.text_search(AGENT, Tier.MESSAGE, "quokka zzzunseenword")
    assert ids(hits) == [msgs[QUOKKA].id]


async def test_text_search_more_matching_terms_rank_higher(store: Store, corpus) -> None:
    msgs, _ = corpus
    hits = await store.text_search(AGENT, Tier.MESSAGE, "weekend hiking ridge trail")
    assert hits[0].id == msgs[8].id
    assert set(ids(hits)) == {msgs[i].id for i in WEEKEND}


async def test_text_search_case_insensitive(store: Store, corpus) -> None:
    msgs, _ = corpus
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "QUOKKA")) == [msgs[QUOKKA].id]
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "Quokka")) == [msgs[QUOKKA].id]


async def test_text_search_k(store: Store, corpus) -> None:
    full = await store.text_search(AGENT, Tier.MESSAGE, "memo", k=50)
    assert len(full) == N
    assert_best_first(full)
    top3 = await store.text_search(AGENT, Tier.MESSAGE, "memo", k=3)
    assert ids(top3) == ids(full)[:3]
    assert len(await store.text_search(AGENT, Tier.MESSAGE, "memo", k=1)) == 1


async def test_text_search_no_match(store: Store, corpus) -> None:
    assert await store.text_search(AGENT, Tier.MESSAGE, "xylophonically") == []


@pytest.mark.parametrize("query", ["", " ", "   \t\n  ", "\u3000"])
async def test_empty_query_returns_nothing(store: Store, corpus, query: str) -> None:
    assert await store.text_search(AGENT, Tier.MESSAGE, query) == []
    assert await store.hybrid_search(AGENT, Tier.MESSAGE, query, None) == []


async def test_text_search_uses_each_tiers_search_text(store: Store, corpus) -> None:
    msgs, _ = corpus
    o = observation(AGENT, "o1", "observed a quokka eating leaves", when=ts(1))
    f = fact(AGENT, "Carol", "works_at", "Quokkasoft")
    e = entity(AGENT, "Zanzibar Trading", "ORG")
    c = chunk(AGENT, msgs[0], 0, "chunk text about a marmoset")
    async with store.unit(AGENT) as u:
        for n in (o, f, e, c):
            u.put(n)
    # Tier scoping: the observation's quokka never shows up among messages and vice versa.
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "quokka")) == [msgs[QUOKKA].id]
    assert ids(await store.text_search(AGENT, Tier.OBSERVATION, "quokka")) == [o.id]
    assert ids(await store.text_search(AGENT, Tier.FACT, "works")) == [f.id]  # from statement()
    assert ids(await store.text_search(AGENT, Tier.FACT, "carol")) == [f.id]
    assert ids(await store.text_search(AGENT, Tier.ENTITY, "zanzibar")) == [e.id]
    assert ids(await store.text_search(AGENT, Tier.CHUNK, "marmoset")) == [c.id]
    assert await store.text_search(AGENT, Tier.MESSAGE, "marmoset") == []


# ---------------------------------------------------------------------------- vector search


async def test_vector_exact_match_first(store: Store, corpus) -> None:
    msgs, vecs = corpus
    for i in (0, 5, 11):
        hits = await store.vector_search(AGENT, Tier.MESSAGE, vecs[i], k=N)
        assert hits[0].id == msgs[i].id
        assert hits[0].score == pytest.approx(1.0, abs=VECTOR_ATOL)
        assert len(hits) == N
        assert_unit_interval(hits)
        assert_best_first(hits)
        assert_cosine_order(ids(hits), vecs, vecs[i], [m.id for m in msgs], VECTOR_ATOL)
        for h in hits:
            j = next(k for k, m in enumerate(msgs) if m.id == h.id)
            assert h.score == pytest.approx(float(vecs[j] @ vecs[i]), abs=VECTOR_ATOL)
        assert hits[0].node == msgs[i]


async def test_vector_query_need_not_be_normalised(store: Store, corpus) -> None:
    msgs, vecs = corpus
    hits = await store.vector_search(AGENT, Tier.MESSAGE, vecs[3] * 7.5, k=3)
    assert hits[0].id == msgs[3].id
    assert hits[0].score == pytest.approx(1.0, abs=VECTOR_ATOL)
    hits64 = await store.vector_search(AGENT, Tier.MESSAGE, vecs[3].astype(np.float64), k=3)
    assert ids(hits64) == ids(hits)


async def test_vector_scores_clipped_at_zero(store: Store, corpus) -> None:
    """Every corpus vector is positive, so the negated query has negative cosine with all: score 0."""
    _msgs, vecs = corpus
    hits = await store.vector_search(AGENT, Tier.MESSAGE, -vecs[0], k=N)
    assert len(hits) == N
    assert_unit_interval(hits)
    assert all(h.score == pytest.approx(0.0, abs=1e-6) for h in hits)


async def test_vector_search_k(store: Store, corpus) -> None:
    _, vecs = corpus
    full = await store.vector_search(AGENT, Tier.MESSAGE, vecs[2], k=N)
    for k in (1, 3, 5):
        assert ids(await store.vector_search(AGENT, Tier.MESSAGE, vecs[2], k=k)) == ids(full)[:k]
    assert len(await store.vector_search(AGENT, Tier.MESSAGE, vecs[2], k=1000)) == N


async def test_vector_search_skips_nodes_without_vectors(store: Store, corpus) -> None:
    _, vecs = corpus
    novec = message(AGENT, "novec", "no vector here")
    async with store.unit(AGENT) as u:
        u.put(novec)
    hits = await store.vector_search(AGENT, Tier.MESSAGE, vecs[0], k=100)
    assert novec.id not in ids(hits)
    assert len(hits) == N


# ---------------------------------------------------------------------------- hybrid search


async def test_hybrid_alpha_one_is_vector_order(store: Store, corpus) -> None:
    msgs, vecs = corpus
    q = unit(vecs[4] + 0.3 * vecs[9])
    vec_hits = await store.vector_search(AGENT, Tier.MESSAGE, q, k=N)
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "weekend quokka", q, alpha=1.0, k=N)
    assert_unit_interval(hyb)
    assert_best_first(hyb)
    assert hyb[0].id == vec_hits[0].id
    assert hyb[0].score == pytest.approx(1.0, abs=1e-6)
    expected = _strictly_above_min(vec_hits)
    assert [h.id for h in hyb if h.score > 1e-9] == expected
    assert set(ids(hyb)) <= {m.id for m in msgs}


async def test_hybrid_alpha_zero_is_text_order(store: Store, corpus) -> None:
    _, vecs = corpus
    text_hits = await store.text_search(AGENT, Tier.MESSAGE, "weekend plan quokka", k=N)
    assert len(text_hits) >= 4
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "weekend plan quokka", vecs[0], alpha=0.0, k=N)
    assert_unit_interval(hyb)
    assert_best_first(hyb)
    assert hyb[0].id == text_hits[0].id
    assert hyb[0].score == pytest.approx(1.0, abs=1e-6)
    assert [h.id for h in hyb if h.score > 1e-9] == _strictly_above_min(text_hits)


async def test_hybrid_best_in_both_legs_wins(store: Store, corpus) -> None:
    msgs, vecs = corpus
    for alpha in (0.25, 0.5, 0.75):
        hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[QUOKKA], alpha=alpha, k=5)
        assert hyb[0].id == msgs[QUOKKA].id
        assert hyb[0].score == pytest.approx(1.0, abs=1e-6)
        assert_unit_interval(hyb)
        assert_best_first(hyb)
        assert len(hyb) == 5


async def test_hybrid_without_vector_is_keyword_only(store: Store, corpus) -> None:
    text_hits = await store.text_search(AGENT, Tier.MESSAGE, "weekend quokka", k=N)
    for alpha in (0.0, 0.5, 1.0):
        hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "weekend quokka", None, alpha=alpha, k=N)
        assert_unit_interval(hyb)
        assert_best_first(hyb)
        assert set(ids(hyb)) == set(ids(text_hits)), f"alpha={alpha}"
        above = _strictly_above_min(text_hits)
        assert ids(hyb)[: len(above)] == above, f"alpha={alpha}"


async def test_hybrid_empty_text_with_vector_uses_vector_leg(store: Store, corpus) -> None:
    msgs, vecs = corpus
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "   ", vecs[7], alpha=0.5, k=3)
    assert hyb and hyb[0].id == msgs[7].id
    assert_unit_interval(hyb)


async def test_hybrid_k(store: Store, corpus) -> None:
    _, vecs = corpus
    for k in (1, 4, 7):
        hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "memo weekend", vecs[1], k=k)
        assert len(hyb) == k
    assert len(await store.hybrid_search(AGENT, Tier.MESSAGE, "memo", vecs[1], k=500)) == N


# ---------------------------------------------------------------------------- filters in every search

# (name, filter, predicate over corpus index i)
FILTERS: list[tuple[str, Callable[[str], object], Callable[[int, Message], bool]]] = [
    ("session", lambda a: Eq("session", ses(a, 2)), lambda i, m: i >= 6),
    ("participant", lambda a: Eq("participant", par(a, "bob")), lambda i, m: i % 3 == 1),
    ("time_half_open", lambda a: Range("time", gte=ts(3), lt=ts(7)), lambda i, m: 3 <= i < 7),
    ("time_gt_lte", lambda a: Range("time", gt=ts(3), lte=ts(7)), lambda i, m: 3 < i <= 7),
    ("attr_eq", lambda a: Eq("content_type", "code"), lambda i, m: i in (3, 6, 9)),
    ("attr_range_int", lambda a: Range("seq", gte=2, lt=5), lambda i, m: 2 <= i < 5),
    ("attr_is_null", lambda a: IsNull("category"), lambda i, m: m.category is None),
    ("attr_not_null", lambda a: Not(IsNull("category")), lambda i, m: m.category is not None),
    (
        "id_in",
        lambda a: In("id", tuple(m.id for m in corpus_messages(a)[::4])),
        lambda i, m: i % 4 == 0,
    ),
    (
        "and_or_not",
        lambda a: (Eq("session", ses(a, 1)) | Eq("category", "health")) & ~Eq("participant", par(a, "alice")),
        lambda i, m: (i < 6 or m.category == "health") and i % 3 != 0,
    ),
    ("redacted_false", lambda a: Eq("redacted", False), lambda i, m: True),
    ("tier", lambda a: Eq("tier", "message"), lambda i, m: True),
    ("visibility", lambda a: Eq("visibility", "public"), lambda i, m: True),
    ("or_attr_in", lambda a: Or((In("category", ("plans",)), Eq("seq", 0))), lambda i, m: i in (0, 1, 2, 8)),
]


@pytest.mark.parametrize("name,make_filter,pred", FILTERS, ids=[f[0] for f in FILTERS])
async def test_filters_apply_everywhere(store: Store, corpus, name, make_filter, pred) -> None:
    msgs, vecs = corpus
    flt = make_filter(AGENT)
    expected = {m.id for i, m in enumerate(msgs) if pred(i, m)}
    assert expected, "test corpus should have matches"
    found = await store.find(AGENT, Tier.MESSAGE, flt)
    assert {n.id for n in found} == expected, "find"
    assert await store.count(AGENT, Tier.MESSAGE, flt) == len(expected), "count"
    text = await store.text_search(AGENT, Tier.MESSAGE, "memo", k=50, filter=flt)
    assert set(ids(text)) == expected, "text_search"
    vec = await store.vector_search(AGENT, Tier.MESSAGE, vecs[0], k=50, filter=flt)
    assert set(ids(vec)) == expected, "vector_search"
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "memo", vecs[0], k=50, filter=flt)
    assert set(ids(hyb)) == expected, "hybrid_search"
    assert_unit_interval(vec)
    assert_unit_interval(hyb)


async def test_filter_is_applied_before_k(store: Store, corpus) -> None:
    """With a filter, k results come from the filtered set, not k-then-filter."""
    msgs, vecs = corpus
    flt = Eq("session", ses(AGENT, 2))  # corpus #6..#11
    vec = await store.vector_search(AGENT, Tier.MESSAGE, vecs[0], k=3, filter=flt)
    assert len(vec) == 3
    assert set(ids(vec)) <= {m.id for m in msgs[6:]}
    text = await store.text_search(AGENT, Tier.MESSAGE, "quokka weekend", k=2, filter=flt)
    assert ids(text) == [msgs[8].id]
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[QUOKKA], k=3, filter=flt)
    assert len(hyb) == 3 and set(ids(hyb)) <= {m.id for m in msgs[6:]}


async def test_filter_value_is_never_sql(store: Store, corpus) -> None:
    for evil in ("x' OR '1'='1", 'code" OR 1=1 --', "%", "_", "*"):
        assert await store.find(AGENT, Tier.MESSAGE, Eq("content_type", evil)) == []
        assert await store.text_search(AGENT, Tier.MESSAGE, "memo", filter=Eq("content_type", evil)) == []
    assert await store.count(AGENT, Tier.MESSAGE) == N


async def test_filter_on_datetime_with_other_timezone(store: Store, corpus) -> None:
    from datetime import timedelta, timezone

    msgs, _ = corpus
    tz = timezone(timedelta(hours=-7))
    flt = Range("time", gte=ts(3).astimezone(tz), lt=ts(5).astimezone(tz))
    assert {n.id for n in await store.find(AGENT, Tier.MESSAGE, flt)} == {msgs[3].id, msgs[4].id}
    naive = Range("time", gte=ts(3).replace(tzinfo=None), lt=ts(5).replace(tzinfo=None))
    assert {n.id for n in await store.find(AGENT, Tier.MESSAGE, naive)} == {msgs[3].id, msgs[4].id}


# ---------------------------------------------------------------------------- FTS syntax safety

NASTY = [
    "foo OR",
    "OR",
    "AND",
    "NOT",
    "alpha AND",
    "NOT alpha",
    "NEAR(alpha beta)",
    "NEAR(",
    'alpha "beta',
    '"',
    '""',
    "'",
    "alpha*",
    "*",
    "^alpha",
    "alpha:beta",
    "content:alpha",
    ":",
    "-alpha",
    "--",
    "alpha - beta",
    "(alpha",
    "alpha)",
    "()",
    "((()))",
    "{alpha beta}",
    "[alpha]",
    "alpha + beta",
    "a.b.c",
    "\\",
    "%",
    "_",
    ";DROP TABLE nodes;--",
    "🦘🚀",
    "kangaroo 🦘 rocket",
    "\ud800",
    "alpha \udfff beta",
    "\x00",
    "alpha\x00beta",
    "\x01\x02\x1b[31m",
    "\u200b",
    "\ufeffalpha",
    "e\u0301",
    "日本語のテキスト",
    "مرحبا",
    "alpha" * 500,
    " ".join(["alpha"] * 300),
]


@pytest.fixture
async def fts_docs(store: Store) -> dict[str, str]:
    docs = {
        "ab": "alpha beta gamma",
        "a": "alpha only here",
        "b": "beta only here",
        "near": "near the river",
        "ops": "foo or and not bar",
        "emoji": "kangaroo 🦘 and rocket 🚀",
        "cjk": "日本語のテキスト",
    }
    async with store.unit(AGENT) as u:
        for key, text in docs.items():
            u.put(message(AGENT, f"fts-{key}", text))
    return {key: message(AGENT, f"fts-{key}", "x").id for key in docs}


@pytest.mark.parametrize("query", NASTY, ids=[repr(q)[:40] for q in NASTY])
async def test_fts_syntax_never_raises(store: Store, fts_docs, query: str) -> None:
    hits = await store.text_search(AGENT, Tier.MESSAGE, query, k=20)
    assert isinstance(hits, list)
    assert_best_first(hits)
    hyb = await store.hybrid_search(AGENT, Tier.MESSAGE, query, None, k=20)
    assert isinstance(hyb, list)
    assert_unit_interval(hyb)


async def test_fts_operators_are_plain_words(store: Store, fts_docs) -> None:
    d = fts_docs

    async def q(text: str) -> set[str]:
        return set(ids(await store.text_search(AGENT, Tier.MESSAGE, text, k=20)))

    # "NOT" as an operator would exclude the doc that also has beta.
    assert d["ab"] in await q("alpha NOT beta")
    # "AND" as an operator with an unknown word would return nothing.
    assert d["a"] in await q("alpha AND zzzunseen")
    # "-" as exclusion would drop the alpha docs.
    assert {d["ab"], d["a"]} <= await q("beta -alpha")
    # "*" as prefix would match "alpha" from "alph".
    assert not ({d["ab"], d["a"]} & await q("alph*"))
    # A column filter "content:" must not select a column; the word alpha still matches.
    assert d["a"] in await q("content:alpha")
    # An open quote is not a phrase query.
    assert {d["ab"], d["a"]} <= await q('"alpha')
    # NEAR( is not a proximity operator.
    assert {d["ab"], d["a"], d["b"]} <= await q("NEAR(alpha beta)")
    assert d["ab"] in await q("^beta")  # ^ is not an initial-token anchor
    assert d["ab"] in await q("(alpha OR")


async def test_fts_non_ascii_content(store: Store, fts_docs) -> None:
    d = fts_docs
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "kangaroo")) == [d["emoji"]]
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "rocket 🚀")) == [d["emoji"]]
