"""Converters from public benchmark files to the generic format.

CLI::

    python -m benchmarks.harness.convert locomo IN.json OUT.json
    python -m benchmarks.harness.convert longmemeval IN.json OUT.json
    python -m benchmarks.harness.convert locomo-observations IN.json OUT.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .format import Attachment, Conversation, DatasetError, EvalDataset, Question, Session, Turn, dump_dataset

TURN_STEP = timedelta(seconds=30)

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
LOCOMO_ABSTENTION_CATEGORY = 5

_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → aware UTC datetime."""
    cleaned = " ".join(text.replace(",", " ").split())
    try:
        naive = datetime.strptime(cleaned, "%I:%M %p on %d %B %Y")
    except ValueError as exc:
        raise ValueError(f"unrecognised LoCoMo date {text!r}") from exc
    return naive.replace(tzinfo=UTC)


def format_session_date(ts: datetime) -> str:
    """Render a session date the way LoCoMo writes it: ``"1:56 pm on 8 May, 2023"``."""
    hour = ts.hour % 12 or 12
    ampm = "am" if ts.hour < 12 else "pm"
    return f"{hour}:{ts.minute:02d} {ampm} on {ts.day} {ts.strftime('%B')}, {ts.year}"


def parse_longmemeval_date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` → aware UTC datetime (the weekday is ignored)."""
    m = re.fullmatch(r"\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(\d{1,2}):(\d{2})\s*", text)
    if not m:
        raise ValueError(f"unrecognised LongMemEval date {text!r}")
    y, mo, d, h, mi = (int(g) for g in m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=UTC)


def normalise_locomo_evidence(evidence: Sequence[Any], valid_ids: set[str]) -> list[str]:
    """Split each evidence string on ``[;,\\s]+``, keep ``D<n>:<m>`` ids that exist; de-duplicated, in order."""
    out: list[str] = []
    for item in evidence:
        for piece in _EVIDENCE_SPLIT.split(str(item)):
            if _DIA_ID.fullmatch(piece) and piece in valid_ids and piece not in out:
                out.append(piece)
    return out


def _locomo_sessions(conv: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]], str]]:
    """(session number, turns, date string) for every session that has turns, by number."""
    found: list[tuple[int, list[dict[str, Any]], str]] = []
    for key, value in conv.items():
        m = _LOCOMO_SESSION.fullmatch(key)
        if not m or not isinstance(value, list) or not value:
            continue
        n = int(m.group(1))
        date = conv.get(f"session_{n}_date_time")
        if not isinstance(date, str):
            raise ValueError(f"session_{n} has no session_{n}_date_time")
        found.append((n, value, date))
    return sorted(found, key=lambda x: x[0])


def convert_locomo_conversation(sample: dict[str, Any], index: int = 0) -> Conversation:
    conv_id = str(sample.get("sample_id") or f"conv-{index}")
    conv = sample["conversation"]
    speaker_a, speaker_b = str(conv["speaker_a"]), str(conv["speaker_b"])
    other = {speaker_a: speaker_b, speaker_b: speaker_a}
    sessions: list[Session] = []
    turn_session: dict[str, str] = {}
    for n, raw_turns, date in _locomo_sessions(conv):
        start = parse_locomo_date(date)
        session_id = f"session_{n}"
        turns: list[Turn] = []
        for i, rt in enumerate(raw_turns):
            speaker = str(rt["speaker"])
            text = str(rt.get("text", ""))
            attachments: list[Attachment] = []
            caption = rt.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]"
                query = rt.get("query")
                attachments.append(
                    Attachment(kind="image", caption=str(caption), query=str(query) if query else None)
                )
            turn_id = str(rt["dia_id"])
            turns.append(
                Turn(
                    id=turn_id,
                    speaker=speaker,
                    text=text,
                    timestamp=start + i * TURN_STEP,
                    addressed_to=other.get(speaker),
                    attachments=attachments,
                )
            )
            turn_session[turn_id] = session_id
        sessions.append(Session(id=session_id, start=start, turns=turns))

    valid_ids = set(turn_session)
    questions: list[Question] = []
    for qi, rq in enumerate(sample.get("qa", [])):
        cat_id = int(rq["category"])
        abstention = cat_id == LOCOMO_ABSTENTION_CATEGORY
        gold = normalise_locomo_evidence(rq.get("evidence", []), valid_ids)
        if not gold and not abstention:
            continue  # README: skip questions left with no gold turn
        answer = rq.get("answer")
        gold_sessions = sorted({turn_session[t] for t in gold}, key=lambda s: int(s.split("_")[1]))
        questions.append(
            Question(
                id=f"{conv_id}:q{qi}",
                text=str(rq["question"]),
                question_time=None,
                answer=None if answer is None else str(answer),
                gold_turn_ids=gold,
                gold_session_ids=gold_sessions,
                category=LOCOMO_CATEGORIES.get(cat_id, str(cat_id)),
                abstention=abstention,
            )
        )
    return Conversation(id=conv_id, speakers=[speaker_a, speaker_b], sessions=sessions, questions=questions)


def convert_locomo(raw: list[dict[str, Any]], name: str = "locomo") -> EvalDataset:
    """Convert a ``locomo10.json``-schema list. The generated annotations are ignored."""
    convs = [convert_locomo_conversation(sample, i) for i, sample in enumerate(raw)]
    return EvalDataset(name=name, conversations=sorted(convs, key=lambda c: c.id))


def locomo_annotated_observations(raw: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    """The LoCoMo per-turn annotated observations: conversation id → [(dia_id, text)].

    Order: sessions by number, then speakers and observations in file order. An observation that cites several dia ids
    (a handful do) yields one entry per id.
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for index, sample in enumerate(raw):
        conv_id = str(sample.get("sample_id") or f"conv-{index}")
        entries: list[tuple[str, str]] = []
        obs = sample.get("observation") or {}
        keyed: list[tuple[int, Any]] = []
        for key, value in obs.items():
            m = re.fullmatch(r"session_(\d+)_observation", key)
            if m:
                keyed.append((int(m.group(1)), value))
        for _, per_speaker in sorted(keyed, key=lambda x: x[0]):
            if not isinstance(per_speaker, dict):
                continue
            for items in per_speaker.values():
                for item in items or []:
                    if not isinstance(item, list | tuple) or len(item) < 2:
                        continue
                    text, ids = str(item[0]), item[1]
                    for dia_id in ids if isinstance(ids, list) else [ids]:
                        entries.append((str(dia_id), text))
        out[conv_id] = entries
    return out


def convert_longmemeval_item(item: dict[str, Any]) -> Conversation:
    qid = str(item["question_id"])
    session_ids = [str(s) for s in item["haystack_session_ids"]]
    dates = item["haystack_dates"]
    raw_sessions = item["haystack_sessions"]
    if not (len(session_ids) == len(dates) == len(raw_sessions)):
        raise ValueError(
            f"{qid}: haystack_session_ids, haystack_dates and haystack_sessions differ in length"
        )
    sessions: list[Session] = []
    gold_turns: list[str] = []
    seen: dict[str, int] = {}
    for sid, date, raw_turns in zip(session_ids, dates, raw_sessions, strict=True):
        # a repeated session id (rare) gets a "#k" suffix so ids stay unique; gold sessions keep the first
        seen[sid] = seen.get(sid, 0) + 1
        session_id = sid if seen[sid] == 1 else f"{sid}#{seen[sid]}"
        start = parse_longmemeval_date(str(date))
        turns: list[Turn] = []
        for i, rt in enumerate(raw_turns):
            role = str(rt.get("role", "user"))
            turn_id = f"{session_id}:{i}"
            turns.append(
                Turn(
                    id=turn_id,
                    speaker=role,
                    text=str(rt.get("content", "")),
                    timestamp=start + i * TURN_STEP,
                    addressed_to={"user": "assistant", "assistant": "user"}.get(role),
                )
            )
            if rt.get("has_answer"):
                gold_turns.append(turn_id)
        sessions.append(Session(id=session_id, start=start, turns=turns))
    known = {s.id for s in sessions}
    gold_sessions = [str(s) for s in item.get("answer_session_ids", []) if str(s) in known]
    answer = item.get("answer")
    question = Question(
        id=qid,
        text=str(item["question"]),
        question_time=parse_longmemeval_date(str(item["question_date"])),
        answer=None if answer is None else str(answer),
        gold_turn_ids=gold_turns,
        gold_session_ids=list(dict.fromkeys(gold_sessions)),
        category=str(item.get("question_type", "unknown")),
        abstention=qid.endswith("_abs"),
    )
    return Conversation(id=qid, speakers=["user", "assistant"], sessions=sessions, questions=[question])


def convert_longmemeval(raw: list[dict[str, Any]], name: str = "longmemeval") -> EvalDataset:
    """Convert a LongMemEval (``_s`` / ``_oracle``) list: one conversation per item."""
    convs = [convert_longmemeval_item(item) for item in raw]
    return EvalDataset(name=name, conversations=sorted(convs, key=lambda c: c.id))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(str(path), "file", "<file>", f"cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(str(path), f"line {exc.lineno} column {exc.colno}", "<json>", exc.msg) from exc


def load_any(path: str | Path, fmt: str) -> EvalDataset:
    """Load ``path`` given as ``locomo``, ``longmemeval`` or ``generic``; converter errors become ``DatasetError``."""
    from .format import load_dataset

    p = Path(path)
    if fmt == "generic":
        return load_dataset(p)
    raw = _read_json(p)
    if not isinstance(raw, list):
        raise DatasetError(str(p), "dataset", "<root>", f"expected a JSON list for {fmt}")
    convert_one = convert_locomo_conversation if fmt == "locomo" else None
    convs: list[Conversation] = []
    for i, rec in enumerate(raw):
        ident = rec.get("sample_id" if fmt == "locomo" else "question_id") if isinstance(rec, dict) else None
        where = f"record #{i}" + (f" ({ident!r})" if ident else "")
        try:
            if convert_one is not None:
                convs.append(convert_one(rec, i))
            elif fmt == "longmemeval":
                convs.append(convert_longmemeval_item(rec))
            else:
                raise ValueError(f"unknown format {fmt!r}")
        except KeyError as exc:
            raise DatasetError(str(p), where, str(exc.args[0]), "missing") from exc
        except (ValueError, TypeError) as exc:
            raise DatasetError(str(p), where, "<record>", str(exc)) from exc
    return EvalDataset(name=p.stem, conversations=sorted(convs, key=lambda c: c.id))


def sniff_format(path: str | Path) -> str:
    """Guess ``locomo`` / ``longmemeval`` / ``generic`` from the first record."""
    raw = _read_json(Path(path))
    if isinstance(raw, dict) and "conversations" in raw:
        return "generic"
    if isinstance(raw, list) and raw and isinstance(raw[0], dict):
        if "conversation" in raw[0] and "qa" in raw[0]:
            return "locomo"
        if "haystack_sessions" in raw[0]:
            return "longmemeval"
    raise DatasetError(str(path), "dataset", "<root>", "cannot tell the format; pass --format")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.harness.convert", description=__doc__.split("\n")[0]
    )
    parser.add_argument("source", choices=["locomo", "longmemeval", "locomo-observations"])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.source == "locomo-observations":
            raw = _read_json(args.input)
            obs = locomo_annotated_observations(raw)
            payload = {k: [[d, t] for d, t in v] for k, v in sorted(obs.items())}
            args.output.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            print(f"wrote observations for {len(payload)} conversations to {args.output}", file=sys.stderr)
            return 0
        dataset = load_any(args.input, args.source)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    dump_dataset(dataset, args.output)
    n_q = sum(len(c.questions) for c in dataset.conversations)
    print(
        f"wrote {len(dataset.conversations)} conversations, {n_q} questions to {args.output}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
