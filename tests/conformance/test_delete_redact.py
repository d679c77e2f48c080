"""delete() removes a node everywhere; redact() keeps its shape but takes it out of every search."""

from __future__ import annotations

import numpy as np
import pytest

from uniko_memory.model import Direction, Edge, EdgeType, Message, Tier
from uniko_memory.store.filters import Eq
from uniko_memory.store.protocol import Store

from .corpus import AGENT, QUOKKA, WEEKEND, N, chunk, entity, ids, load_corpus, observation


@pytest.fixture
async def loaded(store: Store):
    msgs, vecs = await load_corpus(store)
    ent = entity(AGENT, "Quokka", "ANIMAL")
    obs = observation(AGENT, "dq", "someone saw a quokka", message_id=msgs[QUOKKA].id)
    async with store.unit(AGENT) as u:
        u.put(ent)
        u.put(obs)
        u.put_edge(Edge(type=EdgeType.MENTIONS, src=msgs[QUOKKA].id, dst=ent.id, props={"count": 1}))
        u.put_edge(Edge(type=EdgeType.OBSERVED_IN, src=obs.id, dst=msgs[QUOKKA].id))
        u.put_edge(Edge(type=EdgeType.NEXT, src=msgs[QUOKKA - 1].id, dst=msgs[QUOKKA].id))
        u.put_edge(Edge(type=EdgeType.NEXT, src=msgs[0].id, dst=msgs[1].id))
    return msgs, vecs, ent, obs


async def _assert_absent_from_searches(store: Store, node_id: str, vec: np.ndarray, text: str) -> None:
    assert node_id not in ids(await store.text_search(AGENT, Tier.MESSAGE, text, k=50))
    assert node_id not in ids(await store.text_search(AGENT, Tier.MESSAGE, "memo", k=50))
    assert node_id not in ids(await store.vector_search(AGENT, Tier.MESSAGE, vec, k=50))
    for alpha in (0.0, 0.5, 1.0):
        assert node_id not in ids(
            await store.hybrid_search(AGENT, Tier.MESSAGE, text, vec, alpha=alpha, k=50)
        )
    assert node_id not in ids(await store.hybrid_search(AGENT, Tier.MESSAGE, text, None, k=50))


async def test_delete_removes_everywhere(store: Store, loaded) -> None:
    msgs, vecs, ent, obs = loaded
    target = msgs[QUOKKA]
    assert await store.delete(AGENT, [target.id]) == 1
    assert await store.get(AGENT, target.id) is None
    assert await store.get_many(AGENT, [target.id]) == {}
    assert target.id not in {n.id for n in await store.find(AGENT, Tier.MESSAGE)}
    assert target.id not in {n.id for n in await store.find(AGENT, Tier.MESSAGE, include_redacted=True)}
    assert await store.count(AGENT, Tier.MESSAGE) == N - 1
    assert await store.get_vectors(AGENT, [target.id]) == {}
    await _assert_absent_from_searches(store, target.id, vecs[QUOKKA], "quokka")
    assert await store.text_search(AGENT, Tier.MESSAGE, "quokka") == []
    # Edges in both directions are gone; unrelated edges and the other endpoints remain.
    assert await store.neighbors(AGENT, [target.id], direction=Direction.BOTH) == []
    assert await store.neighbors(AGENT, [ent.id], direction=Direction.IN) == []
    assert await store.neighbors(AGENT, [obs.id]) == []
    assert await store.neighbors(AGENT, [msgs[QUOKKA - 1].id], [EdgeType.NEXT]) == []
    assert len(await store.neighbors(AGENT, [msgs[0].id], [EdgeType.NEXT])) == 1
    assert await store.get(AGENT, ent.id) == ent
    assert await store.get(AGENT, obs.id) == obs


async def test_delete_counts_only_existing(store: Store, loaded) -> None:
    msgs, *_ = loaded
    assert await store.delete(AGENT, [msgs[0].id, msgs[1].id, "msg_missing"]) == 2
    assert await store.delete(AGENT, [msgs[0].id]) == 0
    assert await store.delete(AGENT, []) == 0
    assert await store.count(AGENT, Tier.MESSAGE) == N - 2


async def test_delete_then_reinsert_is_searchable_again(store: Store, loaded) -> None:
    msgs, vecs, *_ = loaded
    target = msgs[QUOKKA]
    await store.delete(AGENT, [target.id])
    async with store.unit(AGENT) as u:
        u.put(target, vector=vecs[QUOKKA])
    assert await store.get(AGENT, target.id) == target
    assert ids(await store.text_search(AGENT, Tier.MESSAGE, "quokka")) == [target.id]
    assert (await store.vector_search(AGENT, Tier.MESSAGE, vecs[QUOKKA], k=1))[0].id == target.id
    assert await store.count(AGENT, Tier.MESSAGE) == N


async def test_unit_delete_node_removes_node_vector_and_edges(store: Store, loaded) -> None:
    msgs, vecs, ent, _obs = loaded
    target = msgs[QUOKKA]
    async with store.unit(AGENT) as u:
        u.delete_node(target.id)
    assert await store.get(AGENT, target.id) is None
    assert await store.get_vectors(AGENT, [target.id]) == {}
    await _assert_absent_from_searches(store, target.id, vecs[QUOKKA], "quokka")
    assert await store.neighbors(AGENT, [target.id], direction=Direction.BOTH) == []
    assert await store.neighbors(AGENT, [ent.id], direction=Direction.IN) == []


async def test_redact_keeps_shape_and_hides_from_search(store: Store, loaded) -> None:
    msgs, vecs, *_ = loaded
    target = msgs[QUOKKA]
    assert await store.redact(AGENT, [target.id]) == 1
    got = await store.get(AGENT, target.id)
    assert isinstance(got, Message)
    assert got.redacted is True
    assert got.content == ""
    assert got.metadata == {}
    assert got == target.redacted_copy()
    # Non-content fields survive.
    assert (got.session_id, got.sender_id, got.timestamp, got.seq) == (
        target.session_id,
        target.sender_id,
        target.timestamp,
        target.seq,
    )
    await _assert_absent_from_searches(store, target.id, vecs[QUOKKA], "quokka")
    assert await store.text_search(AGENT, Tier.MESSAGE, "quokka") == []
    assert target.id not in {n.id for n in await store.find(AGENT, Tier.MESSAGE)}
    assert target.id not in {n.id for n in await store.find(AGENT, Tier.MESSAGE, Eq("id", target.id))}
    with_red = await store.find(AGENT, Tier.MESSAGE, include_redacted=True)
    assert target.id in {n.id for n in with_red}
    assert next(n for n in with_red if n.id == target.id).redacted is True
    assert len(with_red) == N
    assert await store.count(AGENT, Tier.MESSAGE) == len(await store.find(AGENT, Tier.MESSAGE))
    # Other nodes are untouched and still rank as before.
    weekend = await store.text_search(AGENT, Tier.MESSAGE, "weekend quokka")
    assert set(ids(weekend)) == {msgs[i].id for i in WEEKEND}


async def test_redact_counts_and_is_idempotent(store: Store, loaded) -> None:
    msgs, *_ = loaded
    assert await store.redact(AGENT, [msgs[0].id, "msg_missing"]) == 1
    again = await store.redact(AGENT, [msgs[0].id])
    assert again in (0, 1)  # already redacted: either count is acceptable, but no error
    got = await store.get(AGENT, msgs[0].id)
    assert got is not None and got.redacted
    assert await store.redact(AGENT, []) == 0


async def test_redact_other_tiers(store: Store, loaded) -> None:
    msgs, _, _, obs = loaded
    c = chunk(AGENT, msgs[2], 0, "ferns need watering with rainwater", heading="Garden")
    async with store.unit(AGENT) as u:
        u.put(c)
    assert ids(await store.text_search(AGENT, Tier.CHUNK, "rainwater")) == [c.id]
    assert ids(await store.text_search(AGENT, Tier.OBSERVATION, "quokka")) == [obs.id]
    assert await store.redact(AGENT, [c.id, obs.id]) == 2
    assert await store.text_search(AGENT, Tier.CHUNK, "rainwater") == []
    assert await store.text_search(AGENT, Tier.OBSERVATION, "quokka") == []
    assert await store.get(AGENT, c.id) == c.redacted_copy()
    assert await store.get(AGENT, obs.id) == obs.redacted_copy()
    assert await store.find(AGENT, Tier.CHUNK) == []
    assert await store.find(AGENT, Tier.OBSERVATION) == []


async def test_redaction_is_one_way(store: Store, loaded) -> None:  # type: ignore[no-untyped-def]
    """Re-putting the original content over a redacted node is refused and changes nothing."""
    from uniko_memory.errors import ValidationError

    msgs, vecs, _, _ = loaded
    original = msgs[QUOKKA]
    await store.redact(AGENT, [original.id])
    with pytest.raises(ValidationError):
        async with store.unit(AGENT) as u:
            u.put(original, vecs[QUOKKA])
    again = await store.get(AGENT, original.id)
    assert again is not None and again.redacted and isinstance(again, Message) and again.content == ""
    await _assert_absent_from_searches(store, original.id, vecs[QUOKKA], "quokka")
