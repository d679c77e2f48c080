from dataclasses import dataclass
from pathlib import Path

import pytest

from uniko_memory import KnowledgeBase
from uniko_memory.errors import SchemaMismatch, StoreLocked


@dataclass
class FakeEmbedder:
    model_id: str
    dim: int


async def test_embedding_model_is_pinned(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    kb = await KnowledgeBase.open(path, embedder=FakeEmbedder("m-a", 8))
    await kb.close()
    async with await KnowledgeBase.open(path, embedder=FakeEmbedder("m-a", 8)) as again:
        assert await again.store.get_meta("embedding_model") == "m-a"
    with pytest.raises(SchemaMismatch, match="m-a"):
        await KnowledgeBase.open(path, embedder=FakeEmbedder("m-b", 8))
    # the failed open released the file: a correct open still works
    kb = await KnowledgeBase.open(path, embedder=FakeEmbedder("m-a", 8))
    await kb.close()


async def test_second_opener_gets_a_clear_lock_error(tmp_path: Path) -> None:
    kb = await KnowledgeBase.open(tmp_path / "kb.db")
    try:
        # this process holds it: the message says so, not "another process" (issue 40.6)
        with pytest.raises(StoreLocked, match="already open in this process"):
            await KnowledgeBase.open(tmp_path / "kb.db")
    finally:
        await kb.close()


async def test_in_memory_cleans_up() -> None:
    kb = await KnowledgeBase.in_memory()
    path = kb.store.path  # type: ignore[attr-defined]
    assert path.exists()
    await kb.close()
    assert not path.exists()
