"""Give heap memory that was freed back to the operating system (glibc ``malloc_trim``).

Ingest, post-ingest batches, consolidation and loading a large vector tier allocate and free a
lot of small objects on several threads; glibc keeps what was freed in its per-thread arenas, so a
process that has just ingested 20,000 turns held ~100 MB more than the same memory reopened
(BENCHMARKS.md, "Process memory at 20,000 turns"). ``malloc_trim(0)`` returns the free pages;
nothing in use moves. On a C library without it (macOS, musl, Windows) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

__all__ = ["can_trim", "malloc_trim"]


def _load_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


_TRIM = _load_trim()


def can_trim() -> bool:
    """Whether this C library can hand free heap pages back (glibc)."""
    return _TRIM is not None


def malloc_trim() -> bool:
    """Return free heap pages to the OS; True when the C library released any."""
    if _TRIM is None:
        return False
    return bool(_TRIM(0))
