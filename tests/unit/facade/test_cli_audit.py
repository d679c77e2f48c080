"""``uniko audit --path DB``: clean store exits 0 with one line per read path; a missing store 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory import cli
from uniko_memory.integrity import ReadPath

LOCOMO = Path(__file__).resolve().parents[2] / "data" / "locomo_mini.json"


@pytest.fixture(autouse=True)
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("uniko_memory.providers.defaults.default_embedder", lambda cfg: FakeEmbedder())


def test_audit_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "m.db"
    assert cli.main(["ingest", str(LOCOMO), "--path", str(db), "--plain"]) == 0
    capsys.readouterr()
    assert cli.main(["audit", "--path", str(db), "--probe-queries", "2"]) == 0
    out = capsys.readouterr().out
    assert all(p.value in out for p in ReadPath)
    assert cli.main(["audit", "--path", str(db), "--probe-queries", "1", "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert reports and all(len(r["checks"]) == len(ReadPath) for r in reports)


def test_audit_without_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["audit", "--path", str(tmp_path / "none.db")]) == 2
    assert "no store" in capsys.readouterr().err
