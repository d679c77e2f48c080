"""Forgetting: after forget_turn / delete_turn / forget_participant, the forgotten words never come
back through any read path — every recall phase and channel, the store's searches per tier,
graph neighbours, topics, summaries, episodes and the recall cache."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from tests.unit.ingest._support import open_uni
from uniko_memory.errors import NotFound
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Direction, EdgeType, Fact, Message, Tier, message_id
from uniko_memory.recall import ContextBundle

AGENT = "f"
MARK = "zephyrine"
START = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)
TURNS = [  # (session, id, sender, text)
    ("s1", "t1", "Caroline", "I went to the support group yesterday and it was so powerful."),
    ("s1", "t2", "Melanie", "I am painting a sunrise over Lake Tahoe for my art class."),
    (
        "s1",
        "t3",
        "Jon",
        "My new kayak is called Zephyrine and I paddle Zephyrine on Lake Tahoe every Sunday.",
    ),
    ("s1", "t4", "Caroline", "Lake Tahoe is beautiful in May, Melanie."),
    ("s2", "t5", "Melanie", "My husband Mark built a treehouse for the kids at Lake Tahoe."),
    ("s2", "t6", "Jon", "I bought a Zephyrine paddle for my kayak last week."),
    ("s2", "t7", "Caroline", "I adopted a grey cat named Oliver last week."),
]
QUERIES = [
    "What is Jon's kayak called?",
    "Zephyrine kayak paddle Lake Tahoe",
    "What did Jon do on Lake Tahoe in May 2023?",
    "zephyrine",
]
GATES_OFF: dict[str, Any] = {"phase1_coverage_gate": 1.0, "phase2_coverage_gate": 1.0}
ALL_PHASES: dict[str, Any] = {"phases": GATES_OFF}
VARIANTS: list[dict[str, Any]] = [
    {},
    ALL_PHASES,
    {"phases": {**GATES_OFF, "phase1_strategy": "merge"}},
    {**ALL_PHASES, "intent": {"query_variants": ["keywords", "original", "declarative", "type_anchored"]}},
    {**ALL_PHASES, "reference_ts": START + timedelta(days=30)},
]


async def build() -> Uniko:
    cfg = {
        "pipeline": {
            "consolidation_threshold": 1000,
            "cortex_cycle_every_n_consolidations": 1,
            "cortex_min_interval_secs": 0,
        }
    }
    uni = await open_uni(cfg)
    agent = uni.agent(AGENT)
    for i, (session, tid, who, text) in enumerate(TURNS):
        others = sorted({t[2] for t in TURNS} - {who})
        at = START + timedelta(days=0 if session == "s1" else 9, minutes=i)
        await agent.session(session).observe(
            Turn(id=tid, sender=who, content=text, at=at, addressed_to=others[:1])
        )
    await agent.flush()
    for s in ("s1", "s2"):
        await agent.session(s).finalize()
    await agent.consolidate()  # Facts, then the sweep: topics
    model = FakeListChatModel(responses=["It is called Zephyrine."])
    await agent.answer("What is Jon's kayak called?", llm=model, record=True, outcome="success")
    return uni


async def bundles(uni: Uniko, *, cache: bool = False) -> list[ContextBundle]:
    agent = uni.agent(AGENT)
    out = []
    for q in QUERIES:
        for v in VARIANTS:
            out.append(
                await agent.recall(q, limit=40, token_budget=6000, use_cache=cache, explain=not cache, **v)
            )
    return out


def leaked(bundles: Sequence[ContextBundle], gone: set[str]) -> list[str]:
    bad = []
    for b in bundles:
        if MARK in b.render().lower():
            bad.append(b.render())
        for it in b.items:
            if it.node_id in gone or set(it.message_ids()) & gone:
                bad.append(f"{it.kind} {it.node_id} cites a forgotten turn")
    return bad


async def walk_store(uni: Uniko, gone: set[str]) -> list[str]:
    """Every live node of every tier, every search, and the graph around the seeds."""
    store, bad = uni.kb.store, []
    for tier in Tier:
        for node in await store.find(AGENT, tier, limit=100_000):
            if MARK in node.model_dump_json().lower():
                bad.append(f"live {tier.value} {node.id}")
        for hit in await store.text_search(AGENT, tier, MARK, k=50):
            bad.append(f"text_search {tier.value} {hit.id}")
        qv = await uni.kb.embedder.embed_query("kayak called Zephyrine paddle")
        for hit in await store.vector_search(AGENT, tier, qv, k=50):
            if MARK in (hit.node.search_text() or "").lower() or hit.id in gone:
                bad.append(f"vector_search {tier.value} {hit.id}")
    seeds = [n.id for n in await store.find(AGENT, Tier.ENTITY, limit=1000)]
    seeds += [n.id for n in await store.find(AGENT, Tier.PARTICIPANT, limit=1000)]
    seeds += [n.id for n in await store.find(AGENT, Tier.MESSAGE, limit=1000)]
    frontier = seeds
    for _ in range(2):  # two hops of the graph, as the graph and neighbour channels walk it
        edges = await store.neighbors(AGENT, frontier, None, Direction.BOTH)
        ids = sorted({x for e in edges for x in (e.src, e.dst)})
        for n in (await store.get_many(AGENT, ids)).values():
            if not n.redacted and MARK in n.model_dump_json().lower():
                bad.append(f"graph {n.id}")
        frontier = ids
    return bad


CASES = ["forget_turn", "delete_turn", "forget_participant", "forget_participant_hard"]


@pytest.mark.parametrize("how", CASES)
async def test_forgotten_content_never_resurfaces(how: str) -> None:
    uni = await build()
    try:
        agent = uni.agent(AGENT)
        before = await bundles(uni, cache=True)  # also warms the recall cache
        assert any(MARK in b.render().lower() for b in before)  # the words are findable at first
        facts = await uni.kb.store.find(AGENT, Tier.FACT, limit=1000)
        assert any(MARK in f.model_dump_json().lower() for f in facts)
        gone = {message_id(AGENT, "t3")}
        if how == "forget_turn":
            await agent.forget_turn("s1", "t3")
            await agent.forget_turn("s2", "t6")
        elif how == "delete_turn":
            await agent.delete_turn("s1", "t3")
            await agent.delete_turn("s2", "t6")
        else:
            report = await agent.forget_participant("Jon", hard=how.endswith("hard"))
            assert report.messages == 2 and sorted(report.sessions_rebuilt) == sorted(report.sessions_rebuilt)
        gone.add(message_id(AGENT, "t6"))
        assert not leaked(await bundles(uni, cache=True), gone)  # the cache never serves the old bundle
        assert not leaked(await bundles(uni), gone)
        assert not await walk_store(uni, gone)
        # Consolidating and sweeping again derives nothing from the forgotten turns.
        await agent.consolidate()
        assert not leaked(await bundles(uni), gone)
        assert not await walk_store(uni, gone)
        # The rest of the memory is intact.
        rest = await agent.recall("What did Caroline adopt?", **ALL_PHASES)
        assert any("Oliver" in i.content for i in rest.items)
    finally:
        await uni.close()


async def test_delete_turn_closes_facts_that_lost_their_support_and_relinks_next() -> None:
    uni = await build()
    try:
        store = uni.kb.store
        t3 = message_id(AGENT, "t3")
        support = await store.neighbors(AGENT, [t3], [EdgeType.OBSERVED_IN], Direction.IN)
        facts_in = await store.neighbors(
            AGENT, [e.src for e in support], [EdgeType.SUPPORTED_BY], Direction.IN
        )
        fact_ids = sorted({e.src for e in facts_in})
        assert fact_ids
        with pytest.raises(NotFound):
            await uni.agent(AGENT).delete_turn("s2", "t3")  # t3 is not in s2
        report = await uni.agent(AGENT).delete_turn("s1", "t3")
        assert report.messages == 1 and report.facts_closed >= 1 and report.sessions_rebuilt
        assert await store.get(AGENT, t3) is None
        for f in (await store.get_many(AGENT, fact_ids)).values():
            assert (
                isinstance(f, Fact) and f.valid_to is not None and f.invalidation_reason == "support deleted"
            )
            assert f.redacted  # its words came from the deleted turn
        nxt = await store.neighbors(AGENT, [message_id(AGENT, "t2")], [EdgeType.NEXT])
        assert [e.dst for e in nxt] == [message_id(AGENT, "t4")]
        msgs = await store.find(AGENT, Tier.MESSAGE, limit=100)
        assert all(isinstance(m, Message) and m.id != t3 for m in msgs)
    finally:
        await uni.close()


def test_sync_twins_forget_too() -> None:
    from tests.unit.ingest._support import FakeEmbedder
    from uniko_memory.config import UnikoConfig

    uni = Uniko.in_memory_sync(
        UnikoConfig.build({"pipeline": {"consolidation_threshold": 1000}}), embedder=FakeEmbedder()
    )
    try:
        agent = uni.agent(AGENT)
        agent.session("s1").observe_sync(
            Turn(id="x1", sender="Jon", content="My kayak is called Zephyrine.", at=START)
        )
        agent.flush_sync()
        report = agent.forget_turn_sync("s1", "x1")
        assert report.messages == 1
        assert MARK not in agent.recall_sync("kayak Zephyrine", **ALL_PHASES).render().lower()
    finally:
        uni.close_sync()


@pytest.mark.parametrize("crash_at", ["tombstone", "journal"])
async def test_a_crash_between_finishing_writes_leaves_a_retry_that_completes(
    crash_at: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finishing a participant's hard forget writes two meta records (tombstones, then the journal
    without the job). A crash at either must leave a retry that completes: never "no participant"
    (the person gone, with neither a pending job nor a tombstone to say why)."""
    from uniko_memory.consolidation.forget import journal

    uni = await build()
    try:
        agent, store = uni.agent(AGENT), uni.kb.store
        real_set_meta = store.set_meta
        failed: list[str] = []

        async def set_meta(key: str, value: str) -> None:
            ending = key == journal.journal_key(AGENT) and '"participant"' not in value
            hit = key == journal.tombstone_key(AGENT) if crash_at == "tombstone" else ending
            if hit and not failed:
                failed.append(key)
                raise SystemExit("crash")  # as a kill would: nothing after it runs
            await real_set_meta(key, value)

        monkeypatch.setattr(store, "set_meta", set_meta)
        with pytest.raises(SystemExit):
            await agent.forget_participant("Jon", hard=True)
        assert failed
        monkeypatch.setattr(store, "set_meta", real_set_meta)
        report = await agent.forget_participant("Jon", hard=True)  # the retry: no NotFound
        assert report.nothing_to_do or report.messages
        assert await journal.pending_jobs(store, AGENT) == []
        again = await agent.forget_participant("Jon", hard=True)
        assert again.nothing_to_do
    finally:
        await uni.close()
