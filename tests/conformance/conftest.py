"""The conformance suite runs every test against every available store backend.

A backend is a ``StoreHarness``: it opens a fresh store, and can reopen it (persistence tests).
Backends that are unavailable are skipped with a reason shown in the summary.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from uniko_memory.store import Store
from uniko_memory.store.embedded import EmbeddedStore, EmbeddedVectorOptions

DIM = 8
#: How far a stored vector's component, or a vector score, may be from the float32 figure: a
#: backend may keep vectors compact (the embedded store's default is int8, issue 20): an int8
#: component rounds by at most 1/254 of the vector's largest, which at this suite's 8 dimensions
#: is up to ~4e-3 after renormalising (at MiniLM's 384, ~1e-3 and a cosine by ~2e-3 at most).
VECTOR_ATOL = 5e-3


@dataclass
class StoreHarness:
    name: str
    _open: Callable[[], Awaitable[Store]]
    persistent: bool = True
    opened: list[Store] = field(default_factory=list)

    async def open(self) -> Store:
        store = await self._open()
        self.opened.append(store)
        return store

    async def reopen(self, store: Store) -> Store:
        await store.close()
        return await self.open()

    async def close_all(self) -> None:
        for s in self.opened:
            await s.close()


def _sqlite(tmp_path: Path) -> StoreHarness:
    path = tmp_path / "conformance.db"

    async def opener() -> Store:
        return await EmbeddedStore.open(path, dim=DIM)

    return StoreHarness("sqlite", opener)


def _sqlite_ann(tmp_path: Path) -> StoreHarness:
    """The embedded store with every tier on its ANN graph (``exact_below=0``) and the graph
    cached beside the database: the approximate path must keep the same contract."""
    path = tmp_path / "conformance-ann.db"

    async def opener() -> Store:
        return await EmbeddedStore.open(path, dim=DIM, vectors=EmbeddedVectorOptions(exact_below=0))

    return StoreHarness("sqlite_ann", opener)


def _weaviate_double(tmp_path: Path) -> StoreHarness:
    from tests.weaviate_double.harness import double_harness

    return double_harness(tmp_path)


def _weaviate(tmp_path: Path) -> StoreHarness:
    from tests.weaviate_double.harness import real_harness

    return real_harness(tmp_path)  # skips with a reason unless WEAVIATE_URL is set


BACKENDS: dict[str, Callable[[Path], StoreHarness]] = {
    "sqlite": _sqlite,
    "sqlite_ann": _sqlite_ann,
    "weaviate_double": _weaviate_double,
    "weaviate": _weaviate,
}


def pytest_report_header(config: pytest.Config) -> list[str]:
    from tests.weaviate_double.harness import layers

    return ["store backends: sqlite, sqlite_ann, " + "; ".join(layers())]


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path, items: list[pytest.Item]) -> str:
    from tests.weaviate_double.harness import layers

    return "Weaviate layers: " + "; ".join(layers())


@pytest.fixture(params=sorted(BACKENDS))
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreHarness]:
    h = BACKENDS[request.param](tmp_path)
    yield h
    await h.close_all()


@pytest.fixture
async def store(harness: StoreHarness) -> Store:
    return await harness.open()
