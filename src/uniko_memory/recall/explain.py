"""``explain=True``: the trace a bundle carries, to see why each item is (or is not) in it.

The cascade records the intent and each phase's coverage, pool size and lists as it runs
(``Cascade.trace``); at the end this adds every channel's ranked list (its first
``TRACE_LIST_LENGTH`` entries), why each dropped candidate was dropped, what degraded, and the time.
The trace never changes the result (``explain`` is outside the cache key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assemble import Packed
    from .phases import Cascade

#: Entries of each channel's list shown in the trace.
TRACE_LIST_LENGTH = 50


def trace_of(cas: Cascade, packed: Packed, refused: dict[str, str], *, elapsed_ms: float) -> dict[str, Any]:
    """The cascade's trace completed with the channels' lists, the dropped, the degraded, the time."""
    trace = cas.trace
    pool = cas.pool
    trace["channels"] = {
        name: [
            {"id": nid, "rank": r, "score": round(pool.cands[nid].channels.get(name, (r, 0.0))[1], 6)}
            for nid, r in lst[:TRACE_LIST_LENGTH]
        ]
        for name, lst in pool.lists.items()
    }
    trace["dropped"] = {**packed.dropped, **refused}
    trace["degraded"] = list(cas.degraded)
    trace["elapsed_ms"] = round(elapsed_ms, 3)
    return trace
