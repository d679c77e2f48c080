"""The embedded default store (SQLite + FTS5 + numpy, usearch HNSW for big tiers)."""

from .store import EmbeddedStore
from .vector_options import EmbeddedVectorOptions

__all__ = ["EmbeddedStore", "EmbeddedVectorOptions"]
