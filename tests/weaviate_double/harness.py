"""Conformance-suite backends for the Weaviate store: the in-process double (always) and a real
server (only when ``WEAVIATE_URL`` is set). Each harness gets a fresh collection prefix, so tests
never see each other's data; reopening a store keeps the prefix (the persistence tests)."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from uniko_memory.store import Store
from uniko_memory.store.weaviate import WeaviateStore, connect_url

from . import VERSION, shared_double

DIM = 8
REAL_URL_ENV = "WEAVIATE_URL"


def fresh_prefix() -> str:
    return "T" + uuid.uuid4().hex[:12].upper()


def layers() -> list[str]:
    """What the Weaviate tests run against, for the report header."""
    out = [
        f"weaviate_double (in-process REST+gRPC double, reports {VERSION}, driven by the real weaviate-client)"
    ]
    url = os.environ.get(REAL_URL_ENV)
    out.append(
        f"weaviate (real server at {url})" if url else f"weaviate (real server): SKIPPED, set {REAL_URL_ENV}"
    )
    return out


def double_harness(tmp_path: Path) -> Any:
    from tests.conformance.conftest import StoreHarness

    prefix = fresh_prefix()
    double = shared_double()

    async def opener() -> Store:
        return await WeaviateStore.open(double.async_client(), prefix=prefix, dim=DIM, owns_client=True)

    class DoubleHarness(StoreHarness):
        async def close_all(self) -> None:
            await super().close_all()
            with double.engine.lock:  # keep the shared double small: drop this test's collections
                for name in [n for n in double.engine.classes if n.startswith(prefix)]:
                    double.engine.delete_class(name)

    return DoubleHarness("weaviate_double", opener, persistent=True)


def real_harness(tmp_path: Path) -> Any:
    from tests.conformance.conftest import StoreHarness

    url = os.environ.get(REAL_URL_ENV)
    if not url:
        pytest.skip(f"no real Weaviate: set {REAL_URL_ENV} (and WEAVIATE_GRPC_URL / WEAVIATE_API_KEY) to run")
    prefix = fresh_prefix()

    async def opener() -> Store:
        client = await connect_url(
            url,
            grpc_url=os.environ.get("WEAVIATE_GRPC_URL"),
            api_key=os.environ.get("WEAVIATE_API_KEY"),
            skip_init_checks=True,
        )
        return await WeaviateStore.open(client, prefix=prefix, dim=DIM, owns_client=True)

    class RealHarness(StoreHarness):
        async def close_all(self) -> None:
            await super().close_all()
            with contextlib.suppress(Exception):  # drop this test's collections
                client = await connect_url(
                    url,
                    grpc_url=os.environ.get("WEAVIATE_GRPC_URL"),
                    api_key=os.environ.get("WEAVIATE_API_KEY"),
                    skip_init_checks=True,
                )
                try:
                    for name in await client.collections.list_all(simple=True):
                        if name.startswith(prefix):
                            await client.collections.delete(name)
                finally:
                    await client.close()

    return RealHarness("weaviate", opener, persistent=True)
