"""The embedded store runs short reads on the caller's thread and index loads in a worker."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.config import UnikoConfig
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import Message, Tier
from uniko_memory.model.time import utcnow
from uniko_memory.store.embedded import EmbeddedStore

AGENT = "inline"


def _msg(i: int) -> Message:
    return Message(
        id=f"msg_{i}",
        agent=AGENT,
        external_id=f"t{i}",
        session_id="ses_s",
        sender_id="par_a",
        sender_name="Ana",
        content=f"turn {i} about the garden fence",
        timestamp=utcnow(),
        seq=i,
    )


def _vec(i: int) -> np.ndarray:
    v = np.zeros(8, dtype=np.float32)
    v[i % 8] = 1.0
    v[(i + 1) % 8] = 0.5
    return v / np.linalg.norm(v)


async def _filled(path: Path, **kwargs: Any) -> EmbeddedStore:
    store = await EmbeddedStore.open(path, dim=8, **kwargs)
    async with store.unit(AGENT) as u:
        for i in range(20):
            u.put(_msg(i), vector=_vec(i))
    return store


async def test_reads_run_inline_but_an_index_load_goes_to_a_worker(tmp_path: Path) -> None:
    store = await _filled(tmp_path / "a.db")
    await store.close()
    store = await EmbeddedStore.open(tmp_path / "a.db", dim=8)
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}
    real_load, real_reader = store._load_index, store._reader

    def load(*args: Any) -> Any:
        seen["load"] = threading.get_ident()
        return real_load(*args)

    def reader() -> Any:
        seen.setdefault("reads", 0)
        seen["reads"] += threading.get_ident() == loop_thread
        return real_reader()

    store._load_index = load  # type: ignore[method-assign]
    store._reader = reader  # type: ignore[method-assign]
    try:
        first = await store.vector_search(AGENT, Tier.MESSAGE, _vec(3), k=5)
        assert seen["load"] != loop_thread  # the first search loads the index off the loop
        again = await store.vector_search(AGENT, Tier.MESSAGE, _vec(3), k=5)
        found = await store.text_search(AGENT, Tier.MESSAGE, "garden fence", k=5)
        assert [h.node.id for h in again] == [h.node.id for h in first] and found
        assert seen["reads"] >= 2  # the later reads ran on the calling thread
    finally:
        await store.close()


async def test_inline_reads_can_be_turned_off_and_give_the_same_results(tmp_path: Path) -> None:
    on = await _filled(tmp_path / "on.db")
    off = await _filled(tmp_path / "off.db", inline_reads=False)
    try:
        assert on.inline_reads and not off.inline_reads
        for store in (on, off):
            await store.vector_search(AGENT, Tier.MESSAGE, _vec(0), k=3)  # load the index
        a = await on.hybrid_search(AGENT, Tier.MESSAGE, "garden turn 4", _vec(4), alpha=0.5, k=5)
        b = await off.hybrid_search(AGENT, Tier.MESSAGE, "garden turn 4", _vec(4), alpha=0.5, k=5)
        assert [(h.node.id, round(h.score, 6)) for h in a] == [(h.node.id, round(h.score, 6)) for h in b]
    finally:
        await on.close()
        await off.close()


async def test_the_config_reaches_the_store(tmp_path: Path) -> None:
    cfg = UnikoConfig.build({"store": {"embedded_inline_reads": False}})
    kb = await KnowledgeBase.from_config(cfg, path=tmp_path / "kb.db", default_models=False)
    try:
        assert kb.store.inline_reads is False
    finally:
        await kb.close()
