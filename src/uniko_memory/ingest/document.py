"""Document turns (issue 40.7): past a length, a turn is read as a document.

A turn longer than ``IngestConfig.document_turn_chars`` characters is a pasted document (an
article, a log, a transcript), not something said. It is still stored whole and in passages (its
``message`` chunks, each embedded and quoted by recall, as for any long turn), so nothing of it is
lost: its last sentence is found as easily as its first. But the NLP reads a bounded part of it:
NER (P2) and the statement rules (P3) see only the passages that begin in its first
``document_turn_chars`` characters, and at most ``IngestConfig.document_turn_statements``
Observations are kept, the first in text order. So what such a turn costs past that length is
what ``ingest_artifact`` costs for the same text (chunking, the store, one embedding a passage),
and a 900,000-character paste is no longer 742 Observations attributed to its sender.

A turn up to the length is read whole, as it always was (per passage past
``ChunkingConfig.message_chunk_threshold`` tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..config import IngestConfig

T = TypeVar("T")

_DEFAULTS = IngestConfig()


@dataclass(frozen=True)
class DocumentTurns:
    """``IngestConfig.document_turn_chars`` and ``document_turn_statements`` (see there)."""

    chars: int = _DEFAULTS.document_turn_chars
    statements: int = _DEFAULTS.document_turn_statements

    @classmethod
    def of(cls, cfg: IngestConfig) -> DocumentTurns:
        return cls(cfg.document_turn_chars, cfg.document_turn_statements)

    def is_document(self, text: str) -> bool:
        return len(text) > self.chars

    def read_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """The passages the NLP reads: all of them, or for a document those that begin in its
        first ``chars`` characters (at least one)."""
        if not self.is_document(text):
            return list(spans)
        head = [s for s in spans if s[0] < self.chars]
        return head or list(spans[:1])

    def kept(self, text: str, statements: list[T]) -> list[T]:
        """The statements a turn keeps: all of them, or a document's first ``statements``."""
        return statements[: self.statements] if self.is_document(text) else statements
