from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from benchmarks.harness.baselines import (
    BM25Baseline,
    BM25Index,
    DenseBaseline,
    HybridBaseline,
    rank_by_score,
    tokenize,
    turn_document,
)
from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Question
from benchmarks.harness.run import DEFAULT_TOKEN_BUDGET, TOKEN_COUNTER

from uniko_memory.recall.assemble import pack
from uniko_memory.recall.items import MEMORY_HEADER, render_text
from uniko_memory.store.fusion import rrf as rrf_pairs


def rrf(rankings: list[list[int]], k: int = 60, depth: int | None = None) -> list[int]:
    """The baseline's fused order: the library's one RRF, keys only."""
    return [d for d, _ in rrf_pairs(rankings, k, depth=depth)]


VIOLIN = Question(id="v", text="Who is learning the violin?", category="x")


def test_tokenize() -> None:
    # lower-case, ≥ 2 word chars, the 33 Lucene stopwords removed, no stemming
    assert tokenize("The dog AND a cat, I think: it's 42 dogs!") == ["dog", "cat", "think", "42", "dogs"]


def test_turn_document() -> None:
    ts = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert turn_document(ts, "Ann", "hi there") == "(1:56 pm on 8 May, 2023) Ann: hi there"


def test_bm25_hand_computed() -> None:
    docs = ["apple banana", "apple apple cherry", "durian"]
    idx = BM25Index(docs)
    # N = 3, avgdl = (2 + 3 + 1) / 3 = 2; df(apple) = 2 → idf = ln(1 + (3 - 2 + 0.5) / 2.5) = ln(1.6)
    idf = math.log(1.6)
    k1, b = 1.5, 0.75
    s0 = idf * 1 * (k1 + 1) / (1 + k1 * (1 - b + b * 2 / 2))
    s1 = idf * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 3 / 2))
    scores = idx.scores("apple")
    assert scores[0] == pytest.approx(s0)
    assert scores[1] == pytest.approx(s1)
    assert scores[2] == 0.0
    assert idx.rank("apple") == [1, 0, 2]  # zero-score documents trail, by index
    assert idx.rank("the") == [0, 1, 2]  # stopword-only query: everything ties
    # repeated query term counts twice
    assert idx.scores("apple apple")[0] == pytest.approx(2 * s0)
    assert BM25Index([]).rank("x") == []


def test_rank_by_score_and_rrf() -> None:
    assert rank_by_score(np.array([0.5, 0.9, 0.5, 0.1])) == [1, 0, 2, 3]
    # rrf: doc 0 = 1/61 + 1/62, doc 1 = 1/62 + 1/61 (tie → index), doc 2 = 1/63 + 1/63
    assert rrf([[0, 1, 2], [1, 0, 2]]) == [0, 1, 2]
    assert rrf([[2, 0, 1], [0, 1, 2]]) == [0, 2, 1]
    fused = rrf([[5], [7, 5]], k=1)  # 5: 1/2 + 1/3; 7: 1/2
    assert fused == [5, 7]
    # depth cuts every list first: 3 is below the cut in both lists and disappears; 2 keeps one contribution
    assert rrf([[0, 1, 2, 3], [1, 0, 3, 2]], depth=2) == [0, 1]
    assert rrf([[0, 1, 2, 3], [2, 0, 3, 1]], depth=2) == [0, 2, 1]


async def _setup(system, data_dir: Path):
    conv = load_any(data_dir / "locomo_tiny.json", "locomo").conversations[0]
    await system.setup(conv)
    return conv


async def test_bm25_baseline(data_dir: Path) -> None:
    system = BM25Baseline()
    conv = await _setup(system, data_dir)
    ts = conv.sessions[-1].start
    res = await system.retrieve(VIOLIN, ts, limit=2)
    assert len(res.items) == 2 and res.latency_s >= 0
    top = res.items[0]
    assert top.covered_turn_ids == frozenset({"D2:1"}) and top.session_ids == frozenset({"session_2"})
    assert top.kind == "message"
    # the prompt text: the library's framing, one heading per date, "- Speaker: text" entries
    assert res.text.startswith(MEMORY_HEADER + "\n<memory>\n") and res.text.endswith("\n</memory>")
    assert "[20 June 2023]\n- Bob: I started learning the violin last week" in res.text
    assert TOKEN_COUNTER.count(res.text) <= DEFAULT_TOKEN_BUDGET and res.reported_tokens is None
    full = await system.retrieve(VIOLIN, ts)  # the default budget holds the whole tiny conversation
    assert len(full.items) == 5
    await system.close()


@pytest.mark.parametrize("budget", [60, 90, 120, 150, 200, 260, 400])
async def test_baseline_text_is_the_rank_order_packed_within_the_budget(data_dir: Path, budget: int) -> None:
    """The text holds at most ``budget`` tokens, is ``render_text`` of its items, and takes the ranked turns
    greedily: every turn it leaves out (ranked before the last one it holds, or after it) would not fit."""
    system = BM25Baseline()
    conv = await _setup(system, data_dir)
    ts = conv.sessions[-1].start
    order, _ = await system.ranking(VIOLIN.text)
    ranked_ids = [system.turn_items[i].node_id for i in order]
    res = await system.retrieve(VIOLIN, ts, token_budget=budget)
    assert TOKEN_COUNTER.count(res.text) <= budget
    taken = [next(iter(i.covered_turn_ids)) for i in res.items]
    assert taken == [t for t in ranked_ids if t in taken]  # rank order kept
    by_id = {it.node_id: it for it in system.turn_items}
    assert res.text == render_text([by_id[t] for t in taken], "grouped")
    for t in ranked_ids:
        if t not in taken:  # left out: adding it where it ranks would overflow the budget
            with_it = [by_id[x] for x in ranked_ids if x in taken or x == t]
            assert TOKEN_COUNTER.count(render_text(with_it, "grouped")) > budget
    await system.close()


@pytest.mark.parametrize("limit", [None, 1, 3])
async def test_the_baseline_packing_is_the_librarys_pack_without_mmr(
    data_dir: Path, limit: int | None
) -> None:
    """``pack_in_rank_order`` takes exactly what ``pack`` takes from the same ranking with no MMR and no
    de-duplication, at every budget from nothing-fits to everything-fits."""
    system = BM25Baseline()
    conv = await _setup(system, data_dir)
    ts = conv.sessions[-1].start
    for q in conv.questions:
        order, _ = await system.ranking(q.text)
        for budget in range(60, 260, 7):
            res = await system.retrieve(q, ts, limit=limit, token_budget=budget)
            ranked = [system.turn_items[i].model_copy() for i in order]
            ref = pack(
                ranked,
                limit=limit,
                token_budget=budget,
                mmr_lambda=1.0,
                duplicate_threshold=1.0,
                counter=TOKEN_COUNTER,
                layout="grouped",
            )
            assert [next(iter(i.covered_turn_ids)) for i in res.items] == [it.node_id for it in ref.items]
            assert res.text == render_text(ref.items, "grouped")
    await system.close()


async def test_baseline_limit_caps_items_within_the_default_budget(data_dir: Path) -> None:
    system = BM25Baseline()
    conv = await _setup(system, data_dir)
    res = await system.retrieve(VIOLIN, conv.sessions[-1].start, limit=3)
    assert len(res.items) == 3 and TOKEN_COUNTER.count(res.text) <= DEFAULT_TOKEN_BUDGET
    tiny = await system.retrieve(VIOLIN, conv.sessions[-1].start, token_budget=10)
    assert tiny.items == [] and tiny.text == ""  # not even the framing fits
    await system.close()


async def test_dense_baseline_uses_embedder(data_dir: Path, fake_embedder) -> None:
    system = DenseBaseline(embedder=fake_embedder, batch_size=2)
    conv = await _setup(system, data_dir)
    assert fake_embedder.document_calls == 3  # 5 turns in batches of 2
    q = VIOLIN
    res = await system.retrieve(q, conv.sessions[-1].start, limit=1)
    assert res.items[0].covered_turn_ids == frozenset({"D2:1"})
    assert fake_embedder.query_calls == 1
    await system.retrieve(q, conv.sessions[-1].start, token_budget=500)
    assert fake_embedder.query_calls == 1  # the same question's ranking is kept for the next budget


async def test_dense_accepts_factory(data_dir: Path, fake_embedder) -> None:
    system = DenseBaseline(embedder=lambda: fake_embedder)
    await _setup(system, data_dir)
    assert fake_embedder.document_calls == 1


def _turn_ids(system, order: list[int]) -> list[str]:
    return [system.turn_items[i].node_id for i in order]


async def test_hybrid_is_rrf_of_both(data_dir: Path, fake_embedder) -> None:
    hybrid = HybridBaseline(embedder=fake_embedder)
    bm25 = BM25Baseline()
    dense = DenseBaseline(embedder=fake_embedder)
    conv = await _setup(hybrid, data_dir)
    await bm25.setup(conv)
    await dense.setup(conv)
    ts = conv.sessions[-1].start
    for q in conv.questions:
        b = _turn_ids(bm25, (await bm25.ranking(q.text))[0])
        d = _turn_ids(dense, (await dense.ranking(q.text))[0])
        h = _turn_ids(hybrid, (await hybrid.ranking(q.text))[0])
        ids = _turn_ids(hybrid, list(range(len(hybrid.turn_items))))
        expect = rrf([[ids.index(c) for c in b], [ids.index(c) for c in d]], depth=100)
        assert h == [ids[i] for i in expect]
        res = await hybrid.retrieve(q, ts, token_budget=DEFAULT_TOKEN_BUDGET)
        assert [next(iter(i.covered_turn_ids)) for i in res.items] == h  # everything fits: the whole ranking
    await hybrid.close()


async def test_hybrid_depth(data_dir: Path, fake_embedder) -> None:
    shallow = HybridBaseline(embedder=fake_embedder, rrf_depth=1)
    conv = await _setup(shallow, data_dir)
    order, _ = await shallow.ranking(VIOLIN.text)
    assert len(order) == 5  # the fused top-1 lists, then the rest in dense order
    dense = DenseBaseline(embedder=fake_embedder)
    await dense.setup(conv)
    d = (await dense.ranking(VIOLIN.text))[0]
    head = set(order[:2])
    assert d[0] in head
    assert order[2:] == [i for i in d if i not in head][: len(order) - 2]
