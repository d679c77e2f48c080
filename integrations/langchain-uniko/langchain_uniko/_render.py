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

__all__ = ["MEMORY_CLOSE", "MEMORY_HEADER", "MEMORY_OPEN", "quote_lines", "render_item", "render_memory"]


def render_memory(bundle: ContextBundle, *, header: bool = True) -> str:
    """The bundle as prompt text ("" when it is empty); ``header=False`` leaves out the framing."""
    return bundle.render(header=header) if bundle.items else ""
