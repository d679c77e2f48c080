"""One engine per store backend (the embedded store and the Weaviate double) for the wake-up and
feedback tests: every rule is checked on both."""

from __future__ import annotations

from typing import Any

from tests.unit.ingest._support import FakeEmbedder, open_uni
from tests.unit.recall._corpus import NO_AUTO_CONSOLIDATION
from uniko_memory import Uniko, UnikoConfig

BACKENDS = ("embedded", "weaviate")


async def open_backend(name: str, config: dict[str, Any] | None = None) -> Uniko:
    data = {**NO_AUTO_CONSOLIDATION, **(config or {})}
    if name == "embedded":
        return await open_uni(data)
    from tests.weaviate_double import shared_double
    from tests.weaviate_double.harness import fresh_prefix

    data["store"] = {"collection_prefix": fresh_prefix()}
    return await Uniko.open(
        "ignored.db",
        UnikoConfig.build(data),
        weaviate=shared_double().async_client(),
        embedder=FakeEmbedder(),
    )
