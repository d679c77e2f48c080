from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from benchmarks.harness.convert import (
    convert_locomo,
    convert_longmemeval,
    format_session_date,
    load_any,
    locomo_annotated_observations,
    main,
    normalise_locomo_evidence,
    parse_locomo_date,
    parse_longmemeval_date,
    sniff_format,
)
from benchmarks.harness.format import DatasetError, load_dataset


def test_parse_dates() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_longmemeval_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    with pytest.raises(ValueError):
        parse_locomo_date("yesterday")
    with pytest.raises(ValueError):
        parse_longmemeval_date("20 May 2023")


def test_format_session_date_round_trips() -> None:
    for text in ("1:56 pm on 8 May, 2023", "12:09 am on 13 September, 2023", "12:30 pm on 1 July, 2023"):
        assert format_session_date(parse_locomo_date(text)) == text


def test_normalise_evidence() -> None:
    valid = {"D1:1", "D2:2", "D4:4", "D9:1"}
    assert normalise_locomo_evidence(
        ["D1:1; D2:2", "D9:1 D4:4", "D", "D:11:26", "D30:05", "D1:1"], valid
    ) == [
        "D1:1",
        "D2:2",
        "D9:1",
        "D4:4",
    ]
    assert normalise_locomo_evidence(["D1:99"], valid) == []


def _locomo(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / "locomo_tiny.json").read_text())


def test_convert_locomo(data_dir: Path) -> None:
    ds = convert_locomo(_locomo(data_dir))
    (conv,) = ds.conversations
    assert conv.id == "conv-t1" and conv.speakers == ["Ann", "Bob"]
    # session_3 has a date but no turns: ignored
    assert [s.id for s in conv.sessions] == ["session_1", "session_2"]
    s1 = conv.sessions[0]
    assert s1.start == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert [t.timestamp - s1.start for t in s1.turns] == [
        timedelta(0),
        timedelta(seconds=30),
        timedelta(seconds=60),
    ]
    img = s1.turns[2]
    assert img.text == "A beagle. Look at him. [shares a photo: a photo of a small dog on a couch]"
    assert img.attachments[0].kind == "image"
    assert img.attachments[0].caption == "a photo of a small dog on a couch"
    assert img.attachments[0].query == "beagle puppy"
    assert s1.turns[0].addressed_to == "Bob" and s1.turns[1].addressed_to == "Ann"

    qs = {q.id: q for q in conv.questions}
    # q3: all evidence invalid, category 3 → dropped
    assert sorted(qs) == ["conv-t1:q0", "conv-t1:q1", "conv-t1:q2", "conv-t1:q4", "conv-t1:q5"]
    assert qs["conv-t1:q0"].category == "single-hop" and qs["conv-t1:q0"].answer == "Rex"
    assert qs["conv-t1:q1"].gold_turn_ids == ["D1:1", "D2:2"]
    assert qs["conv-t1:q1"].gold_session_ids == ["session_1", "session_2"]
    assert qs["conv-t1:q1"].category == "temporal" and qs["conv-t1:q1"].question_time is None
    assert qs["conv-t1:q2"].gold_turn_ids == ["D2:1"] and qs["conv-t1:q2"].category == "multi-hop"
    adv = qs["conv-t1:q4"]
    assert adv.abstention and adv.category == "adversarial" and adv.answer is None
    assert adv.gold_turn_ids == ["D1:2"]
    assert qs["conv-t1:q5"].abstention and qs["conv-t1:q5"].gold_turn_ids == []


def test_int_answer_becomes_string(data_dir: Path) -> None:
    raw = _locomo(data_dir)
    raw[0]["qa"][0]["answer"] = 2022
    ds = convert_locomo(raw)
    assert ds.conversations[0].questions[0].answer == "2022"


def test_annotated_observations(data_dir: Path) -> None:
    obs = locomo_annotated_observations(_locomo(data_dir))
    assert obs == {
        "conv-t1": [
            ("D1:1", "Ann adopted a beagle named Rex."),
            ("D2:1", "Bob is learning the violin."),
            ("D2:2", "Rex chewed Ann's shoes."),
            ("D1:1", "Rex chewed Ann's shoes."),
        ]
    }


def test_convert_longmemeval(data_dir: Path) -> None:
    raw = json.loads((data_dir / "longmemeval_tiny.json").read_text())
    ds = convert_longmemeval(raw)
    assert [c.id for c in ds.conversations] == ["q-commute", "q-pet_abs"]
    conv = ds.conversations[0]
    assert conv.speakers == ["user", "assistant"]
    assert [s.id for s in conv.sessions] == ["sharegpt_a1", "answer_s1"]
    s2 = conv.sessions[1]
    assert s2.start == datetime(2023, 5, 22, 8, 5, tzinfo=UTC)
    assert [t.id for t in s2.turns] == ["answer_s1:0", "answer_s1:1", "answer_s1:2"]
    assert s2.turns[2].timestamp == s2.start + timedelta(seconds=60)
    assert s2.turns[1].addressed_to == "user"
    (q,) = conv.questions
    assert q.question_time == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
    assert q.gold_turn_ids == ["answer_s1:0"] and q.gold_session_ids == ["answer_s1"]
    assert q.category == "single-session-user" and not q.abstention and q.answer == "45 minutes"
    abs_q = ds.conversations[1].questions[0]
    assert abs_q.abstention and abs_q.gold_turn_ids == []


def test_sniff_and_load_any(data_dir: Path, tmp_path: Path) -> None:
    assert sniff_format(data_dir / "locomo_tiny.json") == "locomo"
    assert sniff_format(data_dir / "longmemeval_tiny.json") == "longmemeval"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"sample_id": "x", "conversation": {"speaker_a": "A"}, "qa": []}]))
    with pytest.raises(DatasetError) as ei:
        load_any(bad, "locomo")
    assert "'x'" in ei.value.record and ei.value.field == "speaker_b"


def test_cli_round_trip(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "locomo.generic.json"
    assert main(["locomo", str(data_dir / "locomo_tiny.json"), str(out)]) == 0
    assert sniff_format(out) == "generic"
    ds = load_dataset(out)
    assert len(ds.conversations[0].questions) == 5
    out2 = tmp_path / "lme.generic.json"
    assert main(["longmemeval", str(data_dir / "longmemeval_tiny.json"), str(out2)]) == 0
    assert len(load_dataset(out2).conversations) == 2
    out3 = tmp_path / "obs.json"
    assert main(["locomo-observations", str(data_dir / "locomo_tiny.json"), str(out3)]) == 0
    assert json.loads(out3.read_text())["conv-t1"][0] == ["D1:1", "Ann adopted a beagle named Rex."]
    assert main(["locomo", str(tmp_path / "absent.json"), str(tmp_path / "x.json")]) == 2
