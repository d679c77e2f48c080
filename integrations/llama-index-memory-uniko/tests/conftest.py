"""Fixtures (LlamaIndex memory block): the shared ones of ``integrations/_shared_fixtures.py`` (``uni``,
``sample_agent``, ``fresh_agent``), one engine for this package's test session."""

from __future__ import annotations

import sys
from pathlib import Path

_INTEGRATIONS = str(Path(__file__).resolve().parents[2])
if _INTEGRATIONS not in sys.path:
    sys.path.insert(0, _INTEGRATIONS)

from _shared_fixtures import SAMPLE_AGENT, FakeEmbedder, fresh_agent, sample_agent, seed_sample, uni  # noqa: E402

__all__ = ["SAMPLE_AGENT", "FakeEmbedder", "fresh_agent", "sample_agent", "seed_sample", "uni"]
