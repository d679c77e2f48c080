"""Several processes on one embedded store: one writer, readers opened read-only (issue 23.2).

Real processes: readers follow a writer's commits while it writes; a writer killed mid-run loses
no acknowledged turn and frees the store for the next writer while readers keep reading; a reader
killed mid-read costs the writer nothing. A second writer is refused with ``StoreLocked``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest

from tests.reliability._faults_support import AGENT, check_units, integrity, start_child
from uniko_memory.errors import StoreLocked
from uniko_memory.model import Message, Tier
from uniko_memory.store.embedded import EmbeddedStore

CHILD = Path(__file__).with_name("_multiproc_child.py")
pytestmark = pytest.mark.slow  # child processes, ~5-15 s each test


async def _line(proc: subprocess.Popen[str], want: str, timeout: float = 120) -> str:
    """The next stdout line starting with ``want`` (earlier lines are kept in ``proc.seen``)."""
    assert proc.stdout is not None
    seen: list[str] = proc.__dict__.setdefault("seen", [])
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout)
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"child ended before {want!r}: {seen[-5:]} {err[-3000:]}")
        seen.append(line.strip())
        if line.startswith(want):
            return line.strip()


async def _until(reader: subprocess.Popen[str], n: int) -> None:
    """Read the reader's ``READ <count>`` lines until one shows at least ``n`` turns (it prints
    each count it sees; under load it may see a writer's turns one at a time)."""
    seen = [ln for ln in reader.__dict__.get("seen", []) if ln.startswith("READ ")]
    while not seen or int(seen[-1].split()[1]) < n:
        seen.append(await _line(reader, "READ "))


def _finish(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _stored(db: Path) -> set[str]:
    store = await EmbeddedStore.open(db)
    try:
        await check_units(store)
        found = await store.find(AGENT, Tier.MESSAGE, limit=100_000)
        return {m.external_id for m in found if isinstance(m, Message)}
    finally:
        await store.close()


async def _seed(db: Path, n: int) -> set[str]:
    w = start_child(CHILD, "writer", str(db), "0", str(n))
    await _line(w, "DONE")
    _finish(w)
    return {f"t{i}" for i in range(n)}


async def test_readers_follow_a_writer_and_a_second_writer_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await _seed(db, 2)  # the store must exist before a reader opens it
    writer = start_child(CHILD, "writer", str(db), "2", "30")
    readers = [start_child(CHILD, "reader", str(db), "32") for _ in range(2)]
    try:
        await _line(writer, "ACK turn t2")
        with pytest.raises(StoreLocked):
            await EmbeddedStore.open(db)
        await _line(writer, "DONE")
        for r in readers:
            await _line(r, "CAUGHT_UP")
            counts = [int(ln.split()[1]) for ln in r.seen if ln.startswith("READ ")]
            assert counts == sorted(counts) and counts[-1] == 32, counts  # never goes back
            assert all(int(ln.split()[2]) > 0 for ln in r.seen if ln.startswith("READ "))
            assert "WRITE_REFUSED" in r.seen
        acked = {ln.split()[2] for ln in writer.seen if ln.startswith("ACK turn ")}
        assert len(acked) == 30
    finally:
        for p in [writer, *readers]:
            _finish(p)
    assert await _stored(db) == {f"t{i}" for i in range(32)}
    assert integrity(db) == "ok"


async def test_a_killed_writer_loses_nothing_acknowledged_and_readers_go_on(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seeded = await _seed(db, 2)
    reader = start_child(CHILD, "reader", str(db), "1000000")  # reads until killed
    writer = start_child(CHILD, "writer", str(db), "2", "400")
    try:
        await _line(writer, "ACK turn t12")
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        acked = {ln.split()[2] for ln in writer.seen if ln.startswith("ACK turn ")}
        assert writer.stdout is not None
        acked |= {ln.split()[2] for ln in writer.stdout.read().splitlines() if ln.startswith("ACK turn ")}
        # the reader is still alive and sees at least every acknowledged turn
        assert reader.poll() is None
        await _until(reader, len(acked | seeded))
        # the next writer opens (the dead one's lock went with it) and finds every acked turn
        after = start_child(CHILD, "writer", str(db), "1000", "3")
        await _line(after, "DONE")
        _finish(after)
        await _until(reader, len(acked | seeded) + 3)  # the reader sees the new writer's turns too
    finally:
        reader.kill()
        reader.wait()
        _finish(writer)
    stored = await _stored(db)
    assert (acked | seeded | {"t1000", "t1001", "t1002"}) <= stored
    assert integrity(db) == "ok"


async def test_a_killed_reader_costs_the_writer_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    await _seed(db, 2)
    writer = start_child(CHILD, "writer", str(db), "2", "40")
    reader = start_child(CHILD, "reader", str(db), "1000000")
    try:
        await _line(reader, "READ ")
        await _line(writer, "ACK turn t10")
        reader.send_signal(signal.SIGKILL)  # mid-read, holding its SQLite read snapshot
        reader.wait(timeout=30)
        await _line(writer, "DONE")
        again = start_child(CHILD, "reader", str(db), "42")  # a new reader opens and catches up
        await _line(again, "CAUGHT_UP")
        _finish(again)
    finally:
        _finish(writer)
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert await _stored(db) == {f"t{i}" for i in range(42)}
    assert integrity(db) == "ok"
