"""Shared NLP fixtures: the spaCy pipeline loads once per test session."""

from __future__ import annotations

import pytest

from uniko_memory.nlp import NlpPipeline


@pytest.fixture(scope="session")
def spacy_pipeline() -> NlpPipeline:
    """The default pipeline in strict spaCy mode; skips when spaCy or the model is missing."""
    pipeline = NlpPipeline(mode="spacy")
    try:
        pipeline.health()
    except ImportError as exc:  # MissingDependency is an ImportError
        pytest.skip(f"spaCy model unavailable: {exc}")
    return pipeline


@pytest.fixture(scope="session")
def rules_pipeline() -> NlpPipeline:
    return NlpPipeline(mode="rules")
