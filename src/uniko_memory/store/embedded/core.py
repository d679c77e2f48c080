"""The embedded store's plumbing: one writer connection, per-thread readers, close and compact.

Reads run on per-thread connections so they never wait for a writer (WAL); writes are serialised
by one lock and run in one ``BEGIN IMMEDIATE`` transaction each. The search, read, graph and write
rooms (``search``, ``reads``, ``graph``, ``writes``) build on ``EmbeddedCore``; ``EmbeddedStore``
joins them and owns opening.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ...errors import StoreReadOnly
from ...heap import malloc_trim
from ...model import Node, node_class
from ..base import BaseStore
from . import ann_cache
from .ann_index import AnnIndex, load_usearch
from .fts_hits import FtsHits
from .keyword_index import KeywordIndex
from .node_rows import full_json
from .schema import FTS_TOKENIZE, configure
from .sqlite_errors import to_store_error
from .unit import EmbeddedUnit
from .vector_options import EmbeddedVectorOptions
from .vectors import VectorIndex

T = TypeVar("T")
K = TypeVar("K", str, int)
_log = logging.getLogger(__name__)

#: Rows a vector tier is read in when its matrix is loaded.
_LOAD_BATCH = 4096
#: Loading a tier at least this large hands the freed row buffers back to the OS.
_TRIM_AFTER_ROWS = 20_000
#: How long a search waits for the write lock to begin the keyword index's copy (a commit's length;
#: else the next search begins it).
_KEYWORD_START_WAIT_S = 0.05
#: Ids per ``IN (...)`` list: far below SQLite's bound-parameter limit.
BATCH = 500
#: ``(agent, tier, node id, node rowid, vector or None = removed)``: a commit's changes to the RAM
#: indexes (the rowid is the key of an ANN index).
VectorChange = tuple[str, str, str, int, np.ndarray | None]
#: The columns a node is decoded from (``EmbeddedCore._decode``), for ``SELECT``.
NODE_FIELDS = "tier, data, id, visibility, redacted"
NODE_FIELDS_N = "n.tier, n.data, n.id, n.visibility, n.redacted"
#: One (agent, tier)'s RAM index: exact below ``EmbeddedVectorOptions.exact_below``, ANN above.
AnyIndex = VectorIndex | AnnIndex


def close_all(handles: Sequence[Any]) -> None:
    """Close file objects and descriptors, ignoring the ones already gone."""
    for handle in handles:
        with contextlib.suppress(OSError):
            os.close(handle) if isinstance(handle, int) else handle.close()


def chunks(items: Sequence[K], size: int = BATCH) -> list[Sequence[K]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class EmbeddedCore(BaseStore[EmbeddedUnit]):
    """Connections, transactions, close and compact, shared by every room of the embedded store."""

    def __init__(
        self,
        path: Path,
        dim: int | None,
        tmpdir: str | None,
        vectors: EmbeddedVectorOptions | None = None,
        inline_reads: bool = True,
        read_only: bool = False,
        keyword_index: bool = True,
    ) -> None:
        super().__init__(dim)
        #: Opened as a reader beside the one writer process (``EmbeddedStore.open(read_only=True)``).
        self.read_only = read_only
        #: Commits of other processes seen so far (``PRAGMA data_version`` changes): part of
        #: ``current_generation``, so this process's recall cache never serves an older result.
        self._external = 0
        self._data_version: int | None = None
        #: Reads run on the calling thread (see ``_read``); False sends each to a worker thread.
        self.inline_reads = inline_reads
        self.path = path
        self._tmpdir = tmpdir
        self._vopts = vectors or EmbeddedVectorOptions()
        #: Where ANN graphs are cached (None: rebuilt in RAM at each open; a throw-away store's too).
        self._ann_dir = ann_cache.cache_dir(path) if self._vopts.ann_cache and tmpdir is None else None
        #: Agents whose cached graphs are known to be off the disk (removed before a write).
        self._ann_dropped: set[str] = set()
        self._wlock = threading.Lock()
        self._idx_lock = threading.Lock()
        #: Held through ``_close_sync``; ``_released`` once it has run (see there).
        self._close_lock = threading.Lock()
        self._released = False
        self._readers: list[sqlite3.Connection] = []
        #: Reads in flight; close waits for them (closing a connection under a running query crashes).
        self._reading = 0
        self._reads_done = threading.Condition()
        self._local = threading.local()
        #: Commits of this process that may change nodes, edges or the keyword index (not usage
        #: counts or meta): the search memos' version, so a recall's own usage write does not
        #: throw away what the next recall can reuse.
        self._content_writes = 0
        #: BM25 over a RAM copy of the keyword table (``keyword_index``): only in the process that
        #: writes the store, which sees every change to it. None: FTS5 scores each query.
        self._keywords = KeywordIndex(FTS_TOKENIZE) if keyword_index and not read_only else None
        #: This transaction's keyword rows (rowid, new text or None), for ``_keywords`` at commit.
        self._fts_changes: list[tuple[int, str | None]] = []
        #: Scored keyword matches per reader connection and query (``fts_hits``).
        self._fts_hits = FtsHits(self._memo_version, self._keyword_ranked if self._keywords else None)
        self._indexes: dict[tuple[str, str], AnyIndex] = {}
        self._locks: list[Any] = []
        self._writer = self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = None
        try:
            # The real path: a symlink's -wal and -shm files are its target's.
            options: dict[str, Any] = {"check_same_thread": False, "isolation_level": None, "timeout": 5.0}
            if self.read_only:  # SQLite itself refuses every write on such a connection
                conn = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, **options)
            else:
                conn = sqlite3.connect(self.path.resolve(), **options)
            configure(conn, read_only=self.read_only)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise to_store_error(exc, self.path, "opening a connection") from exc
        return conn

    # ------------------------------------------------------------------ close and compact
    async def _close(self) -> None:
        await asyncio.to_thread(self._close_sync)

    def _close_sync(self) -> None:
        """Close once. ``close()`` checks ``_closed`` before this thread sets it, so two closes at
        once (two tasks, two threads) both arrive here: the second waits for the first and does
        nothing. Run twice, it closed the database file's descriptor twice, and the second
        ``os.close`` hit whatever file the process had opened under that number meanwhile (another
        store's connection, its WAL): SQLite then reads and writes a file it does not own, one way
        a live store can end up "malformed" (issue 40)."""
        with self._close_lock:
            if self._released:
                return
            try:
                self._release()
            finally:
                self._released = True

    def _release(self) -> None:
        with self._reads_done:
            self._closed = True  # no read starts after this
            self._reads_done.wait_for(lambda: self._reading == 0)
        if self._keywords is not None:
            self._keywords.close()  # its snapshot connection is closed before the file locks go
        with self._wlock:
            self._save_ann_graphs()
            for conn in [*self._readers, self._writer]:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._readers.clear()
        # Only after every SQLite connection is closed: closing another descriptor on the database
        # file drops this process's POSIX locks on it, which SQLite relies on while a connection is open.
        locks, self._locks = self._locks, []
        close_all(locks)
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)

    async def _compact(self, *, full: bool) -> None:
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
                    self._content_writes += 1  # VACUUM may renumber rows
                    if self._keywords is not None:
                        self._keywords.reset()
                    self._writer.execute("VACUUM")
                busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise to_store_error(exc, self.path, "a checkpoint") from exc
        if busy:  # a reader outlasted the busy timeout: the WAL is truncated at the next checkpoint
            _log.warning("the WAL of %s could not be truncated: a read held it", self.path)

    # ------------------------------------------------------------------ ANN cache files
    def _save_ann_graphs(self) -> None:
        """Write the ANN graphs in RAM whose files are gone (a write changed the agent) or missing,
        under the write lock (no commit in flight); not one that forgot a node (its removed vector
        would reach the disk). A failure only costs a rebuild at the next open."""
        if self._ann_dir is None or self.read_only:
            return
        with self._idx_lock:
            graphs = [(key, idx) for key, idx in self._indexes.items() if isinstance(idx, AnnIndex)]
        for (agent, tier), idx in graphs:
            if agent not in self._ann_dropped and ann_cache.exists(self._ann_dir, agent, tier):
                continue  # unchanged since it was loaded or built and saved
            if idx.forgot:
                continue  # it still holds a forgotten vector's bytes: rebuilt from SQLite instead
            self._save_graph(self._writer, agent, tier, idx)

    def _save_graph(self, conn: sqlite3.Connection, agent: str, tier: str, idx: AnnIndex) -> None:
        """Cache one graph; a failure (a read-only directory, a full disk) is only logged."""
        if self._ann_dir is None or self.read_only:  # the writer owns the cache files
            return
        try:
            if ann_cache.save(conn, self._ann_dir, agent, tier, idx, self._vopts):
                self._ann_dropped.discard(agent)
        except (OSError, RuntimeError, sqlite3.Error) as exc:
            _log.warning(
                "the ANN cache of %s could not be written (%s); it is rebuilt at the next open",
                self.path,
                exc,
            )

    def _drop_ann_files(self, conn: sqlite3.Connection, agent: str) -> None:
        """At the start of a write that may change ``agent``'s vectors (inside its transaction, so
        SQLite still matches the files): graphs cached on disk but not loaded are loaded first (the
        write then keeps them in step and close saves them: no rebuild), then the files go."""
        if self._ann_dir is None or agent in self._ann_dropped:
            return
        for tier in ann_cache.cached_tiers(self._ann_dir, agent):
            self._index(conn, agent, tier)
        ann_cache.drop_agent(self._ann_dir, agent)
        self._ann_dropped.add(agent)

    def _index(self, conn: sqlite3.Connection, agent: str, tier: str) -> AnyIndex | None:
        key = (agent, tier)
        idx = self._indexes.get(key)
        if idx is not None:  # loaded: no lock (another tier may be building under it for a while)
            return idx
        with self._idx_lock:
            idx = self._indexes.get(key)
            if idx is not None or self._dim is None:
                return idx
            idx = self._load_index(conn, agent, tier, self._dim)
            self._indexes[key] = idx
            return idx

    def _load_index(self, conn: sqlite3.Connection, agent: str, tier: str, dim: int) -> AnyIndex:
        """Exact below ``exact_below`` rows (or without usearch); else the cached graph if it
        matches SQLite, or one built from SQLite now (and cached)."""
        o = self._vopts
        n = ann_cache.fingerprint(conn, agent, tier)[0]
        if n >= o.exact_below and n > 0 and load_usearch() is not None:
            ann = ann_cache.load(conn, self._ann_dir, agent, tier, dim, o) if self._ann_dir else None
            if ann is None:
                ann = ann_cache.build(conn, agent, tier, dim, o)
                self._save_graph(conn, agent, tier, ann)
            return ann
        cur = conn.execute(
            "SELECT n.rowid, n.id, v.vec FROM nodes n JOIN vectors v ON v.node = n.rowid "
            "WHERE n.agent=? AND n.tier=? AND n.redacted=0",
            (agent, tier),
        )
        idx = VectorIndex.load(dim, iter(lambda: cur.fetchmany(_LOAD_BATCH), []), n, int8=o.storage == "int8")
        if n >= _TRIM_AFTER_ROWS:
            malloc_trim()  # the batches' bytes were freed into the heap: give them back
        return idx

    # ------------------------------------------------------------------ reads and writes
    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._wlock:
                self._readers.append(conn)
        return conn

    async def _read(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True) -> T:
        """Run a read on this thread's connection (WAL: it never waits for the writer).

        A read runs on the calling thread when ``inline_reads`` is on and the caller says it is
        short (``inline``): most reads take 0.05-2 ms, less than the thread hop and the GIL
        hand-over that would carry them (a recall makes ~25; CPU per recall -15 %, identical
        results). A read that may load or build a vector index (the first search of an agent's
        tier) still goes to a worker thread, so the event loop is never held for long.
        """
        self._check_open()

        def run() -> T:
            with self._reads_done:
                self._check_open()
                self._reading += 1
            try:
                if self.read_only:
                    self._see_external_commits()
                return fn(self._reader())
            except sqlite3.Error as exc:
                raise to_store_error(exc, self.path, "a read") from exc
            finally:
                with self._reads_done:
                    self._reading -= 1
                    self._reads_done.notify_all()

        if inline and self.inline_reads:
            return run()
        return await asyncio.to_thread(run)

    def _see_external_commits(self) -> None:
        """A reader: when another process committed since the last look, drop the vector indexes
        built before it (rebuilt from SQLite at the next search) and move ``current_generation``."""
        with self._wlock:
            version = int(self._writer.execute("PRAGMA data_version").fetchone()[0])
            if self._data_version is None:
                self._data_version = version
                return
            if version == self._data_version:
                return
            self._data_version = version
        with self._idx_lock:
            self._indexes.clear()
        self._external += 1

    async def current_generation(self, agent: str) -> int:
        """This process's generation for ``agent``, plus (a reader) the commits of the writer
        process seen so far: a recall cached before one of them is not served after it."""
        if self.read_only and not self._closed:
            await self._read(lambda conn: None)
        return self.generation(agent) + self._external

    def _memo_version(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """What a search memo is valid for: this process's content commits and, for a reader
        beside another process, that process's commits (``PRAGMA data_version``)."""
        external = int(conn.execute("PRAGMA data_version").fetchone()[0]) if self.read_only else 0
        return self._content_writes, external

    async def _write(self, fn: Callable[[sqlite3.Connection], T], *, content: bool = True) -> T:
        """Run ``fn`` in one write transaction. ``content=False``: it touches only usage counts
        or meta, which no search memo depends on."""
        self._check_open()
        if self.read_only:
            raise StoreReadOnly(
                f"the store {self.path} was opened read-only (a reader beside the process that writes it); "
                "send writes to that process (e.g. its MCP server), or open the store read-write once no "
                "other process holds it"
            )

        def run() -> T:
            with self._wlock:
                self._check_open()
                conn = self._writer
                self._fts_changes = []
                committing = False
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                        committing = True
                        conn.execute("COMMIT")
                        # Before the version moves: a search memo keyed by the new version never
                        # holds a score from the copy as it was before this commit.
                        self._keywords_follow()
                    finally:
                        # (also after a failure: a transaction that went half-way is not trusted)
                        self._content_writes += content
                    return result
                except BaseException as exc:
                    if committing and self._fts_changes and self._keywords is not None:
                        # A failed COMMIT: whether the rows reached the file is not known. (A
                        # failure before it rolls back what the copy never saw: nothing to undo.)
                        self._keywords.reset()
                    if conn.in_transaction:
                        # SQLite may have rolled back already (SQLITE_FULL, SQLITE_IOERR): the
                        # original error is the one worth reporting, not a failed ROLLBACK.
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    if isinstance(exc, sqlite3.Error):
                        raise to_store_error(exc, self.path, "a write") from exc
                    raise

        return await asyncio.to_thread(run)

    # ------------------------------------------------------------------ the keyword index's copy
    def _fts_put(self, conn: sqlite3.Connection, rowid: int, text: str | None) -> None:
        """Replace (text None: delete) one keyword row, inside a write; the RAM copy follows at commit."""
        conn.execute("DELETE FROM fts WHERE rowid=?", (rowid,))
        if text is not None:
            conn.execute("INSERT INTO fts(rowid, text) VALUES(?, ?)", (rowid, text))
        self._fts_changes.append((rowid, text))

    def _keywords_follow(self) -> None:
        """After a commit (under the write lock): the committed keyword rows into the RAM copy."""
        changes, self._fts_changes = self._fts_changes, []
        if self._keywords is None or not changes:
            return
        try:
            self._keywords.apply(changes)
        except Exception as exc:  # the write is committed: never report it failed, never score stale
            _log.warning(
                "the keyword index copy was dropped (%s); it is rebuilt from SQLite", type(exc).__name__
            )
            self._keywords.reset()

    def _keyword_ranked(self, conn: sqlite3.Connection, match: str) -> list[tuple[float, int]] | None:
        """FTS5's (bm25, rowid) list for ``match`` from the RAM copy; None: let SQL score it (no
        copy, or the first ask: it begins the copy in the background, and FTS5 scores meanwhile)."""
        keywords = self._keywords
        if keywords is None:
            return None
        if not keywords.ready:
            if not self._closed:
                keywords.start(self._connect, self._wlock, wait_s=_KEYWORD_START_WAIT_S)
            return None
        return keywords.ranked(match)

    async def keyword_index_ready(self, timeout: float | None = None) -> bool:
        """Build the keyword index's RAM copy now (``StoreConfig.embedded_keyword_index``) and
        wait up to ``timeout`` seconds (None: until it is in); True when BM25 is scored from it.
        The first keyword search begins it anyway: this is for a server that wants it before its
        first question, and for benchmarks that must not time its build. False on a store without
        one (turned off, or opened read-only)."""
        keywords = self._keywords
        if keywords is None:
            return False
        self._check_open()
        if not keywords.ready:
            await asyncio.to_thread(keywords.start, self._connect, self._wlock, wait_s=timeout or 3600.0)
        return await asyncio.to_thread(keywords.wait, timeout)

    @staticmethod
    def _decode(agent: str, row: Sequence[Any]) -> Node:
        """A node from its row: ``NODE_FIELDS`` in order (the agent is the one asked for)."""
        tier, data, node_id, visibility, redacted = row
        return node_class(tier).model_validate_json(full_json(data, node_id, agent, visibility, redacted))
