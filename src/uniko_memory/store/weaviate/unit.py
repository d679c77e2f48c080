"""The Weaviate unit of work: buffered writes, replayed over a pre-image into one write plan.

Weaviate has no transactions. A unit buffers its operations (validated at call time, like the
embedded store), and on exit the store (1) reads the pre-image of everything the unit touches,
(2) replays the operations over it in order, exactly as the embedded store applies them in SQL,
and (3) writes only the difference, in a fixed order. ``Plan`` is the result of step 2.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ValidationError
from ...model import Edge, EdgeType, Node, Tier
from ..embedded.unit import (
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
from ..embedded.vectors import as_unit_vector

if TYPE_CHECKING:
    from .store import WeaviateStore

EdgeKey = tuple[str, str, str]


@dataclass
class StoredNode:
    """A node as stored: its tier, JSON, redaction flag and (when read) its vector."""

    tier: Tier
    data: str
    redacted: bool
    vector: np.ndarray | None = None
    node: Node | None = None

    def same_as(self, other: StoredNode) -> bool:
        if (self.tier, self.data, self.redacted) != (other.tier, other.data, other.redacted):
            return False
        if self.vector is None or other.vector is None:
            return self.vector is None and other.vector is None
        return bool(np.array_equal(self.vector, other.vector))


@dataclass
class Plan:
    """What a unit changes, as final states next to their pre-images (None = absent)."""

    nodes: dict[str, tuple[StoredNode | None, StoredNode | None]] = field(default_factory=dict)
    edges: dict[EdgeKey, tuple[str | None, str | None]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.nodes or self.edges or self.blobs)


def node_ids_touched(ops: list[Op]) -> set[str]:
    out: set[str] = set()
    for op in ops:
        if isinstance(op, PutNode):
            out.add(op.node.id)
        elif isinstance(op, (PutVector, DeleteNode)):
            out.add(op.node_id)
    return out


def edge_keys_touched(ops: list[Op]) -> set[EdgeKey]:
    out: set[EdgeKey] = set()
    for op in ops:
        if isinstance(op, PutEdge):
            out.add(op.edge.key())
        elif isinstance(op, DeleteEdge):
            out.add((op.edge_type.value, op.src, op.dst))
    return out


def deleted_ids(ops: list[Op]) -> set[str]:
    return {op.node_id for op in ops if isinstance(op, DeleteNode)}


def replay(
    ops: list[Op],
    pre_nodes: dict[str, StoredNode],
    pre_edges: dict[EdgeKey, str],
    pre_blobs: set[str],
) -> Plan:
    """Apply ``ops`` in order over the pre-image; the embedded store's SQL semantics, op by op.

    ``pre_edges`` must hold every stored edge incident to a node the unit deletes.
    """
    nodes: dict[str, StoredNode | None] = dict(pre_nodes)
    edges: dict[EdgeKey, str | None] = dict(pre_edges)
    blobs: dict[str, bytes] = {}
    for op in ops:
        if isinstance(op, PutNode):
            cur = nodes.get(op.node.id)
            if cur is not None and cur.redacted and not op.node.redacted:
                raise ValidationError(f"node {op.node.id} is redacted; it cannot be rewritten with content")
            vec = None if (cur is None or op.node.redacted) else cur.vector
            nodes[op.node.id] = StoredNode(op.node.tier, op.data, op.node.redacted, vec, op.node)
        elif isinstance(op, PutVector):
            cur = nodes.get(op.node_id)
            if cur is None or cur.redacted:
                continue  # gone or redacted: a late embedding must not resurrect it
            if cur.tier != op.tier:
                raise ValidationError(f"node {op.node_id} is a {cur.tier.value}, not a {op.tier.value}")
            nodes[op.node_id] = StoredNode(cur.tier, cur.data, cur.redacted, op.vector, cur.node)
        elif isinstance(op, PutEdge):
            edges[op.edge.key()] = op.props
        elif isinstance(op, DeleteNode):
            if nodes.get(op.node_id) is None:
                continue  # like the embedded store: a missing node's edges are left alone
            nodes[op.node_id] = None
            for key, props in list(edges.items()):
                if props is not None and op.node_id in (key[1], key[2]):
                    edges[key] = None
        elif isinstance(op, DeleteEdge):
            edges[(op.edge_type.value, op.src, op.dst)] = None
        elif isinstance(op, PutBlob) and op.sha256 not in pre_blobs:
            blobs[op.sha256] = op.data
    plan = Plan(blobs=blobs)
    for nid, final in nodes.items():
        pre = pre_nodes.get(nid)
        if pre is None and final is None:
            continue
        if pre is not None and final is not None and pre.same_as(final):
            continue
        plan.nodes[nid] = (pre, final)
    for key, props in edges.items():
        pre_props = pre_edges.get(key)
        if pre_props != props:
            plan.edges[key] = (pre_props, props)
    return plan


class WeaviateUnit:
    """Collects writes; the store plans and applies them when the ``async with`` block exits."""

    def __init__(self, store: WeaviateStore, agent: str) -> None:
        self.agent = agent
        self._store = store
        self.ops: list[Op] = []
        self._overlay: dict[str, Node | None] = {}
        self._dim: int | None = store.dim

    def _check_vector(self, vector: Any) -> np.ndarray:
        try:
            vec = as_unit_vector(vector, self._dim)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if self._dim is None:
            self._dim = int(vec.shape[0])
        return vec

    @property
    def dim(self) -> int | None:
        return self._dim

    def put(self, node: Node, vector: np.ndarray | None = None) -> None:
        if not isinstance(node, Node):
            raise ValidationError(f"put() takes a Node, got {type(node).__name__}")
        if node.agent != self.agent:
            raise ValidationError(f"node {node.id} belongs to agent {node.agent!r}, not {self.agent!r}")
        vec = None if vector is None else self._check_vector(vector)
        data = serialize_node(node)
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:  # pragma: no cover - pydantic refuses these first
            raise ValidationError(f"node {node.id} cannot be stored: {exc}") from None
        self.ops.append(PutNode(node, data))
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

    async def get(self, node_id: str) -> Node | None:
        if node_id in self._overlay:
            return self._overlay[node_id]
        return await self._store.get(self.agent, node_id)
