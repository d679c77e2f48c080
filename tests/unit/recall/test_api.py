"""The public recall API: exports, reference defaults, config validation, answer-type rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from uniko_memory.config import UnikoConfig
from uniko_memory.errors import ConfigError


def test_public_names_import() -> None:
    from uniko_memory.recall import ContextBundle, IntentProfile, RecallConfig, build_intent_at, recall

    assert callable(recall) and callable(build_intent_at)
    assert {"items", "total_tokens", "phase1_only", "phase2_only", "coverage"} <= set(
        ContextBundle.model_fields
    )
    assert RecallConfig.model_fields["limit"].default is None  # the budget binds, not an item count
    assert "expected_answer_type" in IntentProfile.__dataclass_fields__


def test_from_uniko_config_gives_the_documented_defaults() -> None:
    from uniko_memory.recall import RecallConfig

    cfg = RecallConfig.from_uniko_config(UnikoConfig())
    assert cfg.limit is None
    assert cfg.token_budget == 2000
    assert cfg.rrf_k == 60
    assert cfg.phase1_strategy == "merge"  # measured best of merge / boost / off (BENCHMARKS.md)
    assert cfg.phase1_boost_alpha == pytest.approx(0.6)
    assert cfg.phase1_coverage_gate == pytest.approx(0.75)
    assert cfg.phase2_coverage_gate == pytest.approx(0.65)
    assert cfg.gate_min_items == 3
    assert cfg.mmr_lambda == pytest.approx(0.7)
    assert cfg.mmr_duplicate_threshold == pytest.approx(0.85)
    assert cfg.graph_damping == pytest.approx(0.85)
    assert cfg.graph_max_iter == 30
    assert (cfg.phase1_fact_k, cfg.phase1_procedure_k, cfg.phase1_topic_k) == (20, 10, 5)
    assert cfg.tier_weights["fact"] == 1.0 and cfg.tier_weights["procedure"] == pytest.approx(0.9)
    assert cfg.answer_type_boost == 1.0  # ships off
    assert cfg.reranker_top_n == 50
    assert cfg.drift_override_enabled and cfg.temporal_enabled and cfg.graph_enabled
    assert cfg.viewer is None and cfg.sessions is None and cfg.reference_ts is None
    assert cfg.query_variants == []  # keywords only by default


def test_from_uniko_config_maps_the_recall_group() -> None:
    from uniko_memory.recall import RecallConfig

    ucfg = UnikoConfig.build({"recall": {"limit": 7, "rrf_k": 10, "phase2_coverage_threshold": 0.5}})
    cfg = RecallConfig.from_uniko_config(ucfg, token_budget=500)
    assert (cfg.limit, cfg.rrf_k, cfg.phase2_coverage_gate, cfg.token_budget) == (7, 10, 0.5, 500)


@pytest.mark.parametrize(
    "overrides",
    [
        {"limit": 0},
        {"limit": -3},
        {"token_budget": 0},
        {"rrf_k": -1},
        {"phase1_coverage_gate": 0.0},
        {"phase2_coverage_gate": 1.5},
        {"mmr_lambda": 2.0},
        {"graph_damping": 1.0},
        {"graph_max_iter": 0},
        {"phase1_strategy": "sometimes"},
        {"query_variants": ["keywords", "poetic"]},
        {"no_such_knob": 1},
        {"since": datetime(2023, 6, 1, tzinfo=UTC), "until": datetime(2023, 5, 1, tzinfo=UTC)},
        {"since": datetime(2023, 6, 1, tzinfo=UTC), "until": datetime(2023, 6, 1, tzinfo=UTC)},
        {"reranker_enabled": True, "reranker_top_n": 5, "limit": 10},
    ],
)
def test_invalid_config_is_a_config_error(overrides: dict[str, object]) -> None:
    from uniko_memory.recall import RecallConfig

    with pytest.raises(ConfigError):
        RecallConfig.from_uniko_config(UnikoConfig(), **overrides)
    with pytest.raises(ConfigError):
        RecallConfig.build(overrides)


def test_presets() -> None:
    from uniko_memory.recall import RecallConfig

    assert RecallConfig.preset("default") == RecallConfig.build({})
    assert RecallConfig.preset("fast").token_budget == 1000 and RecallConfig.preset("fast").limit is None
    assert RecallConfig.preset("fast", limit=4).limit == 4
    with pytest.raises(ConfigError, match="unknown recall preset"):
        RecallConfig.preset("turbo")


def test_result_key_ignores_explain_and_cache_but_not_scope() -> None:
    from uniko_memory.model import Viewer
    from uniko_memory.recall import RecallConfig

    base = RecallConfig.build({})
    assert base.with_scope(explain=True, use_cache=False).result_key() == base.result_key()
    for change in (
        {"limit": 3},
        {"token_budget": 100},
        {"sessions": ["s1"]},
        {"participants": ["Jon"]},
        {"viewer": Viewer(participant_id="p1")},
        {"reference_ts": datetime(2024, 1, 1, tzinfo=UTC)},
        {"categories": ["work"]},
    ):
        assert base.with_scope(**change).result_key() != base.result_key(), change


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who is Caroline's partner?", "person"),
        ("Whose bike was stolen?", "person"),
        ("With whom did Melanie go camping?", "person"),
        ("Which friend helped her move?", "person"),
        ("What is her name?", "person"),
        ("Where does Priya work now?", "location"),
        ("Which city did they visit in June?", "location"),
        ("What restaurant did Jon recommend?", "location"),
        ("When did Tomas hurt his ankle?", "date"),
        ("What year did she graduate?", "date"),
        ("How long ago did they meet?", "date"),
        ("How many cats does Caroline have?", "measurement"),
        ("How old is Tomas?", "measurement"),
        ("How long was the flight?", "measurement"),
        ("How much did the violin cost?", "measurement"),
        ("Which company does Priya work for?", "organization"),
        ("What university did Caroline enroll at?", "organization"),
        ("What movie did they watch on Friday?", "other"),
        ("Which book is Melanie reading?", "other"),
        ("Why did Jon open a dance studio?", None),
        ("What did Melanie paint?", None),
        ("How did the talk go?", None),
        ("Tell me about the support group.", None),
        ("  WHO called yesterday?  ", "person"),
        ("", None),
    ],
)
def test_predict_answer_type(question: str, expected: str | None) -> None:
    from uniko_memory.recall import predict_answer_type

    assert predict_answer_type(question) == expected
