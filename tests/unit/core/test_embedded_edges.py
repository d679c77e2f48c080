"""The embedded store's integer-keyed edges (schema 3, issue 20.4): the stored type codes, the
2 -> 3 upgrade (the same neighbours before and after), and a deleted node taking its key along.

Every store here is a real ``EmbeddedStore`` on disk.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conformance.corpus import entity, message, observation
from uniko_memory.model import Direction, Edge, EdgeType
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.embedded.edge_schema import EDGE_TYPE_CODES

AGENT = "agent-e"
OTHER = "agent-f"
DIM = 8

SCHEMA_2_EDGES = """
CREATE TABLE edges (
    agent TEXT NOT NULL,
    src TEXT NOT NULL,
    type TEXT NOT NULL,
    dst TEXT NOT NULL,
    props TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (agent, src, type, dst)
) WITHOUT ROWID;
CREATE INDEX edges_dst ON edges (agent, dst, type);
"""


def downgrade_edges_to_schema_2(conn: sqlite3.Connection) -> None:
    """Rewrite schema 3's edges as schemas 1 and 2 stored them: four strings an edge."""
    code_to_name = {code: t.value for t, code in EDGE_TYPE_CODES.items()}
    rows = conn.execute(
        "SELECT ks.agent, ks.id, e.type, kd.id, coalesce(e.props, '{}') FROM edges e "
        "JOIN keys ks ON ks.k = e.src JOIN keys kd ON kd.k = e.dst"
    ).fetchall()
    conn.execute("DROP TABLE edges")
    conn.execute("DROP TABLE keys")
    conn.executescript(SCHEMA_2_EDGES)
    conn.executemany(
        "INSERT INTO edges VALUES (?,?,?,?,?)", [(a, s, code_to_name[t], d, p) for a, s, t, d, p in rows]
    )


def test_every_edge_type_has_a_unique_stored_code() -> None:
    assert set(EDGE_TYPE_CODES) == set(EdgeType)
    assert len(set(EDGE_TYPE_CODES.values())) == len(EDGE_TYPE_CODES)
    # Codes are the file format: these never change (a new type takes a new code).
    assert EDGE_TYPE_CODES[EdgeType.MENTIONS] == 1 and EDGE_TYPE_CODES[EdgeType.PROMOTED] == 25


async def _graph(store: EmbeddedStore) -> list[str]:
    m1, m2 = message(AGENT, "e1", "Alice moved to Porto"), message(AGENT, "e2", "She loves it")
    alice = entity(AGENT, "Alice", "PERSON")
    obs = observation(AGENT, "e-o1", "Alice lives in Porto", message_id=m1.id)
    async with store.unit(AGENT) as u:
        for n in (m1, m2, alice, obs):
            u.put(n)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=m1.id, dst=alice.id, props={"count": 2}))
        u.put_edge(Edge(type=EdgeType.NEXT, src=m1.id, dst=m2.id, props={"gap_ms": 5}))
        u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=m1.id))
        u.put_edge(Edge(type=EdgeType.ABOUT, src=obs.id, dst="ent-not-stored-yet"))
    other = message(OTHER, "e1", "Alice moved to Porto")
    async with store.unit(OTHER) as u:
        u.put(other)
        u.put_edge(Edge(type=EdgeType.NEXT, src=other.id, dst=m2.id))
    return [m1.id, m2.id, alice.id, obs.id, "ent-not-stored-yet"]


async def _all_edges(store: EmbeddedStore, agent: str, ids: list[str]) -> list[Edge]:
    return await store.neighbors(agent, ids, direction=Direction.BOTH)


async def test_a_schema_2_store_is_upgraded_with_the_same_edges(tmp_path: Path) -> None:
    db = tmp_path / "v2.db"
    store = await EmbeddedStore.open(db, dim=DIM)
    ids = await _graph(store)
    before = await _all_edges(store, AGENT, ids)
    before_other = await _all_edges(store, OTHER, [*ids, message(OTHER, "e1", "x").id])
    await store.close()
    with sqlite3.connect(db) as conn:
        downgrade_edges_to_schema_2(conn)
        conn.execute("DROP INDEX nodes_session")  # schema 2's index, with the id
        conn.execute("CREATE INDEX nodes_session ON nodes (agent, session, tier, redacted, id)")
        conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")

    store = await EmbeddedStore.open(db, dim=DIM)
    assert await store.get_meta("schema_version") == "3"
    assert await _all_edges(store, AGENT, ids) == before
    assert await _all_edges(store, OTHER, [*ids, message(OTHER, "e1", "x").id]) == before_other
    assert len(before) == 4 and len(before_other) == 1
    await store.close()
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "edges_v2" not in tables
        cols = [r[1] for r in conn.execute("PRAGMA table_info(edges)")]
        assert cols == ["src", "type", "dst", "props"]
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='nodes_session'").fetchone()[0]
        assert "WHERE session IS NOT NULL" in sql and "id)" not in sql


async def test_a_deleted_node_takes_its_edges_and_its_key(tmp_path: Path) -> None:
    db = tmp_path / "del.db"
    store = await EmbeddedStore.open(db, dim=DIM)
    m1, _m2, _alice, obs, _ = await _graph(store)
    assert await store.delete(AGENT, [m1]) == 1
    assert await store.neighbors(AGENT, [m1], direction=Direction.BOTH) == []
    assert [e.type for e in await store.neighbors(AGENT, [obs])] == [EdgeType.ABOUT]
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM keys WHERE id=?", (m1,)).fetchone() == (0,)
        # The other agent's edge to the same-named node id is its own.
        assert conn.execute("SELECT count(*) FROM edges").fetchone() == (2,)


async def test_an_edge_type_filter_with_no_stored_type_matches_nothing(tmp_path: Path) -> None:
    store = await EmbeddedStore.open(tmp_path / "f.db", dim=DIM)
    m1, *_ = await _graph(store)
    assert await store.neighbors(AGENT, [m1], [EdgeType.PROMOTED]) == []
    assert [e.type for e in await store.neighbors(AGENT, [m1], [EdgeType.NEXT, EdgeType.PROMOTED])] == [
        EdgeType.NEXT
    ]
    await store.close()


# ------------------------------------------------------------------ the row's JSON less its columns
async def test_a_node_row_holds_its_json_less_the_columns_and_reads_back_whole(tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    store = await EmbeddedStore.open(db, dim=DIM)
    m = message(AGENT, "r1", 'Quotes " and \\ and ünïcode', session=1)
    async with store.unit(AGENT) as u:
        u.put(m)
    await store.close()
    with sqlite3.connect(db) as conn:
        data = conn.execute("SELECT data FROM nodes WHERE id=?", (m.id,)).fetchone()[0]
        assert '"id"' not in data and '"agent"' not in data and '"visibility"' not in data
        # A row as the store wrote it before (the node's whole JSON) still reads back.
        other = message(AGENT, "r2", "written whole", session=1)
        conn.execute(
            "INSERT INTO nodes(agent, id, tier, session, participant, ts, visibility, redacted, data) "
            "SELECT agent, ?, tier, session, participant, ts, visibility, redacted, ? FROM nodes WHERE id=?",
            (other.id, other.model_dump_json(), m.id),
        )
    store = await EmbeddedStore.open(db, dim=DIM)
    got = await store.get_many(AGENT, [m.id, other.id])
    assert got[m.id] == m and got[other.id] == other
    await store.close()
