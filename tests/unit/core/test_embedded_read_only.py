"""The embedded store opened read-only beside its writer: reads see commits, writes are refused,
nothing is created or upgraded; a schema-1 store read-only says how to upgrade it (issue 23.2)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.unit.core.test_embedded_vectors import (
    AGENT,
    DIM,
    clustered,
    downgrade_to_schema_1,
    fill,
    vector_ids,
)
from tests.unit.ingest._support import FakeEmbedder, turn
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import NotFound, SchemaMismatch, StoreError, StoreLocked, StoreReadOnly
from uniko_memory.facade import Uniko
from uniko_memory.model import Tier
from uniko_memory.store.embedded import EmbeddedStore

READER = UnikoConfig.build({"store": {"embedded_read_only": True}})


async def test_a_reader_sees_the_writers_commits_and_cannot_write(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    writer = await EmbeddedStore.open(db, dim=DIM)
    vecs = clustered(30)
    ids = await fill(writer, vecs[:10])
    reader = await EmbeddedStore.open(db, read_only=True)
    try:
        assert reader.dim == DIM
        assert await reader.count(AGENT, Tier.MESSAGE) == 10
        assert (await vector_ids(reader, vecs[3], 1)) == [ids[3]]  # builds its vector index
        gen = await reader.current_generation(AGENT)
        more = await fill(writer, vecs[10:20], start=10)
        assert await reader.count(AGENT, Tier.MESSAGE) == 20
        assert (await vector_ids(reader, vecs[15], 1)) == [more[5]]  # the index was rebuilt
        assert await reader.current_generation(AGENT) > gen
        with pytest.raises(StoreReadOnly, match="opened read-only"):
            await fill(reader, vecs[20:21], start=20)
        with pytest.raises(StoreReadOnly):
            await reader.compact()
        with pytest.raises(StoreLocked):  # a second writer is still refused
            await EmbeddedStore.open(db)
    finally:
        await reader.close()
        await writer.close()
    assert await _count(db) == 20


async def _count(db: Path) -> int:
    store = await EmbeddedStore.open(db)
    try:
        return await store.count(AGENT, Tier.MESSAGE)
    finally:
        await store.close()


async def test_a_reader_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no store at"):
        await EmbeddedStore.open(tmp_path / "none.db", read_only=True)
    assert not (tmp_path / "none.db").exists()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(StoreError, match="not a uniko-memory store"):
        await EmbeddedStore.open(empty, read_only=True)


async def _schema_1_store(tmp_path: Path) -> tuple[Path, list[str], np.ndarray]:
    db = tmp_path / "old.db"
    vecs = clustered(12)
    store = await EmbeddedStore.open(db, dim=DIM)
    ids = await fill(store, vecs)
    await store.close()
    downgrade_to_schema_1(db, dict(zip(ids, vecs, strict=True)), orphan="msg-gone")
    return db, ids, vecs


async def test_a_schema_1_store_read_only_says_to_open_it_once_read_write(tmp_path: Path) -> None:
    db, ids, vecs = await _schema_1_store(tmp_path)
    with pytest.raises(SchemaMismatch, match="schema 1") as info:
        await EmbeddedStore.open(db, read_only=True)
    assert "Open it once read-write" in str(info.value) and str(db) in str(info.value)
    with sqlite3.connect(db) as conn:  # nothing was changed
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("1",)
    writer = await EmbeddedStore.open(db)  # the one read-write open upgrades it ...
    await writer.close()
    reader = await EmbeddedStore.open(db, read_only=True)  # ... and readers work from then on
    try:
        assert (await vector_ids(reader, vecs[4], 1)) == [ids[4]]
    finally:
        await reader.close()


async def test_a_schema_1_store_on_a_read_only_file_gets_the_same_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened as usual on a file SQLite may only read (a read-only mount): the upgrade cannot run."""
    db, _, _ = await _schema_1_store(tmp_path)
    real_connect = sqlite3.connect

    def ro_connect(path: object, **kwargs: object) -> sqlite3.Connection:
        return real_connect(f"file:{path}?mode=ro", uri=True, **kwargs)  # type: ignore[arg-type, misc]

    monkeypatch.setattr("uniko_memory.store.embedded.core.sqlite3.connect", ro_connect)
    with pytest.raises(SchemaMismatch, match="Open it once read-write"):
        await EmbeddedStore.open(db)


async def test_an_engine_opened_read_only_recalls_what_the_writer_engine_stores(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    writer = await Uniko.open(db, embedder=FakeEmbedder())
    try:
        agent = writer.agent("a")
        await agent.session("s1").observe(turn("alice", "My cat is called Miso.", 0))
        await agent.flush()
        reader = await Uniko.open(db, READER, embedder=FakeEmbedder())
        try:
            first = await reader.agent("a").recall("What is the cat called?")
            assert any("Miso" in i.content for i in first.items)
            await agent.session("s1").observe(turn("bob", "My dog is called Rex.", 1))
            await agent.flush()
            second = await reader.agent("a").recall("What is the dog called?")
            assert any("Rex" in i.content for i in second.items)  # not a stale cached bundle
            again = await reader.agent("a").recall("What is the cat called?")
            assert any("Miso" in i.content for i in again.items)
            with pytest.raises(StoreReadOnly):
                await reader.agent("a").session("s2").observe(turn("carol", "Hello there.", 2))
        finally:
            await reader.close()
    finally:
        await writer.close()


async def test_a_read_only_engine_tracks_no_reads_and_warns_of_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Read tracking (issue 21.3) writes usage; a reader leaves the store as it is, silently."""
    db = tmp_path / "t.db"
    writer = await Uniko.open(db, embedder=FakeEmbedder())
    try:
        await writer.agent("a").session("s1").observe(turn("alice", "My cat is called Miso.", 0))
        await writer.agent("a").flush()
        reader = await Uniko.open(db, READER, embedder=FakeEmbedder())
        try:
            for _ in range(40):  # past any read-tracking batch
                await reader.agent("a").recall("What is the cat called?", use_cache=False)
            await reader.agent("a").flush()
        finally:
            await reader.close()
        usage = await writer.kb.store.usage(
            "a", [m.id for m in await writer.kb.store.find("a", Tier.MESSAGE)]
        )
        assert all(u.access_count == 0 for u in usage.values())  # absent or untouched
    finally:
        await writer.close()
    assert not [r for r in caplog.records if "read tracking" in r.getMessage()]
