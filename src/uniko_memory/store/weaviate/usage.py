"""Node usage on Weaviate (``Store.record_usage`` / ``usage``) as append-only events.

Weaviate has no atomic increment nor compare-and-set, so a read-modify-write of one counter
record would lose concurrent feedback. Each ``record_usage`` instead inserts one event object
per node into ``{prefix}_Meta`` (kind ``usage:<tenant>``, key the node id, value the delta as
JSON) under a fresh uuid: no two writers touch the same object, and a retried batch rewrites the
same uuids (idempotent). ``usage`` reads a node's events and adds them up: counts sum, the last
access is the latest, the lexical share is the newest event's that carries one. Deleting a node
deletes its events.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from typing import Any

from ...errors import StoreError
from ...model import NodeUsage, UsageDelta
from ...model.time import from_epoch, to_epoch
from . import schema as sc
from .core import WeaviateCore, tenant_name
from .filter_map import all_of

USAGE_KIND = "usage"
#: Node ids per filter (``contains_any`` over the key).
_IDS_PER_QUERY = 200


def _kind(agent: str) -> str:
    return f"{USAGE_KIND}:{tenant_name(agent)}"


class WeaviateUsage(WeaviateCore):
    async def _record_usage(self, agent: str, deltas: dict[str, UsageDelta]) -> None:
        from weaviate.classes.data import DataObject

        now = time.time()
        objs = []
        for node_id, d in deltas.items():
            uid = str(uuid.uuid4())
            value = {
                "e": d.echo,
                "f": d.fizzle,
                "a": d.access_count,
                "t": to_epoch(d.accessed_at) if d.accessed_at is not None else None,
                "l": d.lex_share,
                "w": now,
            }
            props = {
                "key": sc.field_text(node_id),
                "kind": _kind(agent),
                "value": json.dumps(value),
                "pkey": sc.pkey(uid),
            }
            objs.append(DataObject(properties=props, uuid=uid))
        await self._insert(self.meta, None, objs)

    def _usage_where(self, agent: str, part: list[str]) -> Any:
        wf = self._wf()
        return all_of(
            [
                wf.by_property("kind").equal(_kind(agent)),
                wf.by_property("key").contains_any([sc.field_text(i) for i in part]),
            ]
        )

    async def _usage(self, agent: str, node_ids: list[str]) -> dict[str, NodeUsage]:
        wanted = {sc.field_text(i): i for i in node_ids}
        totals: dict[str, dict[str, Any]] = {}
        for i in range(0, len(node_ids), _IDS_PER_QUERY):
            part = node_ids[i : i + _IDS_PER_QUERY]
            for obj in await self._fetch_all(
                self.meta, None, self._usage_where(agent, part), ["key", "value"]
            ):
                key = wanted.get(str(obj.properties["key"]))
                if key is None:
                    continue
                v = json.loads(obj.properties["value"])
                t = totals.setdefault(key, {"e": 0.0, "f": 0.0, "a": 0, "t": None, "l": None, "lw": -1.0})
                t["e"] += float(v["e"])
                t["f"] += float(v["f"])
                t["a"] += int(v["a"])
                if v["t"] is not None and (t["t"] is None or v["t"] > t["t"]):
                    t["t"] = v["t"]
                if v["l"] is not None and v["w"] >= t["lw"]:
                    t["l"], t["lw"] = v["l"], v["w"]
        return {
            k: NodeUsage(
                echo=t["e"],
                fizzle=t["f"],
                access_count=t["a"],
                last_accessed_at=from_epoch(t["t"]) if t["t"] is not None else None,
                last_lex_share=t["l"],
            )
            for k, t in totals.items()
        }

    async def _drop_usage(self, agent: str, node_ids: list[str]) -> None:
        col = self._col(self.meta)
        for i in range(0, len(node_ids), _IDS_PER_QUERY):
            where = self._usage_where(agent, node_ids[i : i + _IDS_PER_QUERY])
            res = await self._read(functools.partial(col.data.delete_many, where=where))
            if res is not None and res.failed:
                raise StoreError(f"weaviate: {res.failed} usage event(s) of deleted nodes were not deleted")
