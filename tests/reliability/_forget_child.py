"""Child process for ``test_crash_forget.py``: hard-forget a participant, and die on the way.

``python _forget_child.py DB POINT``: opens the store at DB, prints ``FORGETTING`` right before
``forget_participant("Erin", hard=True)`` and ``DONE`` after it, then waits to be killed. POINT is
``delay`` (the parent SIGKILLs it some time after ``FORGETTING``) or a place where the child
SIGKILLs itself: ``journal`` (the job was just recorded), ``unit`` (inside the SQLite transaction
of the deletions), ``rebuild`` (between two session rebuilds), ``compact`` (before compaction).

``build(db)`` writes the corpus the parent copies for every run: three finalised, consolidated
sessions where Erin speaks, Dave talks about her, and Fran talks about other things.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _crash_child import BagOfWords

from uniko_memory.config import UnikoConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

AGENT = "forget-crash"
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CONFIG: dict[str, Any] = {
    "pipeline": {
        "consolidation_threshold": 100_000,
        "cortex_cycle_every_n_consolidations": 1,
        "cortex_min_interval_secs": 0,
    }
}
#: Words only Erin's turns and the statements about her contain (lower-case stems, as FTS keeps them).
MARKS = ("quetzalbird", "marmaduk", "wallab", "asthm", "zanzibarit")
SESSIONS = 3
ROUNDS = 10


def corpus() -> list[tuple[str, str, str, str]]:
    """(session, sender, text, addressed_to) in order."""
    out = []
    for s in range(SESSIONS):
        for r in range(ROUNDS):
            k = s * ROUNDS + r
            out.append(
                (f"s{s}", "Erin", f"My parrot Quetzalbird{k} sang the Marmaduke song number {k}.", "Dave")
            )
            if r % 2 == 0:
                text = f"Erin lives at {k} Wallaby Lane and she has asthma, Erin told me on day {k}."
            else:
                text = f"I repaired the garden fence number {k} on Saturday."
            out.append((f"s{s}", "Dave", text, "Erin"))
            out.append((f"s{s}", "Fran", f"The Lisbon train number {k} was late again.", "Dave"))
        out.append((f"s{s}", "Erin", "I am from Zanzibarite country, as you know.", "Fran"))
    return out


async def open_uni(db: str | Path) -> Uniko:
    # The spaCy pipeline: the rule mode draws no Observations, so no Facts, from these turns.
    return await Uniko.open(db, UnikoConfig.build(CONFIG), embedder=BagOfWords())


async def build(db: str | Path) -> None:
    uni = await open_uni(db)
    try:
        agent = uni.agent(AGENT)
        for i, (session, who, text, to) in enumerate(corpus()):
            await agent.session(session).observe(
                Turn(id=f"t{i}", sender=who, content=text, at=T0 + timedelta(minutes=i), addressed_to=[to])
            )
        await agent.flush(timeout=120)
        for s in range(SESSIONS):
            await agent.session(f"s{s}").finalize()
        await agent.consolidate()
    finally:
        await uni.close()


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(point: str) -> None:
    from uniko_memory.ingest.finalize import SessionFinalizer
    from uniko_memory.store.embedded.store import EmbeddedStore

    if point == "journal":
        real_meta = EmbeddedStore.set_meta

        async def set_meta(self: EmbeddedStore, key: str, value: str) -> None:
            await real_meta(self, key, value)
            if key.startswith("forget.journal/") and value != "[]":
                _die()

        EmbeddedStore.set_meta = set_meta  # type: ignore[method-assign]
    elif point == "unit":
        real_delete = EmbeddedStore._delete_node
        calls = [0]

        def delete_node(self: EmbeddedStore, *args: Any) -> bool:
            done = real_delete(self, *args)
            calls[0] += 1
            if calls[0] == 25:  # well inside the transaction that deletes the person's nodes
                _die()
            return done

        EmbeddedStore._delete_node = delete_node  # type: ignore[method-assign]
    elif point == "rebuild":
        real_finalize = SessionFinalizer.finalize
        seen = [0]

        async def finalize(self: SessionFinalizer, *args: Any, **kwargs: Any) -> Any:
            seen[0] += 1
            if seen[0] == 2:
                _die()
            return await real_finalize(self, *args, **kwargs)

        SessionFinalizer.finalize = finalize  # type: ignore[method-assign]
    elif point == "compact":

        async def compact(self: EmbeddedStore, *, full: bool = False) -> None:
            _die()

        EmbeddedStore.compact = compact  # type: ignore[method-assign]


async def main(db: str, point: str) -> None:
    _arm(point)
    uni = await open_uni(db)
    agent = uni.agent(AGENT)
    sys.stdout.write("FORGETTING\n")
    sys.stdout.flush()
    report = await agent.forget_participant("Erin", hard=True)
    sys.stdout.write(f"DONE {report.model_dump_json()}\n")
    sys.stdout.flush()
    await asyncio.sleep(3600)  # the parent kills it


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
