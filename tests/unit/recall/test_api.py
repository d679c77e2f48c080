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
    assert cfg.fusion.rrf_k == 60
    assert cfg.phases.phase1_strategy == "merge"  # measured best of merge / boost / off (BENCHMARKS.md)
    assert cfg.phases.boost_alpha == pytest.approx(0.6)
    assert cfg.phases.phase1_coverage_gate == pytest.approx(0.75)
    assert cfg.phases.phase2_coverage_gate == pytest.approx(0.65)
    assert cfg.phases.gate_min_items == 3
    assert cfg.packing.mmr_lambda == pytest.approx(0.7)
    assert cfg.packing.mmr_duplicate_threshold == pytest.approx(0.85)
    assert cfg.graph.damping == pytest.approx(0.85)
    assert cfg.graph.max_iter == 30
    assert (cfg.breadth.fact_k, cfg.breadth.procedure_k, cfg.breadth.topic_k) == (20, 10, 5)
    assert cfg.fusion.tier_weights["fact"] == 1.0 and cfg.fusion.tier_weights["procedure"] == pytest.approx(
        0.9
    )
    assert cfg.rerank.top_n == 50 and not cfg.rerank.enabled
    assert cfg.phases.drift_override_enabled and cfg.channels.temporal_enabled and cfg.graph.enabled
    assert cfg.viewer is None and cfg.sessions is None and cfg.reference_ts is None
    assert cfg.intent.query_variants == []  # keywords only by default
    assert cfg.passage_min_chars == UnikoConfig().chunking.message_chunk_threshold


def test_the_ranking_numbers_once_buried_in_code_keep_their_values() -> None:
    from uniko_memory.recall import RecallConfig

    cfg = RecallConfig()
    assert cfg.channels.speaker_participants == 2  # participant_ids[:2]
    assert cfg.breadth.temporal_episode_k == cfg.breadth.temporal_k // 2  # k // 2
    assert (cfg.channels.temporal_fetch_factor, cfg.channels.temporal_fetch_min) == (5, 50)  # max(k * 5, 50)
    assert (cfg.graph.hops, cfg.graph.max_nodes, cfg.graph.tolerance) == (2, 4000, 1e-6)
    assert cfg.graph.candidates_per_k == 4  # graph_top_k * 4
    p = cfg.phases
    assert (p.gate_head_per_item, p.gate_head_min) == (2, 6)  # max(gate_min_items * 2, 6)
    assert (p.chars_per_token, p.tokens_per_item) == (4.0, 60)
    assert (p.merge_keep, p.boost_candidates, p.boost_max_facts) == (3, 10, 5)
    assert (p.coverage_facet_weight, p.coverage_relevance_weight, p.coverage_diversity_weight) == (
        0.4,
        0.3,
        0.3,
    )
    k = cfg.packing
    assert (k.max_candidates, k.mmr_window, k.mmr_similarity_floor) == (800, 60, 0.4)
    assert cfg.breadth.scale_cap_tokens == 8000
    assert (cfg.intent.min_entity_chars, cfg.intent.facet_keywords) == (2, 3)  # len(name) >= 2, keywords[:3]
    assert (cfg.fusion.default_tier_weight, cfg.fusion.default_channel_weight) == (0.5, 1.0)


def test_from_uniko_config_maps_the_recall_group() -> None:
    from uniko_memory.recall import RecallConfig

    ucfg = UnikoConfig.build(
        {"recall": {"limit": 7, "fusion": {"rrf_k": 10}, "phases": {"phase2_coverage_gate": 0.5}}}
    )
    cfg = RecallConfig.from_uniko_config(ucfg, token_budget=500, phases={"gate_min_items": 4})
    assert (cfg.limit, cfg.fusion.rrf_k, cfg.token_budget) == (7, 10, 500)
    # a partial group merges over the engine's: its other fields are kept
    assert (cfg.phases.phase2_coverage_gate, cfg.phases.gate_min_items) == (0.5, 4)
    assert cfg.fusion == ucfg.recall.fusion and cfg.graph == ucfg.recall.graph


def test_with_options_merges_groups_and_sets_the_scope() -> None:
    from uniko_memory.recall import RecallConfig

    base = RecallConfig.build({"phases": {"gate_min_items": 5}})
    cfg = base.with_options(sessions=["s1"], phases={"phase1_strategy": "off"}, token_budget=300)
    assert cfg.sessions == ["s1"] and cfg.token_budget == 300
    assert (cfg.phases.phase1_strategy, cfg.phases.gate_min_items) == ("off", 5)
    assert base.sessions is None and base.phases.phase1_strategy == "merge"  # a copy
    with pytest.raises(ConfigError):
        base.with_options(phases={"no_such_knob": 1})
    with pytest.raises(ConfigError):
        base.with_options(phase1_strategy="off")  # tuning lives in its group


def test_learned_settings_round_trip_in_their_stored_flat_form() -> None:
    from uniko_memory.recall import RecallConfig

    cfg = RecallConfig.build({"limit": 4, "phases": {"phase1_strategy": "boost"}})
    settings = cfg.learned_settings()
    assert settings == {"token_budget": 2000, "limit": 4, "phase1_strategy": "boost", "query_variants": []}
    back = RecallConfig().with_learned_settings({**settings, "query_variants": ["original"], "other": 1})
    assert back.phases.phase1_strategy == "boost" and back.limit == 4
    assert back.intent.query_variants == ["original"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"limit": 0},
        {"limit": -3},
        {"token_budget": 0},
        {"fusion": {"rrf_k": -1}},
        {"phases": {"phase1_coverage_gate": 0.0}},
        {"phases": {"phase2_coverage_gate": 1.5}},
        {"packing": {"mmr_lambda": 2.0}},
        {"graph": {"damping": 1.0}},
        {"graph": {"max_iter": 0}},
        {"phases": {"phase1_strategy": "sometimes"}},
        {"intent": {"query_variants": ["keywords", "poetic"]}},
        {"unrestricted": False},  # a knob that did nothing, gone
        {"no_such_knob": 1},
        {"since": datetime(2023, 6, 1, tzinfo=UTC), "until": datetime(2023, 5, 1, tzinfo=UTC)},
        {"since": datetime(2023, 6, 1, tzinfo=UTC), "until": datetime(2023, 6, 1, tzinfo=UTC)},
        {"rerank": {"enabled": True, "top_n": 5}, "limit": 10},
    ],
)
def test_invalid_config_is_a_config_error(overrides: dict[str, object]) -> None:
    from uniko_memory.recall import RecallConfig

    with pytest.raises(ConfigError):
        RecallConfig.from_uniko_config(UnikoConfig(), **overrides)
    with pytest.raises(ConfigError):
        RecallConfig.build(overrides)


def test_presets() -> None:
    from uniko_memory.config import PRESETS
    from uniko_memory.recall import RecallConfig

    assert RecallConfig.preset("default") == RecallConfig.build({})
    assert RecallConfig.preset("fast").token_budget == 1000 and RecallConfig.preset("fast").limit is None
    assert RecallConfig.preset("fast", limit=4).limit == 4
    with pytest.raises(ConfigError, match="unknown preset"):
        RecallConfig.preset("turbo")
    # one table: the recall side of every preset is its UnikoConfig's recall group
    for name, preset in PRESETS.items():
        assert RecallConfig.preset(name) == RecallConfig.from_uniko_config(UnikoConfig.preset(name)), name
        assert preset.name == name and preset.summary
    fast = RecallConfig.preset("fast")
    assert not fast.graph.enabled and not fast.channels.neighbor_expansion
    thorough = RecallConfig.preset("thorough")
    assert thorough.token_budget == 4000 and thorough.intent.query_variants == ["keywords", "original"]


def test_result_key_ignores_explain_and_cache_but_not_scope() -> None:
    from uniko_memory.model import Viewer
    from uniko_memory.recall import RecallConfig

    base = RecallConfig.build({})
    assert base.with_options(explain=True, use_cache=False).result_key() == base.result_key()
    for change in (
        {"limit": 3},
        {"token_budget": 100},
        {"sessions": ["s1"]},
        {"participants": ["Jon"]},
        {"viewer": Viewer(participant_id="p1")},
        {"reference_ts": datetime(2024, 1, 1, tzinfo=UTC)},
        {"categories": ["work"]},
    ):
        assert base.with_options(**change).result_key() != base.result_key(), change


def _leaves(model: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    from pydantic import BaseModel

    assert isinstance(model, BaseModel)
    out: list[tuple[str, ...]] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        out += _leaves(value, (*prefix, name)) if isinstance(value, BaseModel) else [(*prefix, name)]
    return out


def test_every_tuning_number_is_in_the_cache_key() -> None:
    """Change any tuning field (every group, every leaf): the recall cache key changes."""
    from uniko_memory.config import RecallTuning
    from uniko_memory.recall import RecallCache, RecallConfig

    base = RecallConfig()
    key = RecallCache.key("a", "q", base.result_key())
    leaves = [
        leaf
        for leaf in _leaves(base)
        if leaf[0] in RecallTuning.model_fields or leaf == ("passage_min_chars",)
    ]
    assert len(leaves) > 60
    for path in leaves:
        group, name = (path[0], path[-1]) if len(path) == 2 else (None, path[0])
        value = getattr(getattr(base, group) if group else base, name)
        if isinstance(value, bool):
            new: object = not value
        elif isinstance(value, int):
            new = value + 1
        elif isinstance(value, float):
            new = value / 2 if value else 0.5  # a weight that is off by default: switch it on
        elif isinstance(value, dict):
            new = {**value, "x": 0.25}
        elif isinstance(value, list):
            new = ["original"]
        elif value is None:
            new = {"fact": 0.5} if name == "type_shares" else 5  # off by default: switch it on
        else:
            new = "off" if value == "merge" else value
        changed = base.with_options(**({group: {name: new}} if group else {name: new}))
        assert RecallCache.key("a", "q", changed.result_key()) != key, path


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
