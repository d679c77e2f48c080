"""Backends for the isolation tests: a fresh, empty memory on the embedded store or on the in-process
Weaviate double (driven by the real weaviate-client), with the fake bag-of-words embedder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory.config import UnikoConfig
from uniko_memory.facade import Uniko

#: Consolidation and the cortex sweep run only when a test asks (``consolidate`` / ``sweep``).
CONFIG: dict[str, Any] = {
    "pipeline": {
        "consolidation_threshold": 1000,
        "cortex_cycle_every_n_consolidations": 1,
        "cortex_min_interval_secs": 0,
    }
}

Closer = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Backend:
    name: str
    #: Hypothesis examples and steps per example for the state machine (the double is slower).
    examples: int
    steps: int

    async def open(self) -> tuple[Uniko, Closer]:
        """A fresh memory on the running loop, and how to close it (and drop what it stored)."""
        if self.name == "embedded":
            uni = await Uniko.in_memory(UnikoConfig.build(CONFIG), embedder=FakeEmbedder())
            return uni, uni.close
        from tests.weaviate_double import shared_double
        from tests.weaviate_double.harness import fresh_prefix

        prefix = fresh_prefix()
        double = shared_double()
        client = double.async_client()
        cfg = UnikoConfig.build({**CONFIG, "store": {"collection_prefix": prefix}})
        uni = await Uniko.open("unused.db", cfg, weaviate=client, embedder=FakeEmbedder())

        async def close() -> None:
            await uni.close()
            await client.close()
            with double.engine.lock:  # keep the shared double small
                for name in [n for n in double.engine.classes if n.startswith(prefix)]:
                    double.engine.delete_class(name)

        return uni, close


BACKENDS = {
    "embedded": Backend("embedded", examples=8, steps=12),
    "weaviate_double": Backend("weaviate_double", examples=2, steps=8),
}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    return BACKENDS[request.param]
