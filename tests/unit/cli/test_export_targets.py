"""Issue 40.2: where ``uniko export`` writes. Standard output when ``-o`` is absent or ``-``; a
device or FIFO is streamed into; a symlink is written through; only a regular file or a new path
is ever renamed over; a directory or a symlink to nowhere is refused and left as it was.

(``uniko export -o /dev/stdout``, run as root, used to replace ``/dev/stdout`` with a regular
file. The tests that would have done that on the old code use a FIFO and symlinks of their own;
the ``/dev/stdout`` test runs the fixed command only.)
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory import cli
from uniko_memory.cli.cmd_export import Way, way_to
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store of one agent (the fake embedder: export needs no models)."""
    db = tmp_path_factory.mktemp("export") / "small.db"
    with Uniko.open_sync(db, embedder=FakeEmbedder()) as uni:
        session = uni.agent("me").session("s1")
        for i in range(3):
            session.observe_sync(Turn(sender="A", content=f"I adopted cat number {i}.", id=f"t{i}"))
    return db


def _records(text: str) -> list[dict[str, object]]:
    records = [json.loads(line) for line in text.splitlines()]
    assert records[0]["record"] == "header" and records[-1]["record"] == "end"
    return records


def _export(store: Path, *out: str) -> int:
    return cli.main(["export", "--path", str(store), "--plain", *out])


def test_without_out_the_export_goes_to_standard_output(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert _export(store) == 0
    captured = capsys.readouterr()
    assert _records(captured.out)[-1]["counts"]["node"] > 0  # type: ignore[index]
    assert "exported agent me" in captured.err and "standard output" in captured.err
    assert _export(store, "-o", "-") == 0
    assert _records(capsys.readouterr().out)


def test_a_fifo_is_streamed_into_and_stays_a_fifo(store: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    keep_open = os.open(fifo, os.O_RDWR)  # a writer of our own: the reader never blocks forever
    opened, got = threading.Event(), []

    def read() -> None:
        with open(fifo, "rb") as fh:
            opened.set()
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert opened.wait(10)
    try:
        assert _export(store, "-o", str(fifo)) == 0
    finally:
        os.close(keep_open)  # the reader sees the end once the export's writer is gone too
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert got and _records(got[0].decode())


def test_a_symlink_is_written_through_and_kept(store: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(real)
    assert _export(store, "-o", str(link)) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert _records(real.read_text())
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # overwritten in place, not replaced


def test_a_regular_file_or_a_new_path_gets_the_whole_export(store: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text("old\n")
    new = tmp_path / "new.jsonl"
    assert _export(store, "-o", str(old)) == 0 and _export(store, "-o", str(new)) == 0
    assert _records(old.read_text())[1:] == _records(new.read_text())[1:]  # the header has the time
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "old.jsonl"]  # no temporary left


def test_a_directory_or_a_link_to_nowhere_is_refused_and_left_alone(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    to_folder = tmp_path / "to_folder"
    to_folder.symlink_to(folder)
    cases = [
        (folder, "is a directory"),
        (to_folder, "is a directory"),
        (dangling, "symlink to a path that does not exist"),
        (tmp_path / "missing" / "x.jsonl", "does not exist"),
    ]
    for target, needle in cases:
        capsys.readouterr()
        assert _export(store, "-o", str(target)) == 2, target
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err, err
    assert dangling.is_symlink() and not (tmp_path / "nowhere.jsonl").exists()
    assert to_folder.is_symlink() and list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.jsonl", "folder", "to_folder"]


def test_dev_stdout_is_streamed_and_the_summary_stays_out_of_it(store: Path) -> None:
    """``uniko export -o /dev/stdout --json | ...``: the export on the pipe, nothing else there,
    and ``/dev/stdout`` untouched."""
    # Checked first, in this process: as root, a command that renamed over it would break the machine.
    assert way_to("/dev/stdout") is not Way.REPLACE
    before = os.lstat("/dev/stdout")
    argv = ["export", "--path", str(store), "--plain", "--json", "-o", "/dev/stdout"]
    done = subprocess.run(
        [sys.executable, "-m", "uniko_memory.cli", *argv],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert _records(done.stdout.decode())  # every line an export record
    assert "exported agent me" in done.stderr.decode()
    after = os.lstat("/dev/stdout")
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
