"""A griffe extension for the API reference: the docstrings' reST ``.. code-block:: lang``
directives (the style LangChain and LlamaIndex docstrings use) become Markdown code fences."""

from __future__ import annotations

import re
from typing import Any

import griffe

_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. code-block::\s*(?P<lang>\w*)\s*$")


def fence_code_blocks(text: str) -> str:
    """``text`` with each code-block directive and its indented body as a fenced block."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        body: list[str] = []
        i += 1
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)
        ):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        depth = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        out += [
            f"{indent}```{match['lang']}",
            *(indent + b[depth:] if b.strip() else "" for b in body),
            f"{indent}```",
            "",
        ]
    return "\n".join(out)


class RstCodeBlocks(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ".. code-block::" in obj.docstring.value:
            obj.docstring.value = fence_code_blocks(obj.docstring.value)
