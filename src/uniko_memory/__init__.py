"""uniko-memory: long-term memory for AI agents.

A tiered memory graph (Messages → Observations → Facts, with Entities, Topics, Procedures,
Episodes, Sessions, Chunks and Artifacts) with LLM-free ingest and a coverage-gated recall cascade.
"""

from .config import UnikoConfig
from .errors import (
    Backpressure,
    ConfigError,
    IdConflict,
    MissingDependency,
    NotFound,
    StoreError,
    UnikoError,
    ValidationError,
)
from .knowledge_base import KnowledgeBase

__version__ = "0.1.0"

__all__ = [
    "Backpressure",
    "ConfigError",
    "IdConflict",
    "KnowledgeBase",
    "MissingDependency",
    "NotFound",
    "StoreError",
    "UnikoConfig",
    "UnikoError",
    "ValidationError",
    "__version__",
]
