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
from uniko_memory.store.embedded import EmbeddedStore

DIM = 8


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


def _weaviate_double(tmp_path: Path) -> StoreHarness:
    from tests.weaviate_double.harness import double_harness

    return double_harness(tmp_path)


def _weaviate(tmp_path: Path) -> StoreHarness:
    from tests.weaviate_double.harness import real_harness

    return real_harness(tmp_path)  # skips with a reason unless WEAVIATE_URL is set


BACKENDS: dict[str, Callable[[Path], StoreHarness]] = {
    "sqlite": _sqlite,
    "weaviate_double": _weaviate_double,
    "weaviate": _weaviate,
}


def pytest_report_header(config: pytest.Config) -> list[str]:
    from tests.weaviate_double.harness import layers

    return ["store backends: sqlite, " + "; ".join(layers())]


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
