"""``Agent.wake_up`` end to end on both stores: L0 + L1 within the budget, and recall's admission
rules (forgotten, redacted, invalidated and out-of-scope memories never come back)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import AGENT, MAIN, S1_START, Line, build, message_by_text
from uniko_memory.facade import Uniko
from uniko_memory.model import Fact, Tier, Viewer, private
from uniko_memory.tokens import count_tokens

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "My passport number is QX7781234 and I keep it in the blue drawer."
PRIVATE = "I keep the spare house key under the zebra statue."


def corpus() -> list[Line]:
    extra = [
        Line("s1", "Caroline", SECRET, S1_START + timedelta(minutes=30)),
        Line("s1", "Melanie", PRIVATE, S1_START + timedelta(minutes=31), visibility=private("p-mel")),
    ]
    return [*MAIN, *extra]


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    u = await build(corpus(), uni=await open_backend(request.param), consolidate=True)
    try:
        yield u
    finally:
        await u.close()


async def test_l0_and_l1_within_the_default_budget(uni: Uniko) -> None:
    bundle = await uni.agent(AGENT).wake_up()
    text = bundle.render()
    assert bundle.token_budget == 600
    assert count_tokens(text) == bundle.total_tokens <= 600
    assert count_tokens(bundle.render(header=False)) <= 600
    first = bundle.items[0]
    assert first.kind == "summary" and "Caroline" in first.content and "3 sessions" in first.content
    assert {"fact", "observation"} <= {i.kind for i in bundle.items}
    assert 10 <= len(bundle.items) <= 21


async def test_a_small_budget_is_honoured_exactly(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    for budget in (75, 120, 250):
        b = await agent.wake_up(budget)
        assert count_tokens(b.render()) <= budget and count_tokens(b.render(header=False)) <= budget


async def test_viewer_never_sees_a_private_memory(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    other = await agent.wake_up(5000, viewer=Viewer(participant_id="p-other"))
    assert "zebra" not in other.render().lower()
    owner = await agent.wake_up(5000, viewer=Viewer(participant_id="p-mel"))
    unrestricted = await agent.wake_up(5000)
    assert len(other.items) <= len(owner.items) <= len(unrestricted.items)


async def test_sessions_scope_the_wake_up(uni: Uniko) -> None:
    b = await uni.agent(AGENT).wake_up(sessions=["s3"])
    assert "1 session" in b.items[0].content
    assert all(i.kind in ("summary", "observation") for i in b.items)  # Facts carry no session
    assert "salsa" in b.render().lower() and "Tahoe" not in b.render()


async def test_sync_twin(uni: Uniko) -> None:
    import asyncio

    b = await asyncio.to_thread(uni.agent(AGENT).wake_up_sync, 300)
    assert count_tokens(b.render()) <= 300


async def test_forgotten_and_invalidated_memories_never_come_back(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    before = (await agent.wake_up(5000)).render().lower()
    assert "qx7781234" in before
    msg = await message_by_text(uni, SECRET)
    await agent.forget_turn("s1", msg.external_id)
    after = await agent.wake_up(5000)
    assert "qx7781234" not in after.render().lower() and "passport" not in after.render().lower()
    # An invalidated Fact (valid_to set) is not a live memory any more.
    store = uni.kb.store
    facts = [
        f
        for f in await store.find(AGENT, Tier.FACT, limit=1000)
        if isinstance(f, Fact) and f.valid_to is None
    ]
    shown = {i.node_id for i in after.items}
    target = next(f for f in facts if f.id in shown)
    async with store.unit(AGENT) as u:
        u.put(target.model_copy(update={"valid_to": target.valid_from + timedelta(days=1)}))
    again = await agent.wake_up(5000)
    assert target.id not in {i.node_id for i in again.items}
