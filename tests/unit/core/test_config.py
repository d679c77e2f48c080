import pytest

from uniko_memory import UnikoConfig
from uniko_memory.errors import ConfigError


def test_defaults_match_reference() -> None:
    c = UnikoConfig.build({})
    assert c.recall.limit is None and c.recall.token_budget == 2000  # the rendered budget binds
    assert c.recall.fusion.rrf_k == 60 and c.recall.phases.phase1_strategy == "merge"
    assert c.pipeline.ingest_queue_capacity == 200 and c.pipeline.consolidation_threshold == 20
    assert c.consolidation.cluster_cosine == 0.88 and c.cortex.half_life_days == 30
    assert c.chunking.overlap() == 25


def test_round_trip() -> None:
    c = UnikoConfig.preset("fast")
    assert UnikoConfig.model_validate_json(c.model_dump_json()) == c


@pytest.mark.parametrize(
    "data",
    [
        {"chunking": {"min_chunk_tokens": 300, "max_chunk_tokens": 256}},
        {"cortex": {"prune_below": 1.0}},
        {"recall": {"phases": {"phase2_coverage_gate": 0.0}}},
        {"pipeline": {"retry_initial_delay_ms": 5000, "retry_max_delay_ms": 10}},
        {"recall": {"rerank": {"enabled": True, "top_n": 5}, "limit": 10}},
        {"models": {"reranker_enabled": True}},  # moved to recall.rerank
        {"pipeline": {"retry_max_attempts": 3}},  # a knob nothing read, gone
        {"nope": 1},
    ],
)
def test_invalid_configs_raise(data: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError):
        UnikoConfig.build(data)


def test_unknown_preset() -> None:
    with pytest.raises(ConfigError, match="unknown preset"):
        UnikoConfig.preset("turbo")


def test_presets_are_validated_objects_of_one_table() -> None:
    from uniko_memory.config import PRESETS, Preset

    assert set(PRESETS) == {"default", "fast", "thorough", "upstream"}
    assert all(isinstance(p, Preset) and isinstance(p.config, UnikoConfig) for p in PRESETS.values())
    assert UnikoConfig.preset("default") == UnikoConfig()
    fast = UnikoConfig.preset("fast")
    assert fast.recall.token_budget == 1000 and not fast.recall.graph.enabled
    assert not fast.recall.channels.neighbor_expansion
    fast.recall.token_budget = 5  # a copy: the table is not changed
    assert PRESETS["fast"].config.recall.token_budget == 1000
