"""Input formats of ``uniko ingest``: LoCoMo JSON and JSONL of turns, parsed whole before anything is
stored (see ``uniko_memory.cli``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

LOCOMO_TURN_STEP = timedelta(seconds=30)
_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_JSONL_KEYS = frozenset({"session", "sender", "text", "at", "to", "id"})


class InputError(ValueError):
    """The input file cannot be read or is malformed; the message names the line or record."""


@dataclass(frozen=True)
class InputTurn:
    """One turn read from a file, with the agent and session it goes to."""

    agent: str
    session: str
    sender: str
    text: str
    at: datetime | None
    to: list[str]
    id: str
    where: str  # "line 12", "conv-26 session_3 turn 4": for error messages

    def turn(self) -> Any:
        from ..ingest import Turn

        return Turn(sender=self.sender, content=self.text, at=self.at, addressed_to=self.to, id=self.id)


def check_turns(turns: Sequence[InputTurn], limits: Any) -> None:
    """The engine's per-turn checks (``IngestConfig`` limits), run before anything is stored."""
    from ..errors import ValidationError
    from ..ingest import check_session_id, check_turn
    from ..ingest.bulk import refusal_reason

    for t in turns:
        try:
            check_session_id(t.session)
            check_turn(
                t.turn(),
                limits.max_turn_chars,
                max_metadata_bytes=limits.max_metadata_bytes,
                max_addressed_to=limits.max_addressed_to,
            )
        except (ValidationError, ValueError) as exc:
            raise InputError(f"{t.where} (turn id {t.id!r}): {refusal_reason(exc)}") from None


def load_sample() -> list[dict[str, Any]]:
    """The bundled sample conversation (written for this project), as raw JSONL records."""
    raw = resources.files("uniko_memory.data").joinpath("sample_conversation.jsonl").read_text("utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def sample_text() -> str:
    return resources.files("uniko_memory.data").joinpath("sample_conversation.jsonl").read_text("utf-8")


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → aware UTC datetime."""
    cleaned = " ".join(str(text).replace(",", " ").split())
    try:
        return datetime.strptime(cleaned, "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(
            f"unrecognised LoCoMo date {text!r} (expected e.g. '1:56 pm on 8 May, 2023')"
        ) from None


def _parse_time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: 'at' must be an ISO 8601 string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: 'at' is not an ISO 8601 time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _names(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{where}: {key!r} must be a name or a list of names")


def parse_jsonl(text: str, agent: str) -> list[InputTurn]:
    """The JSONL turn format (see the module docstring)."""
    out: list[InputTurn] = []
    per_session: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(rec, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        unknown = sorted(set(rec) - _JSONL_KEYS)
        if unknown:
            raise InputError(
                f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_JSONL_KEYS))}"
            )
        for key in ("session", "sender", "text"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise InputError(f"{where}: {key!r} is missing or not a non-empty string")
        tid = rec.get("id")
        if tid is not None and (
            not isinstance(tid, str | int) or isinstance(tid, bool) or not str(tid).strip()
        ):
            raise InputError(f"{where}: 'id' must be a non-empty string or integer")
        session = rec["session"]
        n = per_session.get(session, 0)
        per_session[session] = n + 1
        out.append(
            InputTurn(
                agent=agent,
                session=session,
                sender=rec["sender"],
                text=rec["text"],
                at=_parse_time(rec.get("at"), where),
                to=_names(rec.get("to"), where, "to"),
                id=str(tid) if tid is not None else f"{session}#{n}",
                where=where,
            )
        )
    return out


def parse_locomo(data: Any, agent: str | None = None) -> list[InputTurn]:
    """LoCoMo conversations (see the module docstring); annotations (qa, summaries) are ignored."""
    samples = data if isinstance(data, list) else [data]
    out: list[InputTurn] = []
    prefix = agent is not None and len(samples) > 1
    for ci, sample in enumerate(samples):
        where0 = f"conversation {ci}"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InputError(f"{where0}: expected an object with a 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"conv-{ci}")
        where0 = f"conversation {ci} ({sample_id})"
        conv = sample["conversation"]
        speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
        if not all(isinstance(s, str) and s.strip() for s in speakers):
            raise InputError(f"{where0}: 'speaker_a' and 'speaker_b' must be names")
        sessions = []
        for key, value in conv.items():
            m = _LOCOMO_SESSION.fullmatch(key)
            if m and isinstance(value, list) and value:
                sessions.append((int(m.group(1)), key, value))
        if not sessions:
            raise InputError(f"{where0}: no session_<n> with turns")
        for _n, key, raw_turns in sorted(sessions):
            date = conv.get(f"{key}_date_time")
            if not isinstance(date, str):
                raise InputError(f"{where0}: {key} has no {key}_date_time")
            try:
                start = parse_locomo_date(date)
            except ValueError as exc:
                raise InputError(f"{where0}: {key}_date_time: {exc}") from None
            for i, rt in enumerate(raw_turns):
                where = f"{where0} {key} turn {i}"
                if not isinstance(rt, dict):
                    raise InputError(f"{where}: expected an object")
                speaker, text, dia_id = rt.get("speaker"), rt.get("text", ""), rt.get("dia_id")
                if not isinstance(speaker, str) or not speaker.strip():
                    raise InputError(f"{where}: 'speaker' is missing")
                if not isinstance(text, str):
                    raise InputError(f"{where}: 'text' must be a string")
                if not isinstance(dia_id, str) or not dia_id.strip():
                    raise InputError(f"{where}: 'dia_id' is missing")
                caption = rt.get("blip_caption")
                if caption:
                    text = f"{text} [shares a photo: {caption}]".strip()
                out.append(
                    InputTurn(
                        agent=agent or sample_id,
                        session=f"{sample_id}/{key}" if prefix else key,
                        sender=speaker,
                        text=text,
                        at=start + i * LOCOMO_TURN_STEP,
                        to=[s for s in speakers if s != speaker],
                        id=f"{sample_id}:{dia_id}" if prefix else dia_id,
                        where=where,
                    )
                )
    return out


def sniff_format(text: str) -> str:
    """``locomo`` for a JSON list / an object with ``conversation``; ``jsonl`` otherwise."""
    head = text.lstrip()[:1]
    if head == "[":
        return "locomo"
    if head == "{":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            return "jsonl"
        return "locomo" if isinstance(whole, dict) and "conversation" in whole else "jsonl"
    return "jsonl"


def read_turns(path: Path, fmt: str = "auto", agent: str | None = None) -> list[InputTurn]:
    """Read and check a whole input file; raises ``InputError`` naming the problem."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if fmt == "auto":
        fmt = sniff_format(text)
    if fmt == "locomo":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}: line {exc.lineno}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        try:
            turns = parse_locomo(data, agent)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
    elif fmt == "jsonl":
        try:
            turns = parse_jsonl(text, agent or "default")
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
    else:
        raise InputError(f"unknown format {fmt!r}; use auto, locomo or jsonl")
    if not turns:
        raise InputError(f"{path}: no turns found")
    return turns
