"""The system registry the CLI picks from (``--systems``). Add an entry to plug in another memory system.

A factory is called once per conversation and must return a fresh ``MemorySystem``. Names starting with
``baseline-`` are treated as baselines in the report; every other name is "ours" and gets ratio columns.

A system that needs an optional package (``OPTIONAL``: the peer ``baseline-mem0`` needs the ``peers`` extra)
is left out by ``resolve_available`` with a one-line reason when the package is absent, so a run asking for
it goes on with the others.
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


#: The soft per-kind shares ``uniko-typeshares`` measures (issue 21.4; off in the shipped defaults).
TYPE_SHARES = {"message": 0.5, "observation": 0.3, "fact": 0.3, "chunk": 0.2}
#: The restatement threshold ``uniko-restate`` measures (issue 21.5; off in the shipped defaults).
RESTATE_THRESHOLD = 0.9


def _uniko_typeshares() -> MemorySystem:
    """uniko with soft per-kind budget shares in packing (backfilled, then refilled to the budget)."""
    from .uniko_system import UnikoSystem

    return UnikoSystem(uniko_config={"recall": {"packing": {"type_shares": TYPE_SHARES}}})


def _uniko_restate() -> MemorySystem:
    """uniko with write-time near-duplicate Observations (a restatement reinforces, no copy)."""
    from .uniko_system import UnikoSystem

    return UnikoSystem(uniko_config={"ingest": {"observation_restate_threshold": RESTATE_THRESHOLD}})


def _mem0() -> MemorySystem:
    """mem0 OSS offline (infer=False, in-memory Qdrant, the same MiniLM): the peer memory system."""
    from .mem0_system import Mem0System

    return Mem0System()


def _hybrid_full() -> HybridBaseline:
    """RRF over the complete BM25 and dense rankings (a stronger hybrid than the BASELINES.md reference)."""
    return HybridBaseline(rrf_depth=None)


SYSTEMS: dict[str, Callable[[], MemorySystem]] = {
    "baseline-bm25": BM25Baseline,
    "baseline-dense": DenseBaseline,
    "baseline-hybrid": HybridBaseline,
    "baseline-hybrid-full": _hybrid_full,
    "baseline-mem0": _mem0,
    "uniko": _uniko,
    "uniko-noconsol": _uniko_noconsol,
    "uniko-nosweep": _uniko_nosweep,
    "uniko-typeshares": _uniko_typeshares,
    "uniko-restate": _uniko_restate,
}

DEFAULT_SYSTEMS = ("uniko", "baseline-bm25", "baseline-dense", "baseline-hybrid")


def _mem0_missing(name: str) -> str | None:
    from .mem0_system import MISSING_MESSAGE, mem0_available

    return None if mem0_available() else MISSING_MESSAGE.format(name=name)


#: name → a check (given the name) returning None when the system can run, else the one-line reason it is not.
OPTIONAL: dict[str, Callable[[str], str | None]] = {"baseline-mem0": _mem0_missing}


def resolve(names: str | list[str]) -> dict[str, Callable[[], MemorySystem]]:
    """``"a,b"`` → {name: factory}, in the order given; unknown names raise ``KeyError`` listing the known ones."""
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    unknown = [n for n in wanted if n not in SYSTEMS]
    if unknown:
        raise KeyError(f"unknown system(s) {unknown}; known: {sorted(SYSTEMS)}")
    return {n: SYSTEMS[n] for n in dict.fromkeys(wanted)}


def resolve_available(names: str | list[str]) -> tuple[dict[str, Callable[[], MemorySystem]], list[str]]:
    """``resolve`` without the optional systems whose package is absent: (systems, one skip line each)."""
    systems = resolve(names)
    skipped: list[str] = []
    for name in list(systems):
        check = OPTIONAL.get(name)
        reason = check(name) if check is not None else None
        if reason is not None:
            del systems[name]
            skipped.append(reason)
    return systems, skipped
