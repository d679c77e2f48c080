"""Item scores a caller can threshold on (issue 19.6): absolute relevance in [0, 1], comparable
across queries; the bundle-relative ranking score kept beside it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from uniko_memory import Uniko

from ._corpus import AGENT, MAIN, build

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN)
    try:
        yield u
    finally:
        await u.close()


async def test_scores_are_absolute_and_comparable_across_queries(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    on_topic = await agent.recall("Where did Caroline adopt her cat?", use_cache=False)
    off_topic = await agent.recall("What is the boiling point of tungsten in kelvin?", use_cache=False)
    for b in (on_topic, off_topic):
        assert b.items
        assert all(0.0 <= i.score <= 1.0 for i in b.items)
        assert max(i.relative_score for i in b.items) == 1.0  # the ranking's own scale, kept
        assert all(0.0 < i.relative_score <= 1.0 for i in b.items)
        assert all(i.fused > 0.0 for i in b.items)
    # the same scale across queries: an unrelated question's best item scores below a related one's
    assert max(i.score for i in off_topic.items) < max(i.score for i in on_topic.items)
    # and not every top item is 1.0 any more
    assert max(i.score for i in on_topic.items) < 1.0


async def test_a_question_for_a_place_lifts_the_items_that_name_one(uni: Uniko) -> None:
    """Issue 19.4: "Where ..." asks for a location; items carrying a location entity are lifted."""
    agent = uni.agent(AGENT)
    q = "Where is Melanie painting a sunrise?"
    plain = await agent.recall(q, explain=True, use_cache=False, fusion={"answer_type_boost": 0.0})
    typed = await agent.recall(q, explain=True, use_cache=False)
    assert plain.trace is not None and typed.trace is not None
    assert "answer_type" not in plain.trace
    assert typed.trace["answer_type"]["type"] == "location"
    assert typed.trace["answer_type"]["lifted"] >= 1

    def rank_of_tahoe(b: object) -> int:
        items = b.items  # type: ignore[attr-defined]
        return next(i for i, it in enumerate(items) if "Lake Tahoe" in it.content)

    assert rank_of_tahoe(typed) <= rank_of_tahoe(plain)
