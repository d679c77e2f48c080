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
- **Write order**: blobs, node upserts, edge upserts, edge deletes, node deletes. A crash part way
  leaves extra content, never dangling deletions of what the unit meant to keep.
- **Compensation**: if a write fails after retries (transient errors only), the objects the unit
  already wrote are restored to their pre-images and ``StoreError`` is raised; if the compensation
  fails too, the error says the unit is partially applied (re-running it repairs it).
- **No isolation**: other readers can see a unit half-applied while it is being written, and units
  are serialised per ``WeaviateStore`` instance only (not across processes).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ...errors import ClosedError, FilterError, SchemaMismatch, StoreError, UnikoError, ValidationError
from ...model import Direction, Edge, EdgeType, Node, Tier, node_class
from ...model.time import to_epoch, to_utc
from ..embedded.fts_query import MAX_QUERY_TOKENS, STOPWORDS, clean_text
from ..embedded.unit import DeleteNode, Op, PutNode, serialize_node
from ..embedded.vectors import as_unit_vector
from ..filters import Eq, Filter, validate
from ..fusion import relative_score
from ..protocol import Hit, hybrid_candidates
from ..validation import check_agent, check_k, check_tier
from . import schema as sc
from .client import TRANSIENT_MARKERS, Caller, require_weaviate
from .filter_map import FilterTranslator, Side, all_of, any_of
from .unit import (
    EdgeKey,
    Plan,
    StoredNode,
    WeaviateUnit,
    deleted_ids,
    edge_keys_touched,
    node_ids_touched,
    replay,
)

#: Weaviate's default QUERY_MAXIMUM_RESULTS: limit + offset of one query.
MAX_RESULTS = 10_000
_ID_CHUNK = 1_000
_PAGE = 5_000
_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_NO_TENANT = re.compile(r"tenant\b.*\b(not found|does not exist|not exist)", re.IGNORECASE | re.DOTALL)
_WORD = re.compile(r"[^\W_]+")
_PREFIX = re.compile(r"^[A-Z][A-Za-z0-9]{0,40}$")


def tenant_name(agent: str) -> str:
    """The agent's tenant: the agent itself when Weaviate accepts it, else ``h--<sha256>``."""
    if _TENANT.match(agent) and not agent.startswith("h--"):
        return agent
    return "h--" + hashlib.sha256(agent.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def query_tokens(text: str) -> list[str]:
    """Weaviate WORD tokens of the query (letters/digits, lower-cased), stopwords dropped, OR-ed."""
    words = [w.lower() for w in _WORD.findall(clean_text(text))]
    content = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(content or words))[:MAX_QUERY_TOKENS]


def _pad(k: int) -> int:
    """Ask for a few more than k so ties at the cut are broken by id, as the contract says."""
    return min(MAX_RESULTS, k + min(k, 16))


def _ranked(hits: Iterable[Hit], k: int) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, h.id))[:k]


class WeaviateStore:
    """The ``Store`` protocol on Weaviate. Build with ``await WeaviateStore.open(client, ...)``."""

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
        self.client = client
        self.prefix = prefix
        self.vector_index = vector_index
        self._is_async = isinstance(client, weaviate.WeaviateAsyncClient)
        self._call = Caller(self._is_async, attempts=retries)
        self._owns = owns_client
        self._dim = dim
        self._batch = max(1, batch_size)
        self._closed = False
        #: Client calls in flight; close waits for them (closing the client cancels them mid-call).
        self._calls = 0
        self._no_calls = asyncio.Event()
        self._no_calls.set()
        self._generations: dict[str, int] = {}
        self._known_agents: set[str] = set()
        self._unit_lock: asyncio.Lock | None = None
        self._commit_lock: asyncio.Lock | None = None
        self._translators = {t: FilterTranslator(t) for t in Tier}
        #: Id prefix ("msg" of "msg_…") -> the one tier seen with it; a lookup asks that tier first.
        self._hints: dict[str, Tier | None] = {}
        self.collections = {t: sc.tier_collection(prefix, t) for t in Tier}
        self.edges = sc.edge_collection(prefix)
        self.meta = sc.meta_collection(prefix)
        self.blobs = sc.blob_collection(prefix)
        #: Test hook: called with the step name before each write step of a commit.
        self.before_write_step: Callable[[str], None] | None = None

    # ------------------------------------------------------------------ lifecycle
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

    @property
    def dim(self) -> int | None:
        return self._dim

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True  # no call starts after this
        await self._no_calls.wait()
        if self._owns:
            with contextlib.suppress(Exception):
                await self._call.once(self.client.close)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the store is closed")

    def generation(self, agent: str) -> int:
        return self._generations.get(agent, 0)

    async def compact(self, *, full: bool = False) -> None:
        """See ``Store.compact``. Nothing to do from the client: a deleted object leaves Weaviate's
        indexes when it is deleted, and its segment files are compacted by the server."""
        self._check_open()

    def _bump(self, agent: str) -> None:
        self._generations[agent] = self._generations.get(agent, 0) + 1

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
        """The stored nodes among ``node_ids``: the hinted tier first, then every tier for the rest.

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

        hinted: dict[Tier, list[str]] = {}
        for i in ids:
            tier = self._hints.get(i.partition("_")[0])
            if tier is not None:
                hinted.setdefault(tier, []).append(i)
        if hinted:
            await round_(list(hinted.items()))
        rest = [i for i in ids if i not in found]
        if rest:
            await round_([(t, rest) for t in Tier])
        return found

    @staticmethod
    def _decode(stored: StoredNode) -> Node:
        if stored.node is None:
            stored.node = node_class(stored.tier).model_validate_json(stored.data)
        return stored.node

    # ------------------------------------------------------------------ object payloads
    @staticmethod
    def _node_props(node: Node, data: str) -> dict[str, Any]:
        props: dict[str, Any] = {
            "node_id": sc.field_text(node.id),
            "visibility": sc.field_text(node.visibility),
            "redacted": node.redacted,
            "search_text": "" if node.redacted else clean_text(node.search_text() or ""),
            "data": data,
            "pkey": sc.pkey(sc.node_uuid(node.id)),
        }
        session, participant, ts = node.session_key(), node.participant_key(), node.time_key()
        if session is not None:
            props["session"] = sc.field_text(str(session))
        if participant is not None:
            props["participant"] = sc.field_text(str(participant))
        if ts is not None:
            props["time"] = to_epoch(ts)
        for spec in sc.tier_attrs(node.tier).values():
            if spec.kind == "opaque" or not spec.prop.startswith(sc.ATTR_PREFIX):
                continue
            value = getattr(node, spec.name)
            if value is None:
                continue
            if spec.kind == "text":
                props[spec.prop] = sc.field_text(str(value.value if hasattr(value, "value") else value))
            elif spec.kind == "number":
                props[spec.prop] = float(value)
            elif spec.kind == "bool":
                props[spec.prop] = bool(value)
            else:
                props[spec.prop] = to_utc(value)
        return props

    def _node_object(self, stored: StoredNode) -> Any:
        from weaviate.classes.data import DataObject

        node = self._decode(stored)
        vector = None if stored.vector is None else {sc.VECTOR_NAME: stored.vector.astype(float).tolist()}
        return DataObject(
            properties=self._node_props(node, stored.data), uuid=sc.node_uuid(node.id), vector=vector
        )

    @staticmethod
    def _edge_object(key: EdgeKey, props: str) -> Any:
        from weaviate.classes.data import DataObject

        etype, src, dst = key
        uid = sc.edge_uuid(etype, src, dst)
        data = json.dumps({"type": etype, "src": src, "dst": dst, "props": props}, ensure_ascii=False)
        return DataObject(
            properties={
                "src": sc.field_text(src),
                "type": etype,
                "dst": sc.field_text(dst),
                "data": data,
                "pkey": sc.pkey(uid),
            },
            uuid=uid,
        )

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

    # ------------------------------------------------------------------ commit
    @contextlib.asynccontextmanager
    async def unit(self, agent: str) -> AsyncIterator[WeaviateUnit]:
        check_agent(agent)
        self._check_open()
        if self._unit_lock is None:
            self._unit_lock = asyncio.Lock()
        async with self._unit_lock:
            u = WeaviateUnit(self, agent)
            yield u
            if u.ops:
                # Shielded: a cancellation after the block can't leave the unit half-written.
                await asyncio.shield(self._commit(agent, u.ops, u.dim))
                self._bump(agent)

    async def _commit(self, agent: str, ops: list[Op], dim: int | None = None) -> Plan:
        if self._commit_lock is None:
            self._commit_lock = asyncio.Lock()
        async with self._commit_lock:
            self._check_open()
            tenant = tenant_name(agent)
            dels = deleted_ids(ops)
            pre_nodes, pre_edges, pre_blobs = await asyncio.gather(
                self._lookup(tenant, node_ids_touched(ops), vectors=True),
                self._edges_for(tenant, edge_keys_touched(ops), dels),
                self._existing_blobs({op.sha256 for op in ops if hasattr(op, "sha256")}),
            )
            plan = replay(ops, pre_nodes, pre_edges, pre_blobs)
            for nid, (_, fin) in plan.nodes.items():
                if fin is not None:
                    self._learn(nid, fin.tier)
            if plan.empty:
                return plan
            await self._execute(agent, tenant, plan)
            if dim is not None and self._dim is None:  # the first vectors fix the dimension
                await self._meta_put("internal", "dim", str(dim))
                self._dim = dim
            return plan

    def _steps(self, tenant: str, plan: Plan) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
        """(name, do, undo) per write step, in the documented order."""
        node_puts = {nid: (pre, fin) for nid, (pre, fin) in plan.nodes.items() if fin is not None}
        node_dels = {
            nid: pre
            for nid, (pre, fin) in plan.nodes.items()
            if pre is not None and (fin is None or fin.tier != pre.tier)
        }
        edge_puts = {k: (pre, fin) for k, (pre, fin) in plan.edges.items() if fin is not None}
        edge_dels = {k: pre for k, (pre, fin) in plan.edges.items() if fin is None and pre is not None}

        async def put_nodes(states: dict[str, StoredNode]) -> None:
            by_tier: dict[Tier, list[Any]] = {}
            for stored in states.values():
                by_tier.setdefault(stored.tier, []).append(self._node_object(stored))
            for tier, objs in by_tier.items():
                await self._insert(self.collections[tier], tenant, objs)

        async def del_nodes(states: dict[str, StoredNode]) -> None:
            by_tier: dict[Tier, list[str]] = {}
            for nid, stored in states.items():
                by_tier.setdefault(stored.tier, []).append(sc.node_uuid(nid))
            for tier, uuids in by_tier.items():
                await self._delete_uuids(self.collections[tier], tenant, uuids)

        async def put_edges(states: dict[EdgeKey, str]) -> None:
            await self._insert(self.edges, tenant, [self._edge_object(k, p) for k, p in states.items()])

        async def del_edges(keys: Iterable[EdgeKey]) -> None:
            await self._delete_uuids(self.edges, tenant, [sc.edge_uuid(*k) for k in keys])

        async def put_blobs() -> None:
            from weaviate.classes.data import DataObject

            objs = [
                DataObject(
                    properties={"sha256": sha, "data": base64.b64encode(data).decode("ascii")},
                    uuid=sc.blob_uuid(sha),
                )
                for sha, data in plan.blobs.items()
            ]
            await self._insert(self.blobs, None, objs)

        async def undo_node_puts() -> None:
            # Nodes new to their tier go; overwritten ones get their pre-image back.
            await del_nodes(
                {
                    n: fin
                    for n, (pre, fin) in node_puts.items()
                    if fin and (pre is None or pre.tier != fin.tier)
                }
            )
            await put_nodes({n: pre for n, (pre, _) in node_puts.items() if pre is not None})

        async def undo_edge_puts() -> None:
            await del_edges([k for k, (pre, _) in edge_puts.items() if pre is None])
            await put_edges({k: pre for k, (pre, _) in edge_puts.items() if pre is not None})

        steps: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = []
        if plan.blobs:
            steps.append(
                (
                    "blobs",
                    put_blobs,
                    lambda: self._delete_uuids(self.blobs, None, [sc.blob_uuid(s) for s in plan.blobs]),
                )
            )
        if node_puts:
            steps.append(
                ("nodes", lambda: put_nodes({n: f for n, (_, f) in node_puts.items() if f}), undo_node_puts)
            )
        if edge_puts:
            steps.append(
                ("edges", lambda: put_edges({k: f for k, (_, f) in edge_puts.items() if f}), undo_edge_puts)
            )
        if edge_dels:
            steps.append(("edge_deletes", lambda: del_edges(edge_dels), lambda: put_edges(edge_dels)))
        if node_dels:
            steps.append(("node_deletes", lambda: del_nodes(node_dels), lambda: put_nodes(node_dels)))
        return steps

    async def _execute(self, agent: str, tenant: str, plan: Plan) -> None:
        steps = self._steps(tenant, plan)
        done: list[tuple[str, Callable[[], Any]]] = []
        try:
            for name, do, undo in steps:
                done.append((name, undo))
                if self.before_write_step is not None:
                    self.before_write_step(name)
                await do()
            if agent not in self._known_agents:
                await self._meta_put("agent", tenant, agent)
                self._known_agents.add(agent)
        except BaseException as exc:
            failed_at = done[-1][0] if done else "start"
            try:
                for _name, undo in reversed(done):
                    await self._call(undo)
            except Exception as comp:
                raise StoreError(
                    f"unit for agent {agent!r} failed at step {failed_at!r} ({exc}) and was only "
                    f"partially rolled back ({comp}); re-running the unit repairs it (ids are idempotent)"
                ) from exc
            if isinstance(exc, UnikoError) and not isinstance(exc, StoreError):
                raise
            if isinstance(exc, Exception):
                raise StoreError(
                    f"unit for agent {agent!r} failed at step {failed_at!r} and was rolled back: {exc}"
                ) from exc
            raise

    async def _edges_for(self, tenant: str, keys: set[EdgeKey], dels: set[str]) -> dict[EdgeKey, str]:
        """Stored props of the given edges, plus every edge incident to a node in ``dels``."""
        W = self._wf()
        sides: list[Side] = []
        if keys:
            sides.append(W.by_id().contains_any([sc.edge_uuid(*k) for k in keys]))
        if dels:
            enc = [sc.field_text(d) for d in dels]
            sides.append(W.by_property("src").contains_any(enc))
            sides.append(W.by_property("dst").contains_any(enc))
        if not sides:
            return {}
        objs = await self._fetch_all(self.edges, tenant, any_of(sides), ["data"])
        return {key: props for key, props in (self._edge_of(o) for o in objs)}

    @staticmethod
    def _edge_of(obj: Any) -> tuple[EdgeKey, str]:
        d = json.loads(obj.properties["data"])
        return (d["type"], d["src"], d["dst"]), d["props"]

    async def _existing_blobs(self, shas: set[str]) -> set[str]:
        if not shas:
            return set()
        col = self._col(self.blobs)
        res = await self._run(
            lambda: col.query.fetch_objects(
                filters=self._wf().by_id().contains_any([sc.blob_uuid(s) for s in shas]),
                limit=len(shas),
                return_properties=["sha256"],
            )
        )
        return {o.properties["sha256"] for o in res.objects}

    async def delete(self, agent: str, node_ids: Sequence[str]) -> int:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return 0
        plan = await self._commit(agent, [DeleteNode(i) for i in ids])
        n = sum(1 for pre, fin in plan.nodes.values() if pre is not None and fin is None)
        if n:
            self._bump(agent)
        return n

    async def redact(self, agent: str, node_ids: Sequence[str]) -> int:
        check_agent(agent)
        nodes = await self.get_many(agent, list(dict.fromkeys(node_ids)))
        if not nodes:
            return 0
        ops: list[Op] = []
        for node in nodes.values():
            red = node.redacted_copy()
            ops.append(PutNode(red, serialize_node(red)))
        await self._commit(agent, ops)
        self._bump(agent)
        return len(nodes)

    # ------------------------------------------------------------------ meta and blobs
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

    async def get_meta(self, key: str) -> str | None:
        return await self._meta_get("meta", key)

    async def set_meta(self, key: str, value: str) -> None:
        await self._meta_put("meta", key, value)

    async def get_blob(self, sha256: str) -> bytes | None:
        col = self._col(self.blobs)
        res = await self._run(
            lambda: col.query.fetch_objects(
                filters=self._wf().by_id().equal(sc.blob_uuid(sha256)), limit=1, return_properties=["data"]
            )
        )
        if not res.objects:
            return None
        return base64.b64decode(res.objects[0].properties["data"])

    async def agents(self) -> list[str]:
        objs = await self._fetch_all(
            self.meta, None, self._wf().by_property("kind").equal("agent"), ["value"]
        )
        names = sorted({str(o.properties["value"]) for o in objs})

        async def has_nodes(agent: str) -> bool:
            tenant = tenant_name(agent)

            async def any_in(tier: Tier) -> bool:
                col = self._col(self.collections[tier], tenant)
                res = await self._read(lambda: col.query.fetch_objects(limit=1, return_properties=[]))
                return bool(res is not None and res.objects)

            return any(await asyncio.gather(*(any_in(t) for t in Tier)))

        present = await asyncio.gather(*(has_nodes(a) for a in names))
        return [a for a, ok in zip(names, present, strict=True) if ok]

    # ------------------------------------------------------------------ reads
    async def get(self, agent: str, node_id: str) -> Node | None:
        return (await self.get_many(agent, [node_id])).get(node_id)

    async def get_many(self, agent: str, node_ids: Sequence[str]) -> dict[str, Node]:
        check_agent(agent)
        self._check_open()
        found = await self._lookup(tenant_name(agent), node_ids, vectors=False)
        return {nid: self._decode(s) for nid, s in found.items()}

    async def get_vectors(self, agent: str, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        check_agent(agent)
        self._check_open()
        found = await self._lookup(tenant_name(agent), node_ids, vectors=True)
        return {nid: s.vector for nid, s in found.items() if s.vector is not None and not s.redacted}

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
        from weaviate.classes.query import Sort

        check_agent(agent)
        t = check_tier(tier)
        check_k(limit, name="limit", maximum=1_000_000)
        where = self._where(t, validate(filter), include_redacted)
        key = self._order_prop(t, order_by)
        self._check_open()
        if where is False:
            return []
        asc = not descending
        name, tenant = self.collections[t], tenant_name(agent)
        if limit <= MAX_RESULTS:
            sort = Sort.by_property(key, ascending=asc)
            if key != "node_id":
                sort = sort.by_property("node_id", ascending=asc)
            col = self._col(name, tenant)
            res = await self._read(
                lambda: col.query.fetch_objects(
                    filters=self._filters(where), limit=limit, sort=sort, return_properties=["data"]
                )
            )
            objs = [] if res is None else res.objects
            return [node_class(t).model_validate_json(o.properties["data"]) for o in objs]
        # Past Weaviate's per-query maximum: page through every match by id, order here.
        props = ["data"] if key == "node_id" else ["data", key]
        objs = await self._fetch_all(name, tenant, where, props)
        nodes = [
            (o.properties.get(key), node_class(t).model_validate_json(o.properties["data"])) for o in objs
        ]

        def sort_key(pair: tuple[Any, Node]) -> tuple[Any, ...]:
            value, node = pair
            v = value.timestamp() if hasattr(value, "timestamp") else value
            return (v is not None, v if v is not None else 0, node.id)

        nodes.sort(key=sort_key, reverse=descending)
        return [n for _, n in nodes[:limit]]

    def _order_prop(self, tier: Tier, order_by: str) -> str:
        if order_by == "time":
            return "time"
        if order_by == "id":
            return "node_id"
        Eq(order_by, None)  # validates the field name (FilterError, a ValidationError)
        spec = sc.tier_attrs(tier).get(order_by)
        if spec is None:
            return "node_id"  # no such attribute: every row NULL, the id tiebreak decides
        if spec.kind == "opaque":
            raise FilterError(f"cannot order by {order_by!r}: it holds a dict or list")
        return spec.prop

    async def count(self, agent: str, tier: Tier | None = None, filter: Filter | None = None) -> int:
        check_agent(agent)
        flt = validate(filter)
        tiers = [check_tier(tier)] if tier is not None else list(Tier)
        self._check_open()
        tenant = tenant_name(agent)

        async def one(t: Tier) -> int:
            where = self._where(t, flt)
            if where is False:
                return 0
            col = self._col(self.collections[t], tenant)
            res = await self._read(
                lambda: col.aggregate.over_all(filters=self._filters(where), total_count=True)
            )
            return 0 if res is None else int(res.total_count or 0)

        return sum(await asyncio.gather(*(one(t) for t in tiers)))

    async def neighbors(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[Edge]:
        out: dict[tuple[str, str, str], Edge] = {}
        for (etype, src, dst), props in await self._edge_objects(agent, node_ids, edge_types, direction):
            e = Edge(type=EdgeType(etype), src=src, dst=dst, props=json.loads(props))
            out[e.key()] = e
        return sorted(out.values(), key=lambda e: e.key())

    async def neighbor_keys(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[tuple[str, str, str]]:
        found = await self._edge_objects(agent, node_ids, edge_types, direction)
        return list(dict.fromkeys((src, etype, dst) for (etype, src, dst), _ in found))

    async def _edge_objects(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None,
        direction: Direction,
    ) -> list[tuple[EdgeKey, str]]:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        direction = Direction(direction)
        types = [EdgeType(t).value for t in edge_types] if edge_types else None
        self._check_open()
        if not ids or types == []:
            return []
        W = self._wf()
        enc = [sc.field_text(i) for i in ids]
        ends = {Direction.OUT: ["src"], Direction.IN: ["dst"], Direction.BOTH: ["src", "dst"]}[direction]
        where = any_of([W.by_property(end).contains_any(enc) for end in ends])
        if types:
            where = all_of([where, W.by_property("type").contains_any(types)])
        objs = await self._fetch_all(self.edges, tenant_name(agent), where, ["data"])
        return [self._edge_of(obj) for obj in objs]

    # ------------------------------------------------------------------ search
    def _query_vector(self, vector: object) -> np.ndarray:
        try:
            return as_unit_vector(vector, self._dim)
        except ValueError as exc:
            raise ValidationError(f"query vector: {exc}") from None

    @staticmethod
    def _text(text: object) -> list[str]:
        if not isinstance(text, str):
            raise ValidationError("search text must be a string")
        return query_tokens(text)

    def _hits(self, tier: Tier, objs: Iterable[Any], score: Callable[[Any], float]) -> list[Hit]:
        cls = node_class(tier)
        return [Hit(cls.model_validate_json(o.properties["data"]), score(o)) for o in objs]

    async def _near(self, agent: str, tier: Tier, q: np.ndarray, limit: int, where: Side) -> list[Hit]:
        from weaviate.classes.query import MetadataQuery

        if where is False:
            return []
        col = self._col(self.collections[tier], tenant_name(agent))
        res = await self._read(
            lambda: col.query.near_vector(
                near_vector=q.astype(float).tolist(),
                target_vector=sc.VECTOR_NAME,
                limit=limit,
                filters=self._filters(where),
                return_metadata=MetadataQuery(distance=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        return self._hits(tier, objs, lambda o: min(1.0, max(0.0, 1.0 - float(o.metadata.distance))))

    async def _bm25(self, agent: str, tier: Tier, tokens: list[str], limit: int, where: Side) -> list[Hit]:
        from weaviate.classes.query import MetadataQuery

        if where is False or not tokens:
            return []
        col = self._col(self.collections[tier], tenant_name(agent))
        res = await self._read(
            lambda: col.query.bm25(
                query=" ".join(tokens),
                query_properties=["search_text"],
                limit=limit,
                filters=self._filters(where),
                return_metadata=MetadataQuery(score=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        return [h for h in self._hits(tier, objs, lambda o: float(o.metadata.score or 0.0)) if h.score > 0]

    async def vector_search(
        self, agent: str, tier: Tier, vector: np.ndarray, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        where = self._where(t, validate(filter))
        q = self._query_vector(vector)
        self._check_open()
        return _ranked(await self._near(agent, t, q, _pad(k), where), k)

    async def text_search(
        self, agent: str, tier: Tier, text: str, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        where = self._where(t, validate(filter))
        tokens = self._text(text)
        self._check_open()
        return _ranked(await self._bm25(agent, t, tokens, _pad(k), where), k)

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
        from weaviate.classes.query import HybridFusion, MetadataQuery

        check_agent(agent)
        t = check_tier(tier)
        check_k(k)
        where = self._where(t, validate(filter))
        tokens = self._text(text)
        if not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValidationError("alpha must be within [0, 1]")
        q = None if vector is None else self._query_vector(vector)
        self._check_open()
        if where is False or (q is None and not tokens):
            return []
        if q is None or not tokens:
            # One leg only: fuse it alone, exactly as the embedded store does (top score 1.0).
            n = hybrid_candidates(k)
            legs: tuple[dict[str, Hit], dict[str, Hit]]
            if q is None:
                legs = ({}, {h.id: h for h in await self._bm25(agent, t, tokens, n, where)})
            else:
                legs = ({h.id: h for h in await self._near(agent, t, q, n, where)}, {})
            nodes = {**legs[0], **legs[1]}
            fused = relative_score(
                {i: h.score for i, h in legs[0].items()},
                {i: h.score for i, h in legs[1].items()},
                1.0 if q is not None else 0.0,
            )
            return [Hit(nodes[i].node, s) for i, s in fused[:k]]
        col = self._col(self.collections[t], tenant_name(agent))
        res = await self._read(
            lambda: col.query.hybrid(
                query=" ".join(tokens),
                vector=q.astype(float).tolist(),
                alpha=float(alpha),
                fusion_type=HybridFusion.RELATIVE_SCORE,
                query_properties=["search_text"],
                target_vector=sc.VECTOR_NAME,
                limit=_pad(k),
                filters=self._filters(where),
                return_metadata=MetadataQuery(score=True),
                return_properties=["data"],
            )
        )
        objs = [] if res is None else res.objects
        hits = self._hits(t, objs, lambda o: min(1.0, max(0.0, float(o.metadata.score or 0.0))))
        return _ranked(hits, k)
