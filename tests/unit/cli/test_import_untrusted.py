"""Issue 40.11: ``uniko import`` does not trust its file. It applies the checks ``observe``
applies, writes the tombstones in the one transaction with the nodes, and refuses a bad file with
one clear line (exit 2), leaving nothing behind: no node, no tombstone, no new store file, no
``<path>.lock``.

Each test builds a hostile file from a real export of a small store (the fake embedder: no model)
and imports it into the real embedded store, through the library and through the CLI.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.unit.ingest._support import FakeEmbedder
from uniko_memory import cli
from uniko_memory.consolidation.forget.journal import tombstone_key, tombstones
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Message
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.transfer import ExportError, check_import, import_agent, read_export

Record = dict[str, Any]
AGENT = "me"
STONES = json.dumps({"par_gone": {"entity": None, "hard": False}})


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[Record]:
    """The records of a small agent's export: three turns and what they gave rise to."""
    root = tmp_path_factory.mktemp("import")
    db, out = root / "small.db", root / "small.jsonl"
    with Uniko.open_sync(db, embedder=FakeEmbedder()) as uni:
        session = uni.agent(AGENT).session("s1")
        for i in range(3):
            session.observe_sync(Turn(sender="A", content=f"I adopted cat number {i}.", id=f"t{i}"))
    assert cli.main(["export", "--path", str(db), "--plain", "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def _records(exported: list[Record], *, vectors: bool = False) -> list[Record]:
    """A copy of the export; without vectors (and model) unless asked, so the CLI's default
    embedder takes it."""
    recs = copy.deepcopy(exported)
    if not vectors:
        for r in recs:
            if r["record"] == "node":
                r["vector"] = None
            elif r["record"] == "header":
                r["embedding_model"] = r["embedding_dim"] = None
    return recs


def _recount(recs: list[Record]) -> list[Record]:
    counts = {"node": 0, "edge": 0, "blob": 0, "meta": 0}
    for r in recs[1:-1]:
        counts[r["record"]] += 1
    return [*recs[:-1], {"record": "end", "counts": counts}]


def _message(recs: list[Record]) -> Record:
    return next(r for r in recs if r["record"] == "node" and r["tier"] == "message")


def _with_stones(recs: list[Record], value: str = STONES) -> list[Record]:
    return _recount([*recs[:-1], {"record": "meta", "key": "forget.tombstones", "value": value}, recs[-1]])


def _lines(recs: Sequence[Record | str]) -> list[str]:
    return [r if isinstance(r, str) else json.dumps(r) for r in recs]


def _write(tmp_path: Path, recs: Sequence[Record | str], name: str = "hostile.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(_lines(recs)) + "\n", encoding="utf-8")
    return path


def _import_cli(file: Path, db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = cli.main(["import", str(file), "--path", str(db), "--plain"])
    return rc, capsys.readouterr().err


def _refused_cleanly(
    tmp_path: Path, recs: Sequence[Record | str], match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused by ``read_export`` (an ``ExportError`` naming ``match``) and by the CLI: exit 2, one
    line, no traceback, no store file left behind."""
    with pytest.raises(ExportError, match=match):
        read_export(_lines(recs))
    db = tmp_path / "new.db"
    rc, err = _import_cli(_write(tmp_path, recs), db, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("uniko import: ") and "nothing was imported" in lines[0]
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.jsonl"]


async def _import(db: Path, recs: list[Record]) -> EmbeddedStore:
    store = await EmbeddedStore.open(db, dim=FakeEmbedder.dim)
    data = read_export(_lines(recs))
    await check_import(store, data, embedding_model=None)
    await import_agent(store, data)
    return store


# ---------------------------------------------------------------- redaction


def test_a_redacted_node_that_still_holds_text_is_refused(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _records(exported)
    _message(recs)["node"]["redacted"] = True  # the turn's words still in "content"
    _refused_cleanly(tmp_path, recs, "marked redacted but still holds content", capsys)


def test_a_redacted_node_with_a_vector_is_refused(exported: list[Record]) -> None:
    recs = _records(exported, vectors=True)
    msg = next(r for r in recs if r["record"] == "node" and r["tier"] == "message" and r["vector"])
    msg["node"].update(redacted=True, content="", metadata={})
    with pytest.raises(ExportError, match="redacted but carries a vector"):
        read_export(_lines(recs))


async def test_a_redacted_node_stored_blank_still_imports(exported: list[Record], tmp_path: Path) -> None:
    """The honest redacted node (as ``store.redact`` writes it) is imported as it is."""
    recs = _records(exported)
    _message(recs)["node"].update(redacted=True, content="", metadata={})
    store = await _import(tmp_path / "t.db", recs)
    try:
        node = await store.get(AGENT, _message(recs)["node"]["id"])
        assert isinstance(node, Message) and node.redacted and node.content == ""
    finally:
        await store.close()


# ---------------------------------------------------------------- tombstones


def test_a_garbage_tombstone_record_is_refused(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _refused_cleanly(tmp_path, _with_stones(_records(exported), "garbage"), r"forget\.tombstones", capsys)
    with pytest.raises(ExportError, match=r"forget\.tombstones"):
        read_export(_lines(_with_stones(_records(exported), json.dumps({"par_x": {"hard": "maybe"}}))))
    with pytest.raises(ExportError, match=r"forget\.tombstones"):
        read_export(_lines(_with_stones(_records(exported), "[1, 2]")))


async def test_imported_tombstones_are_what_forget_reads(exported: list[Record], tmp_path: Path) -> None:
    store = await _import(tmp_path / "t.db", _with_stones(_records(exported)))
    try:
        assert set(await tombstones(store, AGENT)) == {"par_gone"}
    finally:
        await store.close()


async def test_tombstones_are_written_with_the_nodes_or_not_at_all(
    exported: list[Record], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A meta write that fails after the nodes' commit (the old order) must not leave the nodes
    without their tombstones: the tombstones go in the nodes' own transaction."""
    store = await EmbeddedStore.open(tmp_path / "t.db", dim=FakeEmbedder.dim)
    try:
        data = read_export(_lines(_with_stones(_records(exported))))

        async def fail(key: str, value: str) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(store, "set_meta", fail)
        with contextlib.suppress(OSError):
            await import_agent(store, data)
        nodes, stones = await store.count(AGENT), await store.get_meta(tombstone_key(AGENT))
        assert (nodes, stones) == (0, None) or (nodes == len(data.nodes) and stones is not None), (
            f"{nodes} nodes imported, tombstones {stones!r}: not all or nothing"
        )
    finally:
        await store.close()


async def test_a_failed_commit_writes_neither_nodes_nor_tombstones(
    exported: list[Record], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await EmbeddedStore.open(tmp_path / "t.db", dim=FakeEmbedder.dim)
    try:
        data = read_export(_lines(_with_stones(_records(exported))))
        real = store._put_node
        seen: list[str] = []

        def put_node(conn: Any, node: Any, *args: Any) -> None:
            seen.append(node.id)
            if len(seen) == len(data.nodes):  # the last node: most of the unit is written
                raise OSError("disk full")
            real(conn, node, *args)

        monkeypatch.setattr(store, "_put_node", put_node)
        with pytest.raises(Exception, match="disk full"):
            await import_agent(store, data)
        monkeypatch.undo()
        assert await store.count(AGENT) == 0
        assert await store.get_meta(tombstone_key(AGENT)) is None
    finally:
        await store.close()


# ---------------------------------------------------------------- observe's limits


def test_a_message_over_the_turn_limit_is_refused(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _records(exported)
    _message(recs)["node"]["content"] = "x" * 1_000_001
    _refused_cleanly(tmp_path, recs, "1,000,001 characters in content, over the limit of 1,000,000", capsys)


def test_other_checks_observe_applies_are_applied(exported: list[Record]) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"content": "   "}, "empty content"),
        ({"content": "bell \x07 inside"}, "characters observe removes"),
        ({"addressed_to": [f"p{i}" for i in range(65)]}, "max_addressed_to"),
        ({"metadata": {"blob": "x" * 70_000}}, "max_metadata_bytes"),
        ({"sender_name": "n" * 257}, "sender_name is over the limit"),
    ]
    for update, match in cases:
        recs = _records(exported)
        _message(recs)["node"].update(update)
        with pytest.raises(ExportError, match=match):
            read_export(_lines(recs))
    recs = _records(exported)
    obs = next(r for r in recs if r["record"] == "node" and r["tier"] == "observation")
    obs["node"]["content"] = "y" * 1_000_001  # no node holds a text longer than a turn
    with pytest.raises(ExportError, match="over the limit of 1,000,000"):
        read_export(_lines(recs))


def test_duplicate_node_ids_are_refused(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = _records(exported)
    twin = copy.deepcopy(_message(recs))
    twin["node"]["content"] = "the second copy wins?"
    _refused_cleanly(tmp_path, _recount([*recs[:-1], twin, recs[-1]]), "appears twice", capsys)


# ---------------------------------------------------------------- malformed structure


@pytest.mark.parametrize(
    "case",
    ["counts_text", "counts_null", "counts_not_object", "node_null", "node_missing", "deep", "deep_node"],
)
def test_malformed_structure_is_one_clear_line(
    case: str, exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs: list[Record | str] = list(_records(exported))
    deep = "[" * 200_000 + "]" * 200_000
    if case == "counts_text":
        recs[-1] = {"record": "end", "counts": {"node": "x"}}
    elif case == "counts_null":
        recs[-1] = {"record": "end", "counts": {"node": None}}
    elif case == "counts_not_object":
        recs[-1] = {"record": "end", "counts": [1, 2]}
    elif case == "node_null":
        recs.insert(1, {"record": "node", "tier": "message", "node": None, "vector": None})
    elif case == "node_missing":
        recs.insert(1, {"record": "node", "node": None})
    elif case == "deep":
        recs.insert(1, deep)
    else:
        recs.insert(1, '{"record": "node", "tier": "message", "node": ' + deep + "}")
    _refused_cleanly(tmp_path, recs, "line", capsys)


# ---------------------------------------------------------------- nothing left behind


def test_a_refused_import_into_a_new_path_leaves_no_file_nor_lock(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused after the store was opened (vectors of another embedding model than the CLI's)."""
    file = _write(tmp_path, _records(exported, vectors=True), "other-model.jsonl")
    db = tmp_path / "new.db"
    rc, err = _import_cli(file, db, capsys)
    assert rc == 2 and "embedding model" in err and "nothing was imported" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-model.jsonl"]
    assert not os.path.lexists(f"{db}.lock")


def test_a_refused_import_keeps_a_lock_file_it_did_not_make(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _write(tmp_path, _records(exported, vectors=True), "other-model.jsonl")
    db = tmp_path / "new.db"
    Path(f"{db}.lock").touch()
    rc, _ = _import_cli(file, db, capsys)
    assert rc == 2 and not db.exists() and Path(f"{db}.lock").exists()


def test_a_good_file_still_imports_through_the_cli(
    exported: list[Record], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _write(tmp_path, _with_stones(_records(exported)), "good.jsonl")
    rc, err = _import_cli(file, tmp_path / "new.db", capsys)
    assert rc == 0, err
