"""``RecallConfig``: every knob of the recall cascade, with the reference defaults.

``RecallConfig.from_uniko_config(cfg)`` maps a ``UnikoConfig`` onto it (the runtime path);
``RecallConfig.preset(name)`` gives named presets. Scope fields (sessions, participants, time,
categories), the viewer and ``reference_ts`` are per call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..config import UnikoConfig
from ..errors import ConfigError
from ..model import Viewer
from ..model.time import UtcDatetime

#: Tier weights of the reference ("v6 spec").
DEFAULT_TIER_WEIGHTS: dict[str, float] = {
    "fact": 1.0,
    "topic": 1.0,
    "procedure": 0.9,
    "episode": 0.7,
    "observation": 0.5,
    "chunk": 0.5,
    "message": 0.4,
}
DEFAULT_CHANNEL_WEIGHTS: dict[str, float] = {
    "phase1": 1.0,
    "vector": 1.0,
    "bm25": 1.0,
    "chunks": 1.0,
    "chunk_messages": 0.5,
    "graph": 0.5,
    "temporal": 1.0,
    "neighbours": 0.5,
}
#: Edge-type weights μ of the graph channel.
DEFAULT_EDGE_WEIGHTS: dict[str, float] = {
    "ABOUT": 1.0,
    "MENTIONS": 1.0,
    "SUPPORTED_BY": 0.9,
    "OBSERVED_IN": 0.7,
    "HAS_CHUNK": 0.5,
    "IN_SESSION": 0.3,
    "RECORDED_BY": 0.3,
    "FOLLOWED_BY": 0.3,
    "SENT_BY": 0.5,
}


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # bundle
    #: The rendered text's budget (``render()``, every mode), in the caller's token counter.
    token_budget: int = Field(2000, ge=1)
    #: An optional cap on the item count; None fills the budget.
    limit: int | None = Field(None, ge=1, le=1000)
    #: "grouped" (one heading per date: the prompt form) or "standalone" (every entry dated, one
    #: text per item: the retrievers' Documents); the budget is charged for this layout.
    layout: Literal["grouped", "standalone"] = "grouped"
    min_score: float = Field(0.001, ge=0.0)
    # per-channel breadth (reference top-k values)
    phase1_fact_k: int = Field(20, ge=0)
    phase1_procedure_k: int = Field(10, ge=0)
    phase1_topic_k: int = Field(5, ge=0)
    phase2_episode_k: int = Field(20, ge=0)
    phase2_observation_k: int = Field(20, ge=0)
    phase2_message_k: int = Field(10, ge=0)
    phase2_temporal_k: int = Field(20, ge=0)
    phase3_session_chunk_k: int = Field(15, ge=0)
    phase3_observation_chunk_k: int = Field(15, ge=0)
    phase3_artifact_chunk_k: int = Field(30, ge=0)
    phase3_entity_k: int = Field(15, ge=0)
    #: Candidates grow with the bundle: a bigger budget asks every channel for more.
    breadth_per_1k_tokens: float = Field(1.0, ge=0.0)
    # fusion
    vector_weight: float = Field(0.5, ge=0.0)
    bm25_weight: float = Field(0.5, ge=0.0)
    rrf_k: int = Field(60, ge=0)
    tier_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TIER_WEIGHTS))
    #: Weight of each channel family in the fusion (lists within a family count once, by their best rank).
    channel_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_CHANNEL_WEIGHTS))
    query_variants: list[Literal["keywords", "original", "declarative", "type_anchored"]] = Field(
        default_factory=list
    )
    # gates
    phase1_coverage_gate: float = Field(0.75, gt=0.0, le=1.0)
    phase2_coverage_gate: float = Field(0.65, gt=0.0, le=1.0)
    gate_min_items: int = Field(3, ge=1)
    #: Phase 2 also needs this many times the budget in candidate text before it may stop early:
    #: a covered question with too little evidence for the bundle still broadens.
    gate_budget_factor: float = Field(3.0, ge=0.0)
    drift_override_enabled: bool = True
    # phase 2 channels
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    mmr_duplicate_threshold: float = Field(0.85, ge=0.0, le=1.0)
    #: The statements drawn from one turn alone make that turn redundant only when their words
    #: hold this share of the turn's; one clause of a longer turn does not, and the turn, quoted
    #: whole, replaces them (0 is "any statement carries its turn").
    statement_carries_turn: float = Field(0.6, ge=0.0, le=1.0)
    temporal_enabled: bool = True
    graph_enabled: bool = True
    graph_damping: float = Field(0.85, gt=0.0, lt=1.0)
    graph_max_iter: int = Field(30, ge=1)
    graph_top_k: int = Field(10, ge=0)
    #: Seed the walk from the question's participants too (hubs: slower, no better on LoCoMo dev).
    graph_seed_participants: bool = False
    #: A participant's own messages are searched with the question minus that participant's name
    #: (the filter already says whose words; the name only matches where they are addressed).
    speaker_query_without_name: bool = True
    graph_edge_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_EDGE_WEIGHTS))
    #: Turns next to the strongest message hits join the pool (weight: channel_weights["neighbours"]).
    neighbor_expansion: bool = True
    neighbor_parents: int = Field(10, ge=0)
    # phase 3
    #: Phase-1 Facts in the final ranking. The reference default is "boost"; on the LoCoMo dev split
    #: "merge" (the 3 best Facts kept) covers more evidence per token (BENCHMARKS.md, 2026-11-30).
    phase1_strategy: Literal["merge", "boost", "off"] = "merge"
    phase1_boost_alpha: float = Field(0.6, ge=0.0)
    #: A Phase-1 Fact lifts its evidence only if its cosine to the question reaches this.
    boost_min_relevance: float = Field(0.45, ge=0.0, le=1.0)
    reranker_enabled: bool = False
    reranker_top_n: int = Field(50, ge=1)
    answer_type_boost: float = Field(1.0, ge=1.0)
    answer_type_top_n: int = Field(50, ge=1)
    # scope, visibility, time
    viewer: Viewer | None = None
    unrestricted: bool = True
    sessions: list[str] | None = None
    participants: list[str] | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    categories: list[str] | None = None
    reference_ts: UtcDatetime | None = None
    # behaviour
    max_query_chars: int = Field(4000, ge=1)
    #: Whether transcript / observation chunks may enter the bundle as items themselves (otherwise
    #: they only rank the turns they carry, which then enter as Messages).
    chunk_items: bool = True
    #: The most of the token budget that chunk items may take: a chunk quotes about ten turns,
    #: most of them beside the point (BENCHMARKS.md, "Recall quality").
    chunk_budget_share: float = Field(0.25, ge=0.0, le=1.0)
    #: Whether a chunk's rank also ranks the Messages it carries (weight: channel_weights["chunk_messages"]).
    chunk_to_message: bool = True
    #: A Message longer than this (characters) is quoted by its best passage, if it has passages
    #: (``recall.passages``); from ``ChunkingConfig.message_chunk_threshold`` (tokens <= characters).
    passage_min_chars: int = Field(1024, ge=0)
    explain: bool = False
    use_cache: bool = True

    @model_validator(mode="after")
    def _check(self) -> RecallConfig:
        if self.reranker_enabled and self.limit is not None and self.reranker_top_n < self.limit:
            raise ValueError("reranker_top_n must be >= limit")
        if self.since and self.until and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    @classmethod
    def from_uniko_config(cls, cfg: UnikoConfig, **overrides: Any) -> RecallConfig:
        r = cfg.recall
        data: dict[str, Any] = {
            "limit": r.limit,
            "token_budget": r.token_budget,
            "min_score": r.min_score,
            "vector_weight": r.vector_weight,
            "bm25_weight": r.bm25_weight,
            "rrf_k": r.rrf_k,
            "query_variants": list(r.query_variants),
            "phase1_strategy": r.phase1_strategy,
            "phase1_boost_alpha": r.phase1_boost_alpha,
            "phase2_coverage_gate": r.phase2_coverage_threshold,
            "mmr_lambda": r.phase2_mmr_lambda,
            "mmr_duplicate_threshold": r.phase2_mmr_duplicate_threshold,
            "temporal_enabled": r.phase2_temporal_enabled,
            "graph_enabled": r.phase2_graph_enabled,
            "graph_damping": r.phase2_graph_damping,
            "graph_max_iter": r.phase2_graph_max_iter,
            "graph_edge_weights": {**DEFAULT_EDGE_WEIGHTS, **r.phase2_graph_edge_weights},
            "answer_type_boost": r.answer_type_boost,
            "drift_override_enabled": r.drift_override_enabled,
            "reranker_enabled": cfg.models.reranker_enabled,
            "reranker_top_n": cfg.models.reranker_top_n,
            "passage_min_chars": cfg.chunking.message_chunk_threshold,
        }
        if r.per_variant_limit:
            data["phase3_session_chunk_k"] = r.per_variant_limit
            data["phase3_observation_chunk_k"] = r.per_variant_limit
        data.update(overrides)
        return cls.build(data)

    @classmethod
    def build(cls, data: dict[str, Any]) -> RecallConfig:
        from pydantic import ValidationError as PydanticValidationError

        try:
            return cls.model_validate(data)
        except PydanticValidationError as exc:
            raise ConfigError(f"invalid RecallConfig: {exc}") from None

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> RecallConfig:
        if name not in RECALL_PRESETS:
            raise ConfigError(
                f"unknown recall preset {name!r}; choose one of {', '.join(sorted(RECALL_PRESETS))}"
            )
        return cls.build({**RECALL_PRESETS[name], **overrides})

    def with_scope(self, **scope: Any) -> RecallConfig:
        return self.model_copy(update=scope)

    def breadth(self, k: int) -> int:
        """A channel's top-k scaled by the token budget (never below the reference value)."""
        if k <= 0:
            return 0
        scale = max(1.0, self.breadth_per_1k_tokens * min(self.token_budget, 8000) / 1000)
        return max(k, round(k * scale))

    def result_key(self) -> dict[str, Any]:
        """Every field that changes the result set (the cache key); explain changes only the trace."""
        return self.model_dump(mode="json", exclude={"explain", "use_cache"})


RECALL_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "fast": {"graph_enabled": False, "neighbor_expansion": False, "token_budget": 1000},
    "thorough": {"query_variants": ["keywords", "original"], "token_budget": 4000},
    "upstream": {"neighbor_expansion": False, "breadth_per_1k_tokens": 0.0, "chunk_to_message": False},
}
