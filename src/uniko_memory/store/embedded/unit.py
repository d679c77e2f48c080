"""The embedded store's unit of work: the shared buffered unit, applied in one SQLite transaction."""

from __future__ import annotations

from ..buffered_unit import BufferedUnit

__all__ = ["EmbeddedUnit"]


class EmbeddedUnit(BufferedUnit):
    """Collects writes; ``EmbeddedStore`` applies them atomically when the ``async with`` block exits."""
