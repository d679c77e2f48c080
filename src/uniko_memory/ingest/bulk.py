"""Bulk observe: many turns, one transaction each; a turn the engine refuses is reported, not fatal.

A refusal is about one turn (a ``ValidationError``: too long, empty, a secret in an id; an
``IdConflict``: the id was stored with other content): it is recorded with its position and the
next turn follows. Anything else (the store failing, the engine closing) is not about one turn
and stops the run. The CLI's ``uniko ingest`` and ``Session.observe_each`` share these rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..errors import IdConflict, ValidationError

#: The errors that refuse one turn and let a bulk run go on (a bad ``Turn`` field is a ValueError).
TURN_REFUSALS: tuple[type[Exception], ...] = (ValidationError, IdConflict, ValueError)


def refusal_reason(exc: Exception) -> str:
    """An engine error about one turn, without the unit-relative "turn 0" it starts with."""
    return " ".join(str(exc).replace("turn 0 ", "turn ", 1).split())


class RefusedTurn(BaseModel):
    """A turn a bulk run skipped: its 0-based position in the input, its id, and why."""

    position: int
    id: str | None = None
    reason: str


class BulkObserveResult(BaseModel):
    stored: int = 0
    #: Turns already stored with the same content (a replay is a no-op).
    replays: int = 0
    refused: list[RefusedTurn] = Field(default_factory=list)

    def refuse(self, position: int, turn: Any, exc: Exception) -> None:
        """Record a turn the engine refused (``exc`` one of ``TURN_REFUSALS``)."""
        turn_id = getattr(turn, "id", None)
        self.refused.append(
            RefusedTurn(
                position=position,
                id=turn_id if isinstance(turn_id, str) else None,
                reason=refusal_reason(exc),
            )
        )

    def add(self, other: BulkObserveResult) -> None:
        """Fold a later part of the same run into this one."""
        self.stored += other.stored
        self.replays += other.replays
        self.refused.extend(other.refused)
