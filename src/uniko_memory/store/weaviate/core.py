"""The Weaviate store's plumbing: client calls with retries, tenants, lookups by id, batched writes.

The search, read and write rooms (``search``, ``reads``, ``writes``) build on ``WeaviateCore``;
``WeaviateStore`` joins them and owns opening and the schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ...errors import StoreError, UnikoError, ValidationError
from ...model import Node, Tier, node_class
from ..base import BaseStore
from ..filters import Filter
from . import schema as sc
from .client import TRANSIENT_MARKERS, Caller, require_weaviate
from .filter_map import FilterTranslator, Side, all_of
from .unit import EdgeKey, StoredNode, WeaviateUnit

#: Weaviate's default QUERY_MAXIMUM_RESULTS: limit + offset of one query.
MAX_RESULTS = 10_000
_ID_CHUNK = 1_000
_PAGE = 5_000
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NO_TENANT = re.compile(r"tenant\b.*\b(not found|does not exist|not exist)", re.IGNORECASE | re.DOTALL)
_PREFIX = re.compile(r"^[A-Z][A-Za-z0-9]{0,40}$")
#: Tiers whose presence marks a unit as begun (ingest's replay check reads its messages): written
#: before a unit's other nodes, read after them.
REPLAY_MARKERS = frozenset({Tier.MESSAGE})
#: Tiers whose new state marks a unit as finished (ingest waits for the session to count a replayed
#: turn): written after a unit's other nodes and edges, before its deletes.
COMPLETION_MARKERS = frozenset({Tier.SESSION})


def tenant_name(agent: str) -> str:
    """The agent's tenant: the agent itself when Weaviate accepts it, else ``h--<sha256>``."""
    if _TENANT.match(agent) and not agent.startswith("h--"):
        return agent
    return "h--" + hashlib.sha256(agent.encode("utf-8", "surrogatepass")).hexdigest()[:40]


class WeaviateCore(BaseStore[WeaviateUnit]):
    """The client, its collections and the calls every room of the Weaviate store makes."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "Uniko",
        dim: int | None = None,
        vector_index: str = "hnsw",
        owns_client: bool = False,
        retries: int = 4,
        batch_size: int = 100,
    ) -> None:
        weaviate = require_weaviate()
        if not _PREFIX.match(prefix):
            raise ValidationError(f"collection prefix {prefix!r}: use a capitalised alphanumeric name")
        if vector_index not in ("hnsw", "flat", "dynamic"):
            raise ValidationError("vector_index must be 'hnsw', 'flat' or 'dynamic'")
        super().__init__(dim)
        self.client = client
        self.prefix = prefix
        self.vector_index = vector_index
        self._is_async = isinstance(client, weaviate.WeaviateAsyncClient)
        self._call = Caller(self._is_async, attempts=retries)
        self._owns = owns_client
        self._batch = max(1, batch_size)
        #: Client calls in flight; close waits for them (closing the client cancels them mid-call).
        self._calls = 0
        self._no_calls = asyncio.Event()
        self._no_calls.set()
        self._known_agents: set[str] = set()
        self._commit_lock: asyncio.Lock | None = None
        self._translators = {t: FilterTranslator(t) for t in Tier}
        #: Id prefix ("msg" of "msg_…") -> the one tier seen with it; a lookup asks that tier first.
        self._hints: dict[str, Tier | None] = {}
        self.collections = {t: sc.tier_collection(prefix, t) for t in Tier}
        self.edges = sc.edge_collection(prefix)
        self.meta = sc.meta_collection(prefix)
        self.blobs = sc.blob_collection(prefix)
        #: This instance's name in the agents' shared generation records, and its last counters.
        self._writer_id = uuid.uuid4().hex
        self._shared_gen: dict[str, int] = {}
        #: Test hook: called with the step name before each write step of a commit.
        self.before_write_step: Callable[[str], None] | None = None

    # ------------------------------------------------------------------ close and compact
    async def _close(self) -> None:
        self._closed = True  # no call starts after this
        await self._no_calls.wait()
        if self._owns:
            with contextlib.suppress(Exception):
                await self._call.once(self.client.close)

    async def _compact(self, *, full: bool) -> None:
        """See ``Store.compact``. Nothing to do from the client: a deleted object leaves Weaviate's
        indexes when it is deleted, and its segment files are compacted by the server."""

    # ------------------------------------------------------------------ plumbing
    async def _run(self, fn: Callable[[], Any]) -> Any:
        """One client call with retries; weaviate errors become ``StoreError``."""
        self._check_open()
        self._calls += 1
        self._no_calls.clear()
        try:
            return await self._call(fn)
        except UnikoError:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith(("weaviate", "grpc", "httpx")):
                raise StoreError(f"weaviate: {exc}") from exc
            raise
        finally:
            self._calls -= 1
            if not self._calls:
                self._no_calls.set()

    async def _read(self, fn: Callable[[], Any]) -> Any:
        """A tenant-scoped read; None when the tenant doesn't exist yet (the agent never wrote there)."""
        try:
            return await self._run(fn)
        except StoreError as exc:
            if _NO_TENANT.search(str(exc)):
                return None
            raise

    def _col(self, name: str, tenant: str | None = None) -> Any:
        cols = self.client.collections
        col = cols.use(name) if hasattr(cols, "use") else cols.get(name)
        return col.with_tenant(tenant) if tenant is not None else col

    @staticmethod
    def _wf() -> Any:
        from weaviate.classes.query import Filter as WFilter

        return WFilter

    def _where(self, tier: Tier, flt: Filter | None, include_redacted: bool = False) -> Side:
        side = self._translators[tier].translate(flt)
        if include_redacted:
            return side
        return all_of([side, self._wf().by_property("redacted").equal(False)])

    @staticmethod
    def _filters(side: Side) -> Any:
        return None if side is True else side

    async def _fetch_all(self, name: str, tenant: str | None, where: Side, props: list[str]) -> list[Any]:
        """Every object matching ``where``, in pages sorted by ``pkey`` (keyset: ``pkey >= last``)."""
        from weaviate.classes.query import Sort

        if where is False:
            return []
        col = self._col(name, tenant)
        out: list[Any] = []
        seen: set[str] = set()
        last: float | None = None
        while True:
            page_where = (
                where
                if last is None
                else all_of([where, self._wf().by_property("pkey").greater_or_equal(last)])
            )
            res = await self._read(
                functools.partial(
                    col.query.fetch_objects,
                    filters=self._filters(page_where),
                    limit=_PAGE,
                    sort=Sort.by_property("pkey", ascending=True),
                    return_properties=[*props, "pkey"],
                )
            )
            objs = [] if res is None else list(res.objects)
            fresh = [o for o in objs if str(o.uuid) not in seen]
            out.extend(fresh)
            seen.update(str(o.uuid) for o in fresh)
            if len(objs) < _PAGE or not fresh:
                return out
            last = float(objs[-1].properties["pkey"])

    @staticmethod
    def _vector_of(obj: Any) -> np.ndarray | None:
        vec = (obj.vector or {}).get(sc.VECTOR_NAME)
        return None if vec is None else np.asarray(vec, dtype=np.float32)

    def _learn(self, node_id: str, tier: Tier) -> None:
        prefix = node_id.partition("_")[0]
        if self._hints.get(prefix, tier) != tier:
            self._hints[prefix] = None  # ambiguous: always ask every tier
        elif prefix not in self._hints:
            self._hints[prefix] = tier

    async def _lookup(self, tenant: str, node_ids: Iterable[str], *, vectors: bool) -> dict[str, StoredNode]:
        """The stored nodes among ``node_ids``: hinted tiers first, then every tier for the rest, the
        replay markers last (see below).

        A node id lives in exactly one tier collection (a commit that moves a node deletes the old
        copy), so a hit in the hinted tier is final.
        """
        ids = list(dict.fromkeys(node_ids))
        found: dict[str, StoredNode] = {}
        if not ids:
            return found
        by_uuid = {sc.node_uuid(i): i for i in ids}

        async def one(tier: Tier, part: list[str]) -> list[tuple[Tier, Any]]:
            col = self._col(self.collections[tier], tenant)
            res = await self._read(
                lambda: col.query.fetch_objects(
                    filters=self._wf().by_id().contains_any([sc.node_uuid(i) for i in part]),
                    limit=len(part),
                    return_properties=["data", "redacted"],
                    include_vector=[sc.VECTOR_NAME] if vectors else False,
                )
            )
            return [] if res is None else [(tier, o) for o in res.objects]

        async def round_(jobs: list[tuple[Tier, list[str]]]) -> None:
            chunked = [(t, p[i : i + _ID_CHUNK]) for t, p in jobs for i in range(0, len(p), _ID_CHUNK)]
            for rows in await asyncio.gather(*(one(t, p) for t, p in chunked)):
                for tier, obj in rows:
                    nid = by_uuid.get(str(obj.uuid))
                    if nid is None or nid in found:
                        continue
                    self._learn(nid, tier)
                    found[nid] = StoredNode(
                        tier,
                        obj.properties["data"],
                        bool(obj.properties.get("redacted")),
                        self._vector_of(obj) if vectors else None,
                    )

        # Replay markers (messages) are read after every other tier, and commits write them first:
        # a reader that sees any other node of a unit then sees its markers too, so a concurrent
        # identical unit in another process reads as a replay (tests/reliability/test_scaleout.py).
        others = [t for t in Tier if t not in REPLAY_MARKERS]
        hints = {i: self._hints.get(i.partition("_")[0]) for i in ids}
        marked = {i for i, t in hints.items() if t in REPLAY_MARKERS}
        hinted: dict[Tier, list[str]] = {}
        for i, tier in hints.items():
            if tier is not None and tier not in REPLAY_MARKERS:
                hinted.setdefault(tier, []).append(i)
        if hinted:
            await round_(list(hinted.items()))
        rest = [i for i in ids if i not in found and i not in marked]
        if rest:
            await round_([(t, rest) for t in others])
        rest = [i for i in ids if i not in found]
        if rest:
            await round_([(t, rest) for t in REPLAY_MARKERS])
        rest = [i for i in ids if i not in found and i in marked]  # a message id seen in no marker tier
        if rest:
            await round_([(t, rest) for t in others])
        return found

    @staticmethod
    def _decode(stored: StoredNode) -> Node:
        if stored.node is None:
            stored.node = node_class(stored.tier).model_validate_json(stored.data)
        return stored.node

    @staticmethod
    def _edge_of(obj: Any) -> tuple[EdgeKey, str]:
        d = json.loads(obj.properties["data"])
        return (d["type"], d["src"], d["dst"]), d["props"]

    # ------------------------------------------------------------------ batched writes
    async def _insert(self, name: str, tenant: str | None, objects: list[Any]) -> None:
        """Batched upserts; per-object errors collected, transient ones retried, the rest raised."""
        from weaviate.exceptions import WeaviateInsertManyAllFailedError

        col = self._col(name, tenant)
        chunks: list[list[Any]] = []
        size = 0
        for obj in objects:
            obj_size = sum(len(v) for v in obj.properties.values() if isinstance(v, str))
            if not chunks or len(chunks[-1]) >= self._batch or size + obj_size > 8_000_000:
                chunks.append([])
                size = 0
            chunks[-1].append(obj)
            size += obj_size
        for chunk in chunks:
            pending = chunk
            for attempt in range(self._call.attempts):
                try:
                    res = await self._run(functools.partial(col.data.insert_many, pending))
                    errors = {i: e.message for i, e in res.errors.items()}
                except StoreError as exc:
                    if not isinstance(exc.__cause__, WeaviateInsertManyAllFailedError):
                        raise
                    errors = dict.fromkeys(range(len(pending)), str(exc.__cause__))
                if not errors:
                    break
                transient = all(any(m in msg.lower() for m in TRANSIENT_MARKERS) for msg in errors.values())
                if not transient or attempt == self._call.attempts - 1:
                    sample = "; ".join(f"{pending[i].uuid}: {msg}" for i, msg in sorted(errors.items())[:5])
                    raise StoreError(f"weaviate batch into {name}: {len(errors)} object(s) failed: {sample}")
                pending = [pending[i] for i in sorted(errors)]
                await asyncio.sleep(0.05 * 2**attempt)

    async def _delete_uuids(self, name: str, tenant: str | None, uuids: list[str]) -> int:
        col = self._col(name, tenant)
        deleted = 0
        for i in range(0, len(uuids), _ID_CHUNK):
            part = uuids[i : i + _ID_CHUNK]
            res = await self._read(
                functools.partial(col.data.delete_many, where=self._wf().by_id().contains_any(part))
            )
            if res is None:
                continue
            if res.failed:
                raise StoreError(f"weaviate delete in {name}: {res.failed} object(s) failed")
            deleted += res.successful
        return deleted

    # ------------------------------------------------------------------ meta
    async def _meta_get(self, kind: str, key: str) -> str | None:
        col = self._col(self.meta)
        res = await self._run(
            lambda: col.query.fetch_objects(
                filters=self._wf().by_id().equal(sc.meta_uuid(f"{kind}\0{key}")),
                limit=1,
                return_properties=["value"],
            )
        )
        return str(res.objects[0].properties["value"]) if res.objects else None

    async def _meta_put(self, kind: str, key: str, value: str) -> None:
        from weaviate.classes.data import DataObject

        uid = sc.meta_uuid(f"{kind}\0{key}")
        obj = DataObject(
            properties={"key": sc.field_text(key), "kind": kind, "value": value, "pkey": sc.pkey(uid)},
            uuid=uid,
        )
        await self._insert(self.meta, None, [obj])
