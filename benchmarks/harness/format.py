"""The generic memory-eval format (documented in ``benchmarks/FORMAT.md``).

A dataset is a list of conversations; each conversation holds its sessions (ordered turns) and the questions asked
about it, with gold evidence at turn and session level. Every benchmark converter (LoCoMo, LongMemEval) writes this
format and the runner reads only this format.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

FORMAT_VERSION = 1


class DatasetError(ValueError):
    """A dataset file is unreadable or invalid; the message names the file, the record and the field."""

    def __init__(self, path: str, record: str, field: str, message: str) -> None:
        super().__init__(f"{path}: {record}: field {field!r}: {message}")
        self.path = path
        self.record = record
        self.field = field
        self.detail = message


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attachment(_Model):
    """Something shared with a turn (e.g. a photo); ``caption`` is its text description."""

    kind: str
    caption: str | None = None
    query: str | None = None


class Turn(_Model):
    id: str = Field(min_length=1)
    speaker: str
    text: str
    timestamp: AwareDatetime | None = None
    addressed_to: str | None = None
    attachments: list[Attachment] = Field(default_factory=list)


class Session(_Model):
    id: str = Field(min_length=1)
    start: AwareDatetime
    turns: list[Turn]


class Question(_Model):
    id: str = Field(min_length=1)
    text: str
    question_time: AwareDatetime | None = None
    answer: str | None = None
    gold_turn_ids: list[str] = Field(default_factory=list)
    gold_session_ids: list[str] = Field(default_factory=list)
    category: str
    abstention: bool = False


class Conversation(_Model):
    id: str = Field(min_length=1)
    speakers: list[str]
    sessions: list[Session]
    questions: list[Question] = Field(default_factory=list)

    def turns(self) -> list[Turn]:
        """All turns in session order."""
        return [t for s in self.sessions for t in s.turns]

    def turn_session(self) -> dict[str, str]:
        """Turn id → session id."""
        return {t.id: s.id for s in self.sessions for t in s.turns}


class EvalDataset(_Model):
    name: str
    format_version: int = FORMAT_VERSION
    conversations: list[Conversation]


# --------------------------------------------------------------------------------------------------------------------
# Loading and dumping
# --------------------------------------------------------------------------------------------------------------------


def _record_name(raw: Any, loc: Sequence[int | str]) -> tuple[str, str]:
    """Turn a pydantic error location into (record description, field path)."""
    parts: list[str] = []
    rest = list(loc)
    node = raw
    record_kinds = {
        "conversations": "conversation",
        "sessions": "session",
        "turns": "turn",
        "questions": "question",
    }
    field_parts: list[str] = []
    while rest:
        key = rest.pop(0)
        if key in record_kinds and rest and isinstance(rest[0], int):
            index = rest.pop(0)
            assert isinstance(index, int)
            child = node.get(key) if isinstance(node, dict) else None
            item = child[index] if isinstance(child, list) and 0 <= index < len(child) else None
            ident = item.get("id") if isinstance(item, dict) else None
            label = f"{record_kinds[str(key)]} #{index}"
            if isinstance(ident, str):
                label += f" ({ident!r})"
            parts.append(label)
            node = item
            field_parts = []
        else:
            field_parts.append(str(key))
            node = node.get(key) if isinstance(node, dict) else None
    return (", ".join(parts) or "dataset"), (".".join(field_parts) or "<record>")


def validate_dataset(dataset: EvalDataset, source: str = "<dataset>") -> EvalDataset:
    """Cross-record checks pydantic cannot do: unique ids, gold ids that exist. Raises ``DatasetError``."""
    seen_conv: set[str] = set()
    for ci, conv in enumerate(dataset.conversations):
        where = f"conversation #{ci} ({conv.id!r})"
        if conv.id in seen_conv:
            raise DatasetError(source, where, "id", "duplicate conversation id")
        seen_conv.add(conv.id)
        session_ids: set[str] = set()
        turn_ids: set[str] = set()
        for si, session in enumerate(conv.sessions):
            if session.id in session_ids:
                raise DatasetError(
                    source, f"{where}, session #{si} ({session.id!r})", "id", "duplicate session id"
                )
            session_ids.add(session.id)
            for ti, turn in enumerate(session.turns):
                if turn.id in turn_ids:
                    raise DatasetError(
                        source, f"{where}, session #{si}, turn #{ti} ({turn.id!r})", "id", "duplicate turn id"
                    )
                turn_ids.add(turn.id)
        question_ids: set[str] = set()
        for qi, q in enumerate(conv.questions):
            qwhere = f"{where}, question #{qi} ({q.id!r})"
            if q.id in question_ids:
                raise DatasetError(source, qwhere, "id", "duplicate question id")
            question_ids.add(q.id)
            missing_turns = sorted(set(q.gold_turn_ids) - turn_ids)
            if missing_turns:
                raise DatasetError(source, qwhere, "gold_turn_ids", f"unknown turn ids {missing_turns}")
            missing_sessions = sorted(set(q.gold_session_ids) - session_ids)
            if missing_sessions:
                raise DatasetError(
                    source, qwhere, "gold_session_ids", f"unknown session ids {missing_sessions}"
                )
    return dataset


def parse_dataset(raw: Any, source: str = "<dataset>") -> EvalDataset:
    """Validate an already-decoded JSON value. Raises ``DatasetError``."""
    try:
        dataset = EvalDataset.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        record, field = _record_name(raw, err["loc"])
        more = f" (and {exc.error_count() - 1} more errors)" if exc.error_count() > 1 else ""
        raise DatasetError(source, record, field, f"{err['msg']}{more}") from exc
    return validate_dataset(dataset, source)


def load_dataset(path: str | Path) -> EvalDataset:
    """Read a dataset in the generic format. Raises ``DatasetError`` naming file, record and field."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(str(p), "file", "<file>", f"cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(str(p), f"line {exc.lineno} column {exc.colno}", "<json>", exc.msg) from exc
    return parse_dataset(raw, str(p))


def dump_dataset(dataset: EvalDataset, path: str | Path, *, indent: int | None = 1) -> None:
    """Write a dataset as JSON (UTF-8, stable key order = field order)."""
    text = json.dumps(dataset.model_dump(mode="json"), ensure_ascii=False, indent=indent)
    Path(path).write_text(text + "\n", encoding="utf-8")
