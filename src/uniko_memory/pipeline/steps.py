"""Step error policies: a failure is contained to one item and one step."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StepErrorPolicy(StrEnum):
    SKIP = "skip"  # log and continue with the next step
    DEAD_LETTER = "dead_letter"  # persist a DeadLetter for a later retry, then continue
    ABORT = "abort"  # stop the remaining steps for this item only


@dataclass(frozen=True)
class StepOutcome:
    step: str
    ok: bool
    policy: StepErrorPolicy | None = None
    error: str | None = None
