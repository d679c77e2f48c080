"""``recall_latency_bench``: the default run and ``--live`` (one more turn stored before each
question, in a copy of the memory), on the tiny LoCoMo file with the real local models."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from benchmarks import recall_latency_bench as bench


def _messages(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM nodes WHERE tier='message'").fetchone()[0])


async def test_live_turns_go_to_a_copy_and_every_question_is_timed(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, db = data_dir / "locomo_tiny.json", tmp_path / "tiny.db"
    still = await bench.run(data, db, 0, 300, 1, fresh=True)
    stored = _messages(db)
    assert still["live"] is False and still["queries"] > 0 and still["p50_ms"] > 0

    removed: list[tuple[Path, int]] = []
    real_rmtree = shutil.rmtree

    def rmtree(path: Any, ignore_errors: bool = False) -> None:
        removed.append((Path(path), _messages(Path(path) / db.name)))
        real_rmtree(path, ignore_errors=ignore_errors)

    monkeypatch.setattr(bench.shutil, "rmtree", rmtree)
    live = await bench.run(data, db, 0, 300, 1, fresh=False, live=True)
    assert live["live"] is True and live["queries"] == still["queries"]
    # one more turn a question, stored in the copy, which is removed; the memory is as it was
    [(scratch, in_copy)] = removed
    assert in_copy == stored + live["queries"] and not scratch.exists()
    assert _messages(db) == stored
