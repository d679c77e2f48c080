"""Child process for ``test_multiprocess.py``: one writer or one reader on a shared embedded store.

python _multiproc_child.py writer DB START N   open read-write, observe N turns (ids t<START>..),
                                               printing ``ACK turn <id>`` once each is durable,
                                               then ``DONE``; hold the store until stdin closes
python _multiproc_child.py reader DB TARGET    open read-only; read (count, recall) in a loop,
                                               printing ``READ <count> <recall items>`` at each
                                               change, until TARGET turns are visible; then
                                               check a write is refused, print ``CAUGHT_UP`` and
                                               hold until stdin closes
"""

from __future__ import annotations

import asyncio
import sys

from _faults_support import AGENT, CONFIG, HashEmbedder, turns

from uniko_memory.config import UnikoConfig
from uniko_memory.errors import StoreReadOnly
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Tier
from uniko_memory.nlp.pipeline import NlpPipeline


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _open(path: str, read_only: bool) -> Uniko:
    cfg = UnikoConfig.build({**CONFIG, "store": {"embedded_read_only": read_only}})
    return await Uniko.open(path, cfg, embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules"))


async def writer(path: str, start: int, n: int) -> None:
    uni = await _open(path, read_only=False)
    for item in turns(start, n, "s0"):
        fields = {k: v for k, v in item.items() if k != "session"}
        await uni.agent(AGENT).session(item["session"]).observe(Turn(**fields))
        say(f"ACK turn {item['id']}")
    await uni.agent(AGENT).flush(timeout=60)
    say("DONE")
    await asyncio.to_thread(sys.stdin.read)
    await uni.close()


async def reader(path: str, target: int) -> None:
    uni = await _open(path, read_only=True)
    store = uni.kb.store
    last = -1
    while True:
        n = await store.count(AGENT, Tier.MESSAGE)
        if n != last:
            bundle = await uni.agent(AGENT).recall("Where does Caroline work?")
            say(f"READ {n} {len(bundle.items)}")
            last = n
        if n >= target:
            break
        await asyncio.sleep(0.02)
    try:
        await uni.agent(AGENT).session("s9").observe(Turn(sender="x", content="a write from a reader"))
        say("WROTE")
    except StoreReadOnly:
        say("WRITE_REFUSED")
    say("CAUGHT_UP")
    await asyncio.to_thread(sys.stdin.read)
    await uni.close()


if __name__ == "__main__":
    mode, db, *rest = sys.argv[1:]
    if mode == "writer":
        asyncio.run(writer(db, int(rest[0]), int(rest[1])))
    else:
        asyncio.run(reader(db, int(rest[0])))
