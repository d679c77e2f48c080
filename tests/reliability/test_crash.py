"""SIGKILL in the middle of ingest: no acknowledged turn is lost and no unit is half-written.

A child process ingests into an on-disk store and prints each turn id once ``observe`` (or a
multi-turn ``commit``) has returned. The parent kills it with SIGKILL at some point mid-stream,
reopens the store, and checks every acknowledged turn, the all-or-nothing units, the session
counters and the NEXT chains. A second child resumes on the same file and is killed from inside
a unit's SQLite transaction; finally a clean ``Uniko.open`` recovers the post-ingest work (P3,
P7a) that the kills cut short.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from uniko_memory.model import EdgeType, Message, Session, Tier
from uniko_memory.store.embedded import EmbeddedStore

CHILD = Path(__file__).with_name("_crash_child.py")
AGENT = "crash"


def _run_until_it_dies(db: Path, start: int, die_in_unit: int) -> list[str]:
    """Start a child that SIGKILLs itself inside the transaction of unit ``die_in_unit``."""
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(db), str(start), str(die_in_unit)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return [ln.split()[1] for ln in proc.stdout.splitlines() if ln.startswith("ACK ")]


def _run_and_kill(db: Path, start: int, kill_after_acks: int) -> list[str]:
    """Start the child, SIGKILL it after ``kill_after_acks`` acknowledgements; return all acks read."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(db), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acks: list[str] = []
    deadline = time.monotonic() + 60
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("ACK "):
                acks.append(line.split()[1])
                if len(acks) >= kill_after_acks:
                    break
            if time.monotonic() > deadline:
                break
        # Kill while it is still writing (it never stops by itself).
        assert proc.poll() is None, f"child exited early: {proc.stderr.read() if proc.stderr else ''}"
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    # Anything printed before the kill was acknowledged too.
    acks += [ln.split()[1] for ln in rest.splitlines() if ln.startswith("ACK ")]
    assert len(acks) >= kill_after_acks, "the child did not get far enough before the deadline"
    return acks


async def _verify(db: Path, acked: set[str]) -> int:
    """Checks on the raw store; returns the next unit number for a restarted child."""
    store = await EmbeddedStore.open(db)
    try:
        msgs = [m for m in await store.find(AGENT, Tier.MESSAGE, limit=100_000) if isinstance(m, Message)]
        stored = {m.external_id for m in msgs}
        missing = acked - stored
        assert not missing, f"acknowledged turns lost: {sorted(missing)[:10]}"

        units: dict[str, set[str]] = defaultdict(set)
        for tid in stored:
            if tid.startswith("u"):
                units[tid.split("-")[0]].add(tid)
        half = {u: sorted(ids) for u, ids in units.items() if len(ids) != 3}
        assert not half, f"half-written units: {half}"

        sessions = [s for s in await store.find(AGENT, Tier.SESSION, limit=100) if isinstance(s, Session)]
        by_session: dict[str, list[Message]] = defaultdict(list)
        for m in msgs:
            by_session[m.session_id].append(m)
        assert {s.id for s in sessions} == set(by_session)
        for s in sessions:
            mine = sorted(by_session[s.id], key=lambda m: m.seq)
            assert s.message_count == len(mine), (s.external_id, s.message_count, len(mine))
            assert [m.seq for m in mine] == list(range(len(mine)))
            assert s.last_message_id == mine[-1].id
            nxt = await store.neighbors(AGENT, [m.id for m in mine], [EdgeType.NEXT])
            assert {(e.src, e.dst) for e in nxt} == {(a.id, b.id) for a, b in itertools.pairwise(mine)}
            in_session = await store.neighbors(AGENT, [m.id for m in mine], [EdgeType.IN_SESSION])
            assert len(in_session) == len(mine)
        numbers = [int(re.match(r"[tu](\d+)", t).group(1)) for t in stored]  # type: ignore[union-attr]
        return max(numbers) + 1
    finally:
        await store.close()


@pytest.mark.slow  # two child processes (~3 s start-up each) and recovery: ~12 s on 2 busy cores
async def test_sigkill_mid_ingest_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    acked = set(_run_and_kill(db, 0, kill_after_acks=30))
    resume = await _verify(db, acked)

    # Second life on the same file, killed deterministically inside a unit's transaction after one
    # of its three Messages was written: that unit is absent as a whole, every ack is present.
    doomed = resume + 4 if (resume + 4) % 2 else resume + 5  # odd numbers are 3-turn units
    acks = _run_until_it_dies(db, resume, doomed)
    assert f"u{doomed - 2}-2" in acks and not any(a.startswith(f"u{doomed}-") for a in acks)
    acked |= set(acks)
    await _verify(db, acked)
    store = await EmbeddedStore.open(db)
    try:
        from uniko_memory.model import message_id

        found = await store.get_many(AGENT, [message_id(AGENT, f"u{doomed}-{j}") for j in range(3)])
        assert found == {}
    finally:
        await store.close()

    # A clean open recovers the post-ingest work (P3/P7a) that the kills cut short.
    from uniko_memory.facade import Uniko
    from uniko_memory.nlp.pipeline import NlpPipeline

    sys.path.insert(0, str(CHILD.parent))
    try:
        from _crash_child import BagOfWords
    finally:
        sys.path.remove(str(CHILD.parent))
    uni = await Uniko.open(db, embedder=BagOfWords(), nlp=NlpPipeline(mode="rules"))
    try:
        await uni.agent(AGENT).flush(timeout=60)
        msgs = [
            m for m in await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=100_000) if isinstance(m, Message)
        ]
        assert msgs and all(m.post_ingest_done for m in msgs)
        vectors = await uni.kb.store.get_vectors(AGENT, [m.id for m in msgs])
        assert len(vectors) == len(msgs)
    finally:
        await uni.close()


@pytest.fixture(autouse=True)
def _posix_only() -> None:
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs POSIX signals")
