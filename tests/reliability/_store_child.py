"""Child process for ``test_faults_storage.py``: a second process on the same store file.

    python _store_child.py open DB N   try to open; on StoreLocked report it and wait for a line on
                                       stdin before trying again; once open, write N turns, report
                                       READY and hold the store until SIGKILLed
    python _store_child.py readonly DB [DB ...]
                                       open each store (this process may not write it), read, write

Every other line is one JSON event on stdout: ``{"event": ..., ...}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from _faults_support import AGENT, CONFIG, HashEmbedder, turns

from uniko_memory.config import UnikoConfig
from uniko_memory.errors import StoreError, StoreLocked
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Tier
from uniko_memory.nlp.pipeline import NlpPipeline


def emit(event: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **data}) + "\n")
    sys.stdout.flush()


async def _open(path: str) -> Uniko:
    return await Uniko.open(
        path, UnikoConfig.build(CONFIG), embedder=HashEmbedder(), nlp=NlpPipeline(mode="rules")
    )


async def _observe(uni: Uniko, item: dict[str, Any]) -> None:
    fields = {k: v for k, v in item.items() if k != "session"}
    await uni.agent(AGENT).session(item["session"]).observe(Turn(**fields))


async def open_and_hold(path: str, n: int) -> None:
    while True:
        try:
            uni = await _open(path)
        except StoreLocked as exc:
            emit("locked", error=type(exc).__name__, message=str(exc))
            if not await asyncio.to_thread(sys.stdin.readline):
                sys.exit(3)
            continue
        break
    emit("opened", messages=await uni.kb.store.count(AGENT, Tier.MESSAGE))
    acked = []
    for item in turns(2000, n, "second-process"):
        await _observe(uni, item)
        acked.append(item["id"])
    await uni.agent(AGENT).flush(timeout=60)
    emit("ready", acked=acked)
    await asyncio.to_thread(sys.stdin.readline)  # held until the parent SIGKILLs this process
    await uni.close()


async def read_only(path: str) -> None:
    try:
        uni = await _open(path)
    except StoreError as exc:
        emit("open_failed", path=path, error=type(exc).__name__, message=str(exc))
        return
    try:
        emit("opened", path=path, messages=await uni.kb.store.count(AGENT, Tier.MESSAGE))
        bundle = await uni.agent(AGENT).recall("Where does Caroline work?")
        emit("recalled", path=path, items=len(bundle.items))
        try:
            await _observe(uni, turns(3000, 1, "s0")[0])
            emit("wrote", path=path)
        except StoreError as exc:
            emit("write_failed", path=path, error=type(exc).__name__, message=str(exc))
    finally:
        await uni.close()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "open":
        asyncio.run(open_and_hold(args[0], int(args[1])))
    else:
        for db in args:
            asyncio.run(read_only(db))
