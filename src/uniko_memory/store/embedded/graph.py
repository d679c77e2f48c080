"""The embedded store's edges: one ``IN`` query per end and chunk of ids, types filtered after."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...model import Direction, Edge, EdgeType
from .core import EmbeddedCore, chunks

_EDGE_TYPES = {t.value: t for t in EdgeType}


class EmbeddedGraph(EmbeddedCore):
    """``neighbors`` and ``neighbor_keys``; ids arrive unique and non-empty (``BaseStore``)."""

    async def _neighbors(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[Edge]:
        def run(conn: sqlite3.Connection) -> list[Edge]:
            out: dict[tuple[str, str, str], Edge] = {}
            for src, typ, dst, props in self._edge_rows(conn, agent, node_ids, types, direction, True):
                # Rows were validated when written: no second validation on the way out.
                props_map = json.loads(props) if props != "{}" else {}
                out[(typ, src, dst)] = Edge.model_construct(
                    type=_EDGE_TYPES[typ], src=src, dst=dst, props=props_map
                )
            return [out[k] for k in sorted(out)]

        return await self._read(run)

    async def _neighbor_keys(
        self, agent: str, node_ids: list[str], types: list[str] | None, direction: Direction
    ) -> list[tuple[str, str, str]]:
        def run(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            rows = self._edge_rows(conn, agent, node_ids, types, direction, False)
            return list(dict.fromkeys((src, typ, dst) for src, typ, dst in rows))

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
        fields = "src, type, dst, props" if with_props else "src, type, dst"
        rows: list[Any] = []
        for col in cols:
            for part in chunks(ids):
                q = f"SELECT {fields} FROM edges WHERE agent=? AND {col} IN ({','.join('?' * len(part))})"
                params: list[Any] = [agent, *part]
                if types:
                    # ``+type``: filter the rows found by id; letting SQLite probe the index for
                    # every (id, type) pair is ~3x slower for the graph walk's long type lists.
                    q += f" AND +type IN ({','.join('?' * len(types))})"
                    params += types
                rows += conn.execute(q, params).fetchall()
        return rows
