"""The storage seam: a small async protocol every backend implements.

Score contract (every backend, every search):
- higher is better; results come best first, ties broken by node id;
- ``vector_search``: cosine similarity clipped to [0, 1];
- ``text_search``: BM25, positive and unbounded; compare only within one result list;
- ``hybrid_search``: ``fusion.relative_score`` of the two legs, in [0, 1], so ``alpha`` (1 = vector
  only, 0 = keyword only) means the same on every backend.
Every call names its agent (the tenant): nothing crosses agents. Redacted and deleted nodes never
come back from a search.

``Store`` is the typing contract; a backend subclasses ``base.BaseStore``, which checks every
argument once, the same way for all backends, and calls the backend's hooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..model import Direction, Edge, EdgeType, Node, NodeUsage, Tier, UsageDelta
from .filters import Filter

#: How many candidates each leg of a hybrid search contributes before fusion, per result asked.
HYBRID_CANDIDATE_FACTOR = 4
HYBRID_MIN_CANDIDATES = 40


def hybrid_candidates(k: int) -> int:
    return max(k * HYBRID_CANDIDATE_FACTOR, HYBRID_MIN_CANDIDATES)


@dataclass(frozen=True, slots=True)
class Hit:
    node: Node
    score: float

    @property
    def id(self) -> str:
        return self.node.id


@runtime_checkable
class UnitOfWork(Protocol):
    """Writes for one agent applied all-or-nothing when the ``async with`` block exits cleanly.

    Writes inside a unit are visible to ``get`` of the same unit (read-your-writes) and to nobody
    else until commit. An exception inside the block discards everything.
    """

    agent: str

    def put(self, node: Node, vector: np.ndarray | None = None) -> None: ...

    def put_edge(self, edge: Edge) -> None: ...

    def set_vector(self, node_id: str, tier: Tier, vector: np.ndarray) -> None: ...

    def delete_node(self, node_id: str) -> None: ...

    def delete_edge(self, edge_type: EdgeType, src: str, dst: str) -> None: ...

    def put_blob(self, sha256: str, data: bytes) -> None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    async def get(self, node_id: str) -> Node | None: ...


@runtime_checkable
class Store(Protocol):
    """Async storage for the tiered memory graph. See the module docstring for the score contract."""

    @property
    def dim(self) -> int | None: ...

    def unit(self, agent: str) -> AbstractAsyncContextManager[UnitOfWork]: ...

    async def get(self, agent: str, node_id: str) -> Node | None: ...

    async def get_many(self, agent: str, node_ids: Sequence[str]) -> dict[str, Node]: ...

    async def delete(self, agent: str, node_ids: Sequence[str]) -> int: ...

    async def redact(self, agent: str, node_ids: Sequence[str]) -> int: ...

    async def vector_search(
        self,
        agent: str,
        tier: Tier,
        vector: np.ndarray,
        *,
        k: int = 10,
        filter: Filter | None = None,
    ) -> list[Hit]: ...

    async def text_search(
        self, agent: str, tier: Tier, text: str, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]: ...

    async def hybrid_search(
        self,
        agent: str,
        tier: Tier,
        text: str,
        vector: np.ndarray | None,
        *,
        alpha: float = 0.5,
        k: int = 10,
        filter: Filter | None = None,
    ) -> list[Hit]: ...

    async def neighbors(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[Edge]: ...

    async def neighbor_keys(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[tuple[str, str, str]]:
        """``(src, type, dst)`` of the edges ``neighbors`` would return, in any order, without props.

        Graph walks read thousands of edges per recall and need only their ends and types.
        """
        ...

    async def find(
        self,
        agent: str,
        tier: Tier,
        filter: Filter | None = None,
        *,
        limit: int = 100,
        order_by: str = "time",
        descending: bool = False,
        include_redacted: bool = False,
    ) -> list[Node]: ...

    async def count(self, agent: str, tier: Tier | None = None, filter: Filter | None = None) -> int: ...

    async def get_vectors(self, agent: str, node_ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    async def get_blob(self, sha256: str) -> bytes | None: ...

    async def record_usage(
        self, agent: str, deltas: Mapping[str, UsageDelta], *, invalidates: bool = False
    ) -> int:
        """Add each ``UsageDelta`` to its node's ``NodeUsage``, atomically per node (concurrent
        calls never lose a count) and durably; ids that are not this agent's nodes are ignored.
        Returns how many nodes were updated. Usage never changes a node's content or vector.
        ``invalidates`` (feedback, which changes rankings) bumps the agent's generation as a
        write does; read tracking (access counts) does not."""
        ...

    async def usage(self, agent: str, node_ids: Sequence[str]) -> dict[str, NodeUsage]:
        """The stored usage of these nodes (absent: never rated nor read)."""
        ...

    async def get_meta(self, key: str) -> str | None: ...

    async def set_meta(self, key: str, value: str) -> None: ...

    async def agents(self) -> list[str]: ...

    def generation(self, agent: str) -> int: ...

    async def compact(self, *, full: bool = False) -> None:
        """Make deletions physical now: no deleted or redacted content stays readable in the
        backend's own files. The embedded store merges its FTS index (dropping deleted terms) and
        checkpoints and truncates its WAL; freed cells were zeroed as they were freed
        (``secure_delete``). ``full`` also rewrites the database file from its live rows (SQLite
        ``VACUUM``: time and transient disk in proportion to the file), so not even a fragment of a
        moved cell survives in a page's free space. A backend that keeps nothing deleted on the
        client side (Weaviate) returns at once. Forgetting calls it when a job is done (``full``
        for a participant); reads and writes stay valid before, during and after it."""
        ...

    async def close(self) -> None: ...
