"""The ``vectors`` table (schema 2) and the migration of a schema-1 store into it.

Schema 1 keyed a vector by (agent, id) in a WITHOUT ROWID table with a (agent, tier) index: a
1,536-byte float32 row is too big for such a table's 4 KiB page, so each spilled into an overflow
page of its own (~4 KiB on disk per vector, 68 % of a 2,000-turn store). Schema 2 keys a vector by
its node's rowid in a rowid table: rows sit inline (five float16 rows a page), agent and tier come
from ``nodes``, and the rowid is the integer key an ANN index needs.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from .vector_codec import Storage, encode

VECTOR_TABLE = "CREATE TABLE IF NOT EXISTS vectors (node INTEGER PRIMARY KEY, vec BLOB NOT NULL)"


def migrate_v1_vectors(conn: sqlite3.Connection, storage: Storage) -> None:
    """Move schema 1's vectors into schema 2's table (re-encoded in ``storage``), in the caller's
    transaction. A vector whose node is gone is dropped (no search could return it)."""

    def convert(blob: bytes) -> bytes:  # schema 1 wrote float32 only
        return encode(np.frombuffer(blob, dtype=np.float32), storage) if storage != "float32" else blob

    conn.create_function("uniko_vec_convert", 1, convert, deterministic=True)
    conn.execute("DROP INDEX IF EXISTS vectors_tier")
    conn.execute("ALTER TABLE vectors RENAME TO vectors_v1")
    conn.execute(VECTOR_TABLE)
    conn.execute(
        "INSERT INTO vectors(node, vec) SELECT n.rowid, uniko_vec_convert(v.vec) FROM vectors_v1 v "
        "JOIN nodes n ON n.agent = v.agent AND n.id = v.id WHERE n.redacted = 0"
    )
    conn.execute("DROP TABLE vectors_v1")
