"""The embedded default store: stdlib SQLite (WAL, FTS5) plus cosine search, exact (numpy) for
small tiers and HNSW (usearch, a cache beside the database, SQLite the truth) for big ones.

One process writes a store file at a time (an exclusive lock on a lock file and on the database
file's inode, so a symlink or hard link is the same store; a second writer gets ``StoreLocked``);
any number of readers (``open(read_only=True)``, in other processes) read beside it and see what it
committed.
Writes are serialised per store and applied in one transaction per unit; reads run on per-thread
connections so they never wait for a writer (WAL). SQLite and OS failures surface as
``StoreError`` children that say what to do (``sqlite_errors``: a full disk is ``StorageFull``, a
file that cannot be written ``StoreReadOnly``, another connection's write lock ``StoreLocked``).

The rooms: ``core`` (connections, transactions, close, compact), ``writes``, ``reads``, ``graph``,
``search``; argument checks live once in ``BaseStore``. Vectors: ``vector_options`` (every tuning
number), ``vector_codec`` and ``vector_schema`` (float16 at rest), ``vectors`` (exact),
``ann_index`` and ``ann_cache`` (approximate). This module opens the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from ...errors import NotFound, SchemaMismatch, StoreError, StoreLocked
from .core import close_all
from .graph import EmbeddedGraph
from .reads import EmbeddedReads
from .schema import check_fts5, check_readable, migrate
from .search import EmbeddedSearch
from .sqlite_errors import os_to_store_error, to_store_error
from .vector_options import EmbeddedVectorOptions
from .writes import EmbeddedWrites

try:  # POSIX advisory lock; on other platforms the lock is skipped (documented).
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]


#: The database files this process holds the write lock of (by device and inode, so a symlink or
#: hard link is the same file), each with its lock file's handle: closed once the store is closed.
_HELD_HERE: dict[tuple[int, int], Any] = {}


def _file_key(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _held_here(real: Path) -> bool:
    """Whether this process still holds the store at ``real`` open (a store it has not closed)."""
    try:
        handle = _HELD_HERE.get(_file_key(real))
    except OSError:
        return False
    return handle is not None and not handle.closed


def _locked(path: Path, real: Path) -> StoreLocked:
    """``StoreLocked`` for a store already open for writing: in this process or another one."""
    reader = (
        "to read it beside the writer, open it read-only: "
        '`Uniko.open(path, UnikoConfig.build({"store": {"embedded_read_only": True}}))` '
        "or `EmbeddedStore.open(path, read_only=True)`"
    )
    if _held_here(real):
        return StoreLocked(
            f"the store {path} is already open in this process (an earlier Uniko.open or "
            "KnowledgeBase.open that is not closed yet, perhaps through a symlink or hard link); use that "
            f"instance, or close it before opening the store again; {reader}"
        )
    return StoreLocked(
        f"the store {path} is open in another process; close it there first "
        f"(the embedded store has one writing process; a symlink or hard link to it is the same store); "
        f"{reader}"
    )


class EmbeddedStore(EmbeddedWrites, EmbeddedReads, EmbeddedGraph, EmbeddedSearch):
    """SQLite + FTS5 + numpy implementation of the ``Store`` protocol (see its score contract)."""

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        dim: int | None = None,
        vectors: EmbeddedVectorOptions | None = None,
        inline_reads: bool = True,
        read_only: bool = False,
        keyword_index: bool = True,
    ) -> EmbeddedStore:
        """Open (creating if needed) the store at ``path``; ``dim`` fixes the vector dimension,
        ``vectors`` tunes their format and search (``EmbeddedVectorOptions``; defaults if None). A
        schema-1 store (float32 vectors) is upgraded in place on open. ``inline_reads``: short
        reads run on the caller's thread (``EmbeddedCore._read``).

        ``read_only``: a reader beside the one process that writes the store (any number of
        them, in any processes): it takes no lock, never creates or upgrades the store, refuses
        every write with ``StoreReadOnly``, and sees what the writer committed (WAL) at its next
        read: its vector indexes are rebuilt and ``current_generation`` moves, so a recall cache
        keyed on it never serves an older result.

        ``keyword_index``: BM25 is computed over a RAM copy of the keyword table (the same scores
        as FTS5's, a fraction of the time on a large store), read in the background after the
        first keyword search (``keyword_index_ready`` builds it now); a reader never keeps one.
        False: FTS5 scores every query."""
        return await asyncio.to_thread(
            cls._open_sync, Path(path), dim, None, vectors, inline_reads, read_only, keyword_index
        )

    @classmethod
    async def in_memory(
        cls,
        *,
        dim: int | None = None,
        vectors: EmbeddedVectorOptions | None = None,
        inline_reads: bool = True,
        keyword_index: bool = True,
    ) -> EmbeddedStore:
        """A throw-away store in a temporary directory that is removed on ``close()``."""
        tmp = tempfile.mkdtemp(prefix="uniko-")
        return await asyncio.to_thread(
            cls._open_sync, Path(tmp) / "memory.db", dim, tmp, vectors, inline_reads, False, keyword_index
        )

    @classmethod
    def _open_sync(
        cls,
        path: Path,
        dim: int | None,
        tmpdir: str | None,
        vectors: EmbeddedVectorOptions | None = None,
        inline_reads: bool = True,
        read_only: bool = False,
        keyword_index: bool = True,
    ) -> EmbeddedStore:
        if read_only:
            return cls._open_reader(path, dim, vectors, inline_reads)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise os_to_store_error(exc, path, "creating its directory") from exc
        locks = cls._acquire_lock(path)
        try:
            store = cls(path, dim, tmpdir, vectors, inline_reads, keyword_index=keyword_index)
        except BaseException:
            close_all(locks)
            raise
        store._locks = locks
        try:
            check_fts5(store._writer)
            migrate(store._writer, store._vopts.storage)
            store._init_dim(dim)
        except sqlite3.Error as exc:
            store._close_sync()
            raise to_store_error(exc, path, "opening the store") from exc
        except SchemaMismatch as exc:
            store._close_sync()
            raise SchemaMismatch(f"{path}: {exc}") from exc
        except BaseException:
            store._close_sync()
            raise
        return store

    @classmethod
    def _open_reader(
        cls, path: Path, dim: int | None, vectors: EmbeddedVectorOptions | None, inline_reads: bool
    ) -> EmbeddedStore:
        if not path.is_file():
            raise NotFound(f"no store at {path} (a read-only open never creates one)")
        try:
            store = cls(path, dim, None, vectors, inline_reads, read_only=True)
        except StoreError as exc:
            raise type(exc)(f"opening {path} read-only: {exc}") from exc
        try:
            check_readable(store._writer)
            store._init_dim(dim)
        except sqlite3.Error as exc:
            store._close_sync()
            raise to_store_error(exc, path, "opening the store read-only") from exc
        except StoreError as exc:
            store._close_sync()
            raise type(exc)(f"{path}: {exc}") from exc
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
            close_all(handles)
            raise os_to_store_error(exc, path, "opening the database file") from exc
        for handle in handles:
            try:
                fcntl.flock(
                    handle if isinstance(handle, int) else handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB
                )
            except OSError:
                close_all(handles)
                raise _locked(path, real) from None
        for key in [k for k, held in _HELD_HERE.items() if held.closed]:
            del _HELD_HERE[key]
        with contextlib.suppress(OSError):
            _HELD_HERE[_file_key(real)] = handles[0]
        return handles

    @staticmethod
    def _open_db_file(real: Path) -> int:
        """A descriptor on the database file (created empty when new; SQLite takes an empty file as
        a new database). Read-only when the file cannot be written: reads are still served."""
        try:
            return os.open(real, os.O_RDWR | os.O_CREAT, 0o644)
        except PermissionError:
            return os.open(real, os.O_RDONLY)

    def _init_dim(self, dim: int | None) -> None:
        row = self._writer.execute("SELECT value FROM meta WHERE key='dim'").fetchone()
        stored = int(row[0]) if row else None
        if stored is not None and dim is not None and stored != dim:
            raise SchemaMismatch(f"the store holds {stored}-dimensional vectors, asked to open with {dim}")
        if stored is None and dim is not None and not self.read_only:
            self._writer.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('dim', ?)", (str(dim),))
        self._dim = stored if stored is not None else dim
