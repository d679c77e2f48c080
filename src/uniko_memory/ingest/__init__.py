"""Ingest: the atomic P1+P2 unit, chunking, post-ingest (P3, P7a) and session finalisation."""

from .atomic import AtomicIngest, ObserveResult, PostIngestItem, StepTimings, UnitResult
from .chunking import TextChunk, chunk_text
from .finalize import FinalizeReport, SessionFinalizer
from .post import PostIngest, PostIngestReport
from .turn import Turn, check_session_id, check_turn

__all__ = [
    "AtomicIngest",
    "FinalizeReport",
    "ObserveResult",
    "PostIngest",
    "PostIngestItem",
    "PostIngestReport",
    "SessionFinalizer",
    "StepTimings",
    "TextChunk",
    "Turn",
    "UnitResult",
    "check_session_id",
    "check_turn",
    "chunk_text",
]
