"""Safe rendering for prompts: uniko's quoted bundle format (``ContextBundle.render``).

Each item is one entry, ``- (source kind) text``, under a ``[date]`` heading line shared by the
items of that date; an entry's further lines start with ``  | `` and its tag-like ``<`` are
written ``&lt;``, between ``<memory>`` and ``</memory>`` under a header saying it is quoted data
(docs/security.md, "Safe rendering").
"""

from __future__ import annotations

from uniko_memory.recall import (
    MEMORY_CLOSE,
    MEMORY_HEADER,
    MEMORY_OPEN,
    ContextBundle,
    quote_lines,
    render_item,
)

__all__ = [
    "MEMORY_CLOSE",
    "MEMORY_HEADER",
    "MEMORY_OPEN",
    "is_date_heading",
    "quote_lines",
    "render_item",
    "render_memory",
    "split_entries",
]


def render_memory(bundle: ContextBundle, *, header: bool = True) -> str:
    """The bundle as prompt text ("" when it is empty); ``header=False`` leaves out the framing."""
    return bundle.render(header=header) if bundle.items else ""


def split_entries(text: str) -> tuple[list[str], list[str], list[str]]:
    """A rendered memory as (framing lines before, entries, framing lines after)."""
    lines = text.split("\n")
    head: list[str] = []
    tail: list[str] = []
    if MEMORY_OPEN in lines:
        cut = lines.index(MEMORY_OPEN) + 1
        head, lines = lines[:cut], lines[cut:]
    if lines and lines[-1] == MEMORY_CLOSE:
        tail, lines = [MEMORY_CLOSE], lines[:-1]
    entries: list[str] = []
    for line in lines:
        if entries and line.startswith("  |"):  # a further line of the entry (a blank one is "  |")
            entries[-1] += "\n" + line
        else:
            entries.append(line)
    return head, entries, tail


def is_date_heading(line: str) -> bool:
    """A ``[7 May 2023]`` line: entries start with ``- `` and their further lines with ``  |``."""
    return line.startswith("[")
