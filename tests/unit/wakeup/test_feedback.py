"""``Agent.feedback`` on both stores: counts stored, cache invalidated, results byte-identical
without feedback (and with every weight at 0), alpha learned (from the difference between useful
and not-useful items, never from fizzles alone) and in the cache key, direct reinforcement lifts
what was rated useful, and the fizzle de-boost, ROI de-boost and document trust floor reorder but
never hide."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import AGENT, MAIN, build
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Chunk, NodeUsage, Procedure, Tier, UsageDelta
from uniko_memory.providers.token_counter import default_token_counter
from uniko_memory.recall import RecallCache, RecallConfig
from uniko_memory.recall.feedback import (
    FeedbackState,
    apply_policy,
    base_rate,
    bucketed,
    cost_share,
    feedback_state,
    learned_alpha,
    lexical_share,
    node_tokens,
    policy_factor,
    reinforcement,
    tier_rate,
    ucb,
    with_alpha,
)
from uniko_memory.recall.fusion import Candidate

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")
QUESTION = "What did Caroline adopt?"
ZERO: dict[str, Any] = {
    "feedback": {
        "echo_weight": 0.0,
        "fizzle_weight": 0.0,
        "ucb_weight": 0.0,
        "roi_weight": 0.0,
        "document_trust_floor": 1.0,
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
    fb = uni.recall_config.feedback
    assert learned_alpha(await feedback_state(store, "fb-alpha"), fb) == 0.5
    bundle = await agent.recall("Bailey keyboard counseling", use_cache=False)
    vector_only = [i for i in bundle.items if lexical_share(i.channels, fb) == 0.0]
    lexical = [i for i in bundle.items if (lexical_share(i.channels, fb) or 0.0) > 0.0]
    assert vector_only and lexical, "some items are found by vector search alone, some by bm25 too"
    for _ in range(10):
        await agent.feedback(vector_only, False)
    # Fizzles alone say what recall returns, not what helps: alpha does not move on them.
    state = await feedback_state(store, "fb-alpha")
    assert state.fizzle == 10 * len(vector_only) and learned_alpha(state, fb) == 0.5
    for _ in range(30):
        await agent.feedback(lexical, True)  # the lexical arm found what helped: lean lexical
    state = await feedback_state(store, "fb-alpha")
    alpha = learned_alpha(state, fb)
    assert bucketed(alpha, fb) >= 0.6 and alpha <= 0.85
    assert base_rate(state) == pytest.approx(3 * len(lexical) / (3 * len(lexical) + len(vector_only)))
    assert with_alpha(uni.recall_config, alpha) is uni.recall_config  # alpha_weight 0: off by default
    cfg = uni.recall_config.with_options(feedback={"alpha_weight": 1.0})
    learned = with_alpha(cfg, alpha)
    assert learned.fusion.channel_weights["bm25"] > cfg.fusion.channel_weights["bm25"]
    assert RecallCache.key("a", "q", learned.result_key()) != RecallCache.key("a", "q", cfg.result_key())
    assert with_alpha(cfg, 0.52) is cfg  # the 0.5 bucket: today's config and key
    # With the feedback stored and alpha learned, every weight at 0 recalls as no feedback does.
    q = "Bailey keyboard counseling"
    off = await agent.recall(q, use_cache=False, feedback={"enabled": False})
    assert dump(await agent.recall(q, use_cache=False, **ZERO)) == dump(off)
    assert bucketed(0.99, cfg.feedback) == 0.8  # clamped to 0.85, then its 0.1 bucket


async def test_alpha_is_arm_precision_and_ignores_the_echo_fizzle_mix() -> None:
    fb = RecallConfig().feedback
    # Both arms as precise: 0.5 however lopsided the echo / fizzle mix.
    same = FeedbackState(echo=5, fizzle=500, lex_useful=5, lex_rest=500, vec_useful=5, vec_rest=500)
    assert learned_alpha(same, fb) == 0.5
    few = FeedbackState(echo=2, fizzle=2, lex_useful=2, vec_rest=2)  # shrunk by the prior
    many = FeedbackState(echo=200, fizzle=200, lex_useful=200, vec_rest=200)
    assert 0.5 < learned_alpha(few, fb) < 0.6 < learned_alpha(many, fb) == fb.alpha_max
    low = FeedbackState(echo=200, fizzle=200, vec_useful=200, lex_rest=200)
    assert learned_alpha(low, fb) == fb.alpha_min
    assert learned_alpha(FeedbackState(fizzle=50, vec_rest=50), fb) == 0.5  # fizzles alone: no signal
    assert learned_alpha(FeedbackState(echo=3, lex_useful=3), fb) == 0.5  # echoes alone: none either


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


async def test_reinforcement_lifts_echoes_and_mildly_de_boosts_fizzles() -> None:
    default = RecallConfig().feedback
    fb = default.model_copy(update={"echo_weight": 1.0, "fizzle_weight": 1.0, "echo_lift_max": 0.0})
    rate = 0.04
    assert reinforcement(None, rate, fb) == 1.0
    assert reinforcement(NodeUsage(echo=1), None, fb) == 1.0  # nothing rated in the agent
    once = reinforcement(NodeUsage(echo=1), rate, fb)
    assert once > 1.5
    assert reinforcement(NodeUsage(echo=1, fizzle=24), rate, fb) == pytest.approx(1.0)  # as useful as average
    one_fizzle = reinforcement(NodeUsage(fizzle=1), rate, fb)
    assert 0.9 < one_fizzle < 1.0  # a fizzle is the norm: a mild de-boost
    many = reinforcement(NodeUsage(fizzle=1000), rate, fb)
    assert 0 < many < one_fizzle  # de-boost, never hide
    off = fb.model_copy(update={"echo_weight": 0.0, "fizzle_weight": 0.0})
    assert reinforcement(NodeUsage(echo=1), rate, off) == 1.0
    assert reinforcement(NodeUsage(fizzle=9), rate, off) == 1.0
    # The defaults: the square root of the lift (no cap, no cost scaling), no fizzle de-boost.
    assert default.echo_lift_max == 0.0 and default.echo_cost_tokens == 0.0
    assert reinforcement(NodeUsage(echo=1), rate, default) == pytest.approx(once**0.5)
    assert reinforcement(NodeUsage(fizzle=50), rate, default) == 1.0
    half = fb.model_copy(update={"fizzle_weight": 0.5})
    assert reinforcement(NodeUsage(fizzle=50), rate, half) == pytest.approx(
        reinforcement(NodeUsage(fizzle=50), rate, fb) ** 0.5
    )
    # An echo transfers with relevance: a barely relevant candidate gets a smaller lift.
    rel = fb.model_copy(update={"echo_relevance": 1.0})
    full = reinforcement(NodeUsage(echo=1), rate, rel, relevance=1.0)
    assert full == pytest.approx(once)
    assert 1.0 < reinforcement(NodeUsage(echo=1), rate, rel, relevance=0.3) < full
    assert reinforcement(NodeUsage(echo=1), rate, rel, relevance=0.0) == 1.0
    assert reinforcement(NodeUsage(fizzle=50), rate, rel, relevance=0.1) == reinforcement(
        NodeUsage(fizzle=50), rate, fb
    )  # a de-boost does not depend on relevance
    # The weights are in the cache key.
    cfg = RecallConfig()
    assert cfg.result_key() != cfg.with_options(feedback={"echo_relevance": 2.0}).result_key()
    assert cfg.result_key() != cfg.with_options(feedback={"echo_weight": 1.0}).result_key()
    assert cfg.result_key() != cfg.with_options(feedback={"reinforce_prior": 2.0}).result_key()


async def test_a_node_is_compared_with_its_own_tier() -> None:
    fb = RecallConfig().feedback
    # Chunks (many turns each) echo ten times as often as messages: a chunk's lift is measured
    # against chunks, so one echo lifts a message more than it lifts a chunk.
    state = FeedbackState(
        echo=110,
        fizzle=1890,
        echo_by_tier={"chunk": 100, "message": 10},
        fizzle_by_tier={"chunk": 400, "message": 1490},
    )
    rate = base_rate(state)
    chunk, message = tier_rate(state, "chunk", fb), tier_rate(state, "message", fb)
    assert rate is not None and chunk is not None and message is not None
    assert chunk == pytest.approx(0.2, abs=0.01) and message == pytest.approx(10 / 1500, abs=0.002)
    assert tier_rate(state, "fact", fb) == pytest.approx(rate)  # a tier never rated: the agent's
    once = NodeUsage(echo=1, fizzle=1)
    assert reinforcement(once, message, fb) > reinforcement(once, chunk, fb) > 1.0
    assert tier_rate(FeedbackState(), "chunk", fb) is None


async def test_an_item_rated_useful_rises(uni: Uniko) -> None:
    agent = uni.agent("fb-lift")
    await build(MAIN, agent="fb-lift", uni=uni)
    q = "Bailey keyboard counseling"
    before = await agent.recall(q, use_cache=False)
    assert len(before.items) >= 3
    low = before.items[-1]
    await agent.feedback([low], True)
    await agent.feedback(before.items[:-1], False)
    for options in ({}, {"feedback": {"fizzle_weight": 1.0}}):
        after = (await agent.recall(q, use_cache=False, **options)).items
        ids = [i.node_id for i in after]
        assert low.node_id in ids
        # it rises against the items rated not useful (a chunk that now comes earlier may replace
        # Messages it quotes, so the bundle's length is no yardstick)
        rated_down = {i.node_id for i in before.items[:-1]}
        assert any(ids.index(low.node_id) < ids.index(i) for i in rated_down if i in ids) or not (
            rated_down & set(ids)
        )
    # The fizzle de-boost reorders the ranking, it never removes a candidate.
    store = uni.kb.store
    ranked = [
        Candidate(node=n, fused=1.0)
        for n in (await store.get_many("fb-lift", [i.node_id for i in before.items])).values()
    ]
    cfg = RecallConfig().with_options(feedback={"fizzle_weight": 1.0})
    out = await apply_policy(store, "fb-lift", cfg, list(ranked))
    assert {c.node.id for c in out} == {c.node.id for c in ranked} and all(c.fused > 0 for c in out)
    assert out[0].node.id == low.node_id
    off = await agent.recall(q, use_cache=False, **ZERO)
    assert dump(off) == dump(await agent.recall(q, use_cache=False, feedback={"enabled": False}))


async def test_exploration_lifts_rarely_rated_items(uni: Uniko) -> None:
    fb = RecallConfig().feedback
    assert fb.ucb_weight == 0.0  # off by default
    fb = fb.model_copy(update={"ucb_weight": 0.1})
    proc = Procedure(id="proc_2", agent=AGENT, name="p")
    never = policy_factor(cand(proc), None, 100, fb)
    often = policy_factor(cand(proc), NodeUsage(echo=10, fizzle=10), 100, fb)
    assert never > often > 1.0
    assert policy_factor(cand(proc), None, 0, fb) == 1.0  # nothing rated: no bonus at all
    # An item rated useful never gets less exploration credit than one never rated.
    useful = NodeUsage(echo=1, fizzle=1)
    assert ucb(useful, 100, fb, rate=0.04) == ucb(None, 100, fb, rate=0.04)
    assert ucb(NodeUsage(fizzle=2), 100, fb, rate=0.04) < ucb(None, 100, fb, rate=0.04)
    plain = fb.model_copy(update={"echo_weight": 0.0, "fizzle_weight": 0.0})
    assert policy_factor(cand(proc), useful, 100, plain, rate=0.04) >= policy_factor(
        cand(proc), None, 100, plain, rate=0.04
    )


async def test_the_cost_aware_lift_shrinks_with_an_items_length() -> None:
    fb = RecallConfig().feedback.model_copy(
        update={"echo_weight": 1.0, "echo_relevance": 0.0, "echo_lift_max": 0.0}
    )
    assert cost_share(500, fb.model_copy(update={"echo_cost_tokens": 0.0})) == 1.0  # off
    cost = fb.model_copy(update={"echo_cost_tokens": 50.0})
    assert cost_share(None, cost) == cost_share(0, cost) == 1.0  # length unknown: the whole lift
    assert cost_share(30, cost) == cost_share(50, cost) == 1.0  # up to the reference: whole lift
    assert cost_share(100, cost) == pytest.approx(0.5)
    assert cost_share(100, cost.model_copy(update={"echo_cost_exponent": 0.5})) == pytest.approx(0.5**0.5)
    assert cost_share(100, cost.model_copy(update={"echo_cost_exponent": 0.0})) == 1.0
    rate, echoed = 0.04, NodeUsage(echo=1)
    whole = reinforcement(echoed, rate, cost, tokens=50)
    assert whole == reinforcement(echoed, rate, fb, tokens=500) > 1.5
    half = reinforcement(echoed, rate, cost, tokens=100)
    assert half == pytest.approx(1.0 + (whole - 1.0) / 2)  # the part above 1 is what shrinks
    assert 1.0 < reinforcement(echoed, rate, cost, tokens=10_000) < half  # never a de-boost
    # A de-boost does not depend on length (it is not a lift).
    fizzled = cost.model_copy(update={"fizzle_weight": 1.0})
    assert reinforcement(NodeUsage(fizzle=9), rate, fizzled, tokens=10_000) == reinforcement(
        NodeUsage(fizzle=9), rate, fizzled, tokens=5
    )
    cfg = RecallConfig()
    assert cfg.result_key() != cfg.with_options(feedback={"echo_cost_tokens": 99.0}).result_key()
    assert cfg.result_key() != cfg.with_options(feedback={"echo_cost_exponent": 2.0}).result_key()


async def recalled_nodes(uni: Uniko, agent_id: str) -> list[Any]:
    """A fresh agent holding MAIN, and the stored nodes behind one recall's items."""
    await build(MAIN, agent=agent_id, uni=uni)
    bundle = await uni.agent(agent_id).recall("Bailey keyboard counseling", use_cache=False)
    return list((await uni.kb.store.get_many(agent_id, [i.node_id for i in bundle.items])).values())


async def policy_scores(uni: Uniko, agent_id: str, nodes: list[Any], **fb: Any) -> dict[str, float]:
    """Each node's fused score (1.0 before) after the feedback policy with ``fb`` applied."""
    cfg = RecallConfig().with_options(feedback={"echo_relevance": 0.0, **fb})
    out = await apply_policy(uni.kb.store, agent_id, cfg, [Candidate(node=n, fused=1.0) for n in nodes])
    return {c.node.id: c.fused for c in out}


async def test_a_long_echoed_item_is_lifted_less_than_a_short_one(uni: Uniko) -> None:
    agent = uni.agent("fb-cost")
    store = uni.kb.store
    nodes = await recalled_nodes(uni, "fb-cost")
    counter = default_token_counter()
    by_len = sorted(nodes, key=lambda n: (node_tokens(n, counter), n.id))
    short, long = by_len[0], by_len[-1]
    n_short, n_long = node_tokens(short, counter), node_tokens(long, counter)
    assert n_long > 2 * n_short > 0
    await agent.feedback([short.id, long.id], True)
    await agent.feedback([n.id for n in nodes if n.id not in (short.id, long.id)], False)

    async def factors(**fb: Any) -> dict[str, float]:
        return await policy_scores(uni, "fb-cost", nodes, echo_lift_max=0.0, **fb)

    plain = await factors()
    assert plain[short.id] > 1.0 and plain[long.id] > 1.0  # both echoed: both lifted
    cost = await factors(echo_cost_tokens=float(n_short))
    assert cost[short.id] == pytest.approx(plain[short.id])  # within the reference: whole lift
    assert 1.0 < cost[long.id] < plain[long.id]  # longer: a smaller lift, never a de-boost
    assert set(cost) == set(plain)  # it reorders, never removes
    # Measured with the recall's counter: one that calls every text short gives the whole lift.
    cfg = RecallConfig().with_options(
        feedback={"echo_relevance": 0.0, "echo_lift_max": 0.0, "echo_cost_tokens": float(n_short)}
    )

    class OneToken:
        name = "one"

        def count(self, text: str) -> int:
            return 1

    out = await apply_policy(store, "fb-cost", cfg, [Candidate(node=n, fused=1.0) for n in nodes], OneToken())
    assert {c.node.id: c.fused for c in out}[long.id] == pytest.approx(plain[long.id])
    # Every weight 0 with the cost-aware lift on: exactly as without feedback.
    q = "Bailey keyboard counseling"
    off = await agent.recall(q, use_cache=False, feedback={"enabled": False})
    zero = {"feedback": {**ZERO["feedback"], "echo_cost_tokens": float(n_short)}}
    assert dump(await agent.recall(q, use_cache=False, **zero)) == dump(off)


async def test_the_lift_cap_bounds_a_many_times_echoed_node() -> None:
    fb = RecallConfig().feedback.model_copy(update={"echo_relevance": 0.0})
    assert fb.echo_lift_max == 0.0  # off by default
    rate = 0.2  # a chunk tier: useful often
    many = NodeUsage(echo=5, fizzle=1)
    free = reinforcement(many, rate, fb.model_copy(update={"echo_lift_max": 0.0}))
    assert free > 1.5
    capped = fb.model_copy(update={"echo_lift_max": 1.3})
    assert reinforcement(many, rate, capped) == pytest.approx(1.3)
    once = NodeUsage(echo=1, fizzle=3)
    assert 1.0 < reinforcement(once, rate, capped) < 1.3  # under the cap: untouched
    assert reinforcement(once, rate, capped) == reinforcement(
        once, rate, fb.model_copy(update={"echo_lift_max": 0.0})
    )
    # A cap below 1 is no de-boost, and a de-boost is not capped.
    assert reinforcement(many, rate, fb.model_copy(update={"echo_lift_max": 0.5})) == 1.0
    fizzled = capped.model_copy(update={"fizzle_weight": 1.0})
    assert reinforcement(NodeUsage(fizzle=30), rate, fizzled) < 1.0
    cfg = RecallConfig()
    assert cfg.result_key() != cfg.with_options(feedback={"echo_lift_max": 1.3}).result_key()


async def test_the_lift_cap_on_a_stored_ranking(uni: Uniko) -> None:
    agent = uni.agent("fb-cap")
    nodes = await recalled_nodes(uni, "fb-cap")
    hot = nodes[-1]
    for _ in range(5):
        await agent.feedback([hot.id], True)
        await agent.feedback([n.id for n in nodes if n.id != hot.id], False)

    async def fused(**fb: Any) -> dict[str, float]:
        return await policy_scores(uni, "fb-cap", nodes, **fb)

    free, capped = await fused(echo_lift_max=0.0), await fused(echo_lift_max=1.2)
    assert free[hot.id] > 1.2 and capped[hot.id] == pytest.approx(1.2)
    assert set(free) == set(capped) and all(v == 1.0 for k, v in capped.items() if k != hot.id)
