"""The mem0 peer (``baseline-mem0``): offline ingest and search, no LLM, no network, and the skip when absent."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks import run_bench
from benchmarks.harness import mem0_system, systems
from benchmarks.harness.baselines import DenseBaseline
from benchmarks.harness.convert import load_any
from benchmarks.harness.format import Conversation, Question, Session, Turn
from benchmarks.harness.run import TOKEN_COUNTER, BenchConfig, render_markdown, run_benchmark
from tests.unit.harness.conftest import FakeEmbedder

ASKED_AT = datetime(2023, 6, 1, tzinfo=UTC)
VIOLIN = Question(id="v", text="Who is learning the violin?", category="x")


def needs_mem0() -> None:
    """Skip without mem0ai; else import it the harness's way (``pytest.importorskip`` would import it with
    telemetry on, which ``import_mem0`` refuses)."""
    if not mem0_system.mem0_available():
        pytest.skip("mem0ai is not installed (the 'peers' extra)")
    mem0_system.import_mem0()


class SyncFakeEmbedder(FakeEmbedder):
    """The hashed bag of words with the blocking call mem0 needs."""

    def embed_documents_sync(self, texts: list[str]) -> np.ndarray:
        self.document_calls += 1
        return np.stack([self._vec(t) for t in texts])


def _conversation() -> Conversation:
    start = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)
    texts = [
        ("Ann", "I started learning the violin last week."),
        ("Bob", "Nice! I adopted a dog called Rex."),
        ("Ann", "My sister lives in Lisbon and plays the cello."),
        ("Bob", "Rex loves long walks by the river."),
    ]
    turns = [Turn(id=f"t{i}", speaker=s, text=t) for i, (s, t) in enumerate(texts)]
    later = datetime(2023, 5, 20, 9, 0, tzinfo=UTC)
    return Conversation(
        id="conv-m",
        speakers=["Ann", "Bob"],
        sessions=[
            Session(id="s1", start=start, turns=turns[:2]),
            Session(id="s2", start=later, turns=turns[2:]),
        ],
    )


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every socket connect fails and is recorded: mem0 must work (and not hang) without one."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


async def test_ingests_and_searches_offline_like_the_dense_baseline(no_network: list[Any]) -> None:
    needs_mem0()
    conv = _conversation()
    peer = mem0_system.Mem0System(SyncFakeEmbedder(), threshold=0.0)  # no gate: every turn is ranked
    dense = DenseBaseline(SyncFakeEmbedder())
    await peer.setup(conv)
    await dense.setup(conv)
    try:
        assert len(peer.timings["mem0_add_s"]) == 4 and peer.timings["mem0_search_s"] == []
        for budget in (60, 2000):
            got = await peer.retrieve(VIOLIN, ASKED_AT, token_budget=budget)
            want = await dense.retrieve(VIOLIN, ASKED_AT, token_budget=budget)
            # the same embedder over the same documents, the same packer: the same text
            assert got.text == want.text and TOKEN_COUNTER.count(got.text) <= budget
            assert [i.covered_turn_ids for i in got.items] == [i.covered_turn_ids for i in want.items]
        assert got.items[0].covered_turn_ids == {"t0"} and got.items[0].session_ids == {"s1"}
        assert len(got.items) == 4 and got.extra["mem0_searches"] == 1  # 2,000 tokens hold all four
        top1 = await peer.retrieve(VIOLIN, ASKED_AT, limit=1)
        assert [i.covered_turn_ids for i in top1.items] == [frozenset({"t0"})]
        assert len(peer.timings["mem0_search_s"]) == 3
        assert peer.llm_calls == 0
    finally:
        await peer.close()
        await dense.close()
    assert no_network == []


async def test_a_budget_call_asks_again_until_the_budget_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    needs_mem0()
    monkeypatch.setattr(mem0_system, "TOP_K_HEADROOM", 0.01)  # the first search asks for one turn
    conv = _conversation()
    peer = mem0_system.Mem0System(SyncFakeEmbedder(), threshold=0.0)
    dense = DenseBaseline(SyncFakeEmbedder())
    await peer.setup(conv)
    await dense.setup(conv)
    try:
        got = await peer.retrieve(VIOLIN, ASKED_AT, token_budget=2000)
        assert got.extra["mem0_searches"] == 3  # top_k 1, 2, 4 (all four turns)
        assert got.text == (await dense.retrieve(VIOLIN, ASKED_AT, token_budget=2000)).text
        assert len(got.items) == 4 and len(peer.timings["mem0_search_s"]) == 3
    finally:
        await peer.close()
        await dense.close()


async def test_telemetry_is_off_and_spacy_is_never_downloaded() -> None:
    needs_mem0()
    from mem0.memory import main, telemetry
    from mem0.utils import spacy_models

    assert telemetry.MEM0_TELEMETRY is False and main.MEM0_TELEMETRY is False
    assert telemetry.client_telemetry.posthog is None
    # either mem0 holds a loaded pipeline or it was told loading failed: _ensure_model_available never runs
    assert spacy_models._nlp_lemma is not None or spacy_models._load_failed_lemma


async def test_a_call_to_the_llm_is_caught() -> None:
    needs_mem0()
    peer = mem0_system.Mem0System(SyncFakeEmbedder())
    await peer.setup(_conversation())
    try:
        assert peer.llm_calls == 0
        with pytest.raises(Exception):  # noqa: B017  (mem0 may wrap the error in its own)
            peer.memory.add("I moved to Porto.", user_id=peer.user_id, infer=True)
        assert peer.llm_calls == 1
        with pytest.raises(mem0_system.NeverCalledChatModelError, match="called its LLM"):
            await peer.retrieve(VIOLIN, ASKED_AT, limit=1)
    finally:
        await peer.close()


async def test_the_runner_reports_mem0_timings_and_ratios(data_dir: Path) -> None:
    needs_mem0()
    dataset = load_any(data_dir / "locomo_tiny.json", "locomo")
    run_systems = {
        "baseline-mem0": lambda: mem0_system.Mem0System(SyncFakeEmbedder()),
        "mine": lambda: DenseBaseline(SyncFakeEmbedder()),
    }
    config = BenchConfig(item_limits=(2,), token_budgets=(200,), hit_rate_k=None, progress=False)
    report, _ = await run_benchmark(dataset, run_systems, config)
    turns = report["dataset"]["turns"]
    rt = report["systems"]["baseline-mem0"]["runtime"]
    assert rt["timings"]["mem0_add_s"]["n"] == turns
    assert rt["timings"]["mem0_search_s"]["n"] >= 2 * rt["questions"]  # one per call at least
    # setup_total_s is rounded to the millisecond: allow that rounding, spread over the turns
    rounding = 1000 * 0.0005 / turns
    assert rt["setup_per_turn_ms"] == pytest.approx(1000 * rt["setup_total_s"] / turns, abs=rounding + 0.01)
    assert "in-memory Qdrant" in report["systems"]["baseline-mem0"]["call_path"]
    row = report["comparison"]["rows"]["setup per turn ms"]
    assert row["ratios"]["mine"]["vs_peer"] is not None
    md = render_markdown(report)
    assert "| mine / best baseline | mine / mem0 |" in md
    assert "## System timings" in md and "| baseline-mem0 | mem0_add_s |" in md


def test_absent_mem0_is_skipped_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(mem0_system, "mem0_available", lambda: False)
    chosen, skipped = systems.resolve_available("baseline-bm25,baseline-mem0")
    line = mem0_system.MISSING_MESSAGE.format(name="baseline-mem0")
    assert list(chosen) == ["baseline-bm25"] and skipped == [line]
    assert line.startswith("baseline-mem0 skipped: mem0ai") and "\n" not in line

    data = str(data_dir / "locomo_tiny.json")
    out = tmp_path / "r.json"
    rc = run_bench.main(
        ["--data", data, "--systems", "baseline-bm25,baseline-mem0", "--no-progress", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 0 and line in err.splitlines()
    assert '"baseline-mem0"' not in out.read_text() and '"baseline-bm25"' in out.read_text()

    assert run_bench.main(["--data", data, "--systems", "baseline-mem0", "--no-progress"]) == 2
    assert "no system left to run" in capsys.readouterr().err


def test_each_peer_package_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = mem0_system.importlib.util.find_spec
    for missing in mem0_system.PEER_MODULES:
        monkeypatch.setattr(
            mem0_system.importlib.util, "find_spec", lambda m, _x=missing: None if m == _x else real(m)
        )
        assert not mem0_system.mem0_available(), missing


def test_present_mem0_is_not_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mem0_system, "mem0_available", lambda: True)
    chosen, skipped = systems.resolve_available(["baseline-mem0"])
    assert list(chosen) == ["baseline-mem0"] and skipped == []


async def test_a_turn_added_after_setup_is_searched() -> None:
    needs_mem0()
    peer = mem0_system.Mem0System(SyncFakeEmbedder(), threshold=0.0)
    await peer.setup(_conversation())
    try:
        later = datetime(2023, 6, 2, 9, 0, tzinfo=UTC)
        peer.add_turn("t-live", "s3", later, "Ann", "I sold my violin to a collector in Porto.")
        peer.entries["t-live"] = peer.entries["t0"]  # search reports only turns it can pack
        assert peer.search("violin collector Porto", 1) == ["t-live"]
        assert len(peer.timings["mem0_add_s"]) == 5 and peer.llm_calls == 0
    finally:
        await peer.close()
