"""The Weaviate unit of work: buffered writes, replayed over a pre-image into one write plan.

Weaviate has no transactions. A unit buffers its operations (validated at call time, like the
embedded store), and on exit the store (1) reads the pre-image of everything the unit touches,
(2) replays the operations over it in order, exactly as the embedded store applies them in SQL,
and (3) writes only the difference, in a fixed order. ``Plan`` is the result of step 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ValidationError
from ...model import Node, Tier
from ..buffered_unit import (
    BufferedUnit,
    DeleteEdge,
    DeleteNode,
    Op,
    PutBlob,
    PutEdge,
    PutMeta,
    PutNode,
    PutVector,
)

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
    #: Meta records the unit sets (``set_meta``), by key: their final values, and the values
    #: before the unit (None = absent; read by the store before it writes: what a rollback restores).
    meta: dict[str, str] = field(default_factory=dict)
    meta_before: dict[str, str | None] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.nodes or self.edges or self.blobs or self.meta)


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
    meta: dict[str, str] = {}
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
        elif isinstance(op, PutMeta):
            meta[op.key] = op.value
    plan = Plan(blobs=blobs, meta=meta)
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


class WeaviateUnit(BufferedUnit):
    """Collects writes; the store plans and applies them when the ``async with`` block exits."""
