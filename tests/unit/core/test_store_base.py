"""``BaseStore``: every public method checks its arguments once, then calls its hook with them in
canonical form; a bad argument or a closed store never reaches a backend."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np
import pytest

from uniko_memory.errors import ClosedError, FilterError, UnknownTier, ValidationError
from uniko_memory.model import Direction, Edge, EdgeType, Node, Tier
from uniko_memory.store import BaseStore, Eq, Filter, Hit, Store
from uniko_memory.store.buffered_unit import BufferedUnit
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.weaviate import WeaviateStore

AGENT = "agent-a"
VEC = np.array([3.0, 4.0, 0.0, 0.0], dtype=np.float32)


class Recorder(BaseStore[BufferedUnit]):
    """A backend that stores nothing and records each hook call with its arguments."""

    def __init__(self) -> None:
        super().__init__(dim=4)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.committed: list[BufferedUnit] = []

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))

    def _new_unit(self, agent: str) -> BufferedUnit:
        return BufferedUnit(self, agent)

    async def _commit_unit(self, unit: BufferedUnit) -> None:
        self.committed.append(unit)

    async def _delete(self, agent: str, node_ids: list[str]) -> int:
        self._record("_delete", agent, node_ids)
        return len(node_ids)

    async def _redact(self, agent: str, nodes: dict[str, Node]) -> int:
        self._record("_redact", agent, nodes)
        return len(nodes)

    async def _set_meta(self, key: str, value: str) -> None:
        self._record("_set_meta", key, value)

    async def _record_usage(self, agent: str, deltas: dict[str, Any]) -> None:
        self._record("_record_usage", agent, deltas)

    async def _usage(self, agent: str, node_ids: list[str]) -> dict[str, Any]:
        self._record("_usage", agent, node_ids)
        return {}

    async def _get_many(self, agent: str, node_ids: list[str]) -> dict[str, Node]:
        self._record("_get_many", agent, node_ids)
        return {}

    async def _get_vectors(self, agent: str, node_ids: list[str]) -> dict[str, np.ndarray]:
        self._record("_get_vectors", agent, node_ids)
        return {}

    async def _find(self, agent: str, tier: Tier, flt: Filter | None, **kwargs: Any) -> list[Node]:
        self._record("_find", agent, tier, flt, **kwargs)
        return []

    async def _count(self, agent: str, tier: Tier | None, flt: Filter | None) -> int:
        self._record("_count", agent, tier, flt)
        return 0

    async def _neighbors(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[Edge]:
        self._record("_neighbors", agent, node_ids, types, direction)
        return []

    async def _neighbor_keys(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[str, str, str]]:
        self._record("_neighbor_keys", agent, node_ids, types, direction)
        return []

    async def _get_blob(self, sha256: str) -> bytes | None:
        self._record("_get_blob", sha256)
        return None

    async def _get_meta(self, key: str) -> str | None:
        self._record("_get_meta", key)
        return None

    async def _agents(self) -> list[str]:
        self._record("_agents")
        return []

    async def _vector_search(
        self, agent: str, tier: Tier, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[Hit]:
        self._record("_vector_search", agent, tier, query, k, flt)
        return []

    async def _text_search(self, agent: str, tier: Tier, text: str, k: int, flt: Filter | None) -> list[Hit]:
        self._record("_text_search", agent, tier, text, k, flt)
        return []

    async def _hybrid_search(
        self,
        agent: str,
        tier: Tier,
        text: str,
        query: np.ndarray | None,
        alpha: float,
        k: int,
        flt: Filter | None,
    ) -> list[Hit]:
        self._record("_hybrid_search", agent, tier, text, query, alpha, k, flt)
        return []

    async def _compact(self, *, full: bool) -> None:
        self._record("_compact", full=full)

    async def _close(self) -> None:
        self._closed = True


def test_both_backends_are_base_stores() -> None:
    assert issubclass(EmbeddedStore, BaseStore) and issubclass(WeaviateStore, BaseStore)
    assert isinstance(Recorder(), Store)


async def test_hooks_get_canonical_arguments() -> None:
    s = Recorder()
    await s.get_many(AGENT, ["b", "a", "b"])
    await s.neighbors(AGENT, ["x", "x"], [EdgeType.NEXT], direction="both")  # type: ignore[arg-type]
    await s.find(AGENT, "message", Eq("seq", 1), limit=5, order_by="seq")  # type: ignore[arg-type]
    await s.count(AGENT)
    await s.vector_search(AGENT, Tier.MESSAGE, VEC, k=3)
    alpha = np.float32(0.25)
    await s.hybrid_search(AGENT, Tier.MESSAGE, "q", None, alpha=alpha, k=2)  # type: ignore[arg-type]
    by_name = {name: (args, kwargs) for name, args, kwargs in s.calls}
    assert by_name["_get_many"][0] == (AGENT, ["b", "a"])
    assert by_name["_neighbors"][0] == (AGENT, ["x"], [EdgeType.NEXT.value], Direction.BOTH)
    assert by_name["_find"][0] == (AGENT, Tier.MESSAGE, Eq("seq", 1))
    assert by_name["_find"][1] == {
        "limit": 5,
        "order_by": "seq",
        "descending": False,
        "include_redacted": False,
    }
    assert by_name["_count"][0] == (AGENT, None, None)
    query = by_name["_vector_search"][0][2]
    np.testing.assert_allclose(query, [0.6, 0.8, 0.0, 0.0], rtol=1e-6)
    hybrid = by_name["_hybrid_search"][0]
    assert hybrid[3] is None and hybrid[4] is alpha  # the caller's alpha, never converted


async def test_no_ids_never_reach_a_hook() -> None:
    s = Recorder()
    assert await s.get_many(AGENT, []) == {}
    assert await s.get_vectors(AGENT, []) == {}
    assert await s.delete(AGENT, []) == 0
    assert await s.redact(AGENT, []) == 0
    assert await s.neighbors(AGENT, []) == []
    assert await s.neighbor_keys(AGENT, []) == []
    assert s.calls == []


def _bad_calls(s: Recorder) -> dict[str, tuple[type[Exception], Callable[[], Awaitable[Any]]]]:
    return {
        "agent": (ValidationError, lambda: s.get(" ", "msg_x")),
        "agent-type": (ValidationError, lambda: s.count(None)),  # type: ignore[arg-type]
        "tier": (UnknownTier, lambda: s.find(AGENT, "messages")),  # type: ignore[arg-type]
        "limit": (ValidationError, lambda: s.find(AGENT, Tier.MESSAGE, limit=0)),
        "order": (FilterError, lambda: s.find(AGENT, Tier.MESSAGE, order_by="a;b")),
        "filter": (FilterError, lambda: s.count(AGENT, filter="1=1")),  # type: ignore[arg-type]
        "k": (ValidationError, lambda: s.text_search(AGENT, Tier.MESSAGE, "q", k=0)),
        "k-bool": (ValidationError, lambda: s.text_search(AGENT, Tier.MESSAGE, "q", k=True)),
        "text": (ValidationError, lambda: s.text_search(AGENT, Tier.MESSAGE, b"q")),  # type: ignore[arg-type]
        "vector": (ValidationError, lambda: s.vector_search(AGENT, Tier.MESSAGE, np.zeros(4))),
        "vector-dim": (ValidationError, lambda: s.vector_search(AGENT, Tier.MESSAGE, np.ones(3))),
        "alpha": (ValidationError, lambda: s.hybrid_search(AGENT, Tier.MESSAGE, "q", VEC, alpha=1.5)),
        "alpha-nan": (
            ValidationError,
            lambda: s.hybrid_search(AGENT, Tier.MESSAGE, "q", VEC, alpha=math.nan),
        ),
        "alpha-type": (
            ValidationError,
            lambda: s.hybrid_search(AGENT, Tier.MESSAGE, "q", VEC, alpha="0.5"),  # type: ignore[arg-type]
        ),
        "direction": (ValueError, lambda: s.neighbors(AGENT, ["x"], direction="up")),  # type: ignore[arg-type]
        "edge-type": (ValueError, lambda: s.neighbor_keys(AGENT, ["x"], ["NOPE"])),  # type: ignore[list-item]
    }


@pytest.mark.parametrize("case", sorted(_bad_calls(Recorder())))
async def test_bad_arguments_never_reach_a_hook(case: str) -> None:
    s = Recorder()
    error, call = _bad_calls(s)[case]
    with pytest.raises(error):
        await call()
    assert s.calls == []


async def test_closed_store_refuses_every_call_before_its_hook() -> None:
    s = Recorder()
    await s.close()
    await s.close()  # idempotent
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: s.get_many(AGENT, []),
        lambda: s.delete(AGENT, ["x"]),
        lambda: s.find(AGENT, Tier.MESSAGE),
        lambda: s.count(AGENT),
        lambda: s.text_search(AGENT, Tier.MESSAGE, "q"),
        lambda: s.hybrid_search(AGENT, Tier.MESSAGE, "q", None),
        lambda: s.neighbor_keys(AGENT, ["x"]),
        lambda: s.get_blob("0" * 64),
        lambda: s.set_meta("k", "v"),
        lambda: s.agents(),
        lambda: s.compact(),
    ]
    for call in calls:
        with pytest.raises(ClosedError):
            await call()
    with pytest.raises(ClosedError):
        async with s.unit(AGENT):
            pass
    assert s.calls == []


async def test_a_unit_commits_only_when_it_holds_operations() -> None:
    s = Recorder()
    async with s.unit(AGENT):
        pass
    assert s.committed == []
    async with s.unit(AGENT) as u:
        u.delete_node("msg_x")
    assert s.committed == [u]
