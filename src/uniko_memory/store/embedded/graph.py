"""The embedded store's edges: one ``IN`` query per end and chunk of ids, types filtered after.

Edges are stored by integer keys (``edge_schema``): a query finds the ids' keys, walks the edge
table from them and turns the far ends' keys back into ids, in one statement.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...model import Direction, Edge
from .core import EmbeddedCore, chunks
from .edge_schema import EDGE_TYPE_OF_CODE, type_codes

#: Per direction: (the end the ids name, the far end).
_ENDS = {"src": ("src", "dst"), "dst": ("dst", "src")}


class EmbeddedGraph(EmbeddedCore):
    """``neighbors`` and ``neighbor_keys``; ids arrive unique and non-empty (``BaseStore``)."""

    async def _neighbors(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[Edge]:
        def run(conn: sqlite3.Connection) -> list[Edge]:
            out: dict[tuple[str, str, str], Edge] = {}
            for src, typ, dst, props in self._edge_rows(conn, agent, node_ids, types, direction, True):
                # Rows were validated when written: no second validation on the way out.
                props_map = json.loads(props) if props else {}
                out[(typ, src, dst)] = Edge.model_construct(type=typ, src=src, dst=dst, props=props_map)
            return [out[k] for k in sorted(out)]

        return await self._read(run)

    async def _neighbor_keys(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[str, str, str]]:
        def run(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            rows = self._edge_rows(conn, agent, node_ids, types, direction, False)
            return list(dict.fromkeys((src, typ.value, dst) for src, typ, dst in rows))

        return await self._read(run)

    @staticmethod
    def _edge_rows(
        conn: sqlite3.Connection,
        agent: str,
        ids: list[str],
        types: list[str] | None,
        direction: Direction,
        with_props: bool,
    ) -> list[Any]:
        cols = {Direction.OUT: ["src"], Direction.IN: ["dst"], Direction.BOTH: ["src", "dst"]}[direction]
        codes = type_codes(types) if types else []
        if types and not codes:
            return []  # none of these types was ever stored
        fields = "ks.id, e.type, kd.id, e.props" if with_props else "ks.id, e.type, kd.id"
        rows: list[Any] = []
        for col in cols:
            near, far = _ENDS[col]
            near_key, far_key = ("ks", "kd") if col == "src" else ("kd", "ks")
            for part in chunks(ids):
                # CROSS JOIN keeps SQLite's order: the ids' keys, their edges, the far ends' ids.
                q = (
                    f"SELECT {fields} FROM keys {near_key} CROSS JOIN edges e ON e.{near} = {near_key}.k "
                    f"CROSS JOIN keys {far_key} ON {far_key}.k = e.{far} "
                    f"WHERE {near_key}.agent=? AND {near_key}.id IN ({','.join('?' * len(part))})"
                )
                params: list[Any] = [agent, *part]
                if codes:
                    # ``+type``: filter the rows found by key; letting SQLite probe the index for
                    # every (key, type) pair is ~3x slower for the graph walk's long type lists.
                    q += f" AND +e.type IN ({','.join('?' * len(codes))})"
                    params += codes
                rows += [(r[0], EDGE_TYPE_OF_CODE[r[1]], *r[2:]) for r in conn.execute(q, params)]
        return rows
