"""The ``uniko`` command: ingest (LoCoMo JSON, JSONL), stats, demo."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory import cli
from uniko_memory.model import Message, Session, Tier, message_id
from uniko_memory.store.embedded import EmbeddedStore

DATA = Path(__file__).resolve().parents[2] / "data"
LOCOMO = DATA / "locomo_mini.json"


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """``uniko ingest`` opens the store with the default embedder; use the fast fake one here."""
    monkeypatch.setattr("uniko_memory.providers.defaults.default_embedder", lambda cfg: FakeEmbedder())


def _stored(db: Path, agent: str) -> tuple[list[Message], list[Session], dict[str, int]]:
    async def run() -> tuple[list[Message], list[Session], dict[str, int]]:
        store = await EmbeddedStore.open(db)
        try:
            msgs = [
                m
                for m in await store.find(agent, Tier.MESSAGE, limit=1000, order_by="time")
                if isinstance(m, Message)
            ]
            sessions = [s for s in await store.find(agent, Tier.SESSION, limit=100) if isinstance(s, Session)]
            counts = {t.value: await store.count(agent, t) for t in Tier}
            return msgs, sessions, counts
        finally:
            await store.close()

    return asyncio.run(run())


# ---------------------------------------------------------------------------------- formats
def test_locomo_parsing_follows_the_conventions() -> None:
    turns = cli.read_turns(LOCOMO)
    assert len(turns) == 7
    assert [t.agent for t in turns] == ["mini-1"] * 5 + ["mini-2"] * 2
    first, second, image = turns[:3]
    assert (first.session, first.id, first.sender, first.to) == ("session_1", "D1:1", "Caroline", ["Melanie"])
    assert first.at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert second.at == datetime(2023, 5, 8, 13, 56, 30, tzinfo=UTC)  # + 30 s per turn index
    assert (
        image.text
        == "Really powerful. Look at this mural we saw. [shares a photo: a photo of a colorful mural on a brick wall]"
    )
    assert turns[3].session == "session_2" and turns[3].at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)


def test_locomo_with_one_agent_prefixes_ids_of_several_conversations() -> None:
    turns = cli.read_turns(LOCOMO, agent="everyone")
    assert {t.agent for t in turns} == {"everyone"}
    assert turns[0].id == "mini-1:D1:1" and turns[0].session == "mini-1/session_1"
    assert turns[-1].id == "mini-2:D1:2"


def test_jsonl_parsing_and_default_ids() -> None:
    text = "\n".join(
        [
            json.dumps(
                {"session": "a", "sender": "P", "text": "one", "at": "2024-03-02T18:05:00Z", "to": "T"}
            ),
            "",
            json.dumps(
                {"session": "a", "sender": "T", "text": "two", "at": "2024-03-02T18:05:40", "to": ["P", "Q"]}
            ),
            json.dumps({"session": "b", "sender": "P", "text": "three", "id": 7}),
        ]
    )
    turns = cli.parse_jsonl(text, "agent-x")
    assert [t.id for t in turns] == ["a#0", "a#1", "7"]
    assert turns[0].at == datetime(2024, 3, 2, 18, 5, tzinfo=UTC)
    assert turns[1].at == datetime(2024, 3, 2, 18, 5, 40, tzinfo=UTC)  # naive = UTC
    assert turns[1].to == ["P", "Q"] and turns[2].at is None and turns[2].to == []
    assert turns[2].where == "line 4"


def test_format_sniffing() -> None:
    assert cli.sniff_format('[{"conversation": {}}]') == "locomo"
    assert cli.sniff_format('{"conversation": {"speaker_a": "a"}}') == "locomo"
    assert cli.sniff_format('{"session": "s", "sender": "a", "text": "x"}\n{"session": "s"}') == "jsonl"
    assert cli.sniff_format(cli.sample_text()) == "jsonl"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"session": "s", "sender": "a", "text": "ok"}\n{"session": "s", "sender": "a", "text": }\n',
            "line 2: invalid JSON",
        ),
        ('{"session": "s", "sender": "a"}\n', "line 1: 'text' is missing"),
        ('{"session": "s", "sender": "a", "text": "x", "when": "now"}\n', "line 1: unknown field(s) when"),
        (
            '{"session": "s", "sender": "a", "text": "x", "at": "yesterday"}\n',
            "line 1: 'at' is not an ISO 8601 time",
        ),
        ('{"session": "s", "sender": "a", "text": "x", "to": 5}\n', "line 1: 'to' must be a name"),
        ("[1, 2]", "conversation 0: expected an object with a 'conversation' object"),
        (
            '[{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]',
            "conversation 0 (c): session_1 has no session_1_date_time",
        ),
        (
            '[{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "tea time", "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}]',
            "unrecognised LoCoMo date 'tea time'",
        ),
        (
            '[{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "A", "text": "hi"}]}}]',
            "conversation 0 (c) session_1 turn 0: 'dia_id' is missing",
        ),
        ('[{"sample_id": "c",\n "conversation": {]', "line 2: invalid JSON"),
        ("", "no turns found"),
    ],
)
def test_malformed_files_name_the_line_or_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, "utf-8")
    db = tmp_path / "never.db"
    assert cli.main(["ingest", str(bad), "--path", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uniko ingest: ") and str(bad) in err and message in err
    assert not db.exists()  # checked before anything is opened or written


def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ingest", str(tmp_path / "missing.jsonl"), "--path", str(tmp_path / "x.db")]) == 2
    assert "no such file" in capsys.readouterr().err
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert cli.main(["ingest", str(binary), "--path", str(tmp_path / "x.db")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert cli.main(["ingest", str(tmp_path), "--path", str(tmp_path / "x.db")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_turn_the_engine_refuses_is_reported_with_its_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "blank.jsonl"
    bad.write_text(
        '{"session": "s", "sender": "a", "text": "fine"}\n{"session": "s", "sender": "a", "text": "\\u0000"}\n'
    )
    db = tmp_path / "x.db"
    assert cli.main(["ingest", str(bad), "--path", str(db), "--plain", "--strict"]) == 2
    err = capsys.readouterr().err
    assert "line 2 (turn id 's#1')" in err and "empty content" in err
    assert not db.exists()  # --strict: the engine's checks run before anything is stored
    # Without --strict the refused turn is reported and skipped, and the rest is stored.
    assert cli.main(["ingest", str(bad), "--path", str(db), "--plain"]) == 1
    err = capsys.readouterr().err
    assert "rejected line 2 (turn id 's#1')" in err and "empty content" in err
    assert "1 of 2 turns rejected" in err
    assert [m.external_id for m in _stored(db, "default")[0]] == ["s#0"]


def test_id_conflict_is_reported_with_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "x.db"
    first = tmp_path / "first.jsonl"
    first.write_text('{"session": "s", "sender": "a", "text": "original", "id": "t1"}\n')
    assert cli.main(["ingest", str(first), "--path", str(db), "--plain"]) == 0
    first.write_text(
        '{"session": "s", "sender": "a", "text": "edited", "id": "t1"}\n'
        '{"session": "s", "sender": "a", "text": "new", "id": "t2"}\n'
    )
    assert cli.main(["ingest", str(first), "--path", str(db), "--plain"]) == 1
    err = capsys.readouterr().err
    assert "line 1 (turn id 't1')" in err and "different content" in err
    assert [m.content for m in _stored(db, "default")[0]] == ["original", "new"]
    assert cli.main(["ingest", str(first), "--path", str(db), "--plain", "--strict"]) == 2
    assert "line 1 (turn id 't1')" in capsys.readouterr().err


def test_bulk_ingest_reports_an_over_long_turn_and_carries_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 16 item 7: one pasted message over the hard limit made a whole bulk run fail."""
    from uniko_memory.config import UnikoConfig

    limit = UnikoConfig().ingest.max_turn_chars
    lines = [
        {"session": "s", "sender": "ana", "text": "I moved to Lisbon in May."},
        {"session": "s", "sender": "ben", "text": "x " * (limit // 2 + 1), "id": "paste"},
        {"session": "s", "sender": "ana", "text": "ok", "to": [f"p{i}" for i in range(65)]},
        {"session": "s" * 257, "sender": "ana", "text": "a session id too long", "id": "ls"},
        {"session": "s", "sender": "ana", "text": "My sister visits next week."},
    ]
    src = tmp_path / "turns.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    db = tmp_path / "x.db"
    assert cli.main(["ingest", str(src), "--path", str(db), "--plain", "--no-finalize"]) == 1
    captured = capsys.readouterr()
    assert "stored 2 turns" in captured.out
    err = captured.err
    assert "rejected line 2 (turn id 'paste')" in err and "IngestConfig.max_turn_chars" in err
    assert "ingest_artifact" in err
    assert "rejected line 3" in err and "IngestConfig.max_addressed_to" in err
    assert "rejected line 4 (turn id 'ls')" in err and "session id has 257 characters" in err
    assert "3 of 5 turns rejected" in err
    msgs = _stored(db, "default")[0]
    assert [m.content for m in msgs] == ["I moved to Lisbon in May.", "My sister visits next week."]

    async def api() -> cli.IngestSummary:
        from tests.unit.ingest._support import open_uni

        uni = await open_uni()
        try:
            return await cli.ingest_turns(uni, cli.read_turns(src, "jsonl", "api"), finalize=False)
        finally:
            await uni.close()

    summary = asyncio.run(api())
    assert (summary.turns, summary.stored) == (5, 2)
    assert [(r.position, r.id) for r in summary.rejected] == [(1, "paste"), (2, "s#2"), (3, "ls")]
    assert all(r.agent == "api" and r.reason for r in summary.rejected)


def test_ingest_help_documents_rejected_turns(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["ingest", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--strict" in out and "reported on stderr" in out and "1 some turns rejected" in out


# ---------------------------------------------------------------------------------- end to end
def test_ingest_locomo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "locomo.db"
    assert cli.main(["ingest", str(LOCOMO), "--path", str(db)]) == 0
    out = capsys.readouterr().out
    assert "read 7 turns for 2 agent(s)" in out and "stored 7 turns (0 already stored) in 3 sessions" in out
    assert "agent mini-1" in out and "agent mini-2" in out
    assert "  message              5" in out and "  chunk" in out  # counts per tier, like `stats`

    msgs, sessions, counts = _stored(db, "mini-1")
    assert [m.external_id for m in msgs] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert msgs[0].timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert msgs[2].content.endswith("[shares a photo: a photo of a colorful mural on a brick wall]")
    assert sorted(s.external_id for s in sessions) == ["session_1", "session_2"]
    assert all(s.finalized_message_count == s.message_count for s in sessions)
    assert counts["observation"] >= 3 and counts["chunk"] >= 2 and counts["summary"] == 2
    assert msgs[0].id == message_id("mini-1", "D1:1")
    assert _stored(db, "mini-2")[2]["message"] == 2

    # Running the same file again is a no-op; `stats` prints the same counts.
    assert cli.main(["ingest", str(LOCOMO), "--path", str(db), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "stored 0 turns (7 already stored)" in out
    assert cli.main(["stats", str(db)]) == 0
    stats = capsys.readouterr().out
    assert "agent mini-1" in stats and "  message              5" in stats


def test_ingest_jsonl_sample_without_finalize_and_plain_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "sample.jsonl"
    sample.write_text(cli.sample_text(), "utf-8")
    db = tmp_path / "sample.db"
    assert (
        cli.main(["ingest", str(sample), "--path", str(db), "--agent", "me", "--no-finalize", "--plain"]) == 0
    )
    out = capsys.readouterr().out
    assert "ingest: 26/26 turns" in out and "finalised" not in out
    msgs, sessions, counts = _stored(db, "me")
    assert len(msgs) == 26 and {s.external_id for s in sessions} == {"s1", "s2", "s3"}
    assert counts["chunk"] == 0 and counts["summary"] == 0
    assert all(s.finalized_message_count == 0 for s in sessions)
    assert msgs[0].addressed_to and msgs[0].external_id == "s1#0"


def test_progress_falls_back_to_plain_lines_without_rich(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_rich(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("rich"):
            raise ImportError("no rich here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_rich)
    with cli._Progress(20, "ingest") as bar:
        for _ in range(20):
            bar.advance()
    out = capsys.readouterr().out
    assert "ingest: 2/20 turns" in out and "ingest: 20/20 turns" in out


def test_stats_on_a_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stats", str(tmp_path / "none.db")]) == 2
    assert "no store" in capsys.readouterr().err


def test_demo_runs_through_the_facade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "demo.db"
    assert cli.main(["demo", "--path", str(db)]) == 0
    out = capsys.readouterr().out
    assert "stored 26 turns in 3 sessions" in out
    assert "  message              26" in out and "  observation" in out and "  summary              3" in out
    assert "finalised 3 sessions: 3 transcript chunks" in out
    assert "observations (rule-based, no LLM):" in out and "Priya" in out
    assert "? What is the name of Priya's cat?" in out
    _, sessions, counts = _stored(db, cli.DEMO_AGENT)
    assert len(sessions) == 3 and counts["message"] == 26


# ---------------------------------------------------------------------------------- bench
HARNESS_TINY = DATA / "harness" / "locomo_tiny.json"


def test_bench_runs_the_harness_on_a_tiny_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``uniko bench`` = ``python benchmarks/run_bench.py``: same options, same report (fake embedder)."""
    out = tmp_path / "report.json"
    argv = [
        "--data",
        str(HARNESS_TINY),
        "--systems",
        "uniko,uniko-noconsol",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert cli.main(["bench", *argv, "--questions", "3"]) == 0
    report = json.loads(out.read_text())
    assert list(report["systems"]) == ["uniko", "uniko-noconsol"]
    assert report["dataset"]["questions"] == 3 and report["config"]["max_questions"] == 3
    assert "# Retrieval benchmark: locomo_tiny" in capsys.readouterr().out


def test_bench_passes_help_and_errors_through(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["bench", "--help"])
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: uniko bench") and "--judge-model" in help_text
    assert cli.main(["bench", "--data", str(HARNESS_TINY), "--systems", "nope"]) == 2
    assert "unknown system" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "bench" in capsys.readouterr().out


def test_bench_root_is_found_in_the_checkout() -> None:
    root = cli.find_bench_root(env={})
    assert (root / "benchmarks" / "run_bench.py").is_file() and cli.is_bench_root(root)
    # not from the module's own location (a wheel in site-packages), but from the working directory
    wheel = Path("/nonexistent/site-packages/uniko_memory/cli/cmd_bench.py")
    assert cli.find_bench_root(env={}, module_file=wheel, cwd=root / "tests" / "data") == root
    assert cli.find_bench_root(env={cli.BENCH_ROOT_ENV: str(root)}, module_file=wheel, cwd=Path("/")) == root


def test_bench_without_the_harness_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = tmp_path / "site-packages" / "uniko_memory" / "cli" / "cmd_bench.py"
    with pytest.raises(cli.BenchUnavailable, match="not part of the installed package"):
        cli.find_bench_root(env={}, module_file=wheel, cwd=tmp_path)
    with pytest.raises(cli.BenchUnavailable, match=r"UNIKO_BENCH_ROOT=.*no benchmarks/run_bench\.py"):
        cli.find_bench_root(env={cli.BENCH_ROOT_ENV: str(tmp_path)})

    find = cli.find_bench_root

    def installed_from_a_wheel(**kwargs: Any) -> Path:
        return find(env={}, module_file=wheel, cwd=tmp_path)

    monkeypatch.setattr("uniko_memory.cli.cmd_bench.find_bench_root", installed_from_a_wheel)
    assert cli.main(["bench", "--data", str(HARNESS_TINY)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uniko bench: the benchmark harness is not available")
    assert "source checkout" in err and "UNIKO_BENCH_ROOT" in err and "benchmarks/run_bench.py" in err


def test_bench_reports_a_harness_that_cannot_be_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    real = importlib.import_module

    def missing_dependency(name: str, *a: Any) -> Any:
        if name == "benchmarks.run_bench":
            raise ModuleNotFoundError("No module named 'tqdm'")
        return real(name, *a)

    monkeypatch.setattr(importlib, "import_module", missing_dependency)
    assert cli.main(["bench", "--data", str(HARNESS_TINY)]) == 2
    err = capsys.readouterr().err
    assert "cannot load the harness" in err and "tqdm" in err and "uv sync" in err
