"""Child process for ``test_crash_cycles.py``: consolidate or finalise a store, and die on cue.

    python _cycle_child.py consolidate DB KILL
    python _cycle_child.py finalize DB KILL SESSION [SESSION ...]

It prints ``ACK cycle <id>`` once a consolidation cycle has committed and ``ACK finalized <session>``
once a session's finalisation has returned (both durable from then on). ``KILL`` says where this
process SIGKILLs itself:

- ``tx:N``: inside the SQLite transaction of the N-th cycle, as its ConsolidationCycle node is
  written (its Facts, SUPPORTED_BY and ABOUT edges are already in the transaction);
- ``after:N``: right after the N-th cycle committed, before the next one starts;
- ``tx:<session>``: inside the transaction of that session's finalisation, as its first chunk is
  written (no HAS_CHUNK edge yet; on a rebuild, the old chunks are half replaced);
- ``none``: no kill (the process exits 0).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from _faults_support import AGENT, CONFIG, HashEmbedder

from uniko_memory.config import UnikoConfig
from uniko_memory.model import Chunk, ConsolidationCycle, session_id


def ack(kind: str, ident: str) -> None:
    sys.stdout.write(f"ACK {kind} {ident}\n")
    sys.stdout.flush()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(kill: str) -> None:
    import uniko_memory.pipeline.cycles as cycles
    from uniko_memory.store.embedded.store import EmbeddedStore

    where, _, what = kill.partition(":")
    cycles_seen = 0
    committed: list[str] = []
    real_put = EmbeddedStore._put_node
    real_cycle = cycles.run_cycle

    def put_node(self: EmbeddedStore, conn: Any, node: Any, *args: Any) -> None:
        nonlocal cycles_seen
        real_put(self, conn, node, *args)
        if where != "tx":
            return
        if isinstance(node, ConsolidationCycle):
            cycles_seen += 1
            if what.isdigit() and cycles_seen == int(what):
                die()
        if isinstance(node, Chunk) and node.session_id == session_id(AGENT, what):
            die()

    async def run_cycle(*args: Any, **kwargs: Any) -> Any:
        stats = await real_cycle(*args, **kwargs)
        if stats.cycle_id:
            ack("cycle", stats.cycle_id)
            committed.append(stats.cycle_id)
            if where == "after" and len(committed) == int(what):
                die()
        return stats

    EmbeddedStore._put_node = put_node  # type: ignore[method-assign]
    cycles.run_cycle = run_cycle  # type: ignore[assignment]


async def main(mode: str, path: str, sessions: list[str]) -> None:
    from uniko_memory.facade import Uniko
    from uniko_memory.nlp.pipeline import NlpPipeline

    uni = await Uniko.open(
        path, UnikoConfig.build(CONFIG), embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules")
    )
    agent = uni.agent(AGENT)
    if mode == "consolidate":
        await agent.consolidate()
    else:
        for s in sessions:
            await agent.finalize_session(s)
            ack("finalized", s)
    await uni.close()


if __name__ == "__main__":
    mode, db, kill, *rest = sys.argv[1:]
    if kill != "none":
        arm(kill)
    asyncio.run(main(mode, db, rest))
