"""The embedded store's keyword index (FTS5) stays sound, and closing never touches a descriptor
that is not the store's own (issue 40: a long-lived engine's store was found "malformed").

Every write path that changes a keyword row is run against one store and FTS5's own
``integrity-check`` (the index against the text it was built from) after each: new rows, a node
re-put with changed text (in one unit and across units), redaction, deletion, a deleted rowid
reused, a unit that fails and rolls back, the ``optimize`` and ``VACUUM`` of ``compact``, a
reopen; and the engine's own forgetting (``forget_turn``, ``delete_turn``) and consolidation.

Closing twice at once closed the database file's descriptor twice: the second ``os.close`` hit
whatever file the process had opened under that number in between (another store's connection,
its WAL), so that store's SQLite read and wrote a file it did not own.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conformance.corpus import message
from tests.unit.ingest._support import open_uni, turn
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Tier, message_id
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.embedded import core as embedded_core

AGENT = "fts-agent"
DIM = 8
#: Texts FTS5 tokenises in unusual ways: NUL, combining marks, ligatures, dotted/dotless i,
#: full-width letters, emoji, a very long token, Porter-stemmed forms.
ODD = (
    "nul\x00inside",
    "e\u0301clair cafe\u0301",
    "\ufb01nance \ufb03x",
    "\u0130stanbul \u0131rmak",
    "\uff46\uff55\uff4c\uff4c width",
    "emoji \U0001f600 \u200d joiner",
    "x" * 300,
    "running runs runner",
)


def fts_check(path: Path) -> None:
    """FTS5's integrity-check on its own connection: raises on an index that does not match."""
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        conn.execute("INSERT INTO fts(fts) VALUES('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def mid(key: int) -> str:
    return message_id(AGENT, f"k{key}")


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).uniform(0.1, 1.0, DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def text(key: int, version: int) -> str:
    """A text with a marker word only this (key, version) carries, and an odd piece."""
    return f"marker{key}v{version} about kayaks and {ODD[(key + version) % len(ODD)]}"


async def found(store: EmbeddedStore, word: str) -> list[str]:
    return [h.node.id for h in await store.text_search(AGENT, Tier.MESSAGE, word, k=50)]


async def test_every_keyword_write_path_keeps_the_fts_index_sound(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = await EmbeddedStore.open(db, dim=DIM)
    live: dict[int, int] = {}  # key -> version of its text
    gone: set[int] = set()
    try:
        for rnd in range(12):
            # new nodes, and every live one re-put with changed text (twice in one unit for some)
            async with store.unit(AGENT) as u:
                for key in range(rnd * 6, rnd * 6 + 6):
                    u.put(message(AGENT, f"k{key}", text(key, 0), seq=key), vector=vec(key))
                    live[key] = 0
                for key in list(live)[::3]:
                    live[key] += 1
                    u.put(message(AGENT, f"k{key}", text(key, live[key]), seq=key), vector=vec(key))
                    if key % 2:
                        live[key] += 1
                        u.put(message(AGENT, f"k{key}", text(key, live[key]), seq=key))
            fts_check(db)
            # redaction and deletion
            keys = sorted(live)
            redact, delete = keys[rnd % len(keys)], keys[-1]  # the top rowid: the next insert reuses it
            assert await store.redact(AGENT, [mid(redact)]) == 1
            assert await store.delete(AGENT, [mid(delete)]) == 1
            for key in (redact, delete):
                live.pop(key)
                gone.add(key)
            fts_check(db)
            # a unit that fails after its keyword rows were written rolls back whole
            with pytest.raises(ValidationError):
                async with store.unit(AGENT) as u:
                    u.put(message(AGENT, f"k{keys[0]}", "rolled back marker text", seq=0))
                    u.put(message(AGENT, f"k{redact}", "a redacted node rewritten", seq=0))
            fts_check(db)
            if rnd % 4 == 3:
                await store.compact(full=rnd % 8 == 7)
                fts_check(db)
        store = await _reopen(store, db)
        fts_check(db)
        for key, version in live.items():
            assert await found(store, f"marker{key}v{version}") == [mid(key)]
            if version:
                assert await found(store, f"marker{key}v{version - 1}") == []
        for key in gone:
            assert await found(store, f"marker{key}v0") == []
        assert await found(store, "rolled") == []
    finally:
        await store.close()
    fts_check(db)


async def _reopen(store: EmbeddedStore, db: Path) -> EmbeddedStore:
    await store.close()
    return await EmbeddedStore.open(db, dim=DIM)


async def test_forgetting_and_consolidation_keep_the_engines_fts_index_sound() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 1000}})
    try:
        agent = uni.agent("a")
        store = uni.kb.store
        assert isinstance(store, EmbeddedStore)
        db = store.path
        for i in range(24):
            said = f"I moved to Lyon {i} weeks ago; my cat Miso{i} loves {ODD[i % len(ODD)]}."
            await agent.session(f"s{i % 3}").observe(turn("Maya", said, i, id=f"t{i}"))
        await agent.flush()
        await agent.consolidate()
        fts_check(db)
        for i in range(0, 24, 4):
            await agent.forget_turn(f"s{i % 3}", f"t{i}")
            await agent.delete_turn(f"s{(i + 1) % 3}", f"t{i + 1}")
            fts_check(db)
        await agent.consolidate()
        await agent.recall("Where does Maya live and what is her cat called?")
        await store.compact(full=True)
        fts_check(db)
    finally:
        await uni.close()


# --------------------------------------------------------------------------- closing
class _Closes:
    """``os.close`` that counts the closes of one descriptor and refuses a second one (EBADF, as
    the real call gives for a number nobody reopened: the test never closes a stranger's file)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.count = 0
        self._real = os.close
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        if fd != self.fd:
            return self._real(fd)
        with self._lock:
            self.count += 1
            first = self.count == 1
        if not first:
            raise OSError(errno.EBADF, "closed twice")
        return self._real(fd)


def _db_fd(store: EmbeddedStore) -> int:
    return next(h for h in store._locks if isinstance(h, int))


async def test_two_threads_closing_at_once_close_the_database_descriptor_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await EmbeddedStore.open(tmp_path / "m.db", dim=DIM)
    closes = _Closes(_db_fd(store))
    monkeypatch.setattr(os, "close", closes)
    real_close_all = embedded_core.close_all

    def slow_close_all(handles: Any) -> None:  # the window a second close used to fall into
        time.sleep(0.1)
        real_close_all(handles)

    monkeypatch.setattr(embedded_core, "close_all", slow_close_all)
    start = threading.Barrier(2)

    def close() -> None:
        start.wait()
        store._close_sync()

    threads = [threading.Thread(target=close) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert closes.count == 1
    assert store._locks == []


async def test_concurrent_close_calls_close_the_database_descriptor_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(15):
        store = await EmbeddedStore.open(tmp_path / f"m{i}.db", dim=DIM)
        closes = _Closes(_db_fd(store))
        with monkeypatch.context() as m:
            m.setattr(os, "close", closes)
            await asyncio.gather(store.close(), store.close(), store.close())
        assert closes.count == 1, f"attempt {i}: the database descriptor was closed {closes.count} times"


async def test_concurrent_engine_closes_share_one_shutdown(tmp_path: Path) -> None:
    """Two ``Uniko.close()`` at once drain the pipelines and release the store once."""
    uni = await Uniko.open(tmp_path / "m.db")
    calls: list[int] = []
    real = uni.kb.close

    async def counting() -> None:
        calls.append(1)
        await asyncio.sleep(0.05)
        await real()

    uni.kb.close = counting  # type: ignore[method-assign]
    await asyncio.gather(uni.close(), uni.close(), uni.close())
    assert calls == [1]
