"""The recall cache: keyed on every result-changing field, invalidated by the agent's writes only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer
from uniko_memory.recall import ContextBundle

from ._corpus import AGENT, MAIN, build

pytestmark = pytest.mark.asyncio(loop_scope="module")

Q = "What is the name of Caroline's cat?"
LATER = datetime(2023, 9, 1, 12, 0, tzinfo=UTC)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def memory() -> AsyncIterator[Uniko]:
    u = await build(MAIN[:10])
    u = await build(MAIN[10:14], agent="b", uni=u)
    try:
        yield u
    finally:
        await u.close()


@pytest_asyncio.fixture(loop_scope="module")
async def uni(memory: Uniko) -> Uniko:
    """The shared memory with no background work pending (earlier tests write to it)."""
    await memory.agent(AGENT).flush(timeout=30)
    await memory.agent("b").flush(timeout=30)
    return memory


def counts(uni: Uniko) -> tuple[int, int]:
    return uni.recall_cache.hits, uni.recall_cache.misses


def same(a: ContextBundle, b: ContextBundle) -> bool:
    return a.model_dump() == b.model_dump()


async def test_second_identical_recall_is_a_hit_and_equal(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    first = await agent.recall(Q)
    h, m = counts(uni)
    second = await agent.recall(Q)
    assert counts(uni) == (h + 1, m)
    assert same(first, second)


async def test_cached_bundle_is_a_copy(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    first = await agent.recall(Q)
    first.items.clear()
    again = await agent.recall(Q)
    assert again.items, "mutating a returned bundle must not poison the cache"
    again.items[0].content = "tampered"
    assert (await agent.recall(Q)).items[0].content != "tampered"


async def test_a_write_to_the_agent_invalidates(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    await agent.recall(Q)
    await agent.recall(Q)
    h, m = counts(uni)
    await agent.session("s9").observe(
        Turn(sender="Caroline", content="Oliver has a new red collar.", at=LATER)
    )
    await agent.recall(Q)
    assert counts(uni) == (h, m + 1)
    await agent.flush(timeout=30)  # background post-ingest work writes too
    await agent.recall(Q)
    h, m = counts(uni)
    await agent.recall(Q)
    assert counts(uni) == (h + 1, m)  # a hit again once nothing is being written


async def test_new_evidence_is_visible_after_a_write(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    q = "Who owns the purple kayak named Wobbles?"
    before = await agent.recall(q)
    assert not any("Wobbles" in i.content for i in before.items)
    await agent.session("s8").observe(
        Turn(sender="Melanie", content="My purple kayak is named Wobbles.", at=LATER)
    )
    after = await agent.recall(q)
    assert any("Wobbles" in i.content for i in after.items)


async def test_a_write_for_another_agent_does_not_invalidate(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    await agent.recall(Q)
    h, m = counts(uni)
    other = uni.agent("b")
    await other.session("x").observe(Turn(sender="Jon", content="Salsa class moved to Friday.", at=LATER))
    await other.flush(timeout=30)
    await agent.recall(Q)
    assert counts(uni) == (h + 1, m)


async def test_redaction_invalidates(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    first = await agent.recall(Q)
    h, m = counts(uni)
    await uni.kb.store.redact(AGENT, [first.items[0].node_id])
    second = await agent.recall(Q)
    assert counts(uni) == (h, m + 1)
    assert first.items[0].node_id not in {i.node_id for i in second.items}


@pytest.mark.parametrize(
    "options",
    [
        {"limit": 3},
        {"token_budget": 100},
        {"viewer": Viewer(participant_id="p1")},
        {"sessions": ["s1"]},
        {"participants": ["Caroline"]},
        {"since": datetime(2023, 5, 1, tzinfo=UTC)},
        {"reference_ts": datetime(2024, 1, 1, tzinfo=UTC)},
        {"phases": {"phase1_strategy": "off"}},
    ],
)
async def test_result_changing_fields_are_part_of_the_key(uni: Uniko, options: dict[str, object]) -> None:
    agent = uni.agent(AGENT)
    await agent.recall(Q)
    h, m = counts(uni)
    await agent.recall(Q, **options)
    assert counts(uni) == (h, m + 1), options
    await agent.recall(Q, **options)
    assert counts(uni) == (h + 1, m + 1), options


async def test_other_queries_and_agents_are_other_keys(uni: Uniko) -> None:
    await uni.agent(AGENT).recall(Q)
    h, m = counts(uni)
    await uni.agent(AGENT).recall(Q + " ")
    await uni.agent("b").recall(Q)
    assert counts(uni) == (h, m + 2)


async def test_explain_and_use_cache_false_bypass_the_cache(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    await agent.recall(Q)
    before = counts(uni)
    traced = await agent.recall(Q, explain=True)
    await agent.recall(Q, use_cache=False)
    assert counts(uni) == before
    assert traced.trace is not None


async def test_invalid_query_never_touches_the_cache(uni: Uniko) -> None:
    from uniko_memory.errors import ValidationError

    before = counts(uni)
    with pytest.raises(ValidationError):
        await uni.agent(AGENT).recall("   ")
    assert counts(uni) == before
