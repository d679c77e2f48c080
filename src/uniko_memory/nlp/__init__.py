"""NLP layer: temporal resolution, spaCy analysis (with a rule fallback), NER and keywords.

Importing this package never imports spaCy; the model loads on first analysis.
"""

from uniko_memory.nlp.analysis import Analysis, Entity, Token, rule_analyze
from uniko_memory.nlp.keywords import keyword_query, keywords
from uniko_memory.nlp.ner import (
    EntityCount,
    EntityMention,
    EntityType,
    NerResult,
    admit_entities,
    canonical_key,
    deduplicate,
    extract,
    extract_entities,
    normalize_entity_name,
)
from uniko_memory.nlp.pipeline import DEFAULT_MODELS, NlpPipeline, default_pipeline, require_spacy
from uniko_memory.nlp.temporal import (
    TemporalMatch,
    TemporalWindow,
    absolute_phrase,
    find_temporal_phrases,
    format_window,
    resolve_temporal,
    rewrite_temporal,
)

__all__ = [
    "DEFAULT_MODELS",
    "Analysis",
    "Entity",
    "EntityCount",
    "EntityMention",
    "EntityType",
    "NerResult",
    "NlpPipeline",
    "TemporalMatch",
    "TemporalWindow",
    "Token",
    "absolute_phrase",
    "admit_entities",
    "canonical_key",
    "deduplicate",
    "default_pipeline",
    "extract",
    "extract_entities",
    "find_temporal_phrases",
    "format_window",
    "keyword_query",
    "keywords",
    "normalize_entity_name",
    "require_spacy",
    "resolve_temporal",
    "rewrite_temporal",
    "rule_analyze",
]
