"""The embedded store's lookups: nodes by id, ``find`` and ``count`` over SQL, vectors, blobs, meta."""

from __future__ import annotations

import sqlite3

import numpy as np

from ...model import Node, NodeUsage, Tier
from ...model.time import from_epoch
from ..filters import And, Eq, Filter
from .core import NODE_FIELDS, NODE_FIELDS_N, EmbeddedCore, chunks
from .schema import SCOPE_COLUMNS
from .sql_filter import to_sql
from .vector_codec import decode_many


class EmbeddedReads(EmbeddedCore):
    """Reads that are not searches; arguments arrive checked (``BaseStore``)."""

    async def _get_many(self, agent: str, node_ids: list[str]) -> dict[str, Node]:
        def run(conn: sqlite3.Connection) -> dict[str, Node]:
            out: dict[str, Node] = {}
            for part in chunks(node_ids):
                q = f"SELECT {NODE_FIELDS} FROM nodes WHERE agent=? AND id IN ({','.join('?' * len(part))})"
                for row in conn.execute(q, (agent, *part)):
                    out[row[2]] = self._decode(agent, row)
            return out

        return await self._read(run)

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
        where, params = to_sql(flt)
        order = self._order_expr(order_by)
        if _pins_indexed_column(flt) or limit >= SORT_ABOVE_LIMIT:
            # Read the rows the filter's best index finds and sort them: SQLite would rather walk
            # every node of the agent (all tiers) in id order to skip the sort, which costs the
            # whole agent whenever the limit is not reached first (a session's chunks: 0.5 s at
            # 100,000 turns, not 1 ms; the open Facts of 500 subjects: 459 ms, not 24).
            order = "+" + order
        direction = "DESC" if descending else "ASC"
        red = "" if include_redacted else "AND n.redacted=0"
        q = (
            f"SELECT {NODE_FIELDS_N} FROM nodes n WHERE n.agent=? AND n.tier=? {red} AND {where} "
            f"ORDER BY {order} {direction}, n.id {direction} LIMIT ?"
        )
        rows = await self._read(lambda c: c.execute(q, (agent, tier.value, *params, limit)).fetchall())
        return [self._decode(agent, r) for r in rows]

    @staticmethod
    def _order_expr(order_by: str) -> str:
        """SQL for the order; an attribute name was validated (``check_order_by``) before."""
        if order_by == "time":
            return "n.ts"
        if order_by in ("id", "visibility", "redacted", "chunk_type"):  # columns
            return f"n.{order_by}"
        return f"json_extract(n.data, '$.{order_by}')"

    async def _count(self, agent: str, tier: Tier | None, flt: Filter | None) -> int:
        where, params = to_sql(flt)
        tier_sql, tier_params = ("AND n.tier=?", [tier.value]) if tier is not None else ("", [])
        q = f"SELECT count(*) FROM nodes n WHERE n.agent=? {tier_sql} AND n.redacted=0 AND {where}"
        row = await self._read(lambda c: c.execute(q, (agent, *tier_params, *params)).fetchone())
        return int(row[0])

    async def _get_vectors(self, agent: str, node_ids: list[str]) -> dict[str, np.ndarray]:
        dim = self._dim
        if dim is None:
            return {}

        def run(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            rows: list[tuple[str, bytes]] = []
            for part in chunks(node_ids):
                q = (
                    "SELECT n.id, v.vec FROM nodes n JOIN vectors v ON v.node = n.rowid "
                    f"WHERE n.agent=? AND n.id IN ({','.join('?' * len(part))})"
                )
                rows += conn.execute(q, (agent, *part)).fetchall()
            # One conversion for all (a recall reads ~60: ~7 us each one by one).
            matrix = decode_many([blob for _, blob in rows], dim)
            return {nid: matrix[i] for i, (nid, _) in enumerate(rows)}

        return await self._read(run)

    async def _get_blob(self, sha256: str) -> bytes | None:
        row = await self._read(
            lambda c: c.execute("SELECT data FROM blobs WHERE sha256=?", (sha256,)).fetchone()
        )
        return None if row is None else bytes(row[0])

    async def _usage(self, agent: str, node_ids: list[str]) -> dict[str, NodeUsage]:
        def run(c: sqlite3.Connection) -> list[tuple[object, ...]]:
            out: list[tuple[object, ...]] = []
            for part in chunks(node_ids):
                marks = ",".join("?" * len(part))
                out += c.execute(
                    "SELECT id, echo, fizzle, access_count, last_accessed_at, last_lex_share FROM usage "
                    f"WHERE agent=? AND id IN ({marks})",
                    (agent, *part),
                ).fetchall()
            return out

        return {
            str(r[0]): NodeUsage(
                echo=float(r[1]),  # type: ignore[arg-type]
                fizzle=float(r[2]),  # type: ignore[arg-type]
                access_count=int(r[3]),  # type: ignore[call-overload]
                last_accessed_at=from_epoch(float(r[4])) if r[4] is not None else None,  # type: ignore[arg-type]
                last_lex_share=float(r[5]) if r[5] is not None else None,  # type: ignore[arg-type]
            )
            for r in await self._read(run)
        }

    async def _get_meta(self, key: str) -> str | None:
        row = await self._read(lambda c: c.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone())
        return None if row is None else str(row[0])

    async def _agents(self) -> list[str]:
        rows = await self._read(
            lambda c: c.execute("SELECT DISTINCT agent FROM nodes ORDER BY agent").fetchall()
        )
        return [r[0] for r in rows]


#: A ``find`` asking for at least this many rows wants them all: sorting the tier's rows beats
#: walking the agent's id index, which reaches the limit only after reading everything.
SORT_ABOVE_LIMIT = 1_000

#: Columns with an index of their own: an equality on one selects few rows.
INDEXED_EQUALITY = frozenset(SCOPE_COLUMNS)


def _pins_indexed_column(flt: Filter | None) -> bool:
    """Whether ``flt`` requires an equality on an indexed column (alone or in an ``And``)."""
    if isinstance(flt, Eq):
        return flt.field in INDEXED_EQUALITY and flt.value is not None
    if isinstance(flt, And):
        return any(_pins_indexed_column(p) for p in flt.parts)
    return False
