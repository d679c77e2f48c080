"""SQLite schema of the embedded store and the start-up checks that protect it."""

from __future__ import annotations

import sqlite3

from ...errors import SchemaMismatch, StoreError
from .edge_schema import EDGE_TABLES, migrate_v2_edges
from .vector_codec import Storage
from .vector_schema import VECTOR_TABLE, migrate_v1_vectors

SCHEMA_VERSION = "3"
#: Versions ``migrate`` upgrades in place: 1 -> 2 moved the vectors (``vector_schema``), 2 -> 3
#: the edges (``edge_schema``).
_UPGRADES = {"1", "2"}

#: The session and participant indexes (schema 3): only the rows that have one (a Fact or an
#: Entity has neither), and no id column (the rowid finds the row; schema 2 also held the id, ~36
#: bytes an entry). A query's ``session = ?`` / ``IN (...)`` implies ``IS NOT NULL``, so SQLite
#: uses them as before.
#: The columns with such an index: an equality on one selects few rows (``reads`` plans by it).
SCOPE_COLUMNS = ("session", "participant")
NODE_SCOPE_INDEXES = "".join(
    f"\nCREATE INDEX IF NOT EXISTS nodes_{col} ON nodes (agent, {col}, tier, redacted) WHERE {col} IS NOT NULL;"
    for col in SCOPE_COLUMNS
)

#: A node's creation instant as ``sql_filter`` writes a ``Range`` on ``created_at`` (the very
#: expression, so SQLite uses ``nodes_created`` for it): consolidation's scan for what was observed
#: since its last cycle reads the new rows, not every Observation's JSON (~320 ms a cycle at
#: 200,000 turns). Added to a schema-3 store the first time it is opened for writing.
CREATED_AT_SQL = "julianday(json_extract(data, '$.created_at'))"

#: The keyword table's tokenizer (``keyword_index`` tokenises new rows with the same one).
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"

DDL = (
    """
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
    data TEXT NOT NULL,
    chunk_type TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS nodes_id ON nodes (agent, id);
CREATE INDEX IF NOT EXISTS nodes_tier_ts ON nodes (agent, tier, redacted, ts);
CREATE INDEX IF NOT EXISTS nodes_created ON nodes (agent, tier, """
    + CREATED_AT_SQL
    + """);
CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage (
    agent TEXT NOT NULL, id TEXT NOT NULL, echo REAL NOT NULL DEFAULT 0, fizzle REAL NOT NULL DEFAULT 0,
    access_count INTEGER NOT NULL DEFAULT 0, last_accessed_at REAL, last_lex_share REAL,
    PRIMARY KEY(agent, id)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, tokenize = '"""
    + FTS_TOKENIZE
    + """');
"""
    + NODE_SCOPE_INDEXES
    + EDGE_TABLES
)


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


def configure(conn: sqlite3.Connection, *, read_only: bool = False) -> None:
    if not read_only:  # a reader finds the store in WAL mode (the writer set it once)
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA temp_store=MEMORY")
    # Deleted and overwritten content is zeroed as it is freed: a forgotten turn leaves no bytes in
    # the file. The default of some SQLite builds (Debian's), not of all. Measured: +~50 us on a
    # ~200 us raw SQLite write unit; an observe (2-5 ms) showed no difference beyond its noise.
    conn.execute("PRAGMA secure_delete=ON")


def upgrade_needed(version: str) -> SchemaMismatch:
    return SchemaMismatch(
        f"the store is schema {version}, which this uniko-memory upgrades to schema {SCHEMA_VERSION} "
        "in place the first time it opens it with write access; it could not write it now (read-only). "
        "Open it once read-write (for example `uniko stats PATH` as a user who can write the file and "
        "its directory), then read-only as before. Nothing was changed"
    )


def check_readable(conn: sqlite3.Connection) -> None:
    """For a read-only open: the schema must be this version's (a reader never upgrades)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        row = None
    if row is None:
        raise StoreError("not a uniko-memory store (no schema): a read-only open never creates one")
    if row[0] in _UPGRADES or not has_node_columns(conn):
        raise upgrade_needed(row[0])
    if row[0] != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"store schema version {row[0]} is not supported by this uniko-memory (expects {SCHEMA_VERSION})"
        )


#: Node fields kept in a column of their own as well as in the row's JSON (filtered on by every
#: recall: ``json_extract`` parses a chunk's whole JSON, ~2.5 KB, for each row it tests). Each is
#: named in ``sql_filter`` and written by ``EmbeddedWrites._put_node``.
NODE_FIELD_COLUMNS = ("chunk_type",)
#: The chunk channels' admitted rows from the index alone (a chunk's row is ~2.5 KB, its last
#: column behind overflow pages); only rows with a chunk type.
NODE_FIELD_INDEX = (
    "CREATE INDEX IF NOT EXISTS nodes_chunk_type ON nodes (agent, tier, chunk_type, redacted, id) "
    "WHERE chunk_type IS NOT NULL"
)


def has_node_columns(conn: sqlite3.Connection) -> bool:
    return {r[1] for r in conn.execute("PRAGMA table_info(nodes)")} >= set(NODE_FIELD_COLUMNS)


def add_node_columns(conn: sqlite3.Connection) -> None:
    """Schema 2 (and early schema 3) rows gain ``NODE_FIELD_COLUMNS``, filled from their JSON."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(nodes)")}
    for name in NODE_FIELD_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE nodes ADD COLUMN {name} TEXT")
            conn.execute(f"UPDATE nodes SET {name} = json_extract(data, '$.{name}') WHERE tier = 'chunk'")
    conn.execute(NODE_FIELD_INDEX)


def _has_index(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type='index' AND name=?", (name,)).fetchone()
        is not None
    )


def _stored_version(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return None if row is None else str(row[0])


def migrate(conn: sqlite3.Connection, storage: Storage = "float16") -> None:
    """Create the schema, or upgrade an older one in one transaction (``_UPGRADES``). An older
    store's tables are created inside that transaction, so a store that cannot be written (a
    read-only file) is left as it was and says how to upgrade it."""
    version = _stored_version(conn)
    if version is None or version == SCHEMA_VERSION:
        conn.executescript(DDL)  # a new store's tables; on this version's store, no-ops
    if version == SCHEMA_VERSION and not (has_node_columns(conn) and _has_index(conn, "nodes_chunk_type")):
        conn.execute("BEGIN IMMEDIATE")
        try:
            add_node_columns(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if version else None
    if row is None:
        conn.execute(VECTOR_TABLE)
        conn.execute(NODE_FIELD_INDEX)
        conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', ?)", (SCHEMA_VERSION,))
        conn.commit()
    elif row[0] in _UPGRADES:
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in DDL.split(";"):  # not executescript: it would commit
                if statement.strip():
                    conn.execute(statement)
            if row[0] == "1":
                migrate_v1_vectors(conn, storage)
            migrate_v2_edges(conn)
            add_node_columns(conn)
            for name in ("nodes_session", "nodes_participant"):
                conn.execute(f"DROP INDEX IF EXISTS {name}")
            for statement in NODE_SCOPE_INDEXES.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (SCHEMA_VERSION,))
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc).lower():
                raise upgrade_needed(row[0]) from exc
            raise
    elif row[0] != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"store schema version {row[0]} is not supported by this uniko-memory (expects {SCHEMA_VERSION})"
        )
