"""Fixtures for the Weaviate adapter's own tests: the shared in-process double, a fresh store per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.weaviate_double import WeaviateDouble, shared_double
from tests.weaviate_double.harness import fresh_prefix, layers
from uniko_memory.store.weaviate import WeaviateStore

DIM = 8


def pytest_report_collectionfinish(
    config: pytest.Config, start_path: object, items: list[pytest.Item]
) -> str:
    return "Weaviate adapter tests run against: " + "; ".join(layers()[:1])


@pytest.fixture
def double() -> WeaviateDouble:
    d = shared_double()
    d.engine.faults.clear()
    return d


@pytest.fixture
async def store(double: WeaviateDouble) -> AsyncIterator[WeaviateStore]:
    prefix = fresh_prefix()
    s = await WeaviateStore.open(double.async_client(), prefix=prefix, dim=DIM, owns_client=True)
    yield s
    await s.close()
    with double.engine.lock:
        double.engine.record = False
        double.engine.requests.clear()
        double.engine.faults.clear()
        for name in [n for n in double.engine.classes if n.startswith(prefix)]:
            double.engine.delete_class(name)
