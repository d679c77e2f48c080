"""Which document formats an artifact may be, and how a format is told: explicit type, suffix, sniff."""

from __future__ import annotations

from pathlib import PurePath

from ...errors import ValidationError

TEXT = "text/plain"
MARKDOWN = "text/markdown"
HTML = "text/html"
PDF = "application/pdf"

#: The MIME types artifact ingest extracts text from.
SUPPORTED = (TEXT, MARKDOWN, HTML, PDF)

_SUFFIXES = {
    ".txt": TEXT,
    ".text": TEXT,
    ".log": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".pdf": PDF,
}
_ALIASES = {
    "text/x-markdown": MARKDOWN,
    "application/xhtml+xml": HTML,
    "application/x-pdf": PDF,
}


def _supported() -> str:
    suffixes = ", ".join(sorted(_SUFFIXES))
    return f"supported types: {', '.join(SUPPORTED)} (file suffixes {suffixes})"


def normalize_mime(mime_type: str) -> str:
    """``"Text/HTML; charset=utf-8"`` → ``"text/html"``; an unsupported type raises ``ValidationError``."""
    base = mime_type.split(";", 1)[0].strip().lower()
    base = _ALIASES.get(base, base)
    if base not in SUPPORTED:
        raise ValidationError(f"artifact type {mime_type!r} is not supported; {_supported()}")
    return base


def resolve_mime(mime_type: str | None, name: str | None, data: bytes) -> str:
    """The artifact's type: the explicit ``mime_type``, else the file suffix, else a sniff of bytes.

    Bytes without a type or suffix are a PDF when they start with ``%PDF-``, HTML when they start
    with a doctype or ``<html``, and plain text otherwise. An unknown suffix is refused.
    """
    if mime_type:
        return normalize_mime(mime_type)
    suffix = PurePath(name).suffix.lower() if name else ""
    if suffix:
        if suffix not in _SUFFIXES:
            raise ValidationError(
                f"cannot tell the type of {name!r} from its suffix {suffix!r}; pass "
                f"mime_type=... ({_supported()})"
            )
        return _SUFFIXES[suffix]
    head = data[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return PDF
    if head.startswith((b"<!doctype html", b"<html")):
        return HTML
    return TEXT
