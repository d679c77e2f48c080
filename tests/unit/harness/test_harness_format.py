from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from benchmarks.harness.format import (
    Conversation,
    DatasetError,
    EvalDataset,
    Question,
    Session,
    Turn,
    dump_dataset,
    load_dataset,
)

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _dataset() -> EvalDataset:
    return EvalDataset(
        name="tiny",
        conversations=[
            Conversation(
                id="c1",
                speakers=["A", "B"],
                sessions=[
                    Session(id="s1", start=T0, turns=[Turn(id="t1", speaker="A", text="hi", timestamp=T0)])
                ],
                questions=[
                    Question(id="q1", text="?", gold_turn_ids=["t1"], gold_session_ids=["s1"], category="x")
                ],
            )
        ],
    )


def _write(tmp_path: Path, raw: object) -> Path:
    p = tmp_path / "ds.json"
    p.write_text(json.dumps(raw))
    return p


def test_round_trip(tmp_path: Path) -> None:
    ds = _dataset()
    path = tmp_path / "out.json"
    dump_dataset(ds, path)
    assert load_dataset(path) == ds


def test_extra_field_names_file_record_and_field(tmp_path: Path) -> None:
    raw = _dataset().model_dump(mode="json")
    raw["conversations"][0]["questions"][0]["bogus"] = 1
    path = _write(tmp_path, raw)
    with pytest.raises(DatasetError) as ei:
        load_dataset(path)
    err = ei.value
    assert err.path == str(path)
    assert "conversation #0 ('c1')" in err.record and "question #0 ('q1')" in err.record
    assert err.field == "bogus"
    assert str(path) in str(err)


def test_naive_session_start_rejected(tmp_path: Path) -> None:
    raw = _dataset().model_dump(mode="json")
    raw["conversations"][0]["sessions"][0]["start"] = "2023-05-08T13:56:00"
    with pytest.raises(DatasetError) as ei:
        load_dataset(_write(tmp_path, raw))
    assert "session #0 ('s1')" in ei.value.record
    assert ei.value.field == "start"


def test_missing_field(tmp_path: Path) -> None:
    raw = _dataset().model_dump(mode="json")
    del raw["conversations"][0]["questions"][0]["category"]
    with pytest.raises(DatasetError) as ei:
        load_dataset(_write(tmp_path, raw))
    assert ei.value.field == "category"


def test_unknown_gold_turn(tmp_path: Path) -> None:
    raw = _dataset().model_dump(mode="json")
    raw["conversations"][0]["questions"][0]["gold_turn_ids"] = ["t1", "nope"]
    with pytest.raises(DatasetError) as ei:
        load_dataset(_write(tmp_path, raw))
    assert ei.value.field == "gold_turn_ids" and "nope" in str(ei.value)


def test_duplicate_turn_id(tmp_path: Path) -> None:
    raw = _dataset().model_dump(mode="json")
    turns = raw["conversations"][0]["sessions"][0]["turns"]
    turns.append(dict(turns[0]))
    with pytest.raises(DatasetError, match="duplicate turn id"):
        load_dataset(_write(tmp_path, raw))


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(DatasetError) as ei:
        load_dataset(p)
    assert ei.value.field == "<json>"
    with pytest.raises(DatasetError):
        load_dataset(tmp_path / "absent.json")


def test_conversation_helpers() -> None:
    conv = _dataset().conversations[0]
    assert [t.id for t in conv.turns()] == ["t1"]
    assert conv.turn_session() == {"t1": "s1"}
