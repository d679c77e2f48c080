"""``BaseStore``: the ``Store`` protocol's public methods, written once over backend hooks.

A template method, as ``langchain_core.retrievers.BaseRetriever.invoke`` calls
``_get_relevant_documents``: each public method checks its arguments (``validation``), refuses a
closed store, and only then calls the hook of the same name with a leading underscore (``find`` ->
``_find``). A hook receives arguments already in canonical form: a ``Tier``, a validated ``Filter``
or None, a unit query vector, ids without duplicates (first occurrence kept), edge types as their
stored values. So bad input fails the same way on every backend, and a backend holds only what
is its own.

Hooks a backend implements (all ``async`` unless marked):

- ``_new_unit(agent)`` (sync) and ``_commit_unit(unit)``: a unit's buffer, and applying it when its
  ``async with`` block exits with operations (units of one store run one at a time);
- ``_get_many``, ``_get_vectors``, ``_delete``, ``_redact`` (given the nodes to redact, never empty);
- ``_vector_search``, ``_text_search``, ``_hybrid_search``;
- ``_neighbors``, ``_neighbor_keys`` (never called with no ids);
- ``_find``, ``_count``, ``_get_blob``, ``_get_meta``, ``_set_meta``, ``_agents``;
- ``_record_usage`` (additive, atomic per node) and ``_usage``;
- ``_compact`` and ``_close`` (called once; it must leave ``_closed`` set).
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from ..errors import ClosedError
from ..model import Direction, Edge, EdgeType, Node, NodeUsage, Tier, UsageDelta
from .buffered_unit import BufferedUnit
from .filters import Filter, validate
from .lease import check_fence
from .protocol import Hit

if TYPE_CHECKING:
    from .protocol import Store
from .validation import (
    MAX_FIND_LIMIT,
    check_agent,
    check_alpha,
    check_edge_query,
    check_k,
    check_order_by,
    check_query_vector,
    check_text,
    check_tier,
)

U = TypeVar("U", bound=BufferedUnit)


def unique(ids: Sequence[str]) -> list[str]:
    """The ids without duplicates, first occurrence kept (the order hooks and results follow)."""
    return list(dict.fromkeys(ids))


class BaseStore(ABC, Generic[U]):
    """What every backend shares: argument checks, the closed state, unit serialisation and
    per-agent generations. Satisfies the ``Store`` protocol once a subclass fills the hooks."""

    def __init__(self, dim: int | None = None) -> None:
        self._dim = dim
        self._closed = False
        self._generations: dict[str, int] = {}
        self._unit_lock: asyncio.Lock | None = None

    # ------------------------------------------------------------------ state
    @property
    def dim(self) -> int | None:
        """The vector dimension; None until the first vector (or ``dim`` at open) fixes it."""
        return self._dim

    def generation(self, agent: str) -> int:
        """Bumped by every commit that changed ``agent``'s content (caches key on it)."""
        return self._generations.get(agent, 0)

    async def current_generation(self, agent: str) -> int:
        """The generation as every process sees it (a backend shared by processes reads its
        stored counter; here: this process's own, which is exact for a single-process store)."""
        return self.generation(agent)

    def _bump(self, agent: str) -> None:
        self._generations[agent] = self._generations.get(agent, 0) + 1

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the store is closed")

    # ------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        """Release the backend; idempotent. Calls in flight finish first."""
        if not self._closed:
            await self._close()

    async def compact(self, *, full: bool = False) -> None:
        """See ``Store.compact``."""
        self._check_open()
        await self._compact(full=full)

    # ------------------------------------------------------------------ writes
    @contextlib.asynccontextmanager
    async def unit(self, agent: str) -> AsyncIterator[U]:
        """A unit of work for ``agent`` (see ``UnitOfWork``); applied when the block exits cleanly."""
        check_agent(agent)
        self._check_open()
        if self._unit_lock is None:
            self._unit_lock = asyncio.Lock()
        async with self._unit_lock:
            u = self._new_unit(agent)
            yield u
            if u.ops:
                await check_fence(agent)  # a leased cycle that lost its lease writes nothing
                await self._commit_unit(u)

    async def delete(self, agent: str, node_ids: Sequence[str]) -> int:
        """Delete the nodes and every edge at them; returns how many existed."""
        check_agent(agent)
        ids = unique(node_ids)
        self._check_open()
        if not ids:
            return 0
        await check_fence(agent)
        return await self._delete(agent, ids)

    async def redact(self, agent: str, node_ids: Sequence[str]) -> int:
        """Replace the nodes by their redacted copies (content, text index and vector gone)."""
        check_agent(agent)
        nodes = await self.get_many(agent, unique(node_ids))
        if not nodes:
            return 0
        await check_fence(agent)
        return await self._redact(agent, nodes)

    async def set_meta(self, key: str, value: str) -> None:
        self._check_open()
        await self._set_meta(key, value)

    async def record_usage(
        self, agent: str, deltas: Mapping[str, UsageDelta], *, invalidates: bool = False
    ) -> int:
        """See ``Store.record_usage``: only ids of this agent's stored nodes are recorded."""
        check_agent(agent)
        if not all(isinstance(d, UsageDelta) for d in deltas.values()):
            from ..errors import ValidationError

            raise ValidationError("record_usage takes a mapping of node id to UsageDelta")
        self._check_open()
        ids = unique([i for i in deltas if isinstance(i, str) and i])
        known = await self._get_many(agent, ids) if ids else {}
        kept = {i: deltas[i] for i in ids if i in known}
        if not kept:
            return 0
        await self._record_usage(agent, kept)
        if invalidates:
            await self._invalidate(agent)
        return len(kept)

    async def usage(self, agent: str, node_ids: Sequence[str]) -> dict[str, NodeUsage]:
        check_agent(agent)
        ids = unique(node_ids)
        self._check_open()
        return await self._usage(agent, ids) if ids else {}

    async def _invalidate(self, agent: str) -> None:
        """Bump the agent's generation without a content write (a backend shared by processes
        publishes it, as its commits do)."""
        self._bump(agent)

    # ------------------------------------------------------------------ reads
    async def get(self, agent: str, node_id: str) -> Node | None:
        return (await self.get_many(agent, [node_id])).get(node_id)

    async def get_many(self, agent: str, node_ids: Sequence[str]) -> dict[str, Node]:
        check_agent(agent)
        ids = unique(node_ids)
        self._check_open()
        return await self._get_many(agent, ids) if ids else {}

    async def get_vectors(self, agent: str, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        check_agent(agent)
        ids = unique(node_ids)
        self._check_open()
        return await self._get_vectors(agent, ids) if ids else {}

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
    ) -> list[Node]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(limit, name="limit", maximum=MAX_FIND_LIMIT)
        flt = validate(filter)
        check_order_by(order_by)
        self._check_open()
        return await self._find(
            agent,
            t,
            flt,
            limit=limit,
            order_by=order_by,
            descending=descending,
            include_redacted=include_redacted,
        )

    async def count(self, agent: str, tier: Tier | None = None, filter: Filter | None = None) -> int:
        check_agent(agent)
        flt = validate(filter)
        t = check_tier(tier) if tier is not None else None
        self._check_open()
        return await self._count(agent, t, flt)

    async def neighbors(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[Edge]:
        check_agent(agent)
        ids = unique(node_ids)
        types, direction = check_edge_query(edge_types, direction)
        self._check_open()
        return await self._neighbors(agent, ids, types, direction) if ids else []

    async def neighbor_keys(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[tuple[str, str, str]]:
        """``(src, type, dst)`` of the edges ``neighbors`` would return (see ``Store``)."""
        check_agent(agent)
        ids = unique(node_ids)
        types, direction = check_edge_query(edge_types, direction)
        self._check_open()
        return await self._neighbor_keys(agent, ids, types, direction) if ids else []

    async def get_blob(self, sha256: str) -> bytes | None:
        self._check_open()
        return await self._get_blob(sha256)

    async def get_meta(self, key: str) -> str | None:
        self._check_open()
        return await self._get_meta(key)

    async def agents(self) -> list[str]:
        """Agents with at least one stored node, sorted."""
        self._check_open()
        return await self._agents()

    # ------------------------------------------------------------------ search
    async def vector_search(
        self, agent: str, tier: Tier, vector: np.ndarray, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        flt = validate(filter)
        q = check_query_vector(vector, self._dim)
        self._check_open()
        return await self._vector_search(agent, t, q, k, flt)

    async def text_search(
        self, agent: str, tier: Tier, text: str, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        flt = validate(filter)
        check_text(text)
        self._check_open()
        return await self._text_search(agent, t, text, k, flt)

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
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        flt = validate(filter)
        check_text(text)
        check_alpha(alpha)
        q = None if vector is None else check_query_vector(vector, self._dim)
        self._check_open()
        return await self._hybrid_search(agent, t, text, q, alpha, k, flt)

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _new_unit(self, agent: str) -> U: ...

    @abstractmethod
    async def _commit_unit(self, unit: U) -> None: ...

    @abstractmethod
    async def _delete(self, agent: str, node_ids: list[str]) -> int: ...

    @abstractmethod
    async def _redact(self, agent: str, nodes: dict[str, Node]) -> int: ...

    @abstractmethod
    async def _set_meta(self, key: str, value: str) -> None: ...

    @abstractmethod
    async def _record_usage(self, agent: str, deltas: dict[str, UsageDelta]) -> None: ...

    @abstractmethod
    async def _usage(self, agent: str, node_ids: list[str]) -> dict[str, NodeUsage]: ...

    @abstractmethod
    async def _get_many(self, agent: str, node_ids: list[str]) -> dict[str, Node]: ...

    @abstractmethod
    async def _get_vectors(self, agent: str, node_ids: list[str]) -> dict[str, np.ndarray]: ...

    @abstractmethod
    async def _find(
        self,
        agent: str,
        tier: Tier,
        flt: Filter | None,
        *,
        limit: int,
        order_by: str,
        descending: bool,
        include_redacted: bool,
    ) -> list[Node]: ...

    @abstractmethod
    async def _count(self, agent: str, tier: Tier | None, flt: Filter | None) -> int: ...

    @abstractmethod
    async def _neighbors(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[Edge]: ...

    @abstractmethod
    async def _neighbor_keys(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[str, str, str]]: ...

    @abstractmethod
    async def _get_blob(self, sha256: str) -> bytes | None: ...

    @abstractmethod
    async def _get_meta(self, key: str) -> str | None: ...

    @abstractmethod
    async def _agents(self) -> list[str]: ...

    @abstractmethod
    async def _vector_search(
        self, agent: str, tier: Tier, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[Hit]: ...

    @abstractmethod
    async def _text_search(
        self, agent: str, tier: Tier, text: str, k: int, flt: Filter | None
    ) -> list[Hit]: ...

    @abstractmethod
    async def _hybrid_search(
        self,
        agent: str,
        tier: Tier,
        text: str,
        query: np.ndarray | None,
        alpha: float,
        k: int,
        flt: Filter | None,
    ) -> list[Hit]: ...

    @abstractmethod
    async def _compact(self, *, full: bool) -> None: ...

    @abstractmethod
    async def _close(self) -> None: ...


if TYPE_CHECKING:

    def _satisfies_the_protocol(store: BaseStore[Any]) -> Store:
        """Never called: mypy proves here that every ``BaseStore`` is a ``Store``."""
        return store
