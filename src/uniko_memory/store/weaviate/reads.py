"""The Weaviate store's lookups: nodes and vectors by id, ``find`` and ``count``, edges, blobs, meta."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import numpy as np

from ...errors import FilterError
from ...model import Direction, Edge, EdgeType, Node, Tier, node_class
from ..filters import Filter
from . import schema as sc
from .core import MAX_RESULTS, WeaviateCore, tenant_name
from .filter_map import all_of, any_of
from .unit import EdgeKey


class WeaviateReads(WeaviateCore):
    """Reads that are not searches; arguments arrive checked (``BaseStore``)."""

    async def _get_many(self, agent: str, node_ids: list[str]) -> dict[str, Node]:
        found = await self._lookup(tenant_name(agent), node_ids, vectors=False)
        return {nid: self._decode(s) for nid, s in found.items()}

    async def _get_vectors(self, agent: str, node_ids: list[str]) -> dict[str, np.ndarray]:
        found = await self._lookup(tenant_name(agent), node_ids, vectors=True)
        return {nid: s.vector for nid, s in found.items() if s.vector is not None and not s.redacted}

    async def _find(
        self,
        agent: str,
        tier: Tier,
        flt: Filter | None,
        *,
        limit: int,
        order_by: str,
        descending: bool,
        include_redacted: bool,
    ) -> list[Node]:
        from weaviate.classes.query import Sort

        where = self._where(tier, flt, include_redacted)
        key = self._order_prop(tier, order_by)
        if where is False:
            return []
        asc = not descending
        name, tenant = self.collections[tier], tenant_name(agent)
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
            return [node_class(tier).model_validate_json(o.properties["data"]) for o in objs]
        # Past Weaviate's per-query maximum: page through every match by id, order here.
        props = ["data"] if key == "node_id" else ["data", key]
        objs = await self._fetch_all(name, tenant, where, props)
        nodes = [
            (o.properties.get(key), node_class(tier).model_validate_json(o.properties["data"])) for o in objs
        ]

        def sort_key(pair: tuple[Any, Node]) -> tuple[Any, ...]:
            value, node = pair
            v = value.timestamp() if hasattr(value, "timestamp") else value
            return (v is not None, v if v is not None else 0, node.id)

        nodes.sort(key=sort_key, reverse=descending)
        return [n for _, n in nodes[:limit]]

    @staticmethod
    def _order_prop(tier: Tier, order_by: str) -> str:
        """The property to sort on; an attribute name was validated (``check_order_by``) before."""
        if order_by == "time":
            return "time"
        if order_by == "id":
            return "node_id"
        spec = sc.tier_attrs(tier).get(order_by)
        if spec is None:
            return "node_id"  # no such attribute: every row NULL, the id tiebreak decides
        if spec.kind == "opaque":
            raise FilterError(f"cannot order by {order_by!r}: it holds a dict or list")
        return spec.prop

    async def _count(self, agent: str, tier: Tier | None, flt: Filter | None) -> int:
        tiers = [tier] if tier is not None else list(Tier)
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

    # ------------------------------------------------------------------ edges
    async def _neighbors(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[Edge]:
        out: dict[tuple[str, str, str], Edge] = {}
        for (etype, src, dst), props in await self._edge_objects(agent, node_ids, types, direction):
            e = Edge(type=EdgeType(etype), src=src, dst=dst, props=json.loads(props))
            out[e.key()] = e
        return sorted(out.values(), key=lambda e: e.key())

    async def _neighbor_keys(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[str, str, str]]:
        found = await self._edge_objects(agent, node_ids, types, direction)
        return list(dict.fromkeys((src, etype, dst) for (etype, src, dst), _ in found))

    async def _edge_objects(
        self, agent: str, ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[EdgeKey, str]]:
        W = self._wf()
        enc = [sc.field_text(i) for i in ids]
        ends = {Direction.OUT: ["src"], Direction.IN: ["dst"], Direction.BOTH: ["src", "dst"]}[direction]
        where = any_of([W.by_property(end).contains_any(enc) for end in ends])
        if types:
            where = all_of([where, W.by_property("type").contains_any(types)])
        objs = await self._fetch_all(self.edges, tenant_name(agent), where, ["data"])
        return [self._edge_of(obj) for obj in objs]

    # ------------------------------------------------------------------ blobs, meta, agents
    async def _get_blob(self, sha256: str) -> bytes | None:
        col = self._col(self.blobs)
        res = await self._run(
            lambda: col.query.fetch_objects(
                filters=self._wf().by_id().equal(sc.blob_uuid(sha256)), limit=1, return_properties=["data"]
            )
        )
        if not res.objects:
            return None
        return base64.b64decode(res.objects[0].properties["data"])

    async def _get_meta(self, key: str) -> str | None:
        return await self._meta_get("meta", key)

    async def _agents(self) -> list[str]:
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
