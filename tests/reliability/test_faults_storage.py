"""Storage faults on the embedded store: disk full, read-only files, a locked database.

Each fault must surface as a ``StoreError`` child that says what happened and what to do
(``StorageFull``, ``StoreReadOnly``, ``StoreLocked``), never as a raw ``sqlite3`` error, and must
corrupt nothing: ``PRAGMA integrity_check`` (and FTS5's own check) pass afterwards, the failed unit
is absent as a whole, and everything acknowledged before is still there once the fault is gone.

- Disk full is simulated with ``PRAGMA max_page_count`` on the store's writer connection (SQLite
  then fails exactly as on a full disk, with ``SQLITE_FULL``); no mount or root needed.
- Read-only: in-process with a ``mode=ro`` URI connection (works as root too), and in a real child
  process on a ``chmod``-ed file and directory. As root, ``chmod`` does not stop writes, so that
  child runs under ``setpriv`` without ``CAP_DAC_OVERRIDE`` (skipped where neither is possible).
- Locked: a real second process opening the same path gets ``StoreLocked`` until the first one
  closes (or is SIGKILLed); a foreign SQLite connection holding the write lock gives ``StoreLocked``
  too, while reads go on.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.reliability._faults_support import (
    AGENT,
    CONFIG,
    HashEmbedder,
    check_units,
    copy_store,
    integrity,
    run_child,
    start_child,
    turns,
)
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import StorageFull, StoreError, StoreLocked, StoreReadOnly
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Message, Tier, message_id
from uniko_memory.nlp.pipeline import NlpPipeline
from uniko_memory.store.embedded import EmbeddedStore

CHILD = Path(__file__).with_name("_store_child.py")
#: Where the embedded store opens its SQLite connections (``EmbeddedCore._connect``).
STORE_MODULE = importlib.import_module("uniko_memory.store.embedded.core")


async def _open(path: Path) -> Uniko:
    return await Uniko.open(
        path, UnikoConfig.build(CONFIG), embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules")
    )


def _turn(item: dict[str, Any]) -> Turn:
    return Turn(**{k: v for k, v in item.items() if k != "session"})


async def _observe(uni: Uniko, item: dict[str, Any]) -> None:
    await uni.agent(AGENT).session(item["session"]).observe(_turn(item))


async def _stored_turns(path: Path) -> set[str]:
    store = await EmbeddedStore.open(path)
    try:
        found = await store.find(AGENT, Tier.MESSAGE, limit=100_000)
        return {m.external_id for m in found if isinstance(m, Message)}
    finally:
        await store.close()


async def _verify(path: Path, acked: set[str]) -> dict[str, int]:
    assert integrity(path) == "ok"
    store = await EmbeddedStore.open(path)
    try:
        return await check_units(store, sorted(acked))
    finally:
        await store.close()


@pytest.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[tuple[Path, set[str]]]:
    """A closed store with six acknowledged turns in session s0, post-ingest done."""
    path = tmp_path / "store.db"
    uni = await _open(path)
    try:
        for item in turns(0, 6, "s0"):
            await _observe(uni, item)
        await uni.agent(AGENT).flush(timeout=60)
    finally:
        await uni.close()
    yield path, {f"t{k}" for k in range(6)}


# ---------------------------------------------------------------------------------- disk full
def _cap(store: Any, extra_pages: int) -> None:
    """Let the store grow by ``extra_pages`` pages at most (SQLite fails as on a full disk)."""
    conn = store._writer  # the one write connection; max_page_count is per connection
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages + extra_pages}")


def _uncap(store: Any) -> None:
    store._writer.execute("PRAGMA max_page_count=4294967294")


async def test_full_disk_rolls_the_unit_back_whole_and_says_storage_full(tmp_path: Path) -> None:
    store = await EmbeddedStore.open(tmp_path / "full.db", dim=HashEmbedder.dim)
    try:
        emb = HashEmbedder()
        keep = Message(
            id=message_id(AGENT, "keep"),
            agent=AGENT,
            external_id="keep",
            session_id="ses_x",
            sender_id="par_x",
            sender_name="A",
            content="the otters were kept safe",
            timestamp=turns(0, 1, "s")[0]["at"],
        )
        async with store.unit(AGENT) as u:
            u.put(keep, (await emb.embed_documents([keep.content]))[0])
        generation = store.generation(AGENT)
        _cap(store, 2)
        big = [
            keep.model_copy(
                update={
                    "id": message_id(AGENT, f"big{i}"),
                    "external_id": f"big{i}",
                    "content": "beaver " * 900,
                }
            )
            for i in range(6)
        ]
        with pytest.raises(StorageFull) as info:
            async with store.unit(AGENT) as u:
                for m in big:
                    u.put(m, (await emb.embed_documents([m.content]))[0])
        msg = str(info.value)
        assert isinstance(info.value, StoreError) and not isinstance(info.value, sqlite3.Error)
        assert "is full" in msg and "rolled back" in msg and "Free disk space" in msg
        # Nothing of the unit is visible: not by id, not by text, not in the in-memory vector index.
        assert await store.get_many(AGENT, [m.id for m in big]) == {}
        assert await store.text_search(AGENT, Tier.MESSAGE, "beaver") == []
        hits = await store.vector_search(AGENT, Tier.MESSAGE, (await emb.embed_query("beaver"))[:], k=10)
        assert [h.node.id for h in hits] == [keep.id]
        assert store.generation(AGENT) == generation
        assert integrity(store.path) == "ok"
        # Space is back: the very same unit now commits.
        _uncap(store)
        async with store.unit(AGENT) as u:
            for m in big:
                u.put(m, (await emb.embed_documents([m.content]))[0])
        assert len(await store.get_many(AGENT, [m.id for m in big])) == len(big)
    finally:
        await store.close()
    assert integrity(tmp_path / "full.db") == "ok"


async def test_full_disk_through_the_facade_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    uni = await _open(path)
    agent = uni.agent(AGENT)
    acked: set[str] = set()
    try:
        for item in turns(0, 6, "s0"):
            await _observe(uni, item)
            acked.add(item["id"])
        await agent.flush(timeout=60)
        _cap(uni.kb.store, 12)
        failed: list[dict[str, Any]] = []
        for k in range(6, 400, 3):  # three-turn units until the disk is full
            unit = turns(k, 3, "s0")
            try:
                await agent.session("s0").commit_unit([_turn(t) for t in unit])
            except StorageFull as exc:
                assert "Free disk space" in str(exc)
                failed = unit
                break
            acked |= {t["id"] for t in unit}
            await agent.flush(timeout=60)  # background writes may hit the cap first: contained
        assert failed, "the capped store never filled up"
        assert await uni.kb.store.get_many(AGENT, [message_id(AGENT, t["id"]) for t in failed]) == {}
        # Reads still work on a full disk.
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == len(acked)
        bundle = await agent.recall("Where does Caroline work?")
        assert bundle.items
        assert integrity(path) == "ok"

        _uncap(uni.kb.store)  # space freed: the failed unit goes through on retry
        await agent.session("s0").commit_unit([_turn(t) for t in failed])
        acked |= {t["id"] for t in failed}
        await agent.flush(timeout=60)
    finally:
        await uni.close()

    counts = await _verify(path, acked)
    assert counts["messages"] == len(acked)
    # Post-ingest cut short by the full disk is finished by the next open (recover()).
    uni = await _open(path)
    try:
        await uni.agent(AGENT).flush(timeout=60)
        msgs = [
            m for m in await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=10_000) if isinstance(m, Message)
        ]
        assert all(m.post_ingest_done for m in msgs)
        assert len(await uni.kb.store.get_vectors(AGENT, [m.id for m in msgs])) == len(msgs)
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- read-only
class _ReadOnlySqlite(types.ModuleType):
    """``sqlite3`` whose ``connect`` opens the file read-only (``mode=ro``), as a ro mount would."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sqlite3, name)

    @staticmethod
    def connect(path: Any, **kwargs: Any) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, **kwargs)


async def test_read_only_store_serves_reads_and_refuses_writes_clearly(
    seeded: tuple[Path, set[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, acked = seeded
    with monkeypatch.context() as m:
        m.setattr(STORE_MODULE, "sqlite3", _ReadOnlySqlite("sqlite3"))
        uni = await _open(path)
        try:
            agent = uni.agent(AGENT)
            assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == len(acked)
            assert (await agent.recall("Where does Caroline work?")).items
            with pytest.raises(StoreReadOnly) as info:
                await _observe(uni, turns(100, 1, "s0")[0])
            assert "read-only" in str(info.value) and "writable" in str(info.value)
            with pytest.raises(StoreReadOnly):
                await agent.session("s0").finalize()
        finally:
            await uni.close()
    assert await _stored_turns(path) == acked
    await _verify(path, acked)
    uni = await _open(path)  # writable again
    try:
        await _observe(uni, turns(100, 1, "s0")[0])
    finally:
        await uni.close()
    await _verify(path, acked | {"t100"})


def _unprivileged() -> list[str] | None:
    """A command prefix under which ``chmod`` binds (none needed when not root), or None."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    cmd = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]
    probe = subprocess.run([*cmd, "true"], capture_output=True)
    return cmd if probe.returncode == 0 else None


def _events(proc: subprocess.CompletedProcess[str]) -> dict[tuple[str, str], dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return {(Path(e["path"]).parent.name, e["event"]): e for e in out}


@pytest.mark.slow  # one child process, ~3 s
async def test_read_only_permissions_in_a_real_process(seeded: tuple[Path, set[str]]) -> None:
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: chmod cannot make the store read-only")
    path, acked = seeded
    read_only = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
    # Three copies: the database file read-only; its directory read-only (no -wal/-shm can be
    # made); the lock file read-only. One child process tries each.
    stores = {}
    for case in ("file", "dir", "lock"):
        (path.parent / case).mkdir()
        stores[case] = copy_store(path, path.parent / case / path.name)
        shutil.copyfile(path.with_name(path.name + ".lock"), f"{stores[case]}.lock")
    targets = {
        "file": stores["file"],
        "dir": stores["dir"].parent,
        "lock": stores["lock"].with_name(path.name + ".lock"),
    }
    modes = {case: t.stat().st_mode for case, t in targets.items()}
    try:
        targets["file"].chmod(read_only)
        targets["dir"].chmod(stat.S_IRUSR | stat.S_IXUSR)
        targets["lock"].chmod(read_only)
        ev = _events(run_child(CHILD, "readonly", *map(str, stores.values()), prefix=prefix))
    finally:
        for case, t in targets.items():
            t.chmod(modes[case])

    # The database file is read-only: the store opens and serves reads; a write says why it failed.
    assert ev[("file", "opened")]["messages"] == len(acked), ev
    assert ev[("file", "recalled")]["items"] > 0, ev
    failed = ev[("file", "write_failed")]
    assert failed["error"] == "StoreReadOnly" and "read-only" in failed["message"], ev
    assert "writable" in failed["message"]
    # The directory is read-only: refused at open, naming the cause.
    assert ev[("dir", "open_failed")]["error"] == "StoreReadOnly", ev
    assert "directory is not writable" in ev[("dir", "open_failed")]["message"]
    # The lock file cannot be opened for writing: refused at open, naming the lock file.
    assert ev[("lock", "open_failed")]["error"] == "StoreReadOnly", ev
    assert "lock file" in ev[("lock", "open_failed")]["message"]

    for store in stores.values():  # nothing was changed or corrupted, and writes work again
        assert await _stored_turns(store) == acked
        await _verify(store, acked)


# ---------------------------------------------------------------------------------- locked
async def _line(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout)
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"child ended early (rc={proc.wait()}): {err[-3000:]}")
        if line.startswith("{"):
            return json.loads(line)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


@pytest.mark.slow  # one child process, ~3 s
async def test_a_second_process_gets_store_locked_until_the_first_lets_go(
    seeded: tuple[Path, set[str]],
) -> None:
    path, acked = seeded
    # This process holds the store; a second one is refused, then opens once it is closed.
    uni = await _open(path)
    proc = start_child(CHILD, "open", str(path), "3")
    try:
        ev = await _line(proc)
        assert ev["event"] == "locked" and ev["error"] == "StoreLocked", ev
        assert "open in another process" in ev["message"] and "close it there" in ev["message"]
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == len(acked)  # unaffected
        await uni.close()
        assert proc.stdin is not None
        proc.stdin.write("retry\n")
        proc.stdin.flush()
        assert (await _line(proc)) == {"event": "opened", "messages": len(acked)}
        ready = await _line(proc)
        assert ready["event"] == "ready" and len(ready["acked"]) == 3, ready

        # Now the child holds it and this process is refused; the child is SIGKILLed and its lock
        # dies with it, so this process opens the store with everything the child acknowledged.
        with pytest.raises(StoreLocked, match="open in another process"):
            await _open(path)
        os.kill(proc.pid, signal.SIGKILL)
        assert await asyncio.to_thread(proc.wait, 30) == -signal.SIGKILL
    finally:
        _stop(proc)
    acked |= set(ready["acked"])
    assert integrity(path) == "ok"
    uni = await _open(path)
    try:
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == len(acked)
        await uni.agent(AGENT).flush(timeout=60)
    finally:
        await uni.close()
    await _verify(path, acked)


@pytest.mark.parametrize("link", ["hard", "symbolic"])
async def test_a_link_to_an_open_store_is_the_same_store(seeded: tuple[Path, set[str]], link: str) -> None:
    """Issue 16.6: through a hard link both openers got in (each with its own -wal file) and the
    second one's acknowledged writes were lost. The lock is on the database file itself."""
    path, acked = seeded
    alias = path.with_name("alias.db")
    if link == "hard":
        os.link(path, alias)
    else:
        alias.symlink_to(path)
    uni = await _open(path)
    try:
        with pytest.raises(StoreLocked, match="already open in this process"):
            await _open(alias)
        with pytest.raises(StoreLocked, match="already open in this process"):
            await EmbeddedStore.open(alias)
    finally:
        await uni.close()
    # Once closed, the link opens the one store, and what it writes is there through the path.
    uni = await _open(alias)
    try:
        extra = turns(500, 2, "s0")
        for item in extra:
            await _observe(uni, item)
        await uni.agent(AGENT).flush(timeout=60)
    finally:
        await uni.close()
    assert await _stored_turns(path) == acked | {item["id"] for item in extra}


@pytest.mark.slow  # one child process, ~3 s
async def test_a_second_process_through_a_hard_link_is_refused(seeded: tuple[Path, set[str]]) -> None:
    path, acked = seeded
    alias = path.with_name("hard-link.db")
    os.link(path, alias)
    uni = await _open(path)
    proc = start_child(CHILD, "open", str(alias), "3")
    try:
        ev = await _line(proc)
        assert ev["event"] == "locked" and ev["error"] == "StoreLocked", ev
    finally:
        _stop(proc)
        await uni.close()
    await _verify(path, acked)


_HOLD_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def _hold_write_lock(path: Path) -> subprocess.Popen[str]:
    """Another program (not uniko) holding SQLite's write lock on the store file."""
    return subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


async def test_a_foreign_write_lock_is_store_locked_and_reads_go_on(seeded: tuple[Path, set[str]]) -> None:
    path, acked = seeded
    uni = await _open(path)
    holder = _hold_write_lock(path)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        uni.kb.store._writer.execute("PRAGMA busy_timeout=200")  # fail fast instead of after 5 s
        late = turns(200, 1, "s0")[0]
        with pytest.raises(StoreLocked) as info:
            await _observe(uni, late)
        assert "locked by another connection" in str(info.value) and "retry" in str(info.value)
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == len(acked)  # reads go on (WAL)
        assert (await uni.agent(AGENT).recall("Where does Caroline work?")).items
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert await asyncio.to_thread(holder.wait, 30) == 0
        await _observe(uni, late)  # the lock is gone: the same turn now goes through
        await uni.agent(AGENT).flush(timeout=60)
    finally:
        _stop(holder)
        await uni.close()
    await _verify(path, acked | {late["id"]})
