"""Issue 22 item 2: ``uniko demo`` keeps its store where it says and names the next command;
``uniko recall --viewer`` serves only what that viewer may see (docs/scoping.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uniko_memory import Turn, Uniko, cli


def test_demo_keeps_its_store_and_says_what_to_try_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "uniko-demo.db").is_file()  # the default path, in the working directory
    assert "the store is kept at uniko-demo.db" in out and "try next:" in out
    assert 'uniko recall "Where does Priya work now?" --path uniko-demo.db' in out
    # ... and the command it names works on that store.
    assert cli.main(["recall", "Where does Priya work now?", "--path", "uniko-demo.db", "--json"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    assert bundle["agent"] == cli.DEMO_AGENT and bundle["items"]
    assert cli.main(["demo"]) == 0  # a second run replays the stored turns into the same store
    # ... and says so: nothing new was stored (issue 40.6: it said "stored 26 turns")
    again = capsys.readouterr().out
    assert "stored 0 new turns: all 26 were already stored at uniko-demo.db" in again
    assert "stored 26 turns" not in again


def test_recall_for_a_viewer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "team.db"
    uni = Uniko.open_sync(db)
    try:
        s = uni.agent("team").session("standup")
        s.observe_sync(Turn(sender="ana", content="The release moves to Friday.", addressed_to="bot"))
        s.observe_sync(
            Turn(sender="ben", content="My salary review is next Tuesday.", visibility="private:ben")
        )
        s.finalize_sync()
    finally:
        uni.close_sync()
    base = ["recall", "When is the salary review?", "--path", str(db), "--json"]
    rendered = {}
    for viewer in ("ana", "ben"):
        capsys.readouterr()
        assert cli.main([*base, "--viewer", viewer]) == 0
        rendered[viewer] = json.loads(capsys.readouterr().out)["rendered"]
    assert "salary" not in rendered["ana"].lower() and "salary review" in rendered["ben"]
    assert cli.main([*base, "--team", "red"]) == 2
    assert "give --viewer too" in capsys.readouterr().err
