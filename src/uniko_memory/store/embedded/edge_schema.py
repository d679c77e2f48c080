"""The ``edges`` table (schema 3): integer ends and types, and the migration of schema 2's edges.

Schema 2 keyed an edge by four strings, ``(agent, src, type, dst)``, in the table and again in
its ``dst`` index: ~190 bytes an edge, and a chat turn carries about eleven edges (sender,
session, next turn, mentions, observations...), so edges took 30 % of a store. Schema 3 interns
each (agent, id) end once in ``keys`` and writes an edge as three small integers: the table and
its index hold ~25 bytes an edge. ``keys`` holds ends, not nodes (an edge may name a node that is
not stored yet, as the protocol allows); deleting a node deletes its edges and its key, so a
forgotten node's id does not stay behind.

An edge type is stored as its code in ``EDGE_TYPE_CODES``: codes are part of the file format, so
one is never reused or renumbered (a test pins them); a new ``EdgeType`` gets the next free code.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ...errors import SchemaMismatch
from ...model import EdgeType

#: The stored code of every edge type. Append only (see the module docstring).
EDGE_TYPE_CODES: dict[EdgeType, int] = {
    EdgeType.MENTIONS: 1,
    EdgeType.IN_SESSION: 2,
    EdgeType.NEXT: 3,
    EdgeType.SENT_BY: 4,
    EdgeType.ADDRESSED_TO: 5,
    EdgeType.PARTICIPATED_IN: 6,
    EdgeType.OBSERVED_IN: 7,
    EdgeType.ABOUT: 8,
    EdgeType.SUPPORTED_BY: 9,
    EdgeType.INVALIDATES: 10,
    EdgeType.BELONGS_TO: 11,
    EdgeType.HAS_CHUNK: 12,
    EdgeType.HAS_CONTENT: 13,
    EdgeType.ATTACHED_TO: 14,
    EdgeType.RECORDED_BY: 15,
    EdgeType.FOLLOWED_BY: 16,
    EdgeType.INVOLVES: 17,
    EdgeType.SUMMARIZES: 18,
    EdgeType.MEMBER_OF: 19,
    EdgeType.PROCESSED: 20,
    EdgeType.CREATED: 21,
    EdgeType.REINFORCED: 22,
    EdgeType.INVALIDATED: 23,
    EdgeType.INVOLVED: 24,
    EdgeType.PROMOTED: 25,
    EdgeType.RESTATED_IN: 26,
    EdgeType.SUPERSEDED_BY: 27,
}
#: Code -> type, for rows read back.
EDGE_TYPE_OF_CODE: dict[int, EdgeType] = {code: t for t, code in EDGE_TYPE_CODES.items()}

EDGE_TABLES = """
CREATE TABLE IF NOT EXISTS keys (k INTEGER PRIMARY KEY, agent TEXT NOT NULL, id TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS keys_id ON keys (agent, id);
CREATE TABLE IF NOT EXISTS edges (
    src INTEGER NOT NULL,
    type INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    props TEXT,
    PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_dst ON edges (dst, type);
"""


def type_code(t: EdgeType | str) -> int:
    """The stored code of an edge type (``SchemaMismatch`` for a type this file format lacks)."""
    try:
        return EDGE_TYPE_CODES[EdgeType(t)]
    except (KeyError, ValueError):
        raise SchemaMismatch(f"edge type {t!r} has no stored code in this uniko-memory") from None


def type_codes(types: Iterable[str]) -> list[int]:
    """Codes of the known types among ``types`` (a type never stored matches no edge)."""
    out = []
    for t in types:
        try:
            out.append(EDGE_TYPE_CODES[EdgeType(t)])
        except (KeyError, ValueError):
            continue
    return out


def props_column(props: str) -> str | None:
    """An edge's props as stored: NULL for the common empty mapping."""
    return None if props == "{}" else props


def key_of(conn: sqlite3.Connection, agent: str, node_id: str) -> int | None:
    row = conn.execute("SELECT k FROM keys WHERE agent=? AND id=?", (agent, node_id)).fetchone()
    return None if row is None else int(row[0])


def key_for(conn: sqlite3.Connection, agent: str, node_id: str, cache: dict[str, int]) -> int:
    """The key of (agent, node_id), interned when new; ``cache`` holds one transaction's keys."""
    k = cache.get(node_id)
    if k is None:
        k = key_of(conn, agent, node_id)
        if k is None:
            cur = conn.execute("INSERT INTO keys(agent, id) VALUES(?, ?)", (agent, node_id))
            k = int(cur.lastrowid or 0)
        cache[node_id] = k
    return k


def _code_or_none(t: str) -> int | None:
    try:
        return EDGE_TYPE_CODES.get(EdgeType(t))
    except ValueError:
        return None


def migrate_v2_edges(conn: sqlite3.Connection) -> None:
    """Rewrite schema 2's string-keyed edges as schema 3's, in the caller's transaction."""
    conn.create_function("uniko_edge_code", 1, _code_or_none, deterministic=True)
    conn.execute("DROP INDEX IF EXISTS edges_dst")
    conn.execute("ALTER TABLE edges RENAME TO edges_v2")
    for statement in EDGE_TABLES.split(";"):  # not executescript: it would commit the transaction
        if statement.strip():
            conn.execute(statement)
    conn.execute(
        "INSERT OR IGNORE INTO keys(agent, id) SELECT agent, src FROM edges_v2 UNION SELECT agent, dst FROM edges_v2"
    )
    unknown = conn.execute(
        "SELECT DISTINCT type FROM edges_v2 WHERE uniko_edge_code(type) IS NULL"
    ).fetchall()
    if unknown:
        raise SchemaMismatch(f"the store holds edge types this uniko-memory does not know: {unknown}")
    conn.execute(
        "INSERT INTO edges(src, type, dst, props) "
        "SELECT ks.k, uniko_edge_code(e.type), kd.k, NULLIF(e.props, '{}') FROM edges_v2 e "
        "JOIN keys ks ON ks.agent = e.agent AND ks.id = e.src "
        "JOIN keys kd ON kd.agent = e.agent AND kd.id = e.dst"
    )
    conn.execute("DROP TABLE edges_v2")
