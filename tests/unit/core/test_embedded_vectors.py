"""The embedded store's vectors (issue 20.4/20.5): float16 at rest, the schema-1 upgrade, the ANN
graph against exact search, deletes, and the cache file rebuilt when missing, stale or corrupt.

Every store here is a real ``EmbeddedStore`` on disk; no timing is asserted.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from tests.conformance.corpus import message, ses
from tests.unit.core.test_embedded_edges import downgrade_edges_to_schema_2
from uniko_memory.model import Tier
from uniko_memory.store import Eq
from uniko_memory.store.embedded import EmbeddedStore, EmbeddedVectorOptions, ann_cache, ann_index
from uniko_memory.store.embedded.ann_index import AnnIndex
from uniko_memory.store.embedded.vectors import VectorIndex

AGENT = "agent-v"
DIM = 32
N = 600
#: One build thread: a threaded HNSW build is not deterministic, and these tests should not flake.
ANN = EmbeddedVectorOptions(exact_below=0, ann_build_threads=1)


def clustered(n: int = N, seed: int = 3) -> np.ndarray:
    """Unit vectors around 30 centres: neighbours are well defined, as in real embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((30, DIM))
    vecs = centres[rng.integers(0, 30, n)] + 0.35 * rng.standard_normal((n, DIM))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


async def fill(store: EmbeddedStore, vecs: np.ndarray, start: int = 0) -> list[str]:
    ids = []
    async with store.unit(AGENT) as u:
        for i, v in enumerate(vecs, start):
            m = message(AGENT, f"m{i}", f"message number {i}", session=i % 5)
            u.put(m, vector=v)
            ids.append(m.id)
    return ids


async def vector_ids(store: EmbeddedStore, q: np.ndarray, k: int, **kw: object) -> list[str]:
    return [h.id for h in await store.vector_search(AGENT, Tier.MESSAGE, q, k=k, **kw)]  # type: ignore[arg-type]


def graph_files(db: Path) -> list[Path]:
    d = ann_cache.cache_dir(db)
    return sorted(d.iterdir()) if d.is_dir() else []


# ------------------------------------------------------------------ compact vectors at rest
@pytest.mark.parametrize(
    ("storage", "width", "atol"), [("int8", 1, 5e-3), ("float16", 2, 1e-3), ("float32", 4, 1e-7)]
)
async def test_vectors_round_trip_in_the_configured_precision(
    tmp_path: Path, storage: str, width: int, atol: float
) -> None:
    db = tmp_path / "s.db"
    vecs = clustered(20)
    store = await EmbeddedStore.open(db, dim=DIM, vectors=EmbeddedVectorOptions(storage=storage))  # type: ignore[arg-type]
    ids = await fill(store, vecs)
    got = await store.get_vectors(AGENT, ids)
    await store.close()
    for i, nid in enumerate(ids):
        assert got[nid].dtype == np.float32
        np.testing.assert_allclose(got[nid], vecs[i], atol=atol)
    with sqlite3.connect(db) as conn:
        sizes = {r[0] for r in conn.execute("SELECT length(vec) FROM vectors")}
    assert sizes == {width * DIM}


async def test_a_store_reads_float32_float16_and_int8_rows_side_by_side(tmp_path: Path) -> None:
    db = tmp_path / "mixed.db"
    vecs = clustered(12)
    store = await EmbeddedStore.open(db, dim=DIM, vectors=EmbeddedVectorOptions(storage="float32"))
    ids = await fill(store, vecs[:4])
    await store.close()
    store = await EmbeddedStore.open(db, dim=DIM, vectors=EmbeddedVectorOptions(storage="float16"))
    ids += await fill(store, vecs[4:8], start=4)
    await store.close()
    store = await EmbeddedStore.open(db, dim=DIM)  # int8 from here on
    ids += await fill(store, vecs[8:], start=8)
    for reopened in (False, True):
        if reopened:
            await store.close()
            store = await EmbeddedStore.open(db, dim=DIM)
        got = await store.get_vectors(AGENT, ids)
        for i, nid in enumerate(ids):
            np.testing.assert_allclose(got[nid], vecs[i], atol=5e-3)
            assert (await vector_ids(store, vecs[i], 1)) == [nid]
    await store.close()
    with sqlite3.connect(db) as conn:
        sizes = sorted(r[0] for r in conn.execute("SELECT length(vec) FROM vectors"))
    assert sizes == [DIM] * 4 + [2 * DIM] * 4 + [4 * DIM] * 4


async def test_a_search_ranks_the_same_before_and_after_a_reopen(tmp_path: Path) -> None:
    """The RAM index holds the vectors as stored (int8 here), not the float32 handed in."""
    db = tmp_path / "same.db"
    vecs = clustered(200)
    store = await EmbeddedStore.open(db, dim=DIM)
    await fill(store, vecs)
    queries = clustered(20, seed=11)
    before = [await store.vector_search(AGENT, Tier.MESSAGE, q, k=10) for q in queries]
    await store.close()
    store = await EmbeddedStore.open(db, dim=DIM)
    after = [await store.vector_search(AGENT, Tier.MESSAGE, q, k=10) for q in queries]
    await store.close()
    assert [[(h.id, h.score) for h in hs] for hs in before] == [[(h.id, h.score) for h in hs] for hs in after]


# ------------------------------------------------------------------ schema 1 (before issue 20)
SCHEMA_1_VECTORS = """
CREATE TABLE vectors (
    agent TEXT NOT NULL,
    id TEXT NOT NULL,
    tier TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (agent, id)
) WITHOUT ROWID;
CREATE INDEX vectors_tier ON vectors (agent, tier);
"""


def downgrade_to_schema_1(db: Path, vecs: dict[str, np.ndarray], orphan: str) -> None:
    """Rewrite a store as schema 1 wrote it: (agent, id)-keyed float32 blobs, version '1'."""
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE vectors")
        conn.executescript(SCHEMA_1_VECTORS)
        rows = [(AGENT, nid, "message", v.astype(np.float32).tobytes()) for nid, v in vecs.items()]
        rows.append((AGENT, orphan, "message", np.ones(DIM, np.float32).tobytes()))  # node gone
        conn.executemany("INSERT INTO vectors VALUES (?,?,?,?)", rows)
        downgrade_edges_to_schema_2(conn)  # schema 1 wrote edges as schema 2 did
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")


async def test_a_schema_1_store_with_float32_blobs_opens_and_is_upgraded(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    vecs = clustered(40)
    store = await EmbeddedStore.open(db, dim=DIM)
    ids = await fill(store, vecs)
    await store.close()
    downgrade_to_schema_1(db, dict(zip(ids, vecs, strict=True)), orphan="msg-no-such-node")

    store = await EmbeddedStore.open(db, dim=DIM)
    got = await store.get_vectors(AGENT, ids)
    for i, nid in enumerate(ids):
        np.testing.assert_allclose(got[nid], vecs[i], atol=5e-3)
        assert (await vector_ids(store, vecs[i], 1)) == [nid]
    assert await store.get_meta("schema_version") == "3"
    await store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute(
            "SELECT count(*), min(length(vec)), max(length(vec)) FROM vectors"
        ).fetchone() == (
            len(ids),
            DIM,
            DIM,
        )
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "vectors_v1" not in tables and "vectors_tier" not in tables


# ------------------------------------------------------------------ ANN against exact
async def test_ann_agrees_with_exact_search(tmp_path: Path) -> None:
    vecs = clustered()
    exact = await EmbeddedStore.open(tmp_path / "exact.db", dim=DIM)
    ann = await EmbeddedStore.open(tmp_path / "ann.db", dim=DIM, vectors=ANN)
    await fill(exact, vecs)
    await fill(ann, vecs)
    await vector_ids(ann, vecs[0], 1)  # the first search of a tier builds its graph
    assert isinstance(ann._indexes[(AGENT, "message")], AnnIndex)
    rng = np.random.default_rng(9)
    queries = vecs[rng.integers(0, N, 40)] + 0.2 * rng.standard_normal((40, DIM)).astype(np.float32)
    overlap = []
    for q in queries:
        want = await exact.vector_search(AGENT, Tier.MESSAGE, q, k=10)
        got = await ann.vector_search(AGENT, Tier.MESSAGE, q, k=10)
        overlap.append(len({h.id for h in want} & {h.id for h in got}) / 10)
        # An HNSW walk is approximate (and a threaded build is not deterministic): the best hit
        # must be as good as exact's best, whichever of a near-tie it is.
        assert got[0].id == want[0].id or abs(got[0].score - want[0].score) < 2e-3
        assert abs(got[0].score - want[0].score) < 2e-3
        assert all(0.0 <= h.score <= 1.0 for h in got)
        assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    assert np.mean(overlap) >= 0.95
    await exact.close()
    await ann.close()


async def test_a_filtered_ann_search_returns_the_exact_filtered_hits(tmp_path: Path) -> None:
    vecs = clustered()
    store = await EmbeddedStore.open(tmp_path / "ann.db", dim=DIM, vectors=ANN)
    ids = await fill(store, vecs)
    by_id = dict(zip(ids, vecs, strict=True))
    selective = Eq("external_id", "m7")  # one row: the probe fails, exact over the admitted row
    assert await vector_ids(store, vecs[100], 5, filter=selective) == [ids[7]]
    session = Eq("session", ses(AGENT, 3))  # a fifth of the rows
    got = await vector_ids(store, vecs[3], 10, filter=session)
    members = [i for n, i in enumerate(ids) if n % 5 == 3]
    want = sorted(members, key=lambda i: -float(by_id[i] @ vecs[3]))[:10]
    assert got[0] == ids[3]
    assert len(set(got) & set(want)) >= 9
    assert set(got) <= set(members)
    await store.close()


async def test_an_exact_tier_becomes_ann_when_it_reaches_exact_below(tmp_path: Path) -> None:
    vecs = clustered(120)
    store = await EmbeddedStore.open(
        tmp_path / "grow.db", dim=DIM, vectors=EmbeddedVectorOptions(exact_below=100, ann_build_threads=1)
    )
    ids = await fill(store, vecs[:60])
    await vector_ids(store, vecs[0], 1)  # loads the exact index
    assert isinstance(store._indexes[(AGENT, "message")], VectorIndex)
    ids += await fill(store, vecs[60:], start=60)
    assert isinstance(store._indexes[(AGENT, "message")], AnnIndex)
    for i in (0, 59, 60, 119):
        assert (await vector_ids(store, vecs[i], 1)) == [ids[i]]
    await store.close()


# ------------------------------------------------------------------ deletes and redaction
async def test_deleted_and_redacted_nodes_never_come_back_from_the_graph(tmp_path: Path) -> None:
    db = tmp_path / "del.db"
    vecs = clustered()
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    ids = await fill(store, vecs)
    await vector_ids(store, vecs[0], 1)  # the graph is built (and cached) before the deletes
    gone = set(ids[:50])
    assert await store.delete(AGENT, ids[:25]) == 25
    assert await store.redact(AGENT, ids[25:50]) == 25
    for i in (0, 10, 30, 49):
        got = await vector_ids(store, vecs[i], 100)
        assert gone.isdisjoint(got) and len(got) == 100
        assert not gone & set(await vector_ids(store, vecs[i], 20, filter=Eq("session", ses(AGENT, i % 5))))
    await store.close()
    # usearch keeps a removed vector's bytes: a graph that forgot nodes is not written to disk.
    assert graph_files(db) == []
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)  # rebuilt from SQLite
    for i in (0, 30):
        assert gone.isdisjoint(await vector_ids(store, vecs[i], N))
    assert N - 80 <= len(await vector_ids(store, vecs[0], N)) <= N - 50
    await store.close()


# ------------------------------------------------------------------ the cache file
class BuildCounter:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = ann_cache.build

        def counted(*args: object, **kw: object) -> AnnIndex:
            self.calls += 1
            return real(*args, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(ann_cache, "build", counted)


async def built_store(db: Path) -> tuple[list[str], np.ndarray]:
    vecs = clustered()
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    ids = await fill(store, vecs)
    assert graph_files(db) == []  # built by the first search, not by writes
    await vector_ids(store, vecs[0], 1)
    await store.close()
    assert [p.suffix for p in graph_files(db)] == [".json", ".usearch"]
    return ids, vecs


async def test_a_matching_cache_file_is_loaded_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "c.db"
    ids, vecs = await built_store(db)
    builds = BuildCounter(monkeypatch)
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    assert await vector_ids(store, vecs[5], 1) == [ids[5]]
    assert builds.calls == 0
    await store.close()  # nothing changed: the files are not rewritten
    stamps = [p.stat().st_mtime_ns for p in graph_files(db)]
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    assert await vector_ids(store, vecs[6], 1) == [ids[6]]
    await store.close()
    assert [p.stat().st_mtime_ns for p in graph_files(db)] == stamps
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    # The first write loads the cached graph (no search yet), removes its files, keeps it in step;
    # close writes it back: the next open needs no rebuild.
    new = clustered(1, seed=11)
    new_id = (await fill(store, new, start=N))[0]
    assert graph_files(db) == []
    await store.close()
    assert len(graph_files(db)) == 2
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    assert await vector_ids(store, new[0], 1) == [new_id]
    assert builds.calls == 0
    await store.close()


@pytest.mark.parametrize("damage", ["missing", "stale", "corrupt", "other_shape"])
async def test_a_missing_stale_or_corrupt_cache_file_is_rebuilt_from_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    db = tmp_path / "c.db"
    ids, vecs = await built_store(db)
    _meta, graph = graph_files(db)
    if damage == "missing":
        graph.unlink()
    elif damage == "stale":  # SQLite changed behind the cache's back: a node and its vector gone
        with sqlite3.connect(db) as conn:
            rowid = conn.execute("SELECT rowid FROM nodes WHERE id=?", (ids[5],)).fetchone()[0]
            conn.execute("DELETE FROM vectors WHERE node=?", (rowid,))
            conn.execute("DELETE FROM nodes WHERE rowid=?", (rowid,))
    elif damage == "corrupt":
        graph.write_bytes(b"\x00not a graph" * 100)
    builds = BuildCounter(monkeypatch)
    options = EmbeddedVectorOptions(exact_below=0, ann_connectivity=8) if damage == "other_shape" else ANN
    store = await EmbeddedStore.open(db, dim=DIM, vectors=options)
    got = await vector_ids(store, vecs[5], 3)
    assert builds.calls == 1
    if damage == "stale":
        everything = await vector_ids(store, vecs[5], N)  # an HNSW walk may miss a few of all rows
        assert ids[5] not in got + everything and N - 30 <= len(everything) <= N - 1
    else:
        assert got[0] == ids[5]
    await store.close()


async def test_a_torn_sidecar_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "c.db"
    ids, vecs = await built_store(db)
    meta, _graph = graph_files(db)
    meta.write_text('{"format": 1, "dim"', encoding="utf-8")
    builds = BuildCounter(monkeypatch)
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    assert await vector_ids(store, vecs[9], 1) == [ids[9]]
    assert builds.calls == 1
    await store.close()


async def test_without_the_cache_the_graph_lives_in_ram_only(tmp_path: Path) -> None:
    db = tmp_path / "ram.db"
    store = await EmbeddedStore.open(
        db, dim=DIM, vectors=EmbeddedVectorOptions(exact_below=0, ann_cache=False)
    )
    vecs = clustered(50)
    ids = await fill(store, vecs)
    assert await vector_ids(store, vecs[4], 1) == [ids[4]]
    await store.close()
    assert graph_files(db) == []


# ------------------------------------------------------------------ usearch missing
async def test_without_usearch_the_store_searches_exactly_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "usearch", None)  # makes ``import usearch`` fail
    monkeypatch.setattr(ann_index, "_warned", False)
    caplog.set_level(logging.WARNING, logger=ann_index.__name__)
    vecs = clustered(80)
    store = await EmbeddedStore.open(tmp_path / "plain.db", dim=DIM, vectors=ANN)
    ids = await fill(store, vecs)
    for i in (0, 40, 79):
        assert await vector_ids(store, vecs[i], 1) == [ids[i]]
    assert isinstance(store._indexes[(AGENT, "message")], VectorIndex)
    await store.close()
    store = await EmbeddedStore.open(tmp_path / "plain.db", dim=DIM, vectors=ANN)
    assert await vector_ids(store, vecs[3], 1) == [ids[3]]
    await store.close()
    warnings = [r for r in caplog.records if "usearch is not installed" in r.getMessage()]
    assert len(warnings) == 1


def test_vector_options_are_validated() -> None:
    assert EmbeddedVectorOptions().storage == "int8"
    for bad in (
        {"exact_below": -1},
        {"ann_connectivity": 2},
        {"storage": "int4"},
        {"filter_overfetch": 0},
        {"typo": 1},
    ):
        with pytest.raises(ValidationError):
            EmbeddedVectorOptions.model_validate(bad)


async def test_an_ann_filtered_search_widens_the_graph_search_before_an_exact_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = EmbeddedVectorOptions(exact_below=0, filter_overfetch=1, filter_min_candidates=20)
    store = await EmbeddedStore.open(tmp_path / "w.db", dim=DIM, vectors=narrow)
    vecs = clustered()
    ids = await fill(store, vecs)
    by_id = dict(zip(ids, vecs, strict=True))
    scans = []
    real = EmbeddedStore._exact_within
    monkeypatch.setattr(EmbeddedStore, "_exact_within", lambda self, *a: scans.append(1) or real(self, *a))
    members = [i for n, i in enumerate(ids) if n % 5 == 3]
    got = await vector_ids(store, vecs[3], 10, filter=Eq("session", ses(AGENT, 3)))
    want = sorted(members, key=lambda i: -float(by_id[i] @ vecs[3]))[:10]
    assert scans == []  # 20 candidates admitted ~4: the second, wider graph search found 10
    assert len(got) == 10 and set(got) <= set(members) and got[0] == ids[3]
    assert len(set(got) & set(want)) >= 8
    await store.close()


async def test_a_cache_that_cannot_be_written_costs_only_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "ro.db"
    ann_cache.cache_dir(db).write_text("a file where the cache directory would go")
    caplog.set_level(logging.WARNING)
    store = await EmbeddedStore.open(db, dim=DIM, vectors=ANN)
    vecs = clustered(50)
    ids = await fill(store, vecs)
    assert await vector_ids(store, vecs[7], 1) == [ids[7]]
    await fill(store, clustered(1, seed=5), start=50)
    await store.close()
    assert any("could not be written" in r.getMessage() for r in caplog.records)


def test_an_index_loaded_in_batches_equals_one_built_row_by_row() -> None:
    """``VectorIndex.load`` decodes each batch straight into the matrix; the result is the same
    index (ids, keys, scores) as upserting every row, whatever the batch size and row estimate."""
    from uniko_memory.store.embedded.vector_codec import decode, encode
    from uniko_memory.store.embedded.vectors import VectorIndex

    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = [(1000 + i, f"n{i}", encode(v, "int8")) for i, v in enumerate(vecs)]
    ref = VectorIndex(16)
    for key, nid, blob in rows:
        ref.upsert(nid, decode(blob, 16), key)
    q = vecs[7]
    for batch, expected in ((7, 0), (64, 300), (1000, 10)):
        loaded = VectorIndex.load(16, (rows[s : s + batch] for s in range(0, len(rows), batch)), expected)
        assert len(loaded) == 300
        assert loaded.search(q, 20) == ref.search(q, 20)
        assert next(k for k, _, _ in loaded.rows())[:5] == [1000, 1001, 1002, 1003, 1004]
        loaded.upsert("extra", q, 5)  # still grows after a load
        assert loaded.search(q, 1)[0][1] == pytest.approx(1.0, abs=1e-5)


# ------------------------------------------------------------------ int8 in RAM (issue 20)
def int8_blobs(n: int, dim: int, seed: int) -> tuple[np.ndarray, list[tuple[int, str, bytes]]]:
    from uniko_memory.store.embedded.vector_codec import encode

    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs, [(i, f"n{i}", encode(v, "int8")) for i, v in enumerate(vecs)]


def test_an_int8_index_scores_as_the_float32_matrix_decoded_from_the_same_blobs() -> None:
    """The score contract: the int8 matrix (codes x per-row scale) gives the scores the float32
    matrix decoded from the same int8 blobs gave (float rounding apart), so the top k is the same
    (order, ids); against the vectors as embedded, scores move by int8's ~1e-3 only."""
    vecs, rows = int8_blobs(3000, 384, seed=21)
    batches = [rows[s : s + 700] for s in range(0, len(rows), 700)]  # several SCORE_BLOCKs, odd ends
    f32 = VectorIndex.load(384, iter(batches), len(rows))
    i8 = VectorIndex.load(384, iter(batches), len(rows), int8=True)
    assert i8._m.dtype == np.int8 and f32._m.dtype == np.float32
    assert i8._m.nbytes * 4 == f32._m.nbytes
    rng = np.random.default_rng(22)
    for q in [vecs[5], vecs[2999], *rng.normal(size=(20, 384)).astype(np.float32)]:
        q = (q / np.linalg.norm(q)).astype(np.float32)
        a, b = f32.search(q, 50), i8.search(q, 50)
        assert [i for i, _ in a] == [i for i, _ in b]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], atol=1e-6)
        exact = vecs @ q
        for nid, s in b:
            assert abs(s - exact[int(nid[1:])]) < 5e-3
        allowed = {f"n{i}" for i in range(0, 3000, 7)}
        sa, ia = f32.scores_within(q, allowed)
        sb, ib = i8.scores_within(q, allowed)
        assert ia == ib
        np.testing.assert_allclose(sa, sb, atol=1e-6)
    np.testing.assert_allclose(i8.get("n9"), f32.get("n9"), atol=1e-6)  # type: ignore[arg-type]
    for (ka, ia, va), (kb, ib, vb) in zip(f32.rows(1000), i8.rows(1000), strict=True):
        assert (ka, ia) == (kb, ib)
        np.testing.assert_allclose(va, vb, atol=1e-6)


def test_an_int8_index_keeps_codes_and_scales_together_through_upserts_and_removes() -> None:
    """Upsert, swap-remove and growth move a row's scale with its codes: after any edits the int8
    index ranks as a float32 index fed the same (decoded) vectors."""
    from uniko_memory.store.embedded.vector_codec import decode

    vecs, rows = int8_blobs(400, 48, seed=23)
    f32, i8 = VectorIndex(48), VectorIndex(48, int8=True)
    for key, nid, blob in rows:  # from 64 rows of room: grows several times
        f32.upsert(nid, decode(blob, 48), key)
        i8.upsert(nid, decode(blob, 48), key)
    for nid in ("n0", "n17", "n399", "n200", "n201"):
        f32.remove(nid)
        i8.remove(nid)
    replaced = decode(rows[3][2], 48) * -1.0
    f32.upsert("n5", replaced, 9)
    i8.upsert("n5", replaced, 9)
    assert len(i8) == len(f32) == 395
    for q in vecs[::37]:
        a, b = f32.search(q, 30), i8.search(q, 30)
        assert [i for i, _ in a] == [i for i, _ in b]
        np.testing.assert_allclose([s for _, s in a], [s for _, s in b], atol=1e-6)
    assert i8.search(vecs[4], 1)[0] == ("n4", pytest.approx(1.0, abs=5e-3))


def test_an_int8_search_never_holds_a_float32_copy_of_the_matrix() -> None:
    """Scoring converts SCORE_BLOCK rows at a time into one buffer: the peak a search allocates is
    far below the float32 matrix it used to scan (numpy reports its buffers to tracemalloc)."""
    import tracemalloc

    vecs, rows = int8_blobs(20_000, 128, seed=24)
    i8 = VectorIndex.load(128, iter([rows]), len(rows), int8=True)
    q = vecs[123]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        hits = i8.search(q, 20)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert hits[0][0] == "n123"
    float32_matrix = 20_000 * 128 * 4
    assert peak < float32_matrix / 4


async def test_the_store_holds_int8_in_ram_for_int8_storage_and_float32_otherwise(tmp_path: Path) -> None:
    vecs = clustered(50)
    for storage, dtype in (("int8", np.int8), ("float16", np.float32), ("float32", np.float32)):
        db = tmp_path / f"{storage}.db"
        opts = EmbeddedVectorOptions(storage=storage)  # type: ignore[arg-type]
        for reopen in (False, True):
            store = await EmbeddedStore.open(db, dim=DIM, vectors=opts)
            if not reopen:
                ids = await fill(store, vecs)
            assert await vector_ids(store, vecs[7], 1) == [ids[7]]
            idx = store._indexes[(AGENT, Tier.MESSAGE.value)]
            assert isinstance(idx, VectorIndex) and idx._m.dtype == dtype
            await store.close()
