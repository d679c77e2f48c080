"""The embedded store's unit of work: the shared buffered unit, applied in one SQLite transaction."""

from __future__ import annotations

from ..buffered_unit import (
    BufferedUnit,
    DeleteEdge,
    DeleteNode,
    Op,
    PutBlob,
    PutEdge,
    PutNode,
    PutVector,
    serialize_node,
    serialize_props,
)

__all__ = [
    "DeleteEdge",
    "DeleteNode",
    "EmbeddedUnit",
    "Op",
    "PutBlob",
    "PutEdge",
    "PutNode",
    "PutVector",
    "serialize_node",
    "serialize_props",
]


class EmbeddedUnit(BufferedUnit):
    """Collects writes; ``EmbeddedStore`` applies them atomically when the ``async with`` block exits."""
