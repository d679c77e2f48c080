"""Text extraction: a document's bytes become sections of clean text (a page, a headed part).

Extraction never raises for bad content: undecodable text or an unreadable PDF comes back as an
``Extraction`` with ``error`` set, so the artifact is still stored and the failure reported. Only a
missing optional package raises (``MissingDependency``), before anything is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

from ...tokens import count_tokens
from ..turn import clean_content
from .formats import HTML, MARKDOWN, PDF, TEXT

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_TITLE = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Section:
    """A stretch of extracted text chunked on its own: a page of a PDF, a headed part of Markdown."""

    text: str
    offset: int = 0  # where ``text`` starts in the document's extracted text (0 for a page)
    page: int | None = None  # 1-based PDF page


@dataclass
class Extraction:
    sections: list[Section] = field(default_factory=list)
    title: str | None = None
    page_count: int | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


def decode_text(data: bytes) -> tuple[str | None, str | None]:
    """``(text, None)`` for UTF-8 bytes (a BOM is dropped), else ``(None, why)``."""
    try:
        return clean_content(data.decode("utf-8-sig")), None
    except UnicodeDecodeError as exc:
        return None, (
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded "
            "(re-encode the document as UTF-8)"
        )


def heading_sections(text: str) -> list[Section]:
    """Split Markdown-like text before each heading (outside code fences).

    Chunks then never straddle two headed parts; ``chunk_text`` labels each with its heading.
    Short parts (a heading with a line under it) are merged later by ``merge_short``.
    """
    starts = [0]
    pos = 0
    fenced = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and pos and _HEADING_LINE.match(line):
            starts.append(pos)
        pos += len(line)
    bounds = [*starts, len(text)]
    return [Section(text[a:b], a) for a, b in pairwise(bounds) if text[a:b].strip()]


def merge_short(sections: list[Section], min_tokens: int) -> list[Section]:
    """Join a part under ``min_tokens`` to the next one (the last to the one before): a lone
    heading or a one-line part would otherwise become a chunk too small to be found."""
    out: list[Section] = []
    carry: Section | None = None
    for s in sections:
        if carry is not None:
            s = Section(carry.text + s.text, carry.offset)
            carry = None
        if count_tokens(s.text) < min_tokens:
            carry = s
        else:
            out.append(s)
    if carry is not None:
        if out:
            out[-1] = Section(out[-1].text + carry.text, out[-1].offset)
        else:
            out.append(carry)
    return out


def extract(data: bytes, mime_type: str, *, min_tokens: int = 32) -> Extraction:
    """The sections and title of a document of a supported type (see ``formats.SUPPORTED``).

    Markdown and HTML are split at headings; parts under ``min_tokens`` join their neighbour.
    """
    if mime_type == PDF:
        from .pdf import extract_pdf

        return extract_pdf(data)
    text, error = decode_text(data)
    if mime_type == HTML and text is None:
        from .html import decode_declared

        text = decode_declared(data)
        error = None if text is not None else error
    if text is None:
        return Extraction(error=error)
    if mime_type == HTML:
        from .html import html_to_text

        title, body = html_to_text(text)
        return Extraction(merge_short(heading_sections(body), min_tokens), title=title)
    if mime_type == MARKDOWN:
        m = _TITLE.search(text)
        return Extraction(merge_short(heading_sections(text), min_tokens), title=m.group(1) if m else None)
    assert mime_type == TEXT, mime_type
    return Extraction([Section(text)] if text.strip() else [])
