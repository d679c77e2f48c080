"""SQLite schema of the embedded store and the start-up checks that protect it."""

from __future__ import annotations

import sqlite3

from ...errors import SchemaMismatch, StoreError
from .vector_codec import Storage
from .vector_schema import VECTOR_TABLE, migrate_v1_vectors

SCHEMA_VERSION = "2"
#: Versions ``migrate`` upgrades in place: 1 -> 2 moved the vectors (``vector_schema``).
_UPGRADES = {"1"}

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    rowid INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    id TEXT NOT NULL,
    tier TEXT NOT NULL,
    session TEXT,
    participant TEXT,
    ts REAL,
    visibility TEXT NOT NULL DEFAULT 'public',
    redacted INTEGER NOT NULL DEFAULT 0,
    data TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS nodes_id ON nodes (agent, id);
CREATE INDEX IF NOT EXISTS nodes_tier_ts ON nodes (agent, tier, redacted, ts);
CREATE INDEX IF NOT EXISTS nodes_session ON nodes (agent, session, tier, redacted, id);
CREATE INDEX IF NOT EXISTS nodes_participant ON nodes (agent, participant, tier, redacted, id);
CREATE TABLE IF NOT EXISTS edges (
    agent TEXT NOT NULL,
    src TEXT NOT NULL,
    type TEXT NOT NULL,
    dst TEXT NOT NULL,
    props TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (agent, src, type, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_dst ON edges (agent, dst, type);
CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    agent TEXT NOT NULL, id TEXT NOT NULL, echo REAL NOT NULL DEFAULT 0, fizzle REAL NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed_at REAL, last_lex_share REAL,
    PRIMARY KEY(agent, id)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
"""


def check_fts5(conn: sqlite3.Connection) -> None:
    """Fail early, and say why, on a Python whose SQLite lacks FTS5."""
    try:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp._fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp._fts5_probe")
    except sqlite3.OperationalError as exc:
        raise StoreError(
            f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5, which the embedded store "
            "needs for BM25; use a CPython build with FTS5 (python.org, pyenv, conda and most "
            "Linux distributions have it)"
        ) from exc


def configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA temp_store=MEMORY")
    # Deleted and overwritten content is zeroed as it is freed: a forgotten turn leaves no bytes in
    # the file. The default of some SQLite builds (Debian's), not of all. Measured: +~50 us on a
    # ~200 us raw SQLite write unit; an observe (2-5 ms) showed no difference beyond its noise.
    conn.execute("PRAGMA secure_delete=ON")


def migrate(conn: sqlite3.Connection, storage: Storage = "float16") -> None:
    """Create the schema, or upgrade an older one in one transaction (``_UPGRADES``)."""
    conn.executescript(DDL)
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    if row is None:
        conn.execute(VECTOR_TABLE)
        conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', ?)", (SCHEMA_VERSION,))
        conn.commit()
    elif row[0] in _UPGRADES:
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate_v1_vectors(conn, storage)
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (SCHEMA_VERSION,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    elif row[0] != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"store schema version {row[0]} is not supported by this uniko-memory (expects {SCHEMA_VERSION})"
        )
