"""SIGKILL during a consolidation cycle and during session finalisation.

A base store (48 turns over two sessions, observations made by the full NLP pipeline) is copied
once per scenario. A child process (``_cycle_child.py``) consolidates or finalises the copy and
kills itself at a chosen point: inside a unit's SQLite transaction, or between two units. After the
kill the store must hold every acknowledged turn and every acknowledged cycle / finalisation, no
unit half-written (``check_units``), and a clean rerun must converge on exactly what an
uninterrupted run produces from the same base (node ids, contents, edges and vectors).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.reliability._faults_support import (
    AGENT,
    CONFIG,
    HashEmbedder,
    acks,
    assert_same,
    check_units,
    copy_store,
    integrity,
    run_child,
    snapshot,
    turns,
)
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import StorageFull
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Session, Tier, session_id
from uniko_memory.nlp.pipeline import NlpPipeline
from uniko_memory.store.embedded import EmbeddedStore

CHILD = Path(__file__).with_name("_cycle_child.py")
TURNS = turns(0, 24, "s0") + turns(24, 24, "s1")
LATE = turns(48, 6, "s0")  # added to s0 after its first finalisation


async def _open(path: Path, nlp: Any = None) -> Uniko:
    return await Uniko.open(
        path, UnikoConfig.build(CONFIG), embedder=HashEmbedder(), nlp=nlp or NlpPipeline(mode="rules")
    )


async def _ingest(uni: Uniko, items: list[dict[str, Any]]) -> None:
    agent = uni.agent(AGENT)
    for t in items:
        fields = {k: v for k, v in t.items() if k != "session"}
        await agent.session(t["session"]).observe(Turn(**fields))
    await agent.flush(timeout=60)


async def _build(path: Path) -> None:
    from uniko_memory.nlp.pipeline import default_pipeline

    uni = await _open(path, default_pipeline())  # spaCy: rule observations need the parse
    try:
        await _ingest(uni, TURNS)
    finally:
        await uni.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cycles") / "base.db"
    asyncio.run(_build(path))
    return path


async def _clean_run(path: Path, *, consolidate: bool = False, finalize: tuple[str, ...] = ()) -> dict:
    uni = await _open(path)
    try:
        agent = uni.agent(AGENT)
        if consolidate:
            stats = await agent.consolidate()
            assert stats is not None and stats.observations_processed > 0
        for s in finalize:
            await agent.finalize_session(s)
        return await snapshot(uni.kb.store)
    finally:
        await uni.close()


async def _after_crash(path: Path, acked_cycles: Sequence[str] = ()) -> dict[str, int]:
    assert integrity(path) == "ok"
    store = await EmbeddedStore.open(path)
    try:
        counts = await check_units(store, [t["id"] for t in TURNS])
        present = await store.get_many(AGENT, list(acked_cycles))
        assert set(present) == set(acked_cycles), "an acknowledged consolidation cycle was lost"
        return counts
    finally:
        await store.close()


def _kill(path: Path, mode: str, kill: str, *sessions: str) -> str:
    proc = run_child(CHILD, mode, str(path), kill, *sessions)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow  # two child processes (~3 s each) and three consolidations of 52 observations
async def test_sigkill_mid_consolidation_keeps_units_whole_and_the_rerun_converges(
    base: Path, tmp_path: Path
) -> None:
    want = await _clean_run(copy_store(base, tmp_path / "clean.db"), consolidate=True)
    n_cycles = sum(1 for i in want["nodes"] if i.startswith("cyc_"))
    assert n_cycles >= 4 and any(i.startswith("fct_") for i in want["nodes"])

    for kill, committed in (("tx:3", 2), ("after:2", 2)):
        db = copy_store(base, tmp_path / f"crash-{kill.replace(':', '-')}.db")
        out = _kill(db, "consolidate", kill)
        cycles = acks(out, "cycle")
        assert len(cycles) == committed, (kill, out)
        counts = await _after_crash(db, cycles)
        assert counts["cycles"] == committed, (kill, counts)  # the killed cycle left nothing behind
        assert counts["facts"] > 0 and counts["messages"] == len(TURNS)

        got = await _clean_run(db, consolidate=True)  # picks up where the dead process stopped
        assert_same(got, want)


@pytest.mark.slow  # two child processes (~3 s each) and three finalisations
async def test_sigkill_mid_finalisation_keeps_chunks_whole_and_the_rerun_converges(
    base: Path, tmp_path: Path
) -> None:
    # First finalisation: killed as session s1's first chunk is written, after s0 was acknowledged.
    want = await _clean_run(copy_store(base, tmp_path / "clean.db"), finalize=("s0", "s1"))
    assert sum(1 for i in want["nodes"] if i.startswith("chk_")) >= 6  # several chunks per session
    db = copy_store(base, tmp_path / "crash-first.db")
    out = _kill(db, "finalize", "tx:s1", "s0", "s1")
    assert acks(out, "finalized") == ["s0"]
    await _after_crash(db)
    store = await EmbeddedStore.open(db)
    try:
        s0 = await store.get(AGENT, session_id(AGENT, "s0"))
        s1 = await store.get(AGENT, session_id(AGENT, "s1"))
        assert isinstance(s0, Session) and s0.finalized_message_count == 24
        assert isinstance(s1, Session) and s1.finalized_message_count == 0
        s1_chunks = [c for c in await store.find(AGENT, Tier.CHUNK, limit=1000) if c.session_id == s1.id]
        assert s1_chunks == []  # the killed unit wrote nothing
    finally:
        await store.close()
    assert_same(await _clean_run(db, finalize=("s0", "s1")), want)

    # A rebuild (new turns in s0) killed half way through rewriting s0's chunks: the old chunk set
    # stays whole and consistent, and the rerun converges.
    grown = copy_store(base, tmp_path / "grown.db")
    await _clean_run(grown, finalize=("s0", "s1"))
    uni = await _open(grown)
    try:
        await _ingest(uni, LATE)
    finally:
        await uni.close()
    before = await snapshot_of(grown)
    want = await _clean_run(copy_store(grown, tmp_path / "clean-grown.db"), finalize=("s0",))
    db = copy_store(grown, tmp_path / "crash-rebuild.db")
    out = _kill(db, "finalize", "tx:s0", "s0")
    assert acks(out, "finalized") == []
    await _after_crash(db)
    assert_same(await snapshot_of(db), before)  # nothing of the killed rebuild is visible
    assert_same(await _clean_run(db, finalize=("s0",)), want)


async def test_a_full_disk_mid_cycle_and_mid_finalisation_then_the_rerun_converges(
    base: Path, tmp_path: Path
) -> None:
    """Not a crash but the same promise: the cycle or finalisation that hit a full disk left no
    half-written unit, and once space is back a rerun ends where a clean run does."""
    want = await _clean_run(copy_store(base, tmp_path / "clean.db"), consolidate=True, finalize=("s0",))
    db = copy_store(base, tmp_path / "full.db")
    uni = await _open(db)
    try:
        writer = uni.kb.store._writer  # type: ignore[attr-defined]
        pages = writer.execute("PRAGMA page_count").fetchone()[0]
        writer.execute(f"PRAGMA max_page_count={pages + 6}")
        agent = uni.agent(AGENT)
        assert await agent.consolidate() is None  # the cycle failed on the full disk (logged)
        with pytest.raises(StorageFull):
            await agent.finalize_session("s0")
        counts = await check_units(uni.kb.store, [t["id"] for t in TURNS])
        assert 0 < counts["cycles"] < sum(1 for i in want["nodes"] if i.startswith("cyc_")), counts
        writer.execute("PRAGMA max_page_count=4294967294")  # space is back
        assert await agent.consolidate() is not None
        await agent.finalize_session("s0")
        assert_same(await snapshot(uni.kb.store), want)
    finally:
        await uni.close()
    assert integrity(db) == "ok"


async def snapshot_of(path: Path) -> dict:
    store = await EmbeddedStore.open(path)
    try:
        return await snapshot(store)
    finally:
        await store.close()


@pytest.fixture(autouse=True)
def _posix_only() -> None:
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs POSIX signals")
