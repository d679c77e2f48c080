"""The unit of work every backend shares: validated, buffered writes with read-your-writes.

A backend subclasses ``BufferedUnit`` and applies ``ops`` when the ``async with`` block exits
(SQLite in one transaction; Weaviate by plan, write and compensation).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic_core import PydanticSerializationError

from ..errors import ValidationError
from ..model import Edge, EdgeType, Node, Tier
from .vector_math import as_unit_vector

if TYPE_CHECKING:
    from .protocol import Store


@dataclass(frozen=True, slots=True)
class PutNode:
    node: Node
    data: str


@dataclass(frozen=True, slots=True)
class PutVector:
    node_id: str
    tier: Tier
    vector: np.ndarray


@dataclass(frozen=True, slots=True)
class PutEdge:
    edge: Edge
    props: str


@dataclass(frozen=True, slots=True)
class DeleteNode:
    node_id: str


@dataclass(frozen=True, slots=True)
class DeleteEdge:
    edge_type: EdgeType
    src: str
    dst: str


@dataclass(frozen=True, slots=True)
class PutBlob:
    sha256: str
    data: bytes


@dataclass(frozen=True, slots=True)
class PutMeta:
    key: str
    value: str


def serialize_node(node: Node) -> str:
    """JSON of the node, checked at ``put`` time so bad content fails before the commit."""
    try:
        return node.model_dump_json()
    except (PydanticSerializationError, UnicodeError, ValueError) as exc:
        raise ValidationError(f"node {node.id} cannot be stored: {exc}") from None


def serialize_props(edge: Edge) -> str:
    try:
        return json.dumps(edge.props, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"edge {edge.type.value} {edge.src}->{edge.dst}: props must be JSON: {exc}"
        ) from None


Op = PutNode | PutVector | PutEdge | DeleteNode | DeleteEdge | PutBlob | PutMeta


class BufferedUnit:
    """Collects writes for one agent; the owning store applies ``ops`` when the unit exits."""

    def __init__(self, store: Store, agent: str) -> None:
        self.agent = agent
        self._store = store
        self.ops: list[Op] = []
        self._overlay: dict[str, Node | None] = {}
        self._dim: int | None = store.dim

    @property
    def dim(self) -> int | None:
        """The store's dimension, or the first buffered vector's when the store has none yet."""
        return self._dim

    def _check_vector(self, vector: Any) -> np.ndarray:
        try:
            vec = as_unit_vector(vector, self._dim)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if self._dim is None:
            self._dim = int(vec.shape[0])
        return vec

    def put(self, node: Node, vector: np.ndarray | None = None) -> None:
        if not isinstance(node, Node):
            raise ValidationError(f"put() takes a Node, got {type(node).__name__}")
        if node.agent != self.agent:
            raise ValidationError(f"node {node.id} belongs to agent {node.agent!r}, not {self.agent!r}")
        vec = None if vector is None else self._check_vector(vector)
        self.ops.append(PutNode(node, serialize_node(node)))
        self._overlay[node.id] = node
        if vec is not None:
            self.ops.append(PutVector(node.id, node.tier, vec))

    def set_vector(self, node_id: str, tier: Tier, vector: np.ndarray) -> None:
        self.ops.append(PutVector(node_id, Tier(tier), self._check_vector(vector)))

    def put_edge(self, edge: Edge) -> None:
        if not isinstance(edge, Edge):
            raise ValidationError(f"put_edge() takes an Edge, got {type(edge).__name__}")
        self.ops.append(PutEdge(edge, serialize_props(edge)))

    def delete_node(self, node_id: str) -> None:
        self.ops.append(DeleteNode(node_id))
        self._overlay[node_id] = None

    def delete_edge(self, edge_type: EdgeType, src: str, dst: str) -> None:
        self.ops.append(DeleteEdge(EdgeType(edge_type), src, dst))

    def put_blob(self, sha256: str, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValidationError("blob data must be bytes")
        data = bytes(data)
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValidationError("blob sha256 does not match its content")
        self.ops.append(PutBlob(sha256, data))

    def set_meta(self, key: str, value: str) -> None:
        """A meta record written with the unit's other writes (``Store.set_meta``, in the unit)."""
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise ValidationError("a meta record needs a non-empty string key and a string value")
        self.ops.append(PutMeta(key, value))

    async def get(self, node_id: str) -> Node | None:
        if node_id in self._overlay:
            return self._overlay[node_id]
        return await self._store.get(self.agent, node_id)
