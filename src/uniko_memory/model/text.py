"""Text every tier can store: what cannot be encoded as UTF-8 is replaced, never an encoder crash."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
#: What a lone surrogate becomes (documented in ingest.turn and recall): the replacement character.
REPLACEMENT = "\ufffd"


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (not encodable as UTF-8) replaced by U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text
