"""uniko-memory: long-term memory for AI agents.

A tiered memory graph (Messages → Observations → Facts, with Entities, Topics, Procedures,
Episodes, Sessions, Chunks and Artifacts) with LLM-free ingest and a coverage-gated recall cascade.
"""

from .config import UnikoConfig
from .consolidation import CycleStats
from .errors import (
    Backpressure,
    ConfigError,
    IdConflict,
    MissingDependency,
    NotFound,
    StorageFull,
    StoreError,
    StoreLocked,
    StoreReadOnly,
    UnikoError,
    ValidationError,
)
from .facade import Agent, Session, Uniko
from .ingest import Turn
from .knowledge_base import KnowledgeBase
from .model import Viewer
from .query import Answer, GeneratedAnswer, QueryRecordOptions, answer_query
from .recall import ContextBundle, RecallConfig, RecallItem, recall


def _installed_version() -> str:
    """The version in the core's ``pyproject.toml`` (the one version source), as installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("uniko-memory")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


__version__ = _installed_version()

__all__ = [
    "Agent",
    "Answer",
    "Backpressure",
    "ConfigError",
    "ContextBundle",
    "CycleStats",
    "GeneratedAnswer",
    "IdConflict",
    "KnowledgeBase",
    "MissingDependency",
    "NotFound",
    "QueryRecordOptions",
    "RecallConfig",
    "RecallItem",
    "Session",
    "StorageFull",
    "StoreError",
    "StoreLocked",
    "StoreReadOnly",
    "Turn",
    "Uniko",
    "UnikoConfig",
    "UnikoError",
    "ValidationError",
    "Viewer",
    "__version__",
    "answer_query",
    "recall",
]
