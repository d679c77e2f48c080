"""Child process for ``test_crash.py``: ingest forever into an on-disk store, acknowledging turns.

Prints ``ACK <turn id>`` for every turn as soon as ``observe`` / ``commit`` has returned (the
turn is durable from then on), then keeps going until the parent SIGKILLs it. Units alternate
between single turns and three-turn units over three sessions. NLP runs in rule mode and the
embedder is a hashed bag of words, so start-up is quick; atomicity does not depend on either.
"""

from __future__ import annotations

import asyncio
import re
import sys
import zlib
from datetime import UTC, datetime, timedelta

import numpy as np

from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.nlp.pipeline import NlpPipeline

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PLACES = ["Paris", "Lisbon", "Seattle", "Denver", "Boston", "Tokyo"]


class BagOfWords:
    model_id = "tests/crash-bag-of-words"
    dim = 32

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-6)

    async def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def ack(ids: list[str]) -> None:
    sys.stdout.write("".join(f"ACK {i}\n" for i in ids))
    sys.stdout.flush()


def die_inside_commit(unit: int) -> None:
    """SIGKILL this process from inside the SQLite transaction of unit ``unit`` (its 2nd Message)."""
    import os
    import signal

    from uniko_memory.store.embedded.store import EmbeddedStore

    real = EmbeddedStore._put_node

    def put_node(self: EmbeddedStore, conn: object, node: object, *args: object) -> None:
        real(self, conn, node, *args)  # type: ignore[arg-type]
        if getattr(node, "external_id", None) == f"u{unit}-1":
            os.kill(os.getpid(), signal.SIGKILL)

    EmbeddedStore._put_node = put_node  # type: ignore[method-assign]


async def main(path: str, start: int) -> None:
    uni = await Uniko.open(path, embedder=BagOfWords(), nlp=NlpPipeline(mode="rules"))
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    agent = uni.agent("crash")
    k = start
    while True:
        session = agent.session(f"s{k % 3}")
        at = T0 + timedelta(seconds=30 * k)
        if k % 2:
            ids = [f"u{k}-{j}" for j in range(3)]
            unit = session.unit()
            for j, tid in enumerate(ids):
                unit.turn(
                    "Caroline" if j % 2 == 0 else "Melanie",
                    f"Unit {k} line {j}: I visited {PLACES[(k + j) % 6]} with my sister last week.",
                    at=at + timedelta(seconds=j),
                    id=tid,
                    addressed_to="Melanie" if j % 2 == 0 else "Caroline",
                )
            await unit.commit()
        else:
            ids = [f"t{k}"]
            await session.observe(
                Turn(sender="Caroline", content=f"Single {k}: I moved to {PLACES[k % 6]}.", at=at, id=ids[0])
            )
        ack(ids)
        k += 1


if __name__ == "__main__":
    if len(sys.argv) > 3:
        die_inside_commit(int(sys.argv[3]))
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0))
