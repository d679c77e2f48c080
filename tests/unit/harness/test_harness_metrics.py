from __future__ import annotations

import math

import pytest
from benchmarks.harness.metrics import (
    RetrievedItem,
    answer_contained,
    budget_stats,
    evidence_any,
    evidence_fingerprints,
    evidence_hit_rate,
    evidence_recall_all,
    mean_by_category,
    ndcg_at_k,
    normalise_text,
    percentile,
    recall_all_at_k,
    recall_any_at_k,
    summary_stats,
)


def item(turns: set[str] = frozenset(), sessions: set[str] = frozenset(), kind: str = "turn"):
    return RetrievedItem(
        content="x", covered_turn_ids=frozenset(turns), session_ids=frozenset(sessions), kind=kind
    )


def test_budget_stats() -> None:
    stats = budget_stats([100.0, 300.0, 500.0, 501.0], 500)
    assert stats == {
        "budget": 500,
        "n": 4,
        "mean": 350.25,
        "p50": 400.0,
        "max": 501.0,
        "over_budget": 1,  # 500 is within; 501 is over
        "over_budget_pct": 25.0,
    }
    empty = budget_stats([], 500)
    assert empty["n"] == 0 and empty["max"] is None and empty["over_budget_pct"] is None


def test_evidence_recall() -> None:
    items = [item({"a"}), item({"b", "x"}), item({"c"}, kind="summary"), item({"d"}, kind="topic")]
    assert evidence_recall_all(items, ["a", "b", "c", "d"]) == 0.5
    assert evidence_recall_all(items, ["a", "a", "b"]) == 1.0  # gold is a set
    assert evidence_any(items, ["c", "d"]) == 0.0  # topic/summary cover nothing
    assert evidence_any(items, ["c", "x"]) == 1.0
    assert evidence_recall_all(items[:1], ["a", "b", "c"]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        evidence_recall_all(items, [])


def test_session_recall() -> None:
    items = [item(sessions={"s1"}), item(sessions={"s9"}), item(sessions={"s2", "s3"})]
    gold = ["s2", "s3", "s4"]
    assert recall_any_at_k(items, gold, 2) == 0.0
    assert recall_any_at_k(items, gold, 3) == 1.0
    assert recall_all_at_k(items, gold, 3) == pytest.approx(2 / 3)
    assert recall_all_at_k(items, ["s1"], 1) == 1.0


def test_ndcg_hand_computed() -> None:
    lg = math.log2
    # gold {s1, s2}; ranking s9, s1, s2 → DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3)
    items = [item(sessions={"s9"}), item(sessions={"s1"}), item(sessions={"s2"})]
    expect = (1 / lg(3) + 1 / lg(4)) / (1 + 1 / lg(3))
    assert ndcg_at_k(items, ["s1", "s2"], 3) == pytest.approx(expect)
    # k = 2 cuts the s2 hit: DCG = 1/log2(3); IDCG@2 = 1 + 1/log2(3)
    assert ndcg_at_k(items, ["s1", "s2"], 2) == pytest.approx((1 / lg(3)) / (1 + 1 / lg(3)))
    # one gold session: IDCG = 1 → nDCG = 1/log2(rank+2)
    assert ndcg_at_k(items, ["s1"], 5) == pytest.approx(1 / lg(3))
    # the same gold session twice counts once (no nDCG > 1)
    dup = [item(sessions={"s1"}), item(sessions={"s1"})]
    assert ndcg_at_k(dup, ["s1"], 2) == 1.0
    assert ndcg_at_k(dup, ["s1", "s2"], 2) == pytest.approx(1 / (1 + 1 / lg(3)))
    # perfect ranking
    assert ndcg_at_k([item(sessions={"s2"}), item(sessions={"s1"})], ["s1", "s2"], 10) == pytest.approx(1.0)
    assert ndcg_at_k(items, ["s1"], 0) == 0.0
    with pytest.raises(ValueError):
        ndcg_at_k(items, [], 3)


def test_answer_contained() -> None:
    assert normalise_text("  Hello,   World!\n") == "hello world"
    assert answer_contained("(8 May, 2023) Ann: I adopted Rex on 7 May, 2023!", "7 May 2023")
    assert answer_contained("the year was 2022.", 2022)
    assert answer_contained("self-care is important", "selfcare")
    assert not answer_contained("she went yesterday", "7 May 2023")
    assert not answer_contained("anything", "")
    assert not answer_contained("anything", "?!")
    assert not answer_contained("anything", None)


def test_fingerprints() -> None:
    text = "Caroline: " + "a" * 30 + "b" * 40 + "c" * 30  # 110 chars
    fps = evidence_fingerprints(text)
    assert fps[0] == text.lower()[:50]
    assert fps[1] == ("a" * 30 + "b" * 40)[:50]
    assert fps[2] == text.lower()[30:80]
    assert evidence_fingerprints("Hi") == ["hi"]  # single word: no skip-first-word fingerprint
    assert evidence_fingerprints("   ") == []


def test_evidence_hit_rate() -> None:
    ev1 = "I went to a LGBTQ support group yesterday and it was so powerful."
    ev2 = "The transgender stories were so inspiring! I was so happy and thankful for all the support."
    # ev1 recalled verbatim but with a different first word (skip-first-word fingerprint hits)
    recalled = ["(8 May) Caroline: We went to a LGBTQ support group yesterday and it was so powerful."]
    assert evidence_hit_rate(recalled, [ev1, ev2], "7 May 2023") == 0.5
    # only the middle slice survives: prefix and suffix changed
    middle = ev2[len(ev2) // 2 - 25 : len(ev2) // 2 + 25]
    assert evidence_hit_rate([f"xx {middle.upper()} yy"], [ev2], None) == 1.0
    # nothing matched: answer fallback on word boundaries counts all evidence
    assert evidence_hit_rate(["she adopted a puppy in May 2023."], [ev1, ev2], "May 2023") == 1.0
    assert evidence_hit_rate(["she adopted a puppy in May 20234."], [ev1, ev2], "May 2023") == 0.0
    # answers shorter than 4 chars never count
    assert evidence_hit_rate(["the cat"], [ev1], "cat") == 0.0
    # fallback only when nothing matched
    assert evidence_hit_rate([ev1 + " May 2023"], [ev1, ev2], "May 2023") == 0.5
    with pytest.raises(ValueError):
        evidence_hit_rate(["x"], [], "abcd")


def test_aggregation() -> None:
    agg = mean_by_category([("a", 1.0), ("b", 0.0), ("a", 0.0), ("b", 0.0)])
    assert agg == {
        "overall": 0.25,
        "n": 4,
        "by_category": {"a": 0.5, "b": 0.0},
        "n_by_category": {"a": 2, "b": 2},
    }
    assert mean_by_category([])["overall"] is None
    vals = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(vals, 50) == 3.0
    assert percentile(vals, 95) == pytest.approx(4.8)  # (5-1)*0.95 = 3.8 → 4 + 0.8*(5-4)
    assert percentile([2.0], 95) == 2.0
    assert percentile([], 50) is None
    assert summary_stats([1.0, 3.0]) == {"mean": 2.0, "p50": 2.0, "p95": pytest.approx(2.9)}
    with pytest.raises(ValueError):
        percentile(vals, 101)


def test_tokens_to_reach_interpolates_between_measured_budgets() -> None:
    from benchmarks.harness.run import tokens_to_reach

    curve = [(500, 0.60), (1000, 0.70), (2000, 0.80), (4000, 0.86)]
    assert tokens_to_reach(0.75, curve) == pytest.approx(1500)
    assert tokens_to_reach(0.83, curve) == pytest.approx(3000)
    assert tokens_to_reach(0.50, curve) == 500  # already there at the smallest budget measured
    assert tokens_to_reach(0.90, curve) is None  # never, within what was measured


def test_token_efficiency_says_how_many_times_fewer_tokens() -> None:
    from benchmarks.harness.run import token_efficiency

    def summary(**ev: float) -> dict:
        return {
            "quality": {
                f"evidence_all@{b}tok": {"overall": v} for b, v in ((k[1:], x) for k, x in ev.items())
            }
        }

    summaries = {
        "baseline-hybrid": summary(b500=0.6, b1000=0.7, b2000=0.8),
        "uniko": summary(b500=0.75, b1000=0.9),
        "baseline-bm25": summary(b500=0.5),
    }
    eff = token_efficiency(summaries, [500, 1000, 2000])
    assert set(eff) == {"uniko"}
    assert eff["uniko"]["rows"]["500"] == {"ours": 0.75, "hybrid_tokens": 1500, "times": 3.0}
    assert eff["uniko"]["rows"]["1000"]["hybrid_tokens"] is None  # hybrid never reaches 0.9
