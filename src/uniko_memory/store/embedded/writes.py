"""The embedded store's writes: a unit applied in one SQLite transaction, deletes, redaction, meta.

Every write keeps the RAM vector indexes in step after its transaction commits (never rebuilt on
read), and bumps the agent's generation. Before it, the agent's cached ANN graphs leave the disk
(``ann_cache``); an exact index that outgrows ``exact_below`` becomes an ANN one after it.
"""

from __future__ import annotations

import sqlite3

from ...errors import ValidationError
from ...model import Node, UsageDelta
from ...model.time import to_epoch
from ..buffered_unit import DeleteEdge, DeleteNode, PutBlob, PutEdge, PutMeta, PutNode, PutVector
from ..text_query import clean_text
from . import ann_cache
from .ann_index import AnnIndex, load_usearch
from .core import EmbeddedCore, VectorChange
from .edge_schema import key_for, key_of, props_column, type_code
from .node_rows import slim_json
from .unit import EmbeddedUnit
from .vector_codec import decode, encode
from .vectors import VectorIndex


class EmbeddedWrites(EmbeddedCore):
    """Units, deletes and redaction in SQL."""

    def _new_unit(self, agent: str) -> EmbeddedUnit:
        return EmbeddedUnit(self, agent)

    async def _commit_unit(self, unit: EmbeddedUnit) -> None:
        await self._commit(unit)

    async def _commit(self, u: EmbeddedUnit) -> None:
        vec_changes: list[VectorChange] = []
        new_dim = u.dim if self._dim is None else None

        def apply(conn: sqlite3.Connection) -> None:
            self._drop_ann_files(conn, u.agent)
            keys: dict[str, int] = {}  # this transaction's interned edge ends
            if new_dim is not None:
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('dim', ?)", (str(new_dim),))
            for op in u.ops:
                if isinstance(op, PutNode):
                    self._put_node(conn, op.node, vec_changes, op.data)
                elif isinstance(op, PutVector):
                    self._put_vector(conn, u.agent, op, vec_changes)
                elif isinstance(op, PutEdge):
                    e = op.edge
                    conn.execute(
                        "INSERT INTO edges(src, type, dst, props) VALUES(?,?,?,?) "
                        "ON CONFLICT(src, type, dst) DO UPDATE SET props=excluded.props",
                        (
                            key_for(conn, u.agent, e.src, keys),
                            type_code(e.type),
                            key_for(conn, u.agent, e.dst, keys),
                            props_column(op.props),
                        ),
                    )
                elif isinstance(op, DeleteNode):
                    keys.clear()  # the node's key may go with it
                    self._delete_node(conn, u.agent, op.node_id, vec_changes)
                elif isinstance(op, DeleteEdge):
                    src, dst = key_of(conn, u.agent, op.src), key_of(conn, u.agent, op.dst)
                    if src is not None and dst is not None:
                        conn.execute(
                            "DELETE FROM edges WHERE src=? AND type=? AND dst=?",
                            (src, type_code(op.edge_type), dst),
                        )
                elif isinstance(op, PutBlob):
                    conn.execute(
                        "INSERT OR IGNORE INTO blobs(sha256, data) VALUES(?, ?)", (op.sha256, op.data)
                    )
                elif isinstance(op, PutMeta):
                    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (op.key, op.value))

        await self._write(apply)
        if new_dim is not None:
            self._dim = new_dim
        self._apply_vector_changes(vec_changes)
        self._bump(u.agent)

    def _put_node(
        self,
        conn: sqlite3.Connection,
        node: Node,
        changes: list[VectorChange],
        data: str | None = None,
    ) -> None:
        ts = node.time_key()
        row = conn.execute(
            "INSERT INTO nodes(agent, id, tier, session, participant, ts, visibility, redacted, data, "
            "chunk_type) VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT(agent, id) DO UPDATE SET tier=excluded.tier, "
            "session=excluded.session, participant=excluded.participant, ts=excluded.ts, "
            "visibility=excluded.visibility, redacted=excluded.redacted, data=excluded.data, "
            "chunk_type=excluded.chunk_type "
            # Redaction is one-way: a redacted node is never rewritten with content again.
            "WHERE nodes.redacted = 0 OR excluded.redacted = 1 "
            "RETURNING rowid",
            (
                node.agent,
                node.id,
                node.tier.value,
                node.session_key(),
                node.participant_key(),
                to_epoch(ts) if ts is not None else None,
                node.visibility,
                int(node.redacted),
                slim_json(node, data if data is not None else node.model_dump_json()),
                getattr(node, "chunk_type", None),
            ),
        ).fetchone()
        if row is None:
            raise ValidationError(f"node {node.id} is redacted; it cannot be rewritten with content")
        rowid = row[0]
        text = None if node.redacted else node.search_text()
        self._fts_put(conn, rowid, clean_text(text) if text and text.strip() else None)
        if node.redacted:
            conn.execute("DELETE FROM vectors WHERE node=?", (rowid,))
            changes.append((node.agent, node.tier.value, node.id, rowid, None))

    def _put_vector(
        self,
        conn: sqlite3.Connection,
        agent: str,
        op: PutVector,
        changes: list[VectorChange],
    ) -> None:
        row = conn.execute(
            "SELECT rowid, tier, redacted FROM nodes WHERE agent=? AND id=?", (agent, op.node_id)
        ).fetchone()
        if row is None or row[2]:
            return  # the node is gone or redacted: a late embedding must not resurrect it
        rowid, tier = row[0], row[1]
        if tier != op.tier.value:
            raise ValidationError(f"node {op.node_id} is a {tier}, not a {op.tier.value}")
        blob = encode(op.vector, self._vopts.storage)
        conn.execute("INSERT OR REPLACE INTO vectors(node, vec) VALUES(?,?)", (rowid, blob))
        # The RAM index holds what a reopened store reads back, so a search ranks the same before
        # and after a restart.
        changes.append((agent, tier, op.node_id, rowid, decode(blob, len(op.vector))))

    def _delete_node(
        self,
        conn: sqlite3.Connection,
        agent: str,
        node_id: str,
        changes: list[VectorChange],
    ) -> bool:
        row = conn.execute(
            "SELECT rowid, tier FROM nodes WHERE agent=? AND id=?", (agent, node_id)
        ).fetchone()
        if row is None:
            return False
        self._fts_put(conn, row[0], None)
        conn.execute("DELETE FROM nodes WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM vectors WHERE node=?", (row[0],))
        k = key_of(conn, agent, node_id)
        if k is not None:  # its edges, then its key: the id leaves the file with the node
            conn.execute("DELETE FROM edges WHERE src=?", (k,))
            conn.execute("DELETE FROM edges WHERE dst=?", (k,))
            conn.execute("DELETE FROM keys WHERE k=?", (k,))
        conn.execute("DELETE FROM usage WHERE agent=? AND id=?", (agent, node_id))
        changes.append((agent, row[1], node_id, row[0], None))
        return True

    def _apply_vector_changes(self, changes: list[VectorChange]) -> None:
        if not changes:
            return
        with self._idx_lock:
            touched: set[tuple[str, str]] = set()
            for agent, tier, node_id, key, vec in changes:
                idx = self._indexes.get((agent, tier))
                if idx is None:
                    continue
                touched.add((agent, tier))
                if isinstance(idx, AnnIndex):
                    if vec is None:
                        idx.remove_key(key)
                    else:
                        idx.upsert(node_id, vec, key)
                elif vec is None:
                    idx.remove(node_id)
                else:
                    idx.upsert(node_id, vec, key)
            for at in touched:
                self._promote(at)

    def _promote(self, at: tuple[str, str]) -> None:
        """An exact index that reached ``exact_below`` rows becomes an ANN one (built from its own
        rows, once; the caller holds the index lock)."""
        idx = self._indexes[at]
        if not isinstance(idx, VectorIndex) or len(idx) < self._vopts.exact_below or self._dim is None:
            return
        if load_usearch() is None:
            return
        ann = AnnIndex(self._dim, self._vopts)
        for keys, _ids, vecs in idx.rows(ann_cache.BUILD_BATCH):
            ann.add_many(keys, vecs, threads=self._vopts.ann_build_threads)
        self._indexes[at] = ann

    async def _delete(self, agent: str, node_ids: list[str]) -> int:
        changes: list[VectorChange] = []

        def apply(conn: sqlite3.Connection) -> int:
            self._drop_ann_files(conn, agent)
            return sum(self._delete_node(conn, agent, i, changes) for i in node_ids)

        n = await self._write(apply)
        self._apply_vector_changes(changes)
        if n:
            self._bump(agent)
        return n

    async def _redact(self, agent: str, nodes: dict[str, Node]) -> int:
        changes: list[VectorChange] = []

        def apply(conn: sqlite3.Connection) -> int:
            self._drop_ann_files(conn, agent)
            for node in nodes.values():
                self._put_node(conn, node.redacted_copy(), changes)
            return len(nodes)

        n = await self._write(apply)
        self._apply_vector_changes(changes)
        self._bump(agent)
        return n

    async def _record_usage(self, agent: str, deltas: dict[str, UsageDelta]) -> None:
        """One transaction of additive upserts: SQLite adds to the stored counts itself, so two
        writers (threads or processes) never lose each other's counts."""
        rows = [
            (
                agent,
                node_id,
                d.echo,
                d.fizzle,
                d.access_count,
                to_epoch(d.accessed_at) if d.accessed_at is not None else None,
                d.lex_share,
            )
            for node_id, d in deltas.items()
        ]

        def apply(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO usage(agent, id, echo, fizzle, access_count, last_accessed_at, last_lex_share) "
                "VALUES(?, ?, ?, ?, ?, ?, ?) ON CONFLICT(agent, id) DO UPDATE SET "
                "echo = echo + excluded.echo, fizzle = fizzle + excluded.fizzle, "
                "access_count = access_count + excluded.access_count, "
                "last_accessed_at = CASE WHEN excluded.last_accessed_at IS NULL THEN last_accessed_at "
                "WHEN last_accessed_at IS NULL OR excluded.last_accessed_at > last_accessed_at "
                "THEN excluded.last_accessed_at ELSE last_accessed_at END, "
                "last_lex_share = COALESCE(excluded.last_lex_share, last_lex_share)",
                rows,
            )

        await self._write(apply, content=False)

    async def _set_meta(self, key: str, value: str) -> None:
        await self._write(
            lambda c: c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value)),
            content=False,
        )
