"""``Turn``: what a caller hands to ``session.observe``, and the normalisation every turn gets.

Documented normalisations (never silent data loss): naive datetimes are UTC; lone surrogates become
U+FFFD; C0/C1 control characters other than tab and newline are removed; line endings become
``\\n``. Empty or whitespace-only content, content over the configured size limit, more
``addressed_to`` names than ``IngestConfig.max_addressed_to``, and metadata over its limit (bytes
of JSON) or not serialisable as JSON, are ``ValidationError``s that name the turn and the config
field. Every id (``sender``, each ``addressed_to`` name, the turn id, the session id) and
``sender_name`` is at most ``MAX_ID_CHARS`` characters, as a stored node's id is.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticSerializationError, to_json

from ..errors import ValidationError, refuse_unknown_arguments
from ..model.time import UtcDatetime
from ..model.visibility import PUBLIC

#: The longest id, participant name or session id (a stored node's id has the same limit).
MAX_ID_CHARS = 256

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_content(text: str) -> str:
    if _SURROGATE.search(text):  # not encodable as UTF-8: U+FFFD, as documented (not "?")
        text = _SURROGATE.sub("\ufffd", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


class Turn(BaseModel):
    """One utterance: who said it, to whom, when, and what."""

    model_config = ConfigDict(extra="forbid")

    sender: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    content: str
    at: UtcDatetime | None = None
    addressed_to: list[str] = Field(default_factory=list)
    id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    sender_name: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    metadata: dict[str, Any] = Field(default_factory=dict)
    content_type: str = "text"
    category: str | None = None
    visibility: str = PUBLIC

    @model_validator(mode="before")
    @classmethod
    def _known_arguments(cls, data: Any) -> Any:
        """``Turn(role=...)`` names ``sender``: an unknown argument says which one it meant."""
        refuse_unknown_arguments("Turn", data, cls.model_fields)
        return data

    @field_validator("addressed_to", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        if v is None:
            return []
        return [v] if isinstance(v, str) else v

    @field_validator("sender", "addressed_to")
    @classmethod
    def _strip_ids(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            if not v:
                raise ValueError("participant ids must not be blank")
            return v
        names = [s.strip() for s in v if s and s.strip()]
        for name in names:
            if len(name) > MAX_ID_CHARS:
                raise ValueError(
                    f"an addressed_to name has {len(name):,} characters, over the limit of {MAX_ID_CHARS}"
                )
        return names

    @field_validator("content")
    @classmethod
    def _clean(cls, v: str) -> str:
        return clean_content(str(v))  # a str subclass (e.g. a framework's lazy text) becomes plain str

    @property
    def display_name(self) -> str:
        return self.sender_name or self.sender


def check_turn(
    turn: Turn,
    max_chars: int,
    position: int = 0,
    *,
    max_metadata_bytes: int | None = None,
    max_addressed_to: int | None = None,
) -> None:
    """The per-turn limits, before anything is stored (``ValidationError`` naming the config field)."""
    label = f"turn {position}" + (f" (id {turn.id!r})" if turn.id else "")
    if len(turn.content) > max_chars:
        raise ValidationError(
            f"{label} has {len(turn.content):,} characters, over the limit of {max_chars:,} "
            "(IngestConfig.max_turn_chars); store a document this long with Agent.ingest_artifact "
            "(`uniko ingest-doc`), or split it into turns"
        )
    if not turn.content.strip():
        raise ValidationError(f"{label} has empty content; nothing to remember")
    if max_addressed_to is not None and len(turn.addressed_to) > max_addressed_to:
        raise ValidationError(
            f"{label} is addressed to {len(turn.addressed_to):,} participants, over the limit of "
            f"{max_addressed_to:,} (IngestConfig.max_addressed_to)"
        )
    if max_metadata_bytes is not None and turn.metadata:
        size = metadata_bytes(turn.metadata, label)
        if size > max_metadata_bytes:
            raise ValidationError(
                f"{label} has {size:,} bytes of metadata (as JSON), over the limit of "
                f"{max_metadata_bytes:,} (IngestConfig.max_metadata_bytes); store large data as an artifact"
            )


def check_session_id(session_external: object) -> None:
    """A session id is a non-empty string of at most ``MAX_ID_CHARS`` characters."""
    if not isinstance(session_external, str) or not session_external.strip():
        raise ValidationError("session id must be a non-empty string")
    if len(session_external) > MAX_ID_CHARS:
        raise ValidationError(
            f"the session id has {len(session_external):,} characters, over the limit of {MAX_ID_CHARS}"
        )


def metadata_bytes(metadata: dict[str, Any], label: str = "turn") -> int:
    """The size of ``metadata`` serialised as JSON, as the store writes it; refuses what cannot be."""
    try:
        return len(to_json(metadata))
    except (PydanticSerializationError, ValueError, TypeError) as exc:
        raise ValidationError(f"{label} has metadata that is not JSON-serialisable: {exc}") from None


def turn_time(turn: Turn, default: datetime) -> datetime:
    return turn.at if turn.at is not None else default
