"""P6 topics on a small hand-made graph: label propagation, Topic identity, retirement."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.consolidation._support import AGENT, T0, SynonymEmbedder, new_kb
from uniko_memory.cortex import detect_topics, label_propagation
from uniko_memory.cortex.topics import settled_types
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import Direction, Edge, EdgeType, Entity, Message, Tier, Topic, entity_id, make_id


def test_label_propagation_finds_two_communities_joined_by_a_weak_edge() -> None:
    w = {("a", "b"): 3.0, ("a", "c"): 3.0, ("b", "c"): 3.0, ("x", "y"): 3.0, ("x", "z"): 3.0, ("y", "z"): 2.0}
    w[("c", "x")] = 1.0
    labels, sweeps = label_propagation(sorted({n for p in w for n in p}), w, 10)
    assert labels["a"] == labels["b"] == labels["c"]
    assert labels["x"] == labels["y"] == labels["z"]
    assert labels["a"] != labels["x"] and sweeps <= 10


def test_ties_go_to_the_smaller_label_and_iterations_are_capped() -> None:
    w = {("a1", "a2"): 5.0, ("b1", "b2"): 5.0, ("a2", "m"): 1.0, ("b2", "m"): 1.0}
    labels, _ = label_propagation(["a1", "a2", "b1", "b2", "m"], w, 10)
    assert labels["a1"] == labels["a2"] == "a2" and labels["b1"] == labels["b2"] == "b2"
    assert labels["m"] == "a2"  # equal pull from "a2" and "b2": the smaller label wins
    _, sweeps = label_propagation(["a", "b", "c", "d"], {("a", "b"): 1, ("c", "d"): 1, ("b", "c"): 1}, 1)
    assert sweeps == 1


def test_a_name_read_as_a_person_and_a_place_is_listed_by_its_usual_reading() -> None:
    """Issue 39.4: a topic listed "People: Lyon" because the recogniser once read the city as a person."""

    def ent(name: str, kind: str, freq: int) -> Entity:
        return Entity(
            id=entity_id(AGENT, name, kind), agent=AGENT, name=name, entity_type=kind,
            first_seen=T0, last_seen=T0, frequency=freq,
        )  # fmt: skip

    settled = settled_types(
        [ent("Lyon", "person", 1), ent("Lyon", "location", 4), ent("Easter", "person", 1),
         ent("Easter", "event", 1), ent("Maya", "person", 3)]
    )  # fmt: skip
    assert settled == {"lyon": "location", "easter": "other", "maya": "person"}


@pytest.fixture
async def kb() -> AsyncIterator[KnowledgeBase]:
    k = await new_kb()
    try:
        yield k
    finally:
        await k.close()


async def mention(kb: KnowledgeBase, i: int, *names: str) -> str:
    """A message mentioning the named entities (created as needed, with their vectors)."""
    mid = make_id("msg", AGENT, f"m{i}")
    emb = SynonymEmbedder()
    async with kb.store.unit(AGENT) as u:
        u.put(
            Message(
                id=mid,
                agent=AGENT,
                external_id=f"m{i}",
                session_id="ses_x",
                sender_id="par_x",
                sender_name="X",
                content=" and ".join(names),
                timestamp=T0,
            )
        )
        for n in names:
            etype = "location" if n in ("Lisbon", "Porto") else "person"
            eid = entity_id(AGENT, n, etype)
            if await u.get(eid) is None:
                vec = (await emb.embed_documents([n]))[0]
                u.put(
                    Entity(id=eid, agent=AGENT, name=n, entity_type=etype, first_seen=T0, last_seen=T0), vec
                )
            u.put_edge(Edge(type=EdgeType.MENTIONS, src=mid, dst=eid, props={"count": 1}))
    return mid


async def live_topics(kb: KnowledgeBase) -> list[Topic]:
    return [
        t
        for t in await kb.store.find(AGENT, Tier.TOPIC, limit=100)
        if isinstance(t, Topic) and t.retired_at is None
    ]


async def test_topics_from_cooccurrence(kb: KnowledgeBase) -> None:
    for i in range(3):
        await mention(kb, i, "Tomas", "Mateo", "Lisbon")
    await mention(kb, 10, "Priya", "Anika")
    await mention(kb, 11, "Priya", "Anika")
    await mention(kb, 12, "Biscuit")  # alone: no community
    stats = await detect_topics(kb.store, kb.config, kb.embedder, AGENT)
    assert stats.topics == 2 and stats.retired == 0
    topics = {t.entity_count: t for t in await live_topics(kb)}
    big, small = topics[3], topics[2]
    members = [entity_id(AGENT, n, "person") for n in ("Tomas", "Mateo")]
    members.append(entity_id(AGENT, "Lisbon", "location"))
    assert big.id == make_id("top", AGENT, *sorted(members))
    assert set(big.name.split(", ")) == {"Tomas", "Mateo", "Lisbon"}
    assert "People: Mateo, Tomas." in big.summary and "Places: Lisbon." in big.summary
    belongs = await kb.store.neighbors(AGENT, [big.id], [EdgeType.BELONGS_TO], Direction.IN)
    assert sorted(e.src for e in belongs) == sorted(members)
    vec = (await kb.store.get_vectors(AGENT, [big.id]))[big.id]
    assert abs(float(vec @ vec) - 1.0) < 1e-5  # normalised mean of the members' vectors
    assert set(small.name.split(", ")) == {"Priya", "Anika"}
    again = await detect_topics(kb.store, kb.config, kb.embedder, AGENT)
    assert again.written == 0 and again.retired == 0  # idempotent


async def test_a_changed_membership_retires_the_stale_topic(kb: KnowledgeBase) -> None:
    await mention(kb, 1, "Priya", "Anika")
    await detect_topics(kb.store, kb.config, kb.embedder, AGENT)
    [old] = await live_topics(kb)
    await mention(kb, 2, "Priya", "Anika", "Porto")
    stats = await detect_topics(kb.store, kb.config, kb.embedder, AGENT)
    assert stats.retired == 1
    [new] = await live_topics(kb)
    assert new.id != old.id and new.entity_count == 3
    retired = await kb.store.get(AGENT, old.id)
    assert isinstance(retired, Topic) and retired.retired_at is not None
    assert not await kb.store.neighbors(AGENT, [old.id], [EdgeType.BELONGS_TO], Direction.IN)


async def test_redacted_sources_do_not_count(kb: KnowledgeBase) -> None:
    m1 = await mention(kb, 1, "Priya", "Anika")
    await kb.store.redact(AGENT, [m1])
    stats = await detect_topics(kb.store, kb.config, kb.embedder, AGENT)
    assert stats.pairs == 0 and stats.topics == 0
