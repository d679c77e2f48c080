"""Raw ``sqlite3`` / OS errors of the embedded store mapped to ``StoreError`` children that say what to do.

SQLite reports a full disk (or an exhausted ``max_page_count``) as ``SQLITE_FULL``, a file it may
not write as ``SQLITE_READONLY`` (or ``SQLITE_CANTOPEN`` when it cannot even create the file), and
another connection's write lock as ``SQLITE_BUSY`` / ``SQLITE_LOCKED`` once ``busy_timeout`` ran
out. In each case the failed transaction is rolled back by the store, so the message can promise
that nothing acknowledged was lost.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from ...errors import StorageFull, StoreError, StoreLocked, StoreReadOnly


def _code(exc: sqlite3.Error) -> str:
    """The primary result code (``SQLITE_READONLY`` of ``SQLITE_READONLY_DIRECTORY``), or ''."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    if name:
        return "_".join(name.split("_")[:2])
    text = str(exc).lower()  # an error without a code: fall back on SQLite's message
    if "disk is full" in text:
        return "SQLITE_FULL"
    if "readonly" in text or "read-only" in text:
        return "SQLITE_READONLY"
    if "locked" in text:
        return "SQLITE_BUSY"
    return ""


def full(path: Path, detail: object) -> StorageFull:
    return StorageFull(
        f"the disk holding the store {path} is full ({detail}); the write was rolled back and nothing "
        "already stored was lost. Free disk space (or raise the quota), then retry the call"
    )


def read_only(path: Path, detail: object) -> StoreReadOnly:
    return StoreReadOnly(
        f"the store {path} is read-only ({detail}); writes are refused and nothing already stored was "
        "changed. Make the file, its directory and its -wal/-shm files writable by this user (or "
        "remount the disk read-write), then reopen the store"
    )


def to_store_error(exc: sqlite3.Error, path: Path, what: str) -> StoreError:
    """The ``StoreError`` child for a raw SQLite error raised while doing ``what``."""
    code = _code(exc)
    if code == "SQLITE_FULL":
        return full(path, exc)
    if code in ("SQLITE_READONLY", "SQLITE_PERM"):
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_DIRECTORY":
            return read_only(
                path, "its directory is not writable, so SQLite cannot create the -wal/-shm files"
            )
        return read_only(path, exc)
    if code in ("SQLITE_BUSY", "SQLITE_LOCKED"):
        return StoreLocked(
            f"the store {path} is locked by another connection ({exc}); {what} waited for it and "
            "gave up. Close the other program using the file (a sqlite3 shell, a backup tool, "
            "another uniko process opened without the lock file) and retry"
        )
    if code == "SQLITE_CANTOPEN":
        return StoreError(
            f"cannot open the store {path} ({exc}); check that the path exists and that its directory "
            "is writable by this user"
        )
    return StoreError(f"{what} failed on {path}: {exc}")


def os_to_store_error(exc: OSError, path: Path, what: str) -> StoreError:
    """The ``StoreError`` child for an OS error around the store files (its directory, lock file)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return full(path, exc.strerror or exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return read_only(path, f"{what}: {exc.strerror or exc}")
    return StoreError(f"{what} failed for the store {path}: {exc}")
