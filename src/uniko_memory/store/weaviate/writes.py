"""The Weaviate store's writes: a unit replayed over its pre-image into a plan, then written in
steps with compensation (the guarantee is described in ``store``); deletes, redaction, meta.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Iterable
from typing import Any

from ...errors import StoreError, UnikoError
from ...model import Node, Tier
from ...model.time import to_epoch, to_utc
from ..buffered_unit import DeleteNode, Op, PutNode, serialize_node
from ..text_query import clean_text
from . import schema as sc
from .core import COMPLETION_MARKERS, REPLAY_MARKERS, WeaviateCore, tenant_name
from .filter_map import Side, any_of
from .leases import GENERATION_KIND, as_int, next_record
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


class WeaviateWrites(WeaviateCore):
    """Units, deletes and redaction on Weaviate."""

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

    # ------------------------------------------------------------------ commit
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
            plan.meta_before = {k: await self._meta_get("meta", k) for k in plan.meta}
            await self._execute(agent, tenant, plan)
            if dim is not None and self._dim is None:  # the first vectors fix the dimension
                await self._meta_put("internal", "dim", str(dim))
                self._dim = dim
            return plan

    def _steps(self, tenant: str, plan: Plan) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
        """(name, do, undo) per write step, in the documented order."""
        node_puts = {nid: (pre, fin) for nid, (pre, fin) in plan.nodes.items() if fin is not None}
        last_puts = {n: pf for n, pf in node_puts.items() if pf[1].tier in COMPLETION_MARKERS}
        first_puts = {n: pf for n, pf in node_puts.items() if n not in last_puts}
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
            # Replay markers (messages) first: a process that reads them last (``_lookup``) and
            # finds none has seen none of this unit's other nodes either (no double-apply).
            for tier in sorted(by_tier, key=lambda t: t not in REPLAY_MARKERS):
                await self._insert(self.collections[tier], tenant, by_tier[tier])

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

        def node_step(puts: dict[str, tuple[StoredNode | None, StoredNode]]) -> tuple[Any, Any]:
            async def do() -> None:
                await put_nodes({n: f for n, (_, f) in puts.items()})

            async def undo() -> None:
                # Nodes new to their tier go; overwritten ones get their pre-image back.
                await del_nodes(
                    {n: fin for n, (pre, fin) in puts.items() if pre is None or pre.tier != fin.tier}
                )
                await put_nodes({n: pre for n, (pre, _) in puts.items() if pre is not None})

            return do, undo

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
        if first_puts:
            steps.append(("nodes", *node_step(first_puts)))
        if edge_puts:
            steps.append(
                ("edges", lambda: put_edges({k: f for k, (_, f) in edge_puts.items() if f}), undo_edge_puts)
            )
        if last_puts:
            # Completion markers (sessions) after every other put: a process that sees a session
            # count a turn sees all of that turn's unit (``ingest`` waits for it on a replay).
            steps.append(("completion", *node_step(last_puts)))
        if edge_dels:
            steps.append(("edge_deletes", lambda: del_edges(edge_dels), lambda: put_edges(edge_dels)))
        if node_dels:
            steps.append(("node_deletes", lambda: del_nodes(node_dels), lambda: put_nodes(node_dels)))
        if plan.meta:

            async def put_meta() -> None:
                for key, value in plan.meta.items():
                    await self._meta_put("meta", key, value)

            async def undo_meta() -> None:
                for key in plan.meta:
                    if (old := plan.meta_before.get(key)) is not None:
                        await self._meta_put("meta", key, old)
                    else:
                        await self._delete_uuids(self.meta, None, [sc.meta_uuid(f"meta\0{key}")])

            steps.append(("meta", put_meta, undo_meta))
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

    # ------------------------------------------------------------------ hooks
    def _new_unit(self, agent: str) -> WeaviateUnit:
        return WeaviateUnit(self, agent)

    async def _commit_unit(self, unit: WeaviateUnit) -> None:
        # Shielded: a cancellation after the block can't leave the unit half-written.
        plan = await asyncio.shield(self._commit(unit.agent, unit.ops, unit.dim))
        if not plan.empty:
            await self._bump_shared(unit.agent)

    async def _delete(self, agent: str, node_ids: list[str]) -> int:
        plan = await self._commit(agent, [DeleteNode(i) for i in node_ids])
        n = sum(1 for pre, fin in plan.nodes.values() if pre is not None and fin is None)
        if n:
            await self._drop_usage(agent, node_ids)
            await self._bump_shared(agent)
        return n

    async def _drop_usage(self, agent: str, node_ids: list[str]) -> None:
        """Deleting a node deletes its usage events (``usage``); nothing to do without them."""

    async def _invalidate(self, agent: str) -> None:
        await self._bump_shared(agent)

    # ------------------------------------------------------------------ generations
    async def _bump_shared(self, agent: str) -> None:
        """Bump the agent's generation here and in its ``_Meta`` record (one read, one write), so
        other processes' recall caches see this write (``current_generation``)."""
        self._bump(agent)
        key = tenant_name(agent)
        try:
            raw = await self._meta_get(GENERATION_KIND, key)
            counter, record = next_record(raw, self._shared_gen.get(agent, 0), self._writer_id)
            await self._meta_put(GENERATION_KIND, key, record)
        except StoreError as exc:
            raise StoreError(
                f"the unit for agent {agent!r} was written, but its generation could not be published "
                f"({exc}); other processes may serve cached recalls without it until their cache ttl"
            ) from exc
        self._shared_gen[agent] = counter

    async def current_generation(self, agent: str) -> int:
        """The agent's generation as stored in Weaviate (one small read by id): changes with every
        committed write of any process."""
        self._check_open()
        return as_int(await self._meta_get(GENERATION_KIND, tenant_name(agent)))

    async def _redact(self, agent: str, nodes: dict[str, Node]) -> int:
        ops: list[Op] = []
        for node in nodes.values():
            red = node.redacted_copy()
            ops.append(PutNode(red, serialize_node(red)))
        await self._commit(agent, ops)
        await self._bump_shared(agent)
        return len(nodes)

    async def _set_meta(self, key: str, value: str) -> None:
        await self._meta_put("meta", key, value)
