import pytest

from uniko_memory import UnikoConfig
from uniko_memory.errors import ConfigError


def test_defaults_match_reference() -> None:
    c = UnikoConfig.build({})
    assert c.recall.limit is None and c.recall.token_budget == 2000  # the rendered budget binds
    assert c.recall.rrf_k == 60 and c.recall.phase1_strategy == "merge"
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
        {"recall": {"phase2_coverage_threshold": 0.0}},
        {"pipeline": {"retry_initial_delay_ms": 5000, "retry_max_delay_ms": 10}},
        {"models": {"reranker_enabled": True, "reranker_top_n": 5}, "recall": {"limit": 10}},
        {"nope": 1},
    ],
)
def test_invalid_configs_raise(data: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError):
        UnikoConfig.build(data)


def test_unknown_preset() -> None:
    with pytest.raises(ConfigError, match="unknown preset"):
        UnikoConfig.preset("turbo")
