"""The Weaviate store writes a unit's meta records (``set_meta``) as its last write step, and a
failure at or within that step rolls the whole unit back, the meta records included (issue 40.11:
an import's tombstones and nodes land together or not at all)."""

from __future__ import annotations

import pytest

from tests.conformance.corpus import AGENT, message
from uniko_memory.errors import StoreError
from uniko_memory.store.weaviate import WeaviateStore

KEY_A, KEY_B = f"test.a/{AGENT}", f"test.b/{AGENT}"


async def test_meta_is_the_last_step_and_a_failure_there_rolls_back_the_nodes(store: WeaviateStore) -> None:
    steps: list[str] = []

    def crash(step: str) -> None:
        steps.append(step)
        if step == "meta":
            raise RuntimeError("process died here")

    m = message(AGENT, "m1", "a message written with its meta record")
    store.before_write_step = crash
    with pytest.raises(StoreError, match="'meta'"):
        async with store.unit(AGENT) as u:
            u.put(m)
            u.set_meta(KEY_A, "new")
    store.before_write_step = None
    assert steps == ["nodes", "meta"]
    assert await store.get(AGENT, m.id) is None
    assert await store.get_meta(KEY_A) is None


async def test_a_failure_within_the_meta_step_restores_every_meta_record(
    store: WeaviateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.set_meta(KEY_A, "old")
    real = store._meta_put
    writes: list[str] = []

    async def flaky(kind: str, key: str, value: str) -> None:
        if kind == "meta":
            writes.append(key)
            if key == KEY_B and value == "new":
                raise RuntimeError("connection lost")
        await real(kind, key, value)

    monkeypatch.setattr(store, "_meta_put", flaky)
    m = message(AGENT, "m2", "a doomed message")
    with pytest.raises(StoreError, match="rolled back"):
        async with store.unit(AGENT) as u:
            u.put(m)
            u.set_meta(KEY_A, "new")
            u.set_meta(KEY_B, "new")
    monkeypatch.undo()
    assert writes[:2] == [KEY_A, KEY_B]  # KEY_A was written before the failure ...
    assert await store.get_meta(KEY_A) == "old"  # ... and put back
    assert await store.get_meta(KEY_B) is None
    assert await store.get(AGENT, m.id) is None
