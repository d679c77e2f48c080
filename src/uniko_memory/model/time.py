"""Time normalisation shared by every tier: all stored datetimes are timezone-aware UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator


def to_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC (documented); aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # year 1 east of UTC, year 9999 west of it: a ValueError callers can report
        raise ValueError(f"{value.isoformat()} is out of range once converted to UTC") from None


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_epoch(value: datetime) -> float:
    return to_utc(value).timestamp()


def from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


UtcDatetime = Annotated[datetime, AfterValidator(to_utc)]
