import pytest

from uniko_memory.store.fusion import min_max, relative_score, rrf


def test_min_max_scales_to_unit_interval() -> None:
    assert min_max({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}


def test_min_max_constant_leg_maps_to_one() -> None:
    assert min_max({"a": 0.3, "b": 0.3}) == {"a": 1.0, "b": 1.0}
    assert min_max({}) == {}


def test_relative_score_alpha_extremes_follow_one_leg() -> None:
    vec = {"a": 0.9, "b": 0.5, "c": 0.1}
    kw = {"c": 10.0, "b": 5.0, "a": 1.0}
    assert [k for k, _ in relative_score(vec, kw, 1.0)] == ["a", "b", "c"]
    assert [k for k, _ in relative_score(vec, kw, 0.0)] == ["c", "b", "a"]


def test_relative_score_hand_computed() -> None:
    # vec norm: a=1, b=0 ; kw norm: b=1, c=0 ; alpha 0.25
    fused = dict(relative_score({"a": 0.8, "b": 0.4}, {"b": 3.0, "c": 1.0}, 0.25))
    assert fused == pytest.approx({"a": 0.25, "b": 0.75, "c": 0.0})


def test_relative_score_rejects_bad_alpha() -> None:
    with pytest.raises(ValueError):
        relative_score({}, {}, 1.5)


def test_rrf_hand_computed_and_deterministic_ties() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], k=60)
    assert fused[0] == ("b", pytest.approx(1 / 62 + 1 / 61))
    assert [k for k, _ in fused] == ["b", "a", "c"]
    # equal scores break ties by key
    assert [k for k, _ in rrf([["y"], ["x"]])] == ["x", "y"]


def test_rrf_weights() -> None:
    fused = dict(rrf([["a"], ["b"]], k=0, weights=[2.0, 1.0]))
    assert fused == {"a": 2.0, "b": 1.0}
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 2.0])


def test_rrf_scores_families_take_the_best_rank_and_sum_in_list_order() -> None:
    from uniko_memory.store.fusion import rrf_scores

    # "a" is in both lists of family "v" (best: rank 1) and in family "b" at rank 2
    scores = rrf_scores(
        [[("a", 1), ("b", 2)], [("b", 1), ("a", 3)], [("b", 1), ("a", 2)]],
        k=60,
        weights=[1.0, 1.0, 0.5],
        families=["v", "v", "b"],
    )
    assert scores["a"] == 0.0 + 1.0 / 61 + 0.5 / 62
    assert scores["b"] == 0.0 + 1.0 / 61 + 0.5 / 61
    # tied ranks are allowed; a list of weight 0 adds nothing
    assert rrf_scores([[("x", 1), ("y", 1)], [("z", 1)]], k=0, weights=[1.0, 0.0]) == {"x": 1.0, "y": 1.0}
