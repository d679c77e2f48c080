"""``uniko_memory.transfer`` (``uniko export`` / ``uniko import``) on every backend, both ways: an
agent exported from one backend and imported into the other comes back node for node, edge for
edge, vector for vector, redactions and documents included."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from uniko_memory.model import Artifact, Direction, Edge, EdgeType, Tier
from uniko_memory.store.embedded import EmbeddedStore
from uniko_memory.store.protocol import Store
from uniko_memory.transfer import (
    ExportError,
    check_import,
    export_agent,
    export_lines,
    import_agent,
    read_export,
)

from .conftest import DIM, VECTOR_ATOL, StoreHarness
from .corpus import AGENT, OTHER, QUOKKA, entity, load_corpus, observation

BLOB = b"%PDF-1.4 a tiny document"


async def _fill(store: Store) -> None:
    msgs, _ = await load_corpus(store)
    await load_corpus(store, OTHER)  # another agent: never part of AGENT's export
    ent = entity(AGENT, "Quokka", "ANIMAL")
    obs = observation(AGENT, "dq", "someone saw a quokka", message_id=msgs[QUOKKA].id)
    sha = hashlib.sha256(BLOB).hexdigest()
    doc = Artifact(id="art_1", agent=AGENT, external_id="doc-1", title="handbook", sha256=sha, size=len(BLOB))
    async with store.unit(AGENT) as u:
        u.put(ent)
        u.put(obs, np.full(DIM, 1.0, dtype=np.float32))
        u.put(doc)
        u.put_blob(sha, BLOB)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=msgs[QUOKKA].id, dst=ent.id, props={"count": 1}))
        u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=msgs[QUOKKA].id))
        u.put_edge(Edge(type=EdgeType.HAS_CONTENT, src=doc.id, dst=sha))
    await store.redact(AGENT, [msgs[0].id])
    await store.set_meta(f"forget.tombstones/{AGENT}", '{"par_x": {"entity": null, "hard": false}}')


async def _snapshot(
    store: Store,
) -> tuple[dict[str, dict[str, object]], list[tuple[str, str, str]], dict[str, np.ndarray]]:
    nodes = {}
    for tier in Tier:
        for n in await store.find(AGENT, tier, limit=10_000, include_redacted=True):
            nodes[n.id] = n.model_dump(mode="json")
    edges = sorted(e.key() for e in await store.neighbors(AGENT, list(nodes), None, Direction.OUT))
    return nodes, edges, await store.get_vectors(AGENT, list(nodes))


async def _round_trip(source: Store, target: Store) -> None:
    lines = list(export_lines([r async for r in export_agent(source, AGENT)]))
    assert not any("agent-beta" in line for line in lines[1:])
    data = read_export(lines)
    await check_import(target, data, embedding_model=None)
    report = await import_agent(target, data)
    before, after = await _snapshot(source), await _snapshot(target)
    assert after[0] == before[0] and after[1] == before[1]
    assert set(after[2]) == set(before[2])
    for nid, vec in before[2].items():
        np.testing.assert_allclose(after[2][nid], vec, atol=VECTOR_ATOL)
    redacted = [n for n in after[0].values() if n["redacted"]]
    assert len(redacted) == 1 and redacted[0]["content"] == ""
    assert redacted[0]["id"] not in after[2]  # no vector of forgotten content travels
    assert await target.get_blob(hashlib.sha256(BLOB).hexdigest()) == BLOB
    assert await target.get_meta(f"forget.tombstones/{AGENT}") is not None
    assert report.nodes == len(before[0]) and report.blobs == 1 and report.meta == 1
    with pytest.raises(ExportError, match="already has memory"):
        await check_import(target, data, embedding_model=None)


@pytest.fixture
async def embedded(tmp_path: Path) -> Store:
    store = await EmbeddedStore.open(tmp_path / "other.db", dim=DIM)
    yield store
    await store.close()


async def test_export_from_this_backend_imports_into_the_embedded_store(
    store: Store, embedded: Store
) -> None:
    await _fill(store)
    await _round_trip(store, embedded)


async def test_export_from_the_embedded_store_imports_into_this_backend(
    harness: StoreHarness, embedded: Store
) -> None:
    await _fill(embedded)
    await _round_trip(embedded, await harness.open())


async def test_vectors_of_another_model_are_refused(store: Store, embedded: Store) -> None:
    await _fill(store)
    await store.set_meta("embedding_model", "model-a")
    data = read_export(list(export_lines([r async for r in export_agent(store, AGENT)])))
    with pytest.raises(ExportError, match="embedding model 'model-a'"):
        await check_import(embedded, data, embedding_model="model-b")
    assert await embedded.count(AGENT) == 0
