"""The cycle wired into the facade: explicit and automatic triggers, the cortex cadence, and the
drift flag reaching recall's Phase-1 override."""

from __future__ import annotations

from tests.unit.ingest._support import open_uni, turn, wait_until
from uniko_memory.consolidation import CycleStats
from uniko_memory.model import Entity, Tier

from ._support import AGENT, Writer, day

TURNS = [
    ("Caroline", "I adopted a grey cat named Oliver last week."),
    ("Melanie", "I work at the Riverside library now."),
    ("Caroline", "I started a pottery class at the community center."),
    ("Melanie", "My husband Mark built a treehouse for the kids."),
]


async def test_consolidate_returns_cycle_stats_and_is_idempotent() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 1000}})
    try:
        agent = uni.agent(AGENT)
        for i, (who, text) in enumerate(TURNS):
            await agent.session("s1").observe(turn(who, text, i))
        stats = await agent.consolidate()
        assert (
            isinstance(stats, CycleStats) and stats.observations_processed >= 3 and stats.facts_created >= 3
        )
        again = await agent.consolidate()
        assert again is not None and again.observations_processed == 0
        facts = await uni.kb.store.find(AGENT, Tier.FACT, limit=100)
        assert any("Oliver" in f.search_text() for f in facts)  # type: ignore[operator]
        assert uni.health()["pipeline"]["consolidations_run"] == 2
    finally:
        await uni.close()


async def test_the_pipeline_consolidates_on_its_own_at_the_threshold() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 2}})
    try:
        agent = uni.agent(AGENT)
        for i, (who, text) in enumerate(TURNS):
            await agent.session("s1").observe(turn(who, text, i))
        await agent.flush()

        async def has_facts() -> bool:
            return await uni.kb.store.count(AGENT, Tier.FACT) > 0

        await wait_until(has_facts, timeout=20)
    finally:
        await uni.close()


async def test_the_cortex_sweep_follows_the_cycle_cadence() -> None:
    cfg = {
        "pipeline": {
            "consolidation_threshold": 1000,
            "cortex_cycle_every_n_consolidations": 2,
            "cortex_min_interval_secs": 3600,
        }
    }
    uni = await open_uni(cfg)
    try:
        agent = uni.agent(AGENT)
        await agent.session("s1").observe(turn("Caroline", "I met Melanie and Mark in Boston.", 0))
        await agent.consolidate()
        assert AGENT not in uni.last_sweep  # 1 of 2 cycles
        await agent.consolidate()
        report = uni.last_sweep[AGENT]
        assert report.topics is not None and not report.errors
        assert report.sessions_closed == ["s1"]  # turns from 2023: long inactive, closed and summarised
        first = report
        await agent.consolidate()
        await agent.consolidate()
        assert uni.last_sweep[AGENT] is first  # 4 cycles, but within the minimum interval
    finally:
        await uni.close()


async def test_drift_forces_recall_past_phase1() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 1000}})
    try:
        w = Writer(uni.kb)
        ent = await w.entity("Caroline")
        for i, place in enumerate(["Google", "Northwind", "Acme", "Initech", "Globex", "Hooli"]):
            await w.say("Caroline", "work_at", place, day(i), about=[ent])
            await uni.agent(AGENT).consolidate()
        e = await uni.kb.store.get(AGENT, ent)
        assert isinstance(e, Entity) and e.unstable
        bundle = await uni.agent(AGENT).recall("Where does Caroline work?", explain=True)
        assert bundle.phase1_only is False
        assert bundle.trace is not None and bundle.trace["phases"]["1"]["drift_override"] is True
        assert "2" in bundle.trace["phases"]
        assert bundle.items and bundle.items[0].kind in ("fact", "observation", "message")
        assert any("Hooli" in i.content for i in bundle.items)  # the open Fact is still in the pool
    finally:
        await uni.close()
