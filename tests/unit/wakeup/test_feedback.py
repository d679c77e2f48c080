"""``Agent.feedback`` on both stores: counts stored, cache invalidated, results byte-identical
without feedback (and with every weight at 0), alpha learned and in the cache key, ROI de-boost
and the document trust floor reorder but never hide."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import AGENT, MAIN, build
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Chunk, NodeUsage, Procedure, Tier, UsageDelta
from uniko_memory.recall import RecallCache, RecallConfig
from uniko_memory.recall.feedback import (
    apply_policy,
    bucketed,
    learned_alpha,
    lexical_share,
    policy_factor,
    with_alpha,
)
from uniko_memory.recall.fusion import Candidate

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")
QUESTION = "What did Caroline adopt?"
ZERO: dict[str, Any] = {
    "feedback": {
        "ucb_weight": 0.0,
        "roi_weight": 0.0,
        "document_trust_floor": 1.0,
        "alpha_learning_rate": 0.0,
        "alpha_weight": 0.0,
    }
}


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    u = await build(MAIN, uni=await open_backend(request.param), consolidate=True)
    try:
        yield u
    finally:
        await u.close()


def dump(bundle: Any) -> str:
    return bundle.model_dump_json(exclude={"trace"})


async def test_feedback_is_stored_and_invalidates_the_cache(uni: Uniko) -> None:
    agent = uni.agent("fb-cache")
    await build(MAIN[:6], agent="fb-cache", uni=uni)
    first = await agent.recall(QUESTION, token_budget=300)
    assert uni.recall_cache is not None
    hits = uni.recall_cache.hits
    again = await agent.recall(QUESTION, token_budget=300)
    assert uni.recall_cache.hits == hits + 1 and dump(again) == dump(first)
    n = await agent.feedback(first, True)
    assert n == len(first.items)
    usage = await uni.kb.store.usage("fb-cache", [i.node_id for i in first.items])
    assert all(u.echo == 1.0 for u in usage.values()) and len(usage) == n
    await agent.recall(QUESTION, token_budget=300)
    assert uni.recall_cache.hits == hits + 1  # feedback bumped the generation: a miss
    assert await agent.feedback(["no-such-node"], False) == 0


async def test_bad_feedback_is_refused(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    with pytest.raises(ValidationError):
        await agent.feedback("node-id", True)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        await agent.feedback(["x"], True, weight=0)
    with pytest.raises(ValidationError):
        await agent.feedback(["x"], "yes")  # type: ignore[arg-type]


async def test_no_feedback_and_zero_weights_are_byte_identical(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    off = await agent.recall(QUESTION, use_cache=False, feedback={"enabled": False})
    default = await agent.recall(QUESTION, use_cache=False)
    assert dump(default) == dump(off)
    # Feedback on another agent's memory changes nothing here; with every weight 0 neither does ours.
    other = uni.agent("fb-other")
    await build(MAIN[:4], agent="fb-other", uni=uni)
    await other.feedback(await other.recall(QUESTION), False)
    assert dump(await agent.recall(QUESTION, use_cache=False)) == dump(off)


async def test_alpha_learns_and_is_in_the_cache_key(uni: Uniko) -> None:
    agent = uni.agent("fb-alpha")
    await build(MAIN, agent="fb-alpha", uni=uni)
    store = uni.kb.store
    assert await learned_alpha(store, "fb-alpha") == 0.5
    bundle = await agent.recall("Bailey keyboard counseling", use_cache=False)
    vector_only = [i for i in bundle.items if lexical_share(i.channels, uni.recall_config.feedback) == 0.0]
    assert vector_only, "some items are found by vector search alone"
    for _ in range(10):
        await agent.feedback(vector_only, False)  # the vector arm misled: lean lexical
    alpha = await learned_alpha(store, "fb-alpha")
    assert 0.6 < alpha <= 0.85
    cfg = uni.recall_config
    learned = with_alpha(cfg, alpha)
    assert learned.fusion.channel_weights["bm25"] > cfg.fusion.channel_weights["bm25"]
    assert RecallCache.key("a", "q", learned.result_key()) != RecallCache.key("a", "q", cfg.result_key())
    assert with_alpha(cfg, 0.52) is cfg  # the 0.5 bucket: today's config and key
    # With the feedback stored and alpha learned, every weight at 0 recalls as no feedback does.
    q = "Bailey keyboard counseling"
    off = await agent.recall(q, use_cache=False, feedback={"enabled": False})
    assert dump(await agent.recall(q, use_cache=False, **ZERO)) == dump(off)
    assert bucketed(0.99, cfg.feedback) == 0.8  # clamped to 0.85, then its 0.1 bucket


def cand(node: Any) -> Candidate:
    return Candidate(node=node, fused=1.0)


async def test_roi_and_trust_de_boost_never_hide(uni: Uniko) -> None:
    fb = RecallConfig().feedback.model_copy(update={"document_trust_floor": 0.5})
    proc = Procedure(id="proc_1", agent=AGENT, name="p")
    doc = Chunk(
        id="chk_1",
        agent=AGENT,
        parent_id="art",
        parent_tier=Tier.ARTIFACT,
        chunk_type="artifact",
        index=0,
        text="t",
    )
    bad = NodeUsage(echo=0, fizzle=50)
    assert 0 < policy_factor(cand(proc), bad, 50, fb.model_copy(update={"ucb_weight": 0.0})) < 0.1
    assert policy_factor(cand(doc), None, 0, fb) == 0.5
    lifted = policy_factor(cand(doc), NodeUsage(echo=10), 10, fb.model_copy(update={"ucb_weight": 0.0}))
    assert 0.5 < lifted < 1.0
    # Applied to a ranking, a de-boosted candidate is still there (later), never removed.
    store = uni.kb.store
    facts = await store.find(AGENT, Tier.FACT, limit=5)
    ranked = [Candidate(node=n, fused=1.0 - i / 10) for i, n in enumerate(facts)]
    await store.record_usage(AGENT, {facts[0].id: UsageDelta(fizzle=5)})
    cfg = RecallConfig()
    out = await apply_policy(store, AGENT, cfg, list(ranked))
    assert {c.node.id for c in out} == {c.node.id for c in ranked}
    assert all(c.fused > 0 for c in out)


async def test_exploration_lifts_rarely_rated_items(uni: Uniko) -> None:
    fb = RecallConfig().feedback
    proc = Procedure(id="proc_2", agent=AGENT, name="p")
    never = policy_factor(cand(proc), None, 100, fb)
    often = policy_factor(cand(proc), NodeUsage(echo=10, fizzle=10), 100, fb)
    assert never > often > 1.0
    assert policy_factor(cand(proc), None, 0, fb) == 1.0  # nothing rated: no bonus at all
