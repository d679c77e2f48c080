"""PDF text per page with pypdf (pure Python; the ``pdf`` extra), imported only when a PDF arrives.

A PDF that cannot be opened or decrypted, or a page whose text cannot be read, is reported as an
extraction failure (the pages that could be read are kept): bad input never raises here.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from ...errors import MissingDependency
from ..turn import clean_content
from .extract import Extraction, Section

log = logging.getLogger(__name__)


def _pypdf() -> Any:
    try:
        import pypdf
    except ImportError:
        raise MissingDependency("pypdf", "pdf", "PDF artifacts") from None
    return pypdf


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def extract_pdf(data: bytes) -> Extraction:
    """One section per page with text (``page`` is 1-based); ``page_count`` counts every page."""
    pypdf = _pypdf()
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return Extraction(error="the PDF is encrypted and needs a password")
        pages = list(reader.pages)
    except Exception as exc:  # pypdf raises many types (PdfReadError, ValueError, KeyError, ...)
        return Extraction(error=f"unreadable PDF: {_why(exc)}")
    sections: list[Section] = []
    errors: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            text = clean_content(page.extract_text() or "")
        except Exception as exc:
            errors.append(f"page {number}: {_why(exc)}")
            continue
        if text.strip():
            sections.append(Section(text, page=number))
    title = None
    try:
        meta = reader.metadata
        title = (str(meta.title).strip() or None) if meta is not None and meta.title else None
    except Exception as exc:  # a broken info dictionary costs the title, nothing else
        log.debug("PDF metadata unreadable: %s", _why(exc))
    error = ("could not read " + "; ".join(errors)) if errors else None
    return Extraction(sections, title=title, page_count=len(pages), error=error)
