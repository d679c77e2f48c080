"""Redacted or deleted content never comes back from any channel (message, observation, chunk, fact,
graph, neighbours).

Two ways to forget: the facade's ``forget_turn`` / ``delete_turn`` (which cascade to Observations,
Chunks and Facts and rebuild the session), and the raw ``store.redact`` / ``store.delete`` of the
Message alone (what recall must still not leak, or at least not cite, on its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from uniko_memory.facade import Uniko
from uniko_memory.model import Chunk, Message, Tier
from uniko_memory.recall import ContextBundle

from ._corpus import AGENT, ALL_PHASES, S1_START, Line, build, message_by_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "My passport number is QX7781234 and I keep it in the blue drawer."
MARKERS = ("qx7781234", "passport", "blue drawer")
QUERIES = ["passport number QX7781234 blue drawer", "Where does Caroline keep her passport?", "QX7781234"]
TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That is wonderful Caroline! How did it feel?"),
    ("Caroline", SECRET),
    ("Melanie", "I am painting a sunrise over Lake Tahoe for my art class."),
    ("Caroline", "Grandma's pierogi recipe uses farmer cheese and dill."),
    ("Melanie", "Nice, the pottery workshop is on Saturday."),
]


def corpus() -> list[Line]:
    return [Line("s1", who, text, S1_START + timedelta(minutes=i)) for i, (who, text) in enumerate(TURNS)]


@pytest_asyncio.fixture(loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(corpus(), consolidate=True)
    try:
        yield u
    finally:
        await u.close()


async def forget(uni: Uniko, how: str, message_id: str) -> None:
    """Raw store-level forgetting of the Message node alone."""
    store = uni.kb.store
    n = await (store.redact if how == "redact" else store.delete)(AGENT, [message_id])
    assert n == 1


async def bundles(uni: Uniko, **options: Any) -> list[ContextBundle]:
    agent = uni.agent(AGENT)
    out = []
    for q in QUERIES:
        for extra in ({}, ALL_PHASES):
            out.append(
                await agent.recall(q, limit=30, token_budget=4000, use_cache=False, **extra, **options)
            )
    return out


def leaks(bundle: ContextBundle, message_id: str) -> list[str]:
    """Items that are the forgotten turn, cite it, or quote it."""
    bad = []
    for item in bundle.items:
        text = item.content.lower()
        if item.node_id == message_id or message_id in item.message_ids() or any(m in text for m in MARKERS):
            bad.append(f"{item.kind} {item.node_id}: {item.content[:80]!r} sources={item.message_ids()}")
    return bad


async def test_the_secret_is_found_before_forgetting(uni: Uniko) -> None:
    msg = await message_by_text(uni, SECRET)
    for b in await bundles(uni):
        assert msg.id in {m for i in b.items for m in i.message_ids()}


async def test_consolidation_made_a_fact_of_the_secret(uni: Uniko) -> None:
    facts = await uni.kb.store.find(AGENT, Tier.FACT, limit=1000)
    assert any("qx7781234" in (f.search_text() or "").lower() for f in facts)


@pytest.mark.parametrize("api", ["forget_turn", "delete_turn"])
async def test_facade_forget_leaves_nothing_in_any_channel(uni: Uniko, api: str) -> None:
    msg = await message_by_text(uni, SECRET)
    agent = uni.agent(AGENT)
    report = await getattr(agent, api)("s1", msg.external_id)
    assert report.messages == 1 and report.observations >= 1
    assert report.sessions_rebuilt == [msg.session_id]  # no manual re-finalize needed
    store = uni.kb.store
    for b in await bundles(uni):
        assert leaks(b, msg.id) == []
        for item in b.items:
            found = await store.get_many(AGENT, item.message_ids())
            assert set(found) == set(item.message_ids()), f"{item.kind} cites a message that is gone"
            assert all(not m.redacted for m in found.values())
    b = await agent.recall("Caroline passport number", explain=True, use_cache=False, **ALL_PHASES)
    assert b.trace is not None
    for name, ranked in b.trace["channels"].items():
        assert msg.id not in {e["id"] for e in ranked}, name


@pytest.mark.parametrize("api", ["forget_turn", "delete_turn"])
async def test_facade_forget_is_not_hidden_by_the_cache(uni: Uniko, api: str) -> None:
    msg = await message_by_text(uni, SECRET)
    agent = uni.agent(AGENT)
    before = await agent.recall(QUERIES[0], limit=30)
    assert msg.id in {m for i in before.items for m in i.message_ids()}
    await getattr(agent, api)("s1", msg.external_id)
    after = await agent.recall(QUERIES[0], limit=30)
    assert leaks(after, msg.id) == []


@pytest.mark.parametrize("how", ["redact", "delete"])
async def test_the_forgotten_message_itself_never_comes_back(uni: Uniko, how: str) -> None:
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    for b in await bundles(uni):
        assert all(i.node_id != msg.id for i in b.items)
        assert all(i.kind != "message" or SECRET not in i.content for i in b.items)


@pytest.mark.parametrize("how", ["redact", "delete"])
async def test_the_forgotten_message_is_not_a_neighbour_or_graph_hit(uni: Uniko, how: str) -> None:
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    agent = uni.agent(AGENT)
    # its neighbours match strongly: the turn between them must not be pulled in beside them
    b = await agent.recall(
        "Caroline how did it feel? painting a sunrise over Lake Tahoe",
        limit=30,
        use_cache=False,
        explain=True,
    )
    assert b.trace is not None
    for ranked in b.trace["channels"].values():
        assert msg.id not in {e["id"] for e in ranked}


async def chunk_leaks(uni: Uniko, bundle: ContextBundle, message_id: str, chunk_type: str) -> list[str]:
    kinds = {
        n.id: n.chunk_type
        for n in (await uni.kb.store.get_many(AGENT, [i.node_id for i in bundle.items])).values()
        if isinstance(n, Chunk)
    }
    return [x for x in leaks(bundle, message_id) if kinds.get(x.split()[1].rstrip(":")) == chunk_type]


@pytest.mark.parametrize("how", ["redact", "delete"])
@pytest.mark.parametrize("refinalize", [False, True])
async def test_observations_of_a_forgotten_message_never_come_back(
    uni: Uniko, how: str, refinalize: bool
) -> None:
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    if refinalize:
        await uni.agent(AGENT).session("s1").finalize()
    for b in await bundles(uni):
        assert not [x for x in leaks(b, msg.id) if x.startswith("observation")]
        assert not await chunk_leaks(uni, b, msg.id, "observation")


@pytest.mark.parametrize("how", ["redact", "delete"])
async def test_transcript_chunks_quoting_a_forgotten_turn_never_come_back(uni: Uniko, how: str) -> None:
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    for b in await bundles(uni):
        assert not await chunk_leaks(uni, b, msg.id, "session")


@pytest.mark.parametrize("how", ["redact", "delete"])
async def test_refinalize_rebuilds_transcript_chunks_without_the_forgotten_turn(uni: Uniko, how: str) -> None:
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    report = await uni.agent(AGENT).session("s1").finalize()
    assert report.rebuilt
    chunks = [c for c in await uni.kb.store.find(AGENT, Tier.CHUNK, limit=100) if isinstance(c, Chunk)]
    transcript = [c for c in chunks if c.chunk_type == "session"]
    assert transcript
    for c in transcript:
        assert msg.id not in c.covered_ids and "QX7781234" not in c.text
    for b in await bundles(uni):
        assert not await chunk_leaks(uni, b, msg.id, "session")


@pytest.mark.parametrize("how", ["redact", "delete"])
async def test_every_cited_message_still_exists_after_forgetting(uni: Uniko, how: str) -> None:
    """Whatever else comes back, a bundle never cites a deleted or redacted Message as a source
    through a Message item (the check for Observations/Chunks is in the xfail tests above)."""
    msg = await message_by_text(uni, SECRET)
    await forget(uni, how, msg.id)
    await uni.agent(AGENT).session("s1").finalize()
    store = uni.kb.store
    for b in await bundles(uni):
        for item in b.items:
            if item.kind != "message":
                continue
            found = await store.get_many(AGENT, item.message_ids())
            assert all(isinstance(m, Message) and not m.redacted for m in found.values())
            assert set(found) == set(item.message_ids())
