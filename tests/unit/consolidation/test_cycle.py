"""A consolidation cycle against the embedded store: each rule of P4, and idempotence."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

import numpy as np
import pytest

from uniko_memory.consolidation import CONTRADICTION, confidence, run_cycle
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import ConsolidationCycle, EdgeType, Entity, Tier
from uniko_memory.store.filters import IsNull

from ._support import AGENT, Writer, day, edges, facts, new_kb


@pytest.fixture
async def kb() -> AsyncIterator[KnowledgeBase]:
    k = await new_kb(consolidation={"definite_at_observations": 3})
    try:
        yield k
    finally:
        await k.close()


async def cycle(kb: KnowledgeBase, **kwargs: object):  # type: ignore[no-untyped-def]
    return await run_cycle(kb.store, kb.config, kb.embedder, AGENT, **kwargs)  # type: ignore[arg-type]


async def test_observations_become_facts_with_support_and_audit(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    ent = await w.entity("Caroline")
    o1 = await w.say("Caroline", "work_at", "Google", day(1), about=[ent])
    o2 = await w.say("caroline", "work_at", "Google LLC", day(2), about=[ent])  # same cluster (synonym)
    stats = await cycle(kb)
    assert (stats.observations_processed, stats.facts_created, stats.facts_invalidated) == (2, 1, 0)
    [f] = await facts(kb)
    assert (
        f.subject.lower() == "caroline" and f.predicate == "work_at" and f.object in ("Google", "Google LLC")
    )
    assert f.valid_from == day(1) and f.valid_to is None and f.observation_count == 2
    assert f.confidence == pytest.approx(confidence(2)) and f.certainty == "approximate"
    support = await edges(kb, [f.id], EdgeType.SUPPORTED_BY)
    assert {e.dst for e in support} == {o1.id, o2.id}
    assert all(0.0 < e.props["weight"] <= 1.0 for e in support)
    assert [e.dst for e in await edges(kb, [f.id], EdgeType.ABOUT)] == [ent]
    vec = (await kb.store.get_vectors(AGENT, [f.id]))[f.id]
    expected = (await kb.embedder.embed_documents([f"[January 2024] {f.triple_text()}"]))[0]
    assert float(np.dot(vec, expected)) == pytest.approx(1.0, abs=1e-5)  # date-augmented embedding
    [cyc] = await kb.store.find(AGENT, Tier.CONSOLIDATION_CYCLE)
    assert isinstance(cyc, ConsolidationCycle) and cyc.id == stats.cycle_id and cyc.facts_created == 1
    assert {e.dst for e in await edges(kb, [cyc.id], EdgeType.PROCESSED)} == {o1.id, o2.id}
    assert [e.dst for e in await edges(kb, [cyc.id], EdgeType.CREATED)] == [f.id]
    assert [e.dst for e in await edges(kb, [cyc.id], EdgeType.INVOLVED)] == [ent]


async def test_rerunning_a_cycle_changes_nothing(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Caroline", "work_at", "Google", day(1))
    await w.say("Caroline", "work_at", "Northwind", day(5))
    await cycle(kb)
    before = kb.store.generation(AGENT)
    snapshot = [f.model_dump() for f in await facts(kb)]
    again = await cycle(kb)
    assert again.observations_processed == 0 and again.cycle_id is None
    assert kb.store.generation(AGENT) == before  # nothing written at all
    assert [f.model_dump() for f in await facts(kb)] == snapshot


async def test_reinforcement_sums_counts_and_becomes_definite(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Caroline", "work_at", "Google", day(1))
    first = await cycle(kb)
    [f1] = await facts(kb)
    await w.say("Caroline", "work_at", "Google Inc", day(2))
    await w.say("Caroline", "work_at", "google", day(3))
    second = await cycle(kb)
    assert (first.facts_created, second.facts_created, second.facts_reinforced) == (1, 0, 1)
    [f2] = await facts(kb)
    assert f2.id == f1.id and f2.observation_count == 3 and f2.valid_from == day(1)
    assert f2.confidence == pytest.approx(4 / 5) and f2.certainty == "definite"  # n >= 3 here
    assert len(await edges(kb, [f2.id], EdgeType.SUPPORTED_BY)) == 3
    cycles = await kb.store.find(AGENT, Tier.CONSOLIDATION_CYCLE)
    reinforced = [e.dst for c in cycles for e in await edges(kb, [c.id], EdgeType.REINFORCED)]
    assert reinforced == [f1.id]


async def test_contradiction_closes_validity_and_links_invalidates(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Caroline", "work_at", "Google", day(1))
    await cycle(kb)
    await w.say("Caroline", "work_at", "Northwind", day(40))
    stats = await cycle(kb, now=datetime(2024, 6, 1, tzinfo=day(0).tzinfo))
    assert (stats.facts_created, stats.facts_invalidated) == (1, 1)
    old, new = await facts(kb)  # never deleted: both still there, ordered by valid_from
    assert old.object == "Google" and old.valid_to == day(40)
    assert old.invalidation_reason == CONTRADICTION and old.invalidated_at is not None
    assert new.object == "Northwind" and new.valid_from == day(40) and new.valid_to is None
    [inv] = await edges(kb, [new.id], EdgeType.INVALIDATES)
    assert inv.dst == old.id and inv.props["reason"] == CONTRADICTION
    assert inv.props["invalidated_at"] == "2024-06-01T00:00:00+00:00"
    open_now = await kb.store.find(AGENT, Tier.FACT, IsNull("valid_to"))
    assert [f.id for f in open_now] == [new.id]


async def test_a_minority_of_outside_votes_does_not_contradict(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    for i in range(3):
        await w.say("Caroline", "work_at", "Google", day(i))
    await cycle(kb)
    await w.say("Caroline", "work_at", "Google", day(10))
    await w.say("Caroline", "work_at", "Northwind", day(11))
    await w.say("Caroline", "work_at", "Google", day(12))
    stats = await cycle(kb)  # 1 of 3 outside the prior Google Fact: it stays open and is reinforced
    assert stats.facts_reinforced == 1
    got = sorted((f.object, f.valid_to) for f in await facts(kb))
    # Northwind itself is then contradicted by the Google that follows it (1 of its 2 later votes)
    assert got == [("Google", None), ("Northwind", day(12))]


async def test_a_closed_triple_that_returns_gets_its_own_fact(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Caroline", "work_at", "Google", day(1))
    await cycle(kb)
    await w.say("Caroline", "work_at", "Northwind", day(40))
    await cycle(kb)
    await w.say("Caroline", "work_at", "Google", day(90))
    await cycle(kb)
    got = [(f.object, f.valid_from, f.valid_to) for f in await facts(kb)]
    assert got == [("Google", day(1), day(40)), ("Northwind", day(40), day(90)), ("Google", day(90), None)]
    assert len({f.id for f in await facts(kb)}) == 3


async def test_drift_marks_an_entity_unstable_after_repeated_contradictions(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    ent = await w.entity("Caroline")
    alerts = 0
    for i, place in enumerate(["Google", "Northwind", "Acme", "Initech", "Globex", "Hooli", "Umbrella"]):
        await w.say("Caroline", "work_at", place, day(i * 2), about=[ent])
        stats = await cycle(kb)
        alerts += stats.drift_alerts
        e = await kb.store.get(AGENT, ent)
        assert isinstance(e, Entity) and e.invalidation_count == i
        assert e.unstable is (i > 4)  # more than drift_invalidations (4) in 30 days
    assert alerts == 1
    assert e.last_invalidation_at == day(12)


async def test_contradictions_spread_over_time_do_not_drift(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    ent = await w.entity("Caroline")
    for i, place in enumerate(["Google", "Northwind", "Acme", "Initech", "Globex", "Hooli", "Umbrella"]):
        await w.say("Caroline", "work_at", place, day(i * 20), about=[ent])
        await cycle(kb)
    e = await kb.store.get(AGENT, ent)
    assert isinstance(e, Entity) and e.invalidation_count == 6 and not e.unstable


async def test_the_batch_cap_leaves_the_rest_for_the_next_cycle(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    for i in range(5):
        await w.say(f"Person{i}", "like", "tea", day(i))
    first = await cycle(kb, batch=2)
    second = await cycle(kb, batch=2)
    third = await cycle(kb, batch=2)
    assert [s.observations_processed for s in (first, second, third)] == [2, 2, 1]
    assert len(await facts(kb)) == 5


async def test_observations_without_a_triple_are_ignored(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    o = await w.say("Tomas", "rest", "x", day(1))
    async with kb.store.unit(AGENT) as u:
        u.put(o.model_copy(update={"object": None}))
    assert (await cycle(kb)).observations_processed == 0


async def test_private_and_public_evidence_never_share_a_fact(kb: KnowledgeBase) -> None:
    w = Writer(kb)
    await w.say("Caroline", "work_at", "Google", day(1))
    await w.say("Caroline", "work_at", "Google", day(2), visibility="private:u1")
    await cycle(kb)
    assert sorted(f.visibility for f in await facts(kb)) == ["private:u1", "public"]


async def test_without_an_embedder_clusters_are_exact_and_weights_one() -> None:
    kb = await new_kb()
    try:
        w = Writer(kb)
        await w.say("Caroline", "work_at", "Google", day(1))
        await w.say("Caroline", "work_at", "Google", day(2))
        await run_cycle(kb.store, kb.config, None, AGENT)
        [f] = await facts(kb)
        assert f.observation_count == 2
        assert {e.props["weight"] for e in await edges(kb, [f.id], EdgeType.SUPPORTED_BY)} == {1.0}
    finally:
        await kb.close()
