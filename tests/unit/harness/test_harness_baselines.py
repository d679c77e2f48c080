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
    _enough,
    rank_by_score,
    rrf,
    tokenize,
    turn_document,
)
from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Question
from benchmarks.harness.metrics import RetrievedItem

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


def _items(tokens: list[int]) -> list[RetrievedItem]:
    return [RetrievedItem(content=str(i), tokens=t) for i, t in enumerate(tokens)]


def test_enough() -> None:
    ranked = _items([10, 10, 10, 10, 10])
    assert len(_enough(ranked, None, None)) == 5
    assert len(_enough(ranked, 2, None)) == 2
    assert len(_enough(ranked, 1, 25)) == 3  # passes 25 tokens at the third item
    assert len(_enough(ranked, 4, 5)) == 4
    assert len(_enough(ranked, 1, 1000)) == 5


async def _setup(system, data_dir: Path):
    conv = load_any(data_dir / "locomo_tiny.json", "locomo").conversations[0]
    await system.setup(conv)
    return conv


async def test_bm25_baseline(data_dir: Path, token_counter) -> None:
    system = BM25Baseline(token_counter=token_counter)
    conv = await _setup(system, data_dir)
    q = VIOLIN
    res = await system.retrieve(q, conv.sessions[-1].start, limit=2, token_budget=None)
    assert len(res.items) == 2 and res.latency_s >= 0
    top = res.items[0]
    assert top.covered_turn_ids == frozenset({"D2:1"}) and top.session_ids == frozenset({"session_2"})
    assert top.kind == "turn"
    assert top.content == "(10:05 am on 20 June, 2023) Bob: I started learning the violin last week."
    assert top.tokens == len(top.content.split())
    full = await system.retrieve(q, conv.sessions[-1].start)
    assert len(full.items) == 5
    await system.close()


async def test_dense_baseline_uses_embedder(data_dir: Path, fake_embedder, token_counter) -> None:
    system = DenseBaseline(embedder=fake_embedder, token_counter=token_counter, batch_size=2)
    conv = await _setup(system, data_dir)
    assert fake_embedder.document_calls == 3  # 5 turns in batches of 2
    q = VIOLIN
    res = await system.retrieve(q, conv.sessions[-1].start, limit=1, token_budget=None)
    assert res.items[0].covered_turn_ids == frozenset({"D2:1"})
    assert fake_embedder.query_calls == 1


async def test_dense_accepts_factory(data_dir: Path, fake_embedder, token_counter) -> None:
    system = DenseBaseline(embedder=lambda: fake_embedder, token_counter=token_counter)
    await _setup(system, data_dir)
    assert fake_embedder.document_calls == 1


async def test_hybrid_is_rrf_of_both(data_dir: Path, fake_embedder, token_counter) -> None:
    hybrid = HybridBaseline(embedder=fake_embedder, token_counter=token_counter)
    bm25 = BM25Baseline(token_counter=token_counter)
    dense = DenseBaseline(embedder=fake_embedder, token_counter=token_counter)
    conv = await _setup(hybrid, data_dir)
    await bm25.setup(conv)
    await dense.setup(conv)
    ts = conv.sessions[-1].start
    for q in conv.questions:
        b = [i.content for i in (await bm25.retrieve(q, ts)).items]
        d = [i.content for i in (await dense.retrieve(q, ts)).items]
        h = [i.content for i in (await hybrid.retrieve(q, ts)).items]
        docs = hybrid.documents
        expect = rrf([[docs.index(c) for c in b], [docs.index(c) for c in d]], depth=100)
        assert h == [docs[i] for i in expect]
    await hybrid.close()


async def test_hybrid_depth(data_dir: Path, fake_embedder, token_counter) -> None:
    shallow = HybridBaseline(embedder=fake_embedder, token_counter=token_counter, rrf_depth=1)
    conv = await _setup(shallow, data_dir)
    res = await shallow.retrieve(VIOLIN, conv.sessions[-1].start)
    assert len(res.items) == 5  # the fused top-1 lists, then the rest in dense order
    dense = DenseBaseline(embedder=fake_embedder, token_counter=token_counter)
    await dense.setup(conv)
    d = [i.content for i in (await dense.retrieve(VIOLIN, conv.sessions[-1].start)).items]
    head = {i.content for i in res.items[:2]}
    assert d[0] in head
    assert [i.content for i in res.items[2:]] == [c for c in d if c not in head][: len(res.items) - 2]
