"""Recall: intent profiling, the three-phase coverage-gated cascade, and the token-budgeted bundle.

``await recall(kb, query, cfg, agent=...)`` is the entry point; ``kb`` is a ``KnowledgeBase`` whose
``embedder`` and ``nlp`` are set (``Uniko`` sets both).

The rooms: ``config`` (``RecallConfig``: tuning groups + per-call scope), ``intent`` (the question),
``scope`` (filters every search carries), ``phases`` (the cascade and its gates), ``channels`` (the
store searches, temporal, graph PPR in ``graph``, neighbours), ``fusion`` (the pool and its RRF),
``coverage`` (the gates' score), ``bundle`` (ranking to ``ContextBundle``: provenance, source
checks, rerank), ``assemble`` (rendering and packing), ``passages``, ``explain`` (the trace),
``cache``, ``items`` (the result types).
"""

from __future__ import annotations

import logging
from typing import Any

from ..providers.token_counter import TokenCounter, as_token_counter
from .cache import RecallCache, shared_generation
from .config import RecallConfig
from .feedback import learned_config
from .intent import IntentProfile, begin_intent, build_intent_at, predict_answer_type, validate_query
from .items import (
    HEADER_START,
    MEMORY_CLOSE,
    MEMORY_HEADER,
    MEMORY_OPEN,
    ContextBundle,
    RecallItem,
    RecallSource,
    memory_header,
    quote_lines,
    render_item,
)
from .phases import run_cascade
from .scope import note_unrestricted

log = logging.getLogger(__name__)

__all__ = [
    "HEADER_START",
    "MEMORY_CLOSE",
    "MEMORY_HEADER",
    "MEMORY_OPEN",
    "ContextBundle",
    "IntentProfile",
    "RecallCache",
    "RecallConfig",
    "RecallItem",
    "RecallSource",
    "build_intent_at",
    "memory_header",
    "predict_answer_type",
    "quote_lines",
    "recall",
    "render_item",
]


async def recall(
    kb: Any,
    query: str,
    cfg: RecallConfig | None = None,
    *,
    agent: str = "default",
    nlp: Any = None,
    embedder: Any = None,
    reranker: Any = None,
    cache: RecallCache | None = None,
    token_counter: TokenCounter | None = None,
) -> ContextBundle:
    """Recall a token-budgeted bundle for ``query`` from ``agent``'s memory in ``kb``.

    ``bundle.render()`` (every mode) holds at most ``cfg.token_budget`` tokens of ``token_counter``
    (default: the knowledge base's, MiniLM WordPiece unless one was injected).
    """
    cfg = cfg or RecallConfig.from_uniko_config(kb.config)
    query = validate_query(query, cfg.intent.max_query_chars)
    counter = as_token_counter(token_counter if token_counter is not None else kb.token_counter)
    store = kb.store
    note_unrestricted(cfg, agent)
    key = None
    generation = store.generation(agent)
    cached_path = cache is not None and cfg.use_cache and not cfg.explain
    if cached_path:
        # Another process's writes count too: one small read on a store shared by processes.
        generation = await shared_generation(store, agent)
    # The learned alpha changes the fusion weights: resolved before the key, so the key holds it
    # (read once per generation: feedback, the only thing that moves it, bumps the generation).
    cfg = await learned_config(store, agent, cfg, generation)
    if cache is not None and cached_path:
        key = RecallCache.key(agent, query, {**cfg.result_key(), "token_counter": counter.name})
        cached = cache.get(key, generation)
        if cached is not None:
            return cached
    if nlp is None:
        nlp = getattr(kb, "nlp", None)
        if nlp is None:
            from ..nlp.pipeline import default_pipeline

            nlp = default_pipeline()
    # A draft: the cascade's keyword searches run while the question's vectors are computed.
    intent = await begin_intent(
        store,
        agent,
        query,
        cfg.reference_ts,
        nlp=nlp,
        embedder=embedder if embedder is not None else kb.embedder,
        variants=list(cfg.intent.query_variants),
        tuning=cfg.intent,
    )
    bundle = await run_cascade(
        store,
        agent,
        cfg,
        intent,
        reranker if reranker is not None else getattr(kb, "reranker", None),
        counter,
    )
    if cfg.viewer is None and any(i.kind in ("fact", "observation") for i in bundle.items):
        log.debug("unrestricted recall returned policy-scoped items for agent %s", agent)
    if cache is not None and key is not None and not bundle.degraded:
        # A degraded bundle (embedder down, reranker failed) must not outlive the fault.
        cache.put(key, generation, await shared_generation(store, agent), bundle)
    return bundle
