"""The embedded default store (SQLite + FTS5 + numpy)."""

from .store import EmbeddedStore

__all__ = ["EmbeddedStore"]
