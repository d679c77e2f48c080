"""compact() makes deletions physical and changes nothing a read can see.

Every backend: after deletes and redactions, ``compact()`` and ``compact(full=True)`` keep every
live node, edge, vector, search and meta value exactly as they were, may be called again, and the
store takes writes after them. On a backend whose files are ours (the embedded store), the deleted
and redacted words are then in no byte of the database file or its WAL, and the WAL is empty.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from uniko_memory.model import Direction, Edge, EdgeType, Tier
from uniko_memory.store.embedded.schema import configure
from uniko_memory.store.protocol import Store

from .conftest import StoreHarness
from .corpus import AGENT, QUOKKA, TEXTS, ids, load_corpus, message

REDACTED = 7  # "carol is allergic to peanuts and shellfish"
WORDS = (b"quokka", b"peanuts", b"shellfish")


async def _snapshot(store: Store, vec: object) -> tuple[object, ...]:
    msgs = await store.find(AGENT, Tier.MESSAGE, limit=100, include_redacted=True, order_by="id")
    return (
        [m.model_dump_json() for m in msgs],
        ids(await store.text_search(AGENT, Tier.MESSAGE, "memo weekend", k=50)),
        ids(await store.vector_search(AGENT, Tier.MESSAGE, vec, k=50)),  # type: ignore[arg-type]
        sorted(
            (e.src, e.dst) for e in await store.neighbors(AGENT, [m.id for m in msgs], None, Direction.BOTH)
        ),
        sorted(await store.get_vectors(AGENT, [m.id for m in msgs])),
        await store.get_meta("compact-note"),
        await store.count(AGENT, Tier.MESSAGE),
    )


async def test_compact_changes_nothing_a_read_sees(store: Store) -> None:
    msgs, vecs = await load_corpus(store)
    async with store.unit(AGENT) as u:
        u.put_edge(Edge(type=EdgeType.NEXT, src=msgs[0].id, dst=msgs[1].id))
    await store.set_meta("compact-note", "kept")
    await store.delete(AGENT, [msgs[QUOKKA].id])
    await store.redact(AGENT, [msgs[REDACTED].id])
    before = await _snapshot(store, vecs[2])
    await store.compact()
    assert await _snapshot(store, vecs[2]) == before
    await store.compact(full=True)
    await store.compact(full=True)
    assert await _snapshot(store, vecs[2]) == before
    assert await store.text_search(AGENT, Tier.MESSAGE, "quokka") == []
    later = message(AGENT, "after-compact", "memo: a note written after compaction", seq=99)
    async with store.unit(AGENT) as u:
        u.put(later)
    assert await store.get(AGENT, later.id) == later


@pytest.mark.parametrize("full", [False, True], ids=["light", "full"])
async def test_compact_leaves_no_deleted_bytes_in_our_files(harness: StoreHarness, full: bool) -> None:
    store = await harness.open()
    path = getattr(store, "path", None)
    if not isinstance(path, Path):
        pytest.skip(f"{harness.name} keeps its files on the server")
    msgs, _ = await load_corpus(store)
    assert all(w in _bytes(path) for w in WORDS)
    await store.delete(AGENT, [msgs[QUOKKA].id])
    await store.redact(AGENT, [msgs[REDACTED].id])
    await store.compact(full=full)
    left = _bytes(path)
    assert [w for w in WORDS if w in left] == []
    assert _wal_size(path) == 0
    assert TEXTS[0][0].encode() in left  # live rows are still there, of course


def _bytes(db: Path) -> bytes:
    wal = Path(f"{db}-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _wal_size(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_the_embedded_store_zeroes_freed_content_whatever_the_sqlite_build() -> None:
    """``secure_delete`` is compiled in on some builds only: the store turns it on itself."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA secure_delete=OFF")  # as on a build without SQLITE_SECURE_DELETE
        configure(conn)
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    finally:
        conn.close()
