"""Renamed arguments: one helper the core and the integration packages share.

A renamed keyword keeps working for a release with a ``DeprecationWarning`` that points at the
caller's line (frames of uniko, the integrations and the frameworks they extend are skipped), and
passing both names with different values is an error rather than a silent choice.
"""

from __future__ import annotations

import sys
import warnings
from typing import TypeVar

__all__ = ["INTERNAL_PACKAGES", "caller_stacklevel", "renamed"]

T = TypeVar("T")

#: Top-level packages whose frames a deprecation warning skips.
INTERNAL_PACKAGES = (
    "uniko_memory",
    "langchain_uniko",
    "langchain_core",
    "langchain",
    "pydantic",
    "llama_index",
)


def caller_stacklevel() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the calling function) of the first frame
    outside ``INTERNAL_PACKAGES``."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").split(".")[0] in INTERNAL_PACKAGES:
        frame = frame.f_back
        level += 1
    return level


def renamed(new_value: T | None, old_value: T | None, *, old: str, new: str, owner: str) -> T | None:
    """``new_value``, or ``old_value`` given under the deprecated name ``old`` (which warns).

    Raises ``ValueError`` when both are given and differ.
    """
    if old_value is None:
        return new_value
    warnings.warn(
        f"{owner}: {old}= is deprecated and will be removed in 0.3; use {new}=",
        DeprecationWarning,
        stacklevel=caller_stacklevel(),
    )
    if new_value is not None and new_value != old_value:
        raise ValueError(
            f"{owner}: pass {new}= or the deprecated {old}=, not both ({new_value!r} vs {old_value!r})"
        )
    return old_value
