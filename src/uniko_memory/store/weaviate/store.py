"""``WeaviateStore``: the ``Store`` protocol on Weaviate (>= 1.27) through weaviate-client v4.

Layout (see ``schema``): one multi-tenant collection per tier, one tenant per agent (created by
the server on first write, ``auto_tenant_creation``), every request names its tenant. Edges live in
an ``{prefix}_Edges`` collection read in one query per hop. Searches use Weaviate's own ``bm25``,
``near_vector`` and ``hybrid`` (relative-score fusion), with scores mapped to the store contract.

Write guarantee (Weaviate has no transactions) — what a unit of work gives here:

- **Validation first**: every operation is checked when it is buffered, and the whole unit is
  replayed over a pre-image of what it touches before anything is written; a unit that would fail
  (bad vector, redacted node rewritten, wrong tier) writes nothing.
- **Idempotent ids**: every object has a deterministic uuid (``to_uuid``), so a retried or
  re-run unit converges on the same state; only the difference to the pre-image is written.
- **Write order**: blobs, node upserts (messages first), edge upserts, session upserts, edge
  deletes, node deletes. A crash part way leaves extra content, never dangling deletions of what the
  unit meant to keep; a session counts a turn only once the rest of its unit is written.
- **Compensation**: if a write fails after retries (transient errors only), the objects the unit
  already wrote are restored to their pre-images and ``StoreError`` is raised; if the compensation
  fails too, the error says the unit is partially applied (re-running it repairs it).
- **No isolation**: other readers can see a unit half-applied while it is being written, and units
  are serialised per ``WeaviateStore`` instance only (not across processes). Replay markers
  (messages) are written before a unit's other nodes and read after them, so another process
  racing the same unit sees a replay or writes the same objects; sessions, written after the
  rest, mark the unit finished, and ingest returns a replay only then (docs/deploy-weaviate.md).
- **Shared generations**: every commit rewrites the agent's generation record in ``_Meta``
  (``leases``), which ``current_generation`` reads for every process's recall cache.

The rooms: ``core`` (client calls, tenants, lookups, batched writes), ``writes`` (the unit's plan
and its steps), ``reads``, ``search``; argument checks live once in ``BaseStore``. This module
opens the store and keeps its collections' schema.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from ...config import LeaseConfig
from ...errors import SchemaMismatch, StoreError
from ...model import Tier
from . import schema as sc
from .core import tenant_name
from .leases import WeaviateLeases
from .reads import WeaviateReads
from .search import WeaviateSearch
from .usage import WeaviateUsage
from .writes import WeaviateWrites

__all__ = ["WeaviateStore", "tenant_name"]


class WeaviateStore(WeaviateUsage, WeaviateWrites, WeaviateReads, WeaviateSearch):
    """The ``Store`` protocol on Weaviate. Build with ``await WeaviateStore.open(client, ...)``."""

    @classmethod
    async def open(
        cls,
        client: Any,
        *,
        prefix: str = "Uniko",
        dim: int | None = None,
        vector_index: str = "hnsw",
        owns_client: bool = False,
        retries: int = 4,
        batch_size: int = 100,
    ) -> WeaviateStore:
        """Use ``client`` (sync or async, connected or not); create the collections if missing.

        Raises ``SchemaMismatch`` when the collections were made by another schema version or the
        stored vectors have another dimension.
        """
        store = cls(
            client,
            prefix=prefix,
            dim=dim,
            vector_index=vector_index,
            owns_client=owns_client,
            retries=retries,
            batch_size=batch_size,
        )
        try:
            if not client.is_connected():
                await store._call.once(client.connect)
            await store._ensure_schema()
        except BaseException:
            await store.close()
            raise
        return store

    def lease_store(self, config: LeaseConfig, clock: Callable[[], float] | None = None) -> WeaviateLeases:
        """The cycle leases of this deployment (records in ``{prefix}_Meta``; see ``leases``)."""
        return WeaviateLeases(self, config) if clock is None else WeaviateLeases(self, config, clock)

    async def _ensure_schema(self) -> None:
        specs: list[tuple[str, Callable[[], Any]]] = []
        for tier, name in self.collections.items():
            specs.append((name, functools.partial(self._create_tier, name, tier)))
        specs.append((self.edges, lambda: self._create_plain(self.edges, sc.edge_properties(), True)))
        specs.append((self.meta, lambda: self._create_plain(self.meta, sc.meta_properties(), False)))
        specs.append((self.blobs, lambda: self._create_plain(self.blobs, sc.blob_properties(), False)))
        # The meta collection is created last: when it exists, so does everything else.
        if not await self._run(lambda: self.client.collections.exists(self.meta)):
            await asyncio.gather(*(self._create(name, make) for name, make in specs if name != self.meta))
            await self._create(self.meta, dict(specs)[self.meta])
        version = await self._meta_get("internal", "schema_version")
        if version is None:
            await self._meta_put("internal", "schema_version", sc.SCHEMA_VERSION)
            await self._meta_put("internal", "fingerprint", sc.fingerprint())
        elif version != sc.SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the Weaviate collections {self.prefix}* hold uniko schema version {version}; this "
                f"uniko-memory expects {sc.SCHEMA_VERSION}. Open with another collection prefix, or migrate."
            )
        if await self._meta_get("internal", "fingerprint") != sc.fingerprint():
            await self._add_new_properties()
            await self._meta_put("internal", "fingerprint", sc.fingerprint())
        stored = await self._meta_get("internal", "dim")
        if stored is not None:
            if self._dim is not None and int(stored) != self._dim:
                raise SchemaMismatch(
                    f"the store holds {stored}-dimensional vectors, asked to open with {self._dim}"
                )
            self._dim = int(stored)
        elif self._dim is not None:
            await self._meta_put("internal", "dim", str(self._dim))

    async def _add_new_properties(self) -> None:
        """A node model gained attributes since these collections were made: add their properties
        (old objects read them as NULL, as the embedded store's ``json_extract`` does). A property
        whose type changed can't be migrated in place: ``SchemaMismatch``."""
        wanted: dict[str, list[Any]] = {self.collections[t]: sc.tier_properties(t) for t in Tier}
        wanted[self.edges] = sc.edge_properties()
        wanted[self.meta] = sc.meta_properties()
        for name, props in wanted.items():
            col = self._col(name)
            config = await self._run(col.config.get)
            have = {p.name: p.data_type for p in config.properties}
            for prop in props:
                if prop.name not in have:
                    await self._run(functools.partial(col.config.add_property, prop))
                elif have[prop.name] != prop.dataType:
                    raise SchemaMismatch(
                        f"{name}.{prop.name} is stored as {have[prop.name].value}, the model now needs "
                        f"{prop.dataType.value}; migrate into a new collection prefix"
                    )

    async def _create(self, name: str, make: Callable[[], Any]) -> None:
        try:
            await self._run(make)
        except StoreError as exc:
            if "already exists" not in str(exc).lower():  # created concurrently by another process
                raise

    def _create_tier(self, name: str, tier: Tier) -> Any:
        return self.client.collections.create(
            name,
            description=f"uniko-memory {tier.value} nodes (schema {sc.SCHEMA_VERSION})",
            properties=sc.tier_properties(tier),
            vector_config=sc.vector_config(self.vector_index),
            multi_tenancy_config=sc.multi_tenancy(),
            inverted_index_config=sc.inverted_index(),
        )

    def _create_plain(self, name: str, props: list[Any], multi_tenant: bool) -> Any:
        from weaviate.classes.config import Configure

        kwargs: dict[str, Any] = {"properties": props, "inverted_index_config": sc.inverted_index()}
        if multi_tenant:
            kwargs["multi_tenancy_config"] = sc.multi_tenancy()
        vectors = getattr(Configure, "Vectors", None)
        if vectors is not None and hasattr(vectors, "self_provided"):
            kwargs["vector_config"] = vectors.self_provided()
        return self.client.collections.create(
            name, description=f"uniko-memory (schema {sc.SCHEMA_VERSION})", **kwargs
        )
