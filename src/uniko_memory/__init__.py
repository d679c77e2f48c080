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

__version__ = "0.1.0"

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
