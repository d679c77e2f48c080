"""The embedded default store: stdlib SQLite (WAL, FTS5) plus exact numpy cosine search.

One process owns a store file at a time (an exclusive lock on a lock file and on the database
file's inode, so a symlink or hard link is the same store; a second opener gets ``StoreLocked``).
Writes are serialised per store and applied in one transaction per unit; reads run on per-thread
connections so they never wait for a writer (WAL). SQLite and OS failures surface as
``StoreError`` children that say what to do (``sqlite_errors``: a full disk is ``StorageFull``, a
file that cannot be written ``StoreReadOnly``, another connection's write lock ``StoreLocked``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ...errors import ClosedError, StoreLocked, ValidationError
from ...model import Direction, Edge, EdgeType, Node, Tier, node_class
from ...model.time import to_epoch
from ..filters import Filter, validate
from ..fusion import relative_score
from ..protocol import Hit, hybrid_candidates
from ..validation import check_agent, check_k, check_tier
from .fts_query import clean_text, quoted_terms, selective_match
from .schema import check_fts5, configure, migrate
from .sql_filter import to_sql
from .sqlite_errors import os_to_store_error, to_store_error
from .unit import DeleteEdge, DeleteNode, EmbeddedUnit, PutBlob, PutEdge, PutNode, PutVector
from .vectors import VectorIndex, as_unit_vector, top_k

try:  # POSIX advisory lock; on other platforms the lock is skipped (documented).
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

T = TypeVar("T")
_log = logging.getLogger(__name__)
_BATCH = 500
_EDGE_TYPES = {t.value: t for t in EdgeType}
#: Vector candidates checked against a filter before falling back to an exact filtered scan.
_FILTER_OVERFETCH = 8
_FILTER_MIN_CANDIDATES = 200
#: The first probe of a filtered vector search: this many times k candidates (at least the min).
_FILTER_FIRST_FACTOR = 3
_FILTER_FIRST_MIN = 30


def _close_all(handles: Sequence[Any]) -> None:
    for handle in handles:
        with contextlib.suppress(OSError):
            os.close(handle) if isinstance(handle, int) else handle.close()


def _chunks(items: Sequence[str], size: int = _BATCH) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class EmbeddedStore:
    """SQLite + FTS5 + numpy implementation of the ``Store`` protocol (see its score contract)."""

    def __init__(self, path: Path, dim: int | None, tmpdir: str | None) -> None:
        self.path = path
        self._dim = dim
        self._tmpdir = tmpdir
        self._closed = False
        self._wlock = threading.Lock()
        self._idx_lock = threading.Lock()
        self._readers: list[sqlite3.Connection] = []
        #: Reads in flight; close waits for them (closing a connection under a running query crashes).
        self._reading = 0
        self._reads_done = threading.Condition()
        self._local = threading.local()
        self._indexes: dict[tuple[str, str], VectorIndex] = {}
        self._generations: dict[str, int] = {}
        self._unit_lock: asyncio.Lock | None = None
        self._locks: list[Any] = []
        self._writer = self._connect()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    async def open(cls, path: str | Path, *, dim: int | None = None) -> EmbeddedStore:
        """Open (creating if needed) the store at ``path``; ``dim`` fixes the vector dimension."""
        return await asyncio.to_thread(cls._open_sync, Path(path), dim, None)

    @classmethod
    async def in_memory(cls, *, dim: int | None = None) -> EmbeddedStore:
        """A throw-away store in a temporary directory that is removed on ``close()``."""
        tmp = tempfile.mkdtemp(prefix="uniko-")
        return await asyncio.to_thread(cls._open_sync, Path(tmp) / "memory.db", dim, tmp)

    @classmethod
    def _open_sync(cls, path: Path, dim: int | None, tmpdir: str | None) -> EmbeddedStore:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise os_to_store_error(exc, path, "creating its directory") from exc
        locks = cls._acquire_lock(path)
        try:
            store = cls(path, dim, tmpdir)
        except BaseException:
            _close_all(locks)
            raise
        store._locks = locks
        try:
            check_fts5(store._writer)
            migrate(store._writer)
            store._init_dim(dim)
        except sqlite3.Error as exc:
            store._close_sync()
            raise to_store_error(exc, path, "opening the store") from exc
        except BaseException:
            store._close_sync()
            raise
        return store

    @staticmethod
    def _acquire_lock(path: Path) -> list[Any]:
        """Lock the store for this process: the lock file beside it and the database file itself.

        The lock file is named after the real path (a symlink resolves to its target); the OS lock
        on the database file's inode also catches a hard link, which names the same file by another
        path (and would give the second opener its own ``-wal`` file: its writes would be lost).
        ``flock`` never interacts with SQLite's own POSIX record locks on Linux and BSD.
        """
        real = path.resolve()
        lock_path = real.with_name(real.name + ".lock")
        handles: list[Any] = []
        try:
            handles.append(open(lock_path, "a+"))  # noqa: SIM115 - held until close
        except OSError as exc:
            raise os_to_store_error(exc, path, f"creating the lock file {lock_path.name}") from exc
        if fcntl is None:
            return handles
        try:
            handles.append(EmbeddedStore._open_db_file(real))
        except OSError as exc:
            _close_all(handles)
            raise os_to_store_error(exc, path, "opening the database file") from exc
        for handle in handles:
            try:
                fcntl.flock(
                    handle if isinstance(handle, int) else handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB
                )
            except OSError:
                _close_all(handles)
                raise StoreLocked(
                    f"the store {path} is open in another process; close it there first "
                    "(the embedded store is single-process; a symlink or hard link to it is the same store)"
                ) from None
        return handles

    @staticmethod
    def _open_db_file(real: Path) -> int:
        """A descriptor on the database file (created empty when new; SQLite takes an empty file as
        a new database). Read-only when the file cannot be written: reads are still served."""
        try:
            return os.open(real, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            return os.open(real, os.O_RDONLY)

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = None
        try:
            # The real path: a symlink's -wal and -shm files are its target's.
            conn = sqlite3.connect(
                self.path.resolve(), check_same_thread=False, isolation_level=None, timeout=5.0
            )
            configure(conn)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise to_store_error(exc, self.path, "opening a connection") from exc
        return conn

    def _init_dim(self, dim: int | None) -> None:
        row = self._writer.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        stored = int(row[0]) if row else None
        if stored is not None and dim is not None and stored != dim:
            from ...errors import SchemaMismatch

            raise SchemaMismatch(f"the store holds {stored}-dimensional vectors, asked to open with {dim}")
        if stored is None and dim is not None:
            self._writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('dim', ?)", (str(dim),))
        self._dim = stored if stored is not None else dim

    @property
    def dim(self) -> int | None:
        return self._dim

    async def close(self) -> None:
        if not self._closed:
            await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        with self._reads_done:
            self._closed = True  # no read starts after this
            self._reads_done.wait_for(lambda: self._reading == 0)
        with self._wlock:
            for conn in [*self._readers, self._writer]:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._readers.clear()
        # Only after every SQLite connection is closed: closing another descriptor on the database
        # file drops this process's POSIX locks on it, which SQLite relies on while a connection is open.
        _close_all(self._locks)
        self._locks = []
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("the store is closed")

    # ------------------------------------------------------------------ plumbing
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._wlock:
                self._readers.append(conn)
        return conn

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()

        def run() -> T:
            with self._reads_done:
                self._check_open()
                self._reading += 1
            try:
                return fn(self._reader())
            except sqlite3.Error as exc:
                raise to_store_error(exc, self.path, "a read") from exc
            finally:
                with self._reads_done:
                    self._reading -= 1
                    self._reads_done.notify_all()

        return await asyncio.to_thread(run)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        self._check_open()

        def run() -> T:
            with self._wlock:
                self._check_open()
                conn = self._writer
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    result = fn(conn)
                    conn.execute("COMMIT")
                    return result
                except BaseException as exc:
                    if conn.in_transaction:
                        # SQLite may have rolled back already (SQLITE_FULL, SQLITE_IOERR): the
                        # original error is the one worth reporting, not a failed ROLLBACK.
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.Error):
                        raise to_store_error(exc, self.path, "a write") from exc
                    raise

        return await asyncio.to_thread(run)

    @staticmethod
    def _decode(tier: str, data: str) -> Node:
        return node_class(tier).model_validate_json(data)

    def _bump(self, agent: str) -> None:
        self._generations[agent] = self._generations.get(agent, 0) + 1

    def generation(self, agent: str) -> int:
        return self._generations.get(agent, 0)

    async def compact(self, *, full: bool = False) -> None:
        """See ``Store.compact``: merge the FTS index into one segment (the terms of deleted rows
        leave it), ``VACUUM`` when ``full``, then checkpoint the WAL into the database file and
        truncate it. Freed cells were zeroed as they were freed (``PRAGMA secure_delete``)."""
        await self._write(lambda c: c.execute("INSERT INTO fts(fts) VALUES('optimize')"))
        await asyncio.to_thread(self._checkpoint, full)

    def _checkpoint(self, vacuum: bool) -> None:
        with self._wlock:
            self._check_open()
            try:
                if vacuum:  # outside a transaction: the one statement that may not run in one
                    self._writer.execute("VACUUM")
                busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise to_store_error(exc, self.path, "a checkpoint") from exc
        if busy:  # a reader outlasted the busy timeout: the WAL is truncated at the next checkpoint
            _log.warning("the WAL of %s could not be truncated: a read held it", self.path)

    # ------------------------------------------------------------------ writes
    @contextlib.asynccontextmanager
    async def unit(self, agent: str) -> AsyncIterator[EmbeddedUnit]:
        check_agent(agent)
        self._check_open()
        if self._unit_lock is None:
            self._unit_lock = asyncio.Lock()
        async with self._unit_lock:
            u = EmbeddedUnit(self, agent)
            yield u
            if u.ops:
                await self._commit(u)

    async def _commit(self, u: EmbeddedUnit) -> None:
        vec_changes: list[tuple[str, str, str, np.ndarray | None]] = []
        new_dim = u._dim if self._dim is None else None

        def apply(conn: sqlite3.Connection) -> None:
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
                        "INSERT INTO edges(agent, src, type, dst, props) VALUES(?,?,?,?,?) "
                        "ON CONFLICT(agent, src, type, dst) DO UPDATE SET props=excluded.props",
                        (u.agent, e.src, e.type.value, e.dst, op.props),
                    )
                elif isinstance(op, DeleteNode):
                    self._delete_node(conn, u.agent, op.node_id, vec_changes)
                elif isinstance(op, DeleteEdge):
                    conn.execute(
                        "DELETE FROM edges WHERE agent=? AND src=? AND type=? AND dst=?",
                        (u.agent, op.src, op.edge_type.value, op.dst),
                    )
                elif isinstance(op, PutBlob):
                    conn.execute(
                        "INSERT OR IGNORE INTO blobs(sha256, data) VALUES(?, ?)", (op.sha256, op.data)
                    )

        await self._write(apply)
        if new_dim is not None:
            self._dim = new_dim
        self._apply_vector_changes(vec_changes)
        self._bump(u.agent)

    def _put_node(
        self,
        conn: sqlite3.Connection,
        node: Node,
        changes: list[tuple[str, str, str, np.ndarray | None]],
        data: str | None = None,
    ) -> None:
        ts = node.time_key()
        row = conn.execute(
            "INSERT INTO nodes(agent, id, tier, session, participant, ts, visibility, redacted, data) "
            "VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT(agent, id) DO UPDATE SET tier=excluded.tier, "
            "session=excluded.session, participant=excluded.participant, ts=excluded.ts, "
            "visibility=excluded.visibility, redacted=excluded.redacted, data=excluded.data "
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
                data if data is not None else node.model_dump_json(),
            ),
        ).fetchone()
        if row is None:
            raise ValidationError(f"node {node.id} is redacted; it cannot be rewritten with content")
        rowid = row[0]
        conn.execute("DELETE FROM fts WHERE rowid=?", (rowid,))
        text = None if node.redacted else node.search_text()
        if text and text.strip():
            conn.execute("INSERT INTO fts(rowid, text) VALUES(?, ?)", (rowid, clean_text(text)))
        if node.redacted:
            conn.execute("DELETE FROM vectors WHERE agent=? AND id=?", (node.agent, node.id))
            changes.append((node.agent, node.tier.value, node.id, None))

    def _put_vector(
        self,
        conn: sqlite3.Connection,
        agent: str,
        op: PutVector,
        changes: list[tuple[str, str, str, np.ndarray | None]],
    ) -> None:
        row = conn.execute(
            "SELECT tier, redacted FROM nodes WHERE agent=? AND id=?", (agent, op.node_id)
        ).fetchone()
        if row is None or row[1]:
            return  # the node is gone or redacted: a late embedding must not resurrect it
        if row[0] != op.tier.value:
            raise ValidationError(f"node {op.node_id} is a {row[0]}, not a {op.tier.value}")
        conn.execute(
            "INSERT OR REPLACE INTO vectors(agent, id, tier, vec) VALUES(?,?,?,?)",
            (agent, op.node_id, row[0], op.vector.tobytes()),
        )
        changes.append((agent, row[0], op.node_id, op.vector))

    def _delete_node(
        self,
        conn: sqlite3.Connection,
        agent: str,
        node_id: str,
        changes: list[tuple[str, str, str, np.ndarray | None]],
    ) -> bool:
        row = conn.execute(
            "SELECT rowid, tier FROM nodes WHERE agent=? AND id=?", (agent, node_id)
        ).fetchone()
        if row is None:
            return False
        conn.execute("DELETE FROM fts WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM nodes WHERE rowid=?", (row[0],))
        conn.execute("DELETE FROM vectors WHERE agent=? AND id=?", (agent, node_id))
        conn.execute("DELETE FROM edges WHERE agent=? AND src=?", (agent, node_id))
        conn.execute("DELETE FROM edges WHERE agent=? AND dst=?", (agent, node_id))
        changes.append((agent, row[1], node_id, None))
        return True

    def _apply_vector_changes(self, changes: list[tuple[str, str, str, np.ndarray | None]]) -> None:
        if not changes:
            return
        with self._idx_lock:
            for agent, tier, node_id, vec in changes:
                idx = self._indexes.get((agent, tier))
                if idx is None:
                    continue
                if vec is None:
                    idx.remove(node_id)
                else:
                    idx.upsert(node_id, vec)

    async def delete(self, agent: str, node_ids: Sequence[str]) -> int:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        changes: list[tuple[str, str, str, np.ndarray | None]] = []

        def apply(conn: sqlite3.Connection) -> int:
            return sum(self._delete_node(conn, agent, i, changes) for i in ids)

        n = await self._write(apply)
        self._apply_vector_changes(changes)
        if n:
            self._bump(agent)
        return n

    async def redact(self, agent: str, node_ids: Sequence[str]) -> int:
        check_agent(agent)
        nodes = await self.get_many(agent, list(dict.fromkeys(node_ids)))
        if not nodes:
            return 0
        changes: list[tuple[str, str, str, np.ndarray | None]] = []

        def apply(conn: sqlite3.Connection) -> int:
            for node in nodes.values():
                self._put_node(conn, node.redacted_copy(), changes)
            return len(nodes)

        n = await self._write(apply)
        self._apply_vector_changes(changes)
        self._bump(agent)
        return n

    async def set_meta(self, key: str, value: str) -> None:
        await self._write(
            lambda c: c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))
        )

    # ------------------------------------------------------------------ reads
    async def get(self, agent: str, node_id: str) -> Node | None:
        return (await self.get_many(agent, [node_id])).get(node_id)

    async def get_many(self, agent: str, node_ids: Sequence[str]) -> dict[str, Node]:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}

        def run(conn: sqlite3.Connection) -> dict[str, Node]:
            out: dict[str, Node] = {}
            for part in _chunks(ids):
                q = f"SELECT id, tier, data FROM nodes WHERE agent=? AND id IN ({','.join('?' * len(part))})"
                for nid, tier, data in conn.execute(q, (agent, *part)):
                    out[nid] = self._decode(tier, data)
            return out

        return await self._read(run)

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
        check_agent(agent)
        t = check_tier(tier)
        check_k(limit, name="limit", maximum=1_000_000)
        where, params = to_sql(validate(filter))
        order = self._order_expr(order_by)
        direction = "DESC" if descending else "ASC"
        red = "" if include_redacted else "AND n.redacted=0"
        q = (
            f"SELECT n.tier, n.data FROM nodes n WHERE n.agent=? AND n.tier=? {red} AND {where} "
            f"ORDER BY {order} {direction}, n.id {direction} LIMIT ?"
        )
        rows = await self._read(lambda c: c.execute(q, (agent, t.value, *params, limit)).fetchall())
        return [self._decode(tr, d) for tr, d in rows]

    @staticmethod
    def _order_expr(order_by: str) -> str:
        from ..filters import Eq

        if order_by == "time":
            return "n.ts"
        if order_by == "id":
            return "n.id"
        Eq(order_by, None)  # validates the field name
        return f"json_extract(n.data, '$.{order_by}')"

    async def count(self, agent: str, tier: Tier | None = None, filter: Filter | None = None) -> int:
        check_agent(agent)
        where, params = to_sql(validate(filter))
        tier_sql, tier_params = ("AND n.tier=?", [check_tier(tier).value]) if tier is not None else ("", [])
        q = f"SELECT count(*) FROM nodes n WHERE n.agent=? {tier_sql} AND n.redacted=0 AND {where}"
        row = await self._read(lambda c: c.execute(q, (agent, *tier_params, *params)).fetchone())
        return int(row[0])

    async def neighbors(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[Edge]:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        direction = Direction(direction)
        types = [EdgeType(t).value for t in edge_types] if edge_types else None
        if not ids or types == []:
            return []

        def run(conn: sqlite3.Connection) -> list[Edge]:
            out: dict[tuple[str, str, str], Edge] = {}
            for src, typ, dst, props in self._edge_rows(conn, agent, ids, types, direction, True):
                # Rows were validated when written: no second validation on the way out.
                props_map = json.loads(props) if props != "{}" else {}
                out[(typ, src, dst)] = Edge.model_construct(
                    type=_EDGE_TYPES[typ], src=src, dst=dst, props=props_map
                )
            return [out[k] for k in sorted(out)]

        return await self._read(run)

    async def neighbor_keys(
        self,
        agent: str,
        node_ids: Sequence[str],
        edge_types: Sequence[EdgeType] | None = None,
        direction: Direction = Direction.OUT,
    ) -> list[tuple[str, str, str]]:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))
        direction = Direction(direction)
        types = [EdgeType(t).value for t in edge_types] if edge_types else None
        if not ids or types == []:
            return []

        def run(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
            rows = self._edge_rows(conn, agent, ids, types, direction, False)
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
            for part in _chunks(ids):
                q = f"SELECT {fields} FROM edges WHERE agent=? AND {col} IN ({','.join('?' * len(part))})"
                params: list[Any] = [agent, *part]
                if types:
                    # ``+type``: filter the rows found by id; letting SQLite probe the index for
                    # every (id, type) pair is ~3x slower for the graph walk's long type lists.
                    q += f" AND +type IN ({','.join('?' * len(types))})"
                    params += types
                rows += conn.execute(q, params).fetchall()
        return rows

    async def get_vectors(self, agent: str, node_ids: Sequence[str]) -> dict[str, np.ndarray]:
        check_agent(agent)
        ids = list(dict.fromkeys(node_ids))

        def run(conn: sqlite3.Connection) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            for part in _chunks(ids):
                q = f"SELECT id, vec FROM vectors WHERE agent=? AND id IN ({','.join('?' * len(part))})"
                for nid, blob in conn.execute(q, (agent, *part)):
                    out[nid] = np.frombuffer(blob, dtype=np.float32).copy()
            return out

        return await self._read(run) if ids else {}

    async def get_blob(self, sha256: str) -> bytes | None:
        row = await self._read(
            lambda c: c.execute("SELECT data FROM blobs WHERE sha256=?", (sha256,)).fetchone()
        )
        return None if row is None else bytes(row[0])

    async def get_meta(self, key: str) -> str | None:
        row = await self._read(lambda c: c.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone())
        return None if row is None else str(row[0])

    async def agents(self) -> list[str]:
        rows = await self._read(
            lambda c: c.execute("SELECT DISTINCT agent FROM nodes ORDER BY agent").fetchall()
        )
        return [r[0] for r in rows]

    # ------------------------------------------------------------------ search
    def _index(self, conn: sqlite3.Connection, agent: str, tier: str) -> VectorIndex | None:
        key = (agent, tier)
        with self._idx_lock:
            idx = self._indexes.get(key)
            if idx is not None or self._dim is None:
                return idx
            rows = conn.execute(
                "SELECT id, vec FROM vectors WHERE agent=? AND tier=?", (agent, tier)
            ).fetchall()
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                len(rows), self._dim
            )
            idx = VectorIndex(self._dim, [r[0] for r in rows], matrix)
            self._indexes[key] = idx
            return idx

    def _vector_ids(
        self, conn: sqlite3.Connection, agent: str, tier: str, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[tuple[str, float]]:
        idx = self._index(conn, agent, tier)
        if idx is None or len(idx) == 0:
            return []
        scores, ids = idx.scores(query)
        if flt is None:
            rows = top_k(scores, k)
            return [(ids[r], float(scores[r])) for r in rows]
        where, params = to_sql(flt)
        n_cand = min(len(ids), max(k * _FILTER_OVERFETCH, _FILTER_MIN_CANDIDATES))
        rows = top_k(scores, n_cand)
        # Probe the best candidates first and widen only while too few pass: the filter (often a
        # JSON field) is evaluated for a few times k rows, not n_cand. Same hits: the admitted
        # rows of a prefix of ``rows`` are a prefix of the admitted rows of ``rows``.
        hits: list[tuple[str, float]] = []
        done, upto = 0, min(n_cand, max(k * _FILTER_FIRST_FACTOR, _FILTER_FIRST_MIN))
        while done < n_cand:
            part = rows[done:upto]
            allowed = self._allowed(conn, agent, tier, where, params, [ids[r] for r in part])
            hits += [(ids[r], float(scores[r])) for r in part if ids[r] in allowed]
            done, upto = upto, min(n_cand, upto * 4)
            if len(hits) >= k:
                return hits[:k]
        if n_cand == len(ids):
            return hits
        # Selective filter: score exactly over the rows it admits.
        q = f"SELECT n.id FROM nodes n WHERE n.agent=? AND n.tier=? AND n.redacted=0 AND {where}"
        admitted = {r[0] for r in conn.execute(q, (agent, tier, *params))}
        sub, sub_ids = idx.scores_within(query, admitted)
        return [(sub_ids[r], float(sub[r])) for r in top_k(sub, k)]

    @staticmethod
    def _allowed(
        conn: sqlite3.Connection, agent: str, tier: str, where: str, params: list[Any], cand: list[str]
    ) -> set[str]:
        out: set[str] = set()
        for part in _chunks(cand):
            q = (
                # Probe the candidates by id (the filter's own indexes would scan far more rows).
                f"SELECT n.id FROM nodes n INDEXED BY nodes_id WHERE n.agent=? "
                f"AND n.id IN ({','.join('?' * len(part))}) AND n.tier=? AND n.redacted=0 AND {where}"
            )
            out.update(r[0] for r in conn.execute(q, (agent, *part, tier, *params)))
        return out

    @staticmethod
    def _text_ids(
        conn: sqlite3.Connection, agent: str, tier: str, terms: list[str], k: int, flt: Filter | None
    ) -> list[tuple[str, float]]:
        where, params = to_sql(flt)
        match = selective_match(conn, "fts", terms)
        # FTS drives the plan (CROSS JOIN pins the join order): see models-and-stores.md §7.3.
        q = (
            "SELECT n.id, -bm25(fts) AS s FROM fts CROSS JOIN nodes n ON n.rowid = fts.rowid "
            f"WHERE fts MATCH ? AND n.agent=? AND n.tier=? AND n.redacted=0 AND {where} "
            "ORDER BY bm25(fts), n.id LIMIT ?"
        )
        return [(r[0], float(r[1])) for r in conn.execute(q, (match, agent, tier, *params, k))]

    def _hits(self, conn: sqlite3.Connection, agent: str, scored: list[tuple[str, float]]) -> list[Hit]:
        if not scored:
            return []
        ids = [i for i, _ in scored]
        q = f"SELECT id, tier, data FROM nodes WHERE agent=? AND id IN ({','.join('?' * len(ids))})"
        nodes = {nid: self._decode(t, d) for nid, t, d in conn.execute(q, (agent, *ids))}
        return [Hit(nodes[i], s) for i, s in scored if i in nodes and not nodes[i].redacted]

    def _query_vector(self, vector: object) -> np.ndarray:
        try:
            return as_unit_vector(vector, self._dim)
        except ValueError as exc:
            raise ValidationError(f"query vector: {exc}") from None

    async def vector_search(
        self, agent: str, tier: Tier, vector: np.ndarray, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier).value
        check_k(k)
        flt = validate(filter)
        q = self._query_vector(vector)

        def run(conn: sqlite3.Connection) -> list[Hit]:
            scored = [(i, min(1.0, max(0.0, s))) for i, s in self._vector_ids(conn, agent, t, q, k, flt)]
            return self._hits(conn, agent, scored)

        return await self._read(run)

    async def text_search(
        self, agent: str, tier: Tier, text: str, *, k: int = 10, filter: Filter | None = None
    ) -> list[Hit]:
        check_agent(agent)
        t = check_tier(tier).value
        check_k(k)
        flt = validate(filter)
        if not isinstance(text, str):
            raise ValidationError("search text must be a string")
        terms = quoted_terms(text)
        if not terms:
            return []
        return await self._read(lambda c: self._hits(c, agent, self._text_ids(c, agent, t, terms, k, flt)))

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
        check_agent(agent)
        t = check_tier(tier).value
        check_k(k)
        flt = validate(filter)
        if not isinstance(text, str):
            raise ValidationError("search text must be a string")
        if not 0.0 <= alpha <= 1.0:
            raise ValidationError("alpha must be within [0, 1]")
        q = None if vector is None else self._query_vector(vector)
        terms = quoted_terms(text)
        n = hybrid_candidates(k)

        def run(conn: sqlite3.Connection) -> list[Hit]:
            vec = dict(self._vector_ids(conn, agent, t, q, n, flt)) if q is not None else {}
            kw = dict(self._text_ids(conn, agent, t, terms, n, flt)) if terms else {}
            a = alpha if (vec and kw) else (1.0 if vec else 0.0)
            return self._hits(conn, agent, relative_score(vec, kw, a)[:k])

        return await self._read(run)
