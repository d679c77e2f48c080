"""Phase 1 over Facts: the early exit, the drift override and the Phase-1 strategies.

Most Facts here are written straight into the store (deterministic wording), with vectors from the
same embedder, and one of them SUPPORTED_BY the Observation it was drawn from; the last tests run
over a memory consolidated by the real cycle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from uniko_memory.facade import Agent, Uniko
from uniko_memory.model import Edge, EdgeType, Entity, Fact, Observation, Tier, entity_id, make_id
from uniko_memory.recall import ContextBundle

from ._corpus import (
    AGENT,
    ALL_PHASES,
    GATES_OFF,
    MAIN,
    S1_START,
    S2_START,
    Line,
    build,
    message_by_text,
    rendered_tokens,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

FACTS = [("adopted", "a cat named Bailey"), ("adopted_cat", "Bailey"), ("has_cat_named", "Bailey")]
EXACT = "Caroline adopted a cat named Bailey"
BAILEY_OBS = "Caroline adopted a second cat named Bailey from the shelter in Boston"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN)
    store = u.kb.store
    facts = [
        Fact(
            id=make_id("fct", AGENT, str(i)),
            agent=AGENT,
            subject="Caroline",
            predicate=p,
            object=o,
            valid_from=S2_START,
            text=f"Caroline {p.replace('_', ' ')} {o}",  # the sentence consolidation keeps
        )
        for i, (p, o) in enumerate(FACTS)
    ]
    vectors = await u.kb.embedder.embed_documents([f.statement() for f in facts])
    [obs] = [
        o
        for o in await store.find(AGENT, Tier.OBSERVATION, limit=1000)
        if isinstance(o, Observation) and o.content == BAILEY_OBS
    ]
    async with store.unit(AGENT) as unit:
        for f, v in zip(facts, vectors, strict=True):
            unit.put(f, v)
        unit.put_edge(Edge(type=EdgeType.SUPPORTED_BY, src=facts[0].id, dst=obs.id))
    try:
        yield u
    finally:
        await u.close()


@pytest.fixture
def agent(uni: Uniko) -> Agent:
    return uni.agent(AGENT)


async def ask(agent: Agent, query: str, **options: Any) -> ContextBundle:
    return await agent.recall(query, use_cache=False, **options)


async def test_phase1_exits_early_when_facts_cover_the_question(agent: Agent) -> None:
    # the coverage gate alone (the budget rule is tested below)
    b = await ask(agent, EXACT, explain=True, phases={"gate_budget_factor": 0.0})
    assert b.phase1_only and not b.phase2_only
    assert b.trace is not None and set(b.trace["phases"]) == {"1"}
    assert b.coverage >= 0.75
    assert len(b.items) >= 3 and {i.kind for i in b.items} == {"fact"}
    assert b.items[0].content == EXACT
    assert all(0.0 < i.score <= 1.0 for i in b.items)  # calibrated relevance, not RRF scale


async def test_a_few_facts_do_not_end_the_cascade_for_a_large_bundle(agent: Agent) -> None:
    """Covered but thin: Phase 1 may not stop when its Facts cannot fill the budget 3 times over."""
    b = await ask(agent, EXACT, explain=True, token_budget=2000, limit=100)
    assert not b.phase1_only
    assert b.trace is not None and b.trace["phases"]["1"]["pool_tokens"] < 3 * 2000
    assert "2" in b.trace["phases"]


async def test_phase1_needs_three_items(agent: Agent) -> None:
    b = await ask(agent, EXACT, phases={"gate_min_items": 4})
    assert not b.phase1_only


async def test_drift_override_forces_phase2(uni: Uniko, agent: Agent) -> None:
    store = uni.kb.store
    eid = entity_id(AGENT, "Caroline", "person")
    ent = await store.get(AGENT, eid)
    assert isinstance(ent, Entity)
    async with store.unit(AGENT) as unit:
        unit.put(ent.model_copy(update={"unstable": True}))
    try:
        b = await ask(agent, EXACT, explain=True, phases={"gate_budget_factor": 0.0})
        assert not b.phase1_only
        assert b.trace is not None and b.trace["phases"]["1"]["drift_override"] is True
        assert "2" in b.trace["phases"]
        off = await ask(agent, EXACT, phases={"drift_override_enabled": False, "gate_budget_factor": 0.0})
        assert off.phase1_only
    finally:
        async with store.unit(AGENT) as unit:
            unit.put(ent)


async def test_boost_lifts_the_evidence_behind_a_fact(agent: Agent) -> None:
    q = "Where did Caroline get Bailey?"
    # the fake embedder gives low cosines: open the relevance gate to test the lift itself
    boosted = await ask(
        agent,
        q,
        phases={**GATES_OFF, "phase1_strategy": "boost", "boost_min_relevance": 0.0},
        limit=30,
        explain=True,
    )
    plain = await ask(agent, q, phases={**GATES_OFF, "phase1_strategy": "off"}, limit=30)
    score = {i.content: i.fused for i in boosted.items}
    base = {i.content: i.fused for i in plain.items}
    assert BAILEY_OBS in score and BAILEY_OBS in base
    assert score[BAILEY_OBS] > base[BAILEY_OBS]
    assert boosted.items[0].content in (BAILEY_OBS, EXACT)


async def test_off_strategy_keeps_facts_out_of_later_phases(agent: Agent) -> None:
    b = await ask(
        agent, "Caroline adopted cat Bailey shelter", phases={**GATES_OFF, "phase1_strategy": "off"}, limit=40
    )
    assert b.items and all(i.kind != "fact" for i in b.items)


async def test_merge_strategy_keeps_at_most_three_facts(agent: Agent) -> None:
    b = await ask(
        agent,
        "Caroline adopted cat Bailey shelter",
        phases={**GATES_OFF, "phase1_strategy": "merge"},
        limit=40,
    )
    assert sum(i.kind == "fact" for i in b.items) <= 3


async def test_session_scope_excludes_facts(agent: Agent) -> None:
    b = await ask(agent, EXACT, sessions=["s2"], limit=30)
    assert not b.phase1_only and all(i.kind != "fact" for i in b.items)


# ------------------------------------------------------------------ a consolidated memory
@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def consolidated() -> AsyncIterator[Uniko]:
    u = await build(MAIN, consolidate=True)
    try:
        yield u
    finally:
        await u.close()


CONSOLIDATED_QUERIES = [
    "What is the name of Caroline's cat?",
    "Where did Caroline adopt Bailey?",
    "What instrument does Ava play?",
    "Who moved to Miami?",
]


@pytest.mark.parametrize("budget", [70, 200, 2000])  # 70: just over the frame (62), room for one short item
async def test_consolidated_bundles_keep_budget_and_limit(consolidated: Uniko, budget: int) -> None:
    agent = consolidated.agent(AGENT)
    assert await consolidated.kb.store.count(AGENT, Tier.FACT) > 0
    for q in CONSOLIDATED_QUERIES:
        for extra in ({}, ALL_PHASES):
            b = await agent.recall(q, token_budget=budget, limit=8, use_cache=False, **extra)
            assert len(b.items) <= 8
            assert rendered_tokens(b) == b.total_tokens <= budget
            assert 0.0 <= b.coverage <= 1.0 and not (b.phase1_only and b.phase2_only)


async def test_consolidated_facts_render_with_validity(consolidated: Uniko) -> None:
    agent = consolidated.agent(AGENT)
    facts = []
    for q in CONSOLIDATED_QUERIES:
        b = await agent.recall(q, limit=30, use_cache=False, **ALL_PHASES)
        facts += [i for i in b.items if i.kind == "fact"]
    assert facts
    for item in facts:
        # dated by the event the turn named, or "as of" the day it was said: never an invented start
        ts = item.timestamp
        assert ts is not None and f"{ts.day} {ts:%B %Y}" in item.rendered
        assert "(since " not in item.rendered


async def test_consolidated_fact_items_trace_back_to_messages(consolidated: Uniko) -> None:
    agent = consolidated.agent(AGENT)
    seen = 0
    for q in CONSOLIDATED_QUERIES:
        b = await agent.recall(q, limit=30, use_cache=False, **ALL_PHASES)
        for item in b.items:
            if item.kind != "fact":
                continue
            seen += 1
            assert item.message_ids(), f"fact {item.content!r} has no provenance"
            found = await consolidated.kb.store.get_many(AGENT, item.message_ids())
            assert set(found) == set(item.message_ids())
    assert seen


GARDEN = [
    "The garden tomatoes are finally turning red this week.",
    "I planted basil next to the tomatoes in the garden.",
    "Our community garden needs more volunteers on Sunday.",
    "The garden peppers got eaten by a rabbit again.",
    "I water the tomatoes every morning before work.",
    "Basil pesto from the garden is the best thing about summer.",
    "The garden club meets at the library on Thursdays.",
    "We built a raised bed for the tomatoes and herbs.",
    "My neighbor gave me cucumber seedlings for the garden.",
    "The tomatoes need a cage or they fall over.",
    "Snails ate half of the basil in the garden.",
    "I compost kitchen scraps for the garden beds.",
]
NOTE = "Garden notes: the tomatoes and basil rotate beds next year."


async def test_the_best_matching_turn_survives_the_boost() -> None:
    lines = [
        Line("g", "Caroline" if i % 2 else "Melanie", t, S1_START + timedelta(minutes=i))
        for i, t in enumerate(GARDEN)
    ]
    lines.append(Line("g", "Jon", NOTE, S1_START + timedelta(hours=1)))
    uni = await build(lines, consolidate=True)
    try:
        note = await message_by_text(uni, NOTE)
        agent = uni.agent(AGENT)
        for q in ["What are the garden notes about rotating beds?", "garden notes rotate beds next year"]:
            b = await agent.recall(q, use_cache=False)
            assert note.id in {m for i in b.items for m in i.message_ids()}, q
    finally:
        await uni.close()


async def test_the_answer_type_lift_applies_when_phase1_ends_the_cascade(uni: Uniko, agent: Agent) -> None:
    """Issue 19.4: "Where ..." lifts the Fact about a place in Phase 1 too, not only in 2 and 3."""
    store = uni.kb.store
    boston = entity_id(AGENT, "Boston", "location")
    when = S2_START
    bailey = [f for f in await store.find(AGENT, Tier.FACT, limit=100) if isinstance(f, Fact)]
    last = next(f for f in bailey if f.predicate == FACTS[-1][0])
    async with store.unit(AGENT) as unit:
        if await store.get(AGENT, boston) is None:
            unit.put(
                Entity(
                    id=boston,
                    agent=AGENT,
                    name="Boston",
                    entity_type="location",
                    first_seen=when,
                    last_seen=when,
                )
            )
        unit.put_edge(Edge(type=EdgeType.ABOUT, src=last.id, dst=boston))
    question = "Where did Caroline adopt the cat named Bailey?"
    GATE1 = {"gate_budget_factor": 0.0, "phase1_coverage_gate": 0.01}  # Phase 1 ends the cascade
    flat = await ask(agent, question, explain=True, phases=GATE1, fusion={"answer_type_boost": 0.0})
    lifted = await ask(agent, question, explain=True, phases=GATE1)
    assert flat.phase1_only and lifted.phase1_only
    assert lifted.trace is not None and lifted.trace["answer_type"] == {"type": "location", "lifted": 1}
    rank = [i.node_id for i in lifted.items]
    assert rank.index(last.id) <= [i.node_id for i in flat.items].index(last.id)
    assert rank[0] == last.id


async def test_the_pools_text_is_weighed_once_per_node() -> None:
    """``pool_tokens`` (the gates' measure) reads each candidate's text once, and again only when
    the candidate's node was replaced."""
    from uniko_memory.recall import RecallConfig
    from uniko_memory.recall.fusion import Candidate
    from uniko_memory.recall.phases import pool_tokens

    calls: list[str] = []

    class Counted(Observation):
        def search_text(self) -> str | None:
            calls.append(self.id)
            return super().search_text()

    def obs(text: str) -> Counted:
        return Counted(id=make_id("obs", AGENT, text), agent=AGENT, content=text, observed_at=S1_START)

    cand = Candidate(obs("Caroline adopted a cat"))
    cfg = RecallConfig()
    first = pool_tokens([cand], cfg)
    assert pool_tokens([cand], cfg) == first and len(calls) == 1
    cand.node = obs("Caroline adopted a second cat named Bailey")
    assert pool_tokens([cand], cfg) > first and len(calls) == 2
