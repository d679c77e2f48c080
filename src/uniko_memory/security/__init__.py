"""Security of content: secrets are masked on the write path, before anything is stored or embedded."""

from .patterns import check_extra_patterns
from .secrets import (
    Finding,
    RedactionResult,
    SecretScanner,
    describe,
    marker,
    redact_secrets,
    scanner_for,
)

__all__ = [
    "Finding",
    "RedactionResult",
    "SecretScanner",
    "check_extra_patterns",
    "describe",
    "marker",
    "redact_secrets",
    "scanner_for",
]
