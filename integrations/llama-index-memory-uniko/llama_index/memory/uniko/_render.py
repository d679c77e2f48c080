"""Safe rendering for prompts: uniko's quoted entries under one framing tag.

``Memory`` wraps each block's text in ``<block name>`` … ``</block name>`` (``<uniko_memory>`` for
this block), so the block gives the header line, naming that tag, and the bare entries: one
``- (source kind) text`` per item under a ``[date]`` heading line shared by the items of that date.
An entry's further lines start with ``  | `` and its tag-like ``<`` are written ``&lt;``, so stored
text cannot close the wrapper early (docs/security.md, "Safe rendering").
"""

from __future__ import annotations

from uniko_memory.recall import (
    HEADER_START,
    MEMORY_CLOSE,
    MEMORY_HEADER,
    MEMORY_OPEN,
    ContextBundle,
    memory_header,
    quote_lines,
    render_item,
)

__all__ = [
    "MEMORY_CLOSE",
    "MEMORY_HEADER",
    "MEMORY_OPEN",
    "is_date_heading",
    "memory_header",
    "quote_lines",
    "render_block",
    "render_item",
    "split_entries",
]


#: What every header line starts with, whatever tag it names.
_HEADER_START = HEADER_START


def render_block(bundle: ContextBundle, *, tag: str, header: bool = True) -> str:
    """The bundle as the block's text ("" when it is empty): the header naming ``tag`` (the tag the
    host wraps the block in) and the entries; ``header=False`` gives the entries alone."""
    if not bundle.items:
        return ""
    entries = bundle.render(header=False)
    return f"{memory_header(tag, enclosed=True)}\n{entries}" if header else entries


def split_entries(text: str) -> tuple[list[str], list[str]]:
    """A block's text as (the header line, if any; entries with their further lines)."""
    lines = text.split("\n")
    head: list[str] = []
    if lines and lines[0].startswith(_HEADER_START):
        head, lines = lines[:1], lines[1:]
    entries: list[str] = []
    for line in lines:
        if entries and line.startswith("  |"):  # a further line of the entry (a blank one is "  |")
            entries[-1] += "\n" + line
        else:
            entries.append(line)
    return head, entries


def is_date_heading(line: str) -> bool:
    """A ``[7 May 2023]`` line: entries start with ``- `` and their further lines with ``  |``."""
    return line.startswith("[")
