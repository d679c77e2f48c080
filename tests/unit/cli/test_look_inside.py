"""Issue 22 item 2: the commands that look inside a store (recall, list, show, sessions, export,
import, forget), on the real embedded store with the real local models and the LoCoMo mini fixture.

Bad input exits 2 with a message naming the problem, and writes nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from uniko_memory import cli
from uniko_memory.model import message_id

DATA = Path(__file__).resolve().parents[2] / "data"
LOCOMO = DATA / "locomo_mini.json"
QUESTIONS = (
    "What is the name of Caroline's cat?",
    "What did Melanie paint?",
    "Where did Caroline go yesterday?",
)


def _ingest(db: Path) -> None:
    assert cli.main(["ingest", str(LOCOMO), "--path", str(db), "--plain"]) == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both LoCoMo mini conversations (agents mini-1, mini-2), finalised; read-only for the tests."""
    db = tmp_path_factory.mktemp("look") / "mini.db"
    _ingest(db)
    return db


def _json(capsys: pytest.CaptureFixture[str], argv: list[str], rc: int = 0) -> Any:
    capsys.readouterr()
    assert cli.main(argv) == rc
    return json.loads(capsys.readouterr().out)


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, err
    return err


# ---------------------------------------------------------------------------------- recall
def test_recall_prints_the_rendered_bundle_within_the_budget(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    argv = ["recall", QUESTIONS[0], "--path", str(store), "--agent", "mini-1", "--budget", "200"]
    assert cli.main([*argv, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "<memory>" in out and "Biscuit" in out and "tokens of 200" in out
    assert "id " in out and "uniko show ID" in out  # --explain lists ids to follow
    bundle = _json(capsys, [*argv, "--json"])
    assert bundle["agent"] == "mini-1" and "Biscuit" in bundle["rendered"]
    assert bundle["total_tokens"] <= 200 and bundle["items"]
    assert {"score", "kind", "sources", "node_id"} <= set(bundle["items"][0])


def test_recall_needs_an_agent_when_the_store_has_several(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fails(capsys, ["recall", "cat?", "--path", str(store)], "several agents", "mini-1, mini-2")
    _fails(capsys, ["recall", "cat?", "--path", str(store), "--agent", "nobody"], "no agent 'nobody'")
    _fails(
        capsys, ["recall", "cat?", "--path", str(store), "--agent", "mini-1", "--budget", "0"], "token_budget"
    )


def test_commands_never_create_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    for argv in (
        ["recall", "q", "--path", str(missing)],
        ["list", "--path", str(missing)],
        ["show", "x", "--path", str(missing)],
        ["sessions", "--path", str(missing)],
        ["export", "--path", str(missing), "-o", str(tmp_path / "x.jsonl")],
        ["forget", "--path", str(missing), "--session", "s", "--yes"],
    ):
        _fails(capsys, argv, f"no store at {missing}")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------- list / sessions
def test_list_pages_and_filters(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["list", "--path", str(store), "--agent", "mini-1"]
    page = _json(capsys, [*base, "--limit", "2", "--json"])
    assert page["total"] == 5 and [n["external_id"] for n in page["nodes"]] == ["D1:1", "D1:2"]
    last = _json(capsys, [*base, "--limit", "2", "--offset", "4", "--json"])
    assert [n["external_id"] for n in last["nodes"]] == ["D2:2"]
    newest = _json(capsys, [*base, "--limit", "1", "--newest", "--json"])
    assert newest["nodes"][0]["external_id"] == "D2:2"
    by_session = _json(capsys, [*base, "--session", "session_2", "--json"])
    assert [n["external_id"] for n in by_session["nodes"]] == ["D2:1", "D2:2"]
    by_speaker = _json(capsys, [*base, "--participant", "Caroline", "--json"])
    assert [n["external_id"] for n in by_speaker["nodes"]] == ["D1:1", "D1:3", "D2:2"]
    observations = _json(capsys, [*base, "--tier", "observation", "--json"])
    assert observations["total"] >= 3 and all(n["tier"] == "observation" for n in observations["nodes"])

    capsys.readouterr()
    assert cli.main([*base, "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "message: 1-2 of 5 (agent mini-1); next page: --offset 2" in out
    assert "Hey Mel!" in out
    _fails(capsys, [*base, "--tier", "memes"], "unknown tier 'memes'", "observation")
    _fails(capsys, [*base, "--limit", "0"], "--limit must be at least 1")
    _fails(capsys, [*base, "--session", "session_9"], "no session 'session_9' in agent 'mini-1'")
    _fails(capsys, [*base, "--participant", "Jon"], "no participant 'Jon' in agent 'mini-1'")


def test_sessions_lists_turn_counts(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _json(capsys, ["sessions", "--path", str(store), "--agent", "mini-1", "--json"])
    assert [(s["external_id"], s["message_count"]) for s in listed["sessions"]] == [
        ("session_1", 3),
        ("session_2", 2),
    ]
    capsys.readouterr()
    assert cli.main(["sessions", "--path", str(store), "--agent", "mini-2"]) == 0
    out = capsys.readouterr().out
    assert "session_1" in out and "2 turns" in out and "finalised" in out and "Jon, Gina" in out


# ---------------------------------------------------------------------------------- show
def test_show_follows_provenance_back_to_the_messages(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--path", str(store), "--agent", "mini-1"]
    observations = _json(capsys, ["list", *base, "--tier", "observation", "--limit", "50", "--json"])
    cat = next(n for n in observations["nodes"] if "Biscuit" in n["content"])
    shown = _json(capsys, ["show", cat["id"], *base, "--json"])
    assert shown["node"]["id"] == cat["id"] and shown["node"]["tier"] == "observation"
    chain = shown["provenance"]
    assert [(step["via"], step["tier"]) for step in chain] == [("OBSERVED_IN", "message")]
    assert chain[0]["id"] == message_id("mini-1", "D2:2") and "Biscuit" in chain[0]["text"]

    chunks = _json(capsys, ["list", *base, "--tier", "chunk", "--session", "session_1", "--json"])
    transcript = next(n for n in chunks["nodes"] if n["chunk_type"] == "session")
    tree = _json(capsys, ["show", transcript["id"], *base, "--json"])["provenance"]
    covered = {step["id"] for step in tree if step["tier"] == "message"}
    assert {message_id("mini-1", f"D1:{i}") for i in (1, 2, 3)} <= covered

    capsys.readouterr()
    assert cli.main(["show", cat["id"], "--path", str(store)]) == 0  # the agent is found from the id
    out = capsys.readouterr().out
    assert f"observation {cat['id']} (agent mini-1)" in out
    assert "provenance:" in out and "OBSERVED_IN message" in out and "I adopted a cat named Biscuit" in out
    _fails(capsys, ["show", "obs_nope", *base], "no node 'obs_nope' in agent 'mini-1'")


# ---------------------------------------------------------------------------------- export / import
def test_export_then_import_into_a_fresh_store_recalls_the_same(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = tmp_path / "mini-1.jsonl"
    summary = _json(
        capsys,
        ["export", "--path", str(store), "--agent", "mini-1", "-o", str(exported), "--plain", "--json"],
    )
    assert summary["node"] > 5 and summary["edge"] > 5
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert records[0]["record"] == "header" and records[0]["agent"] == "mini-1"
    assert records[-1] == {
        "record": "end",
        "counts": {k: summary[k] for k in ("node", "edge", "blob", "meta")},
    }
    assert {r["node"]["agent"] for r in records if r["record"] == "node"} == {"mini-1"}  # one agent only

    fresh = tmp_path / "fresh.db"
    report = _json(capsys, ["import", str(exported), "--path", str(fresh), "--plain", "--json"])
    assert report["agent"] == "mini-1" and report["nodes"] == summary["node"]
    # The embedded store's BM25 statistics span the whole file, so the fresh store gets the other
    # agent too before recall is compared: then every store holds the same memory.
    other = tmp_path / "mini-2.jsonl"
    assert cli.main(["export", "--path", str(store), "--agent", "mini-2", "-o", str(other), "--plain"]) == 0
    assert cli.main(["import", str(other), "--path", str(fresh), "--plain"]) == 0
    for q in QUESTIONS:
        before = _json(capsys, ["recall", q, "--path", str(store), "--agent", "mini-1", "--json"])
        after = _json(capsys, ["recall", q, "--path", str(fresh), "--agent", "mini-1", "--json"])
        assert after == before
    for tier in ("message", "observation", "fact", "chunk"):
        argv = ["list", "--agent", "mini-1", "--tier", tier, "--limit", "100", "--json"]
        assert _json(capsys, [*argv, "--path", str(fresh)]) == _json(capsys, [*argv, "--path", str(store)])

    # Importing the same agent again is refused; the store keeps what it has.
    _fails(
        capsys, ["import", str(exported), "--path", str(fresh)], "already has memory", "nothing was imported"
    )
    assert _json(capsys, ["list", "--path", str(fresh), "--agent", "mini-1", "--json"])["total"] == 5


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: lines[:-1], "no 'end' record: the file is truncated"),
        (lambda lines: [lines[0], *lines[2:]], "the 'end' record counts"),
        (lambda lines: [lines[0], "{not json", *lines[1:]], "line 2: invalid JSON"),
        (lambda lines: lines[1:], "line 1: the first record must be the 'header'"),
        (lambda lines: [lines[0].replace("agent-export", "other"), *lines[1:]], "not a uniko export"),
        (
            lambda lines: [lines[0], lines[1].replace('"tier":"participant"', '"tier":"gossip"'), *lines[2:]],
            "line 2: invalid node record: unknown tier 'gossip'",
        ),
    ],
)
def test_a_damaged_export_is_refused_and_nothing_is_written(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, message: str
) -> None:
    good = tmp_path / "good.jsonl"
    assert cli.main(["export", "--path", str(store), "--agent", "mini-2", "-o", str(good), "--plain"]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(damage(good.read_text().splitlines())) + "\n")
    target = tmp_path / "target.db"
    _fails(capsys, ["import", str(bad), "--path", str(target)], message, "nothing was imported")
    assert not target.exists()


def test_import_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(capsys, ["import", str(tmp_path / "none.jsonl"), "--path", str(tmp_path / "t.db")], "no such file")
    assert not (tmp_path / "t.db").exists()


# ---------------------------------------------------------------------------------- forget
def test_forget_needs_yes_and_then_redactions_survive_export(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "own.db"
    shutil.copyfile(store, db)  # the module's store is closed (checkpointed) between commands
    base = ["--path", str(db), "--agent", "mini-1"]
    dry = _json(capsys, ["forget", *base, "--session", "session_2", "--turn", "D2:2", "--json"], rc=2)
    assert dry == {
        "agent": "mini-1",
        "confirmed": False,
        "would": "redact",
        "target": "turn",
        "turns": ["D2:2"],
    }
    assert _json(capsys, ["list", *base, "--json"])["total"] == 5  # nothing changed

    done = _json(capsys, ["forget", *base, "--session", "session_2", "--turn", "D2:2", "--yes", "--json"])
    assert done["confirmed"] and done["report"]["messages"] == 1
    recalled = _json(capsys, ["recall", QUESTIONS[0], *base, "--json"])
    assert "Biscuit" not in recalled["rendered"]
    shown = _json(capsys, ["show", message_id("mini-1", "D2:2"), *base, "--json"])
    assert shown["node"]["redacted"] and shown["node"]["content"] == ""

    exported = tmp_path / "redacted.jsonl"
    assert cli.main(["export", *base, "-o", str(exported), "--plain"]) == 0
    assert "Biscuit" not in exported.read_text()  # the redaction stays in the export
    fresh = tmp_path / "fresh.db"
    assert cli.main(["import", str(exported), "--path", str(fresh), "--plain"]) == 0
    again = _json(capsys, ["show", message_id("mini-1", "D2:2"), "--path", str(fresh), "--json"])
    assert again["node"]["redacted"] and again["node"]["content"] == ""
    assert (
        "Biscuit" not in _json(capsys, ["recall", QUESTIONS[0], "--path", str(fresh), "--json"])["rendered"]
    )


def test_forget_a_session_hard_and_a_participant(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "own.db"
    shutil.copyfile(store, db)
    m1 = ["--path", str(db), "--agent", "mini-1"]
    done = _json(capsys, ["forget", *m1, "--session", "session_1", "--hard", "--yes", "--plain", "--json"])
    assert done["mode"] == "delete" and done["report"]["messages"] == 3
    assert [n["external_id"] for n in _json(capsys, ["list", *m1, "--json"])["nodes"]] == ["D2:1", "D2:2"]
    m2 = ["--path", str(db), "--agent", "mini-2"]
    done = _json(capsys, ["forget", *m2, "--participant", "Jon", "--yes", "--json"])
    assert done["target"] == "participant" and done["report"]["messages"] >= 1
    listed = _json(capsys, ["list", *m2, "--participant", "Jon", "--include-redacted", "--json"])
    assert listed["nodes"] and all(n["redacted"] for n in listed["nodes"])


def test_forget_refuses_what_it_cannot_find(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["forget", "--path", str(store), "--agent", "mini-1"]
    _fails(capsys, base, "say what to forget")
    _fails(capsys, [*base, "--turn", "D1:1"], "--turn needs the --session")
    _fails(capsys, [*base, "--session", "session_9", "--yes"], "no session 'session_9'")
    _fails(capsys, [*base, "--session", "session_1", "--turn", "D9:9", "--yes"], "no live turn 'D9:9'")
    _fails(capsys, [*base, "--participant", "Nobody", "--yes"], "no participant 'Nobody'")
    _fails(capsys, [*base, "--participant", "Jon", "--session", "session_1"], "not both")
    assert _json(capsys, ["list", "--path", str(store), "--agent", "mini-1", "--json"])["total"] == 5


def test_export_into_a_pipe_closed_early_ends_quietly(store: Path) -> None:
    """``uniko export | head -1``: the reader goes away; no traceback, no half-written error."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uniko_memory.cli",
            "export",
            "--path",
            str(store),
            "--agent",
            "mini-1",
            "-o",
            "-",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"{")
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 1)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
