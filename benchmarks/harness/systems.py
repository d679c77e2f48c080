"""The system registry the CLI picks from (``--systems``). Add an entry to plug in another memory system.

A factory is called once per conversation and must return a fresh ``MemorySystem``. Names starting with
``baseline-`` are treated as baselines in the report; every other name is "ours" and gets ratio columns.
"""

from __future__ import annotations

from collections.abc import Callable

from .baselines import BM25Baseline, DenseBaseline, HybridBaseline
from .run import MemorySystem


def _uniko() -> MemorySystem:
    from .uniko_system import UnikoSystem  # imports the engine only when asked for

    return UnikoSystem()


def _uniko_noconsol() -> MemorySystem:
    """uniko without consolidation and cortex sweep: recall over messages, observations, chunks, summaries."""
    from .uniko_system import UnikoSystem

    return UnikoSystem(consolidate=False)


def _uniko_nosweep() -> MemorySystem:
    """uniko with consolidation but without the cortex sweep (no topics, procedures or decay)."""
    from .uniko_system import UnikoSystem

    return UnikoSystem(sweep=False)


def _hybrid_full() -> HybridBaseline:
    """RRF over the complete BM25 and dense rankings (a stronger hybrid than the BASELINES.md reference)."""
    return HybridBaseline(rrf_depth=None)


SYSTEMS: dict[str, Callable[[], MemorySystem]] = {
    "baseline-bm25": BM25Baseline,
    "baseline-dense": DenseBaseline,
    "baseline-hybrid": HybridBaseline,
    "baseline-hybrid-full": _hybrid_full,
    "uniko": _uniko,
    "uniko-noconsol": _uniko_noconsol,
    "uniko-nosweep": _uniko_nosweep,
}

DEFAULT_SYSTEMS = ("uniko", "baseline-bm25", "baseline-dense", "baseline-hybrid")


def resolve(names: str | list[str]) -> dict[str, Callable[[], MemorySystem]]:
    """``"a,b"`` → {name: factory}, in the order given; unknown names raise ``KeyError`` listing the known ones."""
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    unknown = [n for n in wanted if n not in SYSTEMS]
    if unknown:
        raise KeyError(f"unknown system(s) {unknown}; known: {sorted(SYSTEMS)}")
    return {n: SYSTEMS[n] for n in dict.fromkeys(wanted)}
