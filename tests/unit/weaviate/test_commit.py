"""The non-transactional write guarantee under injected failures: a unit that fails part way is
compensated back to its pre-image, transient per-object errors are retried, and a failed
compensation says the unit is partially applied."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.corpus import AGENT, entity, message, unit
from tests.weaviate_double import Fault, WeaviateDouble
from uniko_memory.errors import StoreError
from uniko_memory.model import Direction, Edge, EdgeType, Tier, content_hash
from uniko_memory.store.weaviate import WeaviateStore

V1 = unit([1, 0, 0, 0, 0, 0, 0, 0])
V2 = unit([0, 1, 0, 0, 0, 0, 0, 0])


async def _seed(store: WeaviateStore) -> tuple:
    keep = message(AGENT, "keep", "the original wording about otters")
    ent = entity(AGENT, "Otter")
    edge = Edge(type=EdgeType.MENTIONS, src=keep.id, dst=ent.id, props={"count": 1})
    async with store.unit(AGENT) as u:
        u.put(keep, vector=V1)
        u.put(ent)
        u.put_edge(edge)
    return keep, ent, edge


async def _assert_pre_image(store: WeaviateStore, keep, ent, edge, new_id: str) -> None:
    assert await store.get(AGENT, keep.id) == keep
    assert await store.get(AGENT, ent.id) == ent
    assert await store.get(AGENT, new_id) is None
    vecs = await store.get_vectors(AGENT, [keep.id, new_id])
    assert set(vecs) == {keep.id}
    np.testing.assert_allclose(vecs[keep.id], V1, atol=1e-6)
    assert await store.neighbors(AGENT, [keep.id], direction=Direction.BOTH) == [edge]
    assert [h.id for h in await store.text_search(AGENT, Tier.MESSAGE, "otters")] == [keep.id]
    assert await store.text_search(AGENT, Tier.MESSAGE, "beavers") == []
    assert await store.count(AGENT, Tier.MESSAGE) == 1


async def _doomed_unit(store: WeaviateStore, keep, ent, edge) -> str:
    new = message(AGENT, "new", "a new message about beavers")
    async with store.unit(AGENT) as u:
        u.put(new, vector=V2)
        u.put(keep.model_copy(update={"content": "rewritten about beavers"}))
        u.set_vector(keep.id, Tier.MESSAGE, V2)
        u.put_edge(Edge(type=EdgeType.NEXT, src=keep.id, dst=new.id))
        u.put_edge(edge.model_copy(update={"props": {"count": 99}}))
        u.delete_edge(EdgeType.MENTIONS, keep.id, ent.id)
        u.put_blob(content_hash(b"doomed"), b"doomed")
    return new.id


@pytest.mark.parametrize("method,collection", [("BatchObjects", "_Edges"), ("BatchDelete", "_Edges")])
async def test_mid_unit_failure_is_compensated(
    store: WeaviateStore, double: WeaviateDouble, method: str, collection: str
) -> None:
    keep, ent, edge = await _seed(store)
    g = store.generation(AGENT)
    double.engine.faults.append(Fault(method, collection=store.prefix + collection, message="disk full"))
    with pytest.raises(StoreError, match="rolled back") as info:
        await _doomed_unit(store, keep, ent, edge)
    assert "disk full" in str(info.value)
    await _assert_pre_image(store, keep, ent, edge, message(AGENT, "new", "x").id)
    assert await store.get_blob(content_hash(b"doomed")) is None
    assert store.generation(AGENT) == g


async def test_failure_at_a_chosen_step_via_hook(store: WeaviateStore) -> None:
    keep, ent, edge = await _seed(store)
    steps: list[str] = []

    def crash(step: str) -> None:
        steps.append(step)
        if step == "edge_deletes":
            raise RuntimeError("process died here")

    store.before_write_step = crash
    with pytest.raises(StoreError, match="edge_deletes"):
        await _doomed_unit(store, keep, ent, edge)
    assert steps == ["blobs", "nodes", "edges", "edge_deletes"]  # the documented write order
    store.before_write_step = None
    await _assert_pre_image(store, keep, ent, edge, message(AGENT, "new", "x").id)


async def test_per_object_errors_are_collected(store: WeaviateStore, double: WeaviateDouble) -> None:
    keep, ent, edge = await _seed(store)
    double.engine.faults.append(
        Fault("BatchObjects", collection=f"{store.prefix}Message", per_object=True, message="invalid object")
    )
    with pytest.raises(StoreError, match="2 object\\(s\\) failed") as info:
        await _doomed_unit(store, keep, ent, edge)
    assert "invalid object" in str(info.value)
    await _assert_pre_image(store, keep, ent, edge, message(AGENT, "new", "x").id)


async def test_transient_per_object_errors_are_retried(store: WeaviateStore, double: WeaviateDouble) -> None:
    double.engine.faults.append(
        Fault(
            "BatchObjects",
            collection=f"{store.prefix}Message",
            per_object=True,
            message="connection reset by peer",
        )
    )
    m = message(AGENT, "retry", "written on the second attempt")
    async with store.unit(AGENT) as u:
        u.put(m, vector=V1)
    assert await store.get(AGENT, m.id) == m
    assert not double.engine.faults[0].times


async def test_failed_compensation_says_partially_applied(
    store: WeaviateStore, double: WeaviateDouble
) -> None:
    keep, ent, edge = await _seed(store)
    double.engine.faults += [
        Fault("BatchObjects", collection=f"{store.prefix}_Edges", message="edges down"),
        Fault("BatchDelete", collection=f"{store.prefix}Message", message="still down"),
    ]
    with pytest.raises(StoreError, match="partially rolled back"):
        await _doomed_unit(store, keep, ent, edge)
    # Re-running the unit converges (idempotent ids): the same final state as a clean run.
    double.engine.faults.clear()
    new_id = await _doomed_unit(store, keep, ent, edge)
    assert (await store.get(AGENT, new_id)) is not None
    got = await store.get(AGENT, keep.id)
    assert got is not None and got.content == "rewritten about beavers"
    assert [e.type for e in await store.neighbors(AGENT, [keep.id])] == [EdgeType.NEXT]


async def test_validation_failure_writes_nothing(store: WeaviateStore, double: WeaviateDouble) -> None:
    keep, _ent, _edge = await _seed(store)
    await store.redact(AGENT, [keep.id])
    double.engine.record = True
    with pytest.raises(Exception, match="redacted"):
        async with store.unit(AGENT) as u:
            u.put(message(AGENT, "sibling", "never written"))
            u.put(keep)  # content over a redacted node: refused before any write
    assert not [m for m, _ in double.engine.requests if m in ("BatchObjects", "BatchDelete")]
