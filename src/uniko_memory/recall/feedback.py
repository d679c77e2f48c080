"""Memory that learns from use: what echo / fizzle counts (``Agent.feedback``) do to recall.

Five terms, each a field of ``RecallFeedback``, each neutral until feedback exists:

- **alpha** (per agent): the lexical arm's share of the two arms' precision on rated items
  (``learned_alpha``: of the rated items only that arm had found, the share that were useful,
  shrunk toward the agent's base rate), clamped to [``alpha_min``, ``alpha_max``]; it scales the
  lexical family's channel weight by 2·α and the vector families' by 2·(1 − α) before fusion,
  in ``alpha_bucket`` steps. The bucket is resolved before the cache lookup and lands in the key
  through the weights (``learned_config``);
- **direct reinforcement**: a node's echoes against those expected of it at its tier's base
  rate, ``(echo + a) / (a + rate·rated)`` (``reinforcement``, ``tier_rate``): a lift for a node
  rated useful more often than the average one of its kind (scaled down by its relevance to the
  query and, cost-aware, by its length: ``cost_share``), a mild de-boost (off by default) for
  one rated useless more often;
- **UCB exploration** (off by default): ``1 + ucb_weight·sqrt(ln(N + 1) / (n + 1))``, N the
  ratings over the candidates, n the candidate's own (N = 0: factor 1); a net-positive node
  gets at least a never-rated node's bonus;
- **ROI de-boost** of a Procedure rated more often useless than useful:
  ``(echo + prior) / (fizzle + prior)``;
- **trust floor** of document chunks, lifted by echoes: ``floor + (1 − floor)·echo / (echo +
  fizzle + prior)``.

The estimators read sufficient statistics (per-node counts, one ``FeedbackState`` per agent),
never a running estimate, so every one is a read-time function of what was stored. The last
four multiply the fused score after fusion (``apply_policy``): they reorder, they never remove
a candidate, and a factor is never 0. With no factor away from 1 the ranking is left exactly as
it was (not even re-sorted).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..config import RecallFeedback
from ..model import Chunk, Node, NodeUsage, Tier, UsageDelta
from ..model.time import utcnow
from ..providers.token_counter import TokenCounter, default_token_counter
from .config import RecallConfig
from .fusion import Candidate, by_fused, family_of
from .items import ContextBundle, RecallItem

FEEDBACK_META_PREFIX = "recall.feedback:"
ALPHA_START = 0.5
#: Serialises this process's feedback-state updates per store (a read-modify-write of one meta
#: record; across processes a concurrent step may be lost, which only slows learning).
_STATE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


# ------------------------------------------------------------------ state
class FeedbackState(BaseModel):
    """What an agent's ratings add up to (one meta record per agent): the totals behind the base
    rate of usefulness, and per arm (lexical, vector) how many useful and not-useful items it
    alone had found, behind alpha. Sufficient statistics, not a running estimate: the estimators are
    read-time functions of them (``learned_alpha``, ``base_rate``), so changing a
    ``RecallFeedback`` field changes the result without re-rating, and the order ratings arrived
    in does not matter."""

    #: Echo weight over every rated item (``feedback(..., True)`` adds its weight per item).
    echo: float = Field(0.0, ge=0.0)
    #: Fizzle weight over every rated item.
    fizzle: float = Field(0.0, ge=0.0)
    #: The same two totals per tier (``message``, ``chunk``, ``fact`` ...): the base rate a node
    #: is compared with is its own tier's, since a chunk covering many turns is useful more
    #: often than one message for being larger, not better.
    echo_by_tier: dict[str, float] = Field(default_factory=dict)
    fizzle_by_tier: dict[str, float] = Field(default_factory=dict)
    #: Weight of the useful items only a lexical list had found (no vector list), and of the
    #: not-useful ones.
    lex_useful: float = Field(0.0, ge=0.0)
    lex_rest: float = Field(0.0, ge=0.0)
    #: The same for the items only a vector list had found.
    vec_useful: float = Field(0.0, ge=0.0)
    vec_rest: float = Field(0.0, ge=0.0)


def _state_key(agent: str) -> str:
    return FEEDBACK_META_PREFIX + agent


async def feedback_state(store: Any, agent: str) -> FeedbackState:
    raw = await store.get_meta(_state_key(agent))
    if raw is None:
        return FeedbackState()
    try:
        return FeedbackState.model_validate_json(raw)
    except ValueError:
        return FeedbackState()  # a damaged record must not fail recall: it restarts from nothing


def base_rate(state: FeedbackState) -> float | None:
    """The agent's share of ratings that were echoes (None: nothing rated)."""
    total = state.echo + state.fizzle
    return state.echo / total if total > 0 else None


def tier_rate(state: FeedbackState, tier: str, fb: RecallFeedback) -> float | None:
    """The base rate of one tier, shrunk toward the agent's by the same prior as a node's lift
    (``reinforce_prior`` pseudo-echoes at the agent's rate): a tier rated a few times keeps about
    the agent's rate, one rated often gets its own. None: nothing rated."""
    rate = base_rate(state)
    if rate is None or rate <= 0.0:
        return rate
    a = fb.reinforce_prior
    echo, fizzle = state.echo_by_tier.get(tier, 0.0), state.fizzle_by_tier.get(tier, 0.0)
    return (echo + a) / (echo + fizzle + a / rate)


def arm_precision(useful: float, rest: float, rate: float, fb: RecallFeedback) -> float:
    """The share of an arm's exclusive rated items that were useful, shrunk toward the base rate
    by ``alpha_prior`` pseudo-ratings."""
    return (useful + fb.alpha_prior * rate) / (useful + rest + fb.alpha_prior)


def learned_alpha(state: FeedbackState, fb: RecallFeedback) -> float:
    """The lexical arm's precision over the sum of both arms' precisions, each over the rated
    items that arm alone had found (shrunk toward the base rate), clamped to [``alpha_min``,
    ``alpha_max``].

    Why: most rated items are fizzles, so the channels of rated items (or an EWMA of their
    lexical share toward "the share on an echo, one minus it on a fizzle") mostly say what
    recall returns, not what helps. Only the items where the arms disagree say which arm to
    trust: an item both found says nothing about their relative weight (and useful items are
    found by both more often, which a lexical share would read as a lexical win). On those
    exclusive items the two precisions are equal, and alpha 0.5, when neither arm finds useful
    items more often, whatever the echo / fizzle mix; fizzles alone (no echo yet) leave it at
    0.5."""
    rate = base_rate(state)
    if rate is None or rate <= 0.0 or rate >= 1.0:
        return ALPHA_START
    p_lex = arm_precision(state.lex_useful, state.lex_rest, rate, fb)
    p_vec = arm_precision(state.vec_useful, state.vec_rest, rate, fb)
    return min(fb.alpha_max, max(fb.alpha_min, p_lex / (p_lex + p_vec)))


def bucketed(alpha: float, fb: RecallFeedback) -> float:
    a = min(fb.alpha_max, max(fb.alpha_min, alpha))
    return round(round(a / fb.alpha_bucket) * fb.alpha_bucket, 6)


def with_alpha(cfg: RecallConfig, alpha: float) -> RecallConfig:
    """``cfg`` with the lexical and vector family weights scaled by the bucketed ``alpha``
    (``cfg`` itself at 0.5, so an agent never rated keeps today's config and cache key)."""
    fb = cfg.feedback
    a = bucketed(ALPHA_START + fb.alpha_weight * (alpha - ALPHA_START), fb)
    if a == ALPHA_START:
        return cfg
    f = cfg.fusion
    weights = dict(f.channel_weights)
    for fam in fb.lexical_families:
        weights[fam] = weights.get(fam, f.default_channel_weight) * 2 * a
    for fam in fb.vector_families:
        weights[fam] = weights.get(fam, f.default_channel_weight) * 2 * (1 - a)
    return cfg.with_options(fusion={"channel_weights": weights})


#: The feedback state per store and agent with the generation it was read at: a recall reads the
#: meta record only when the generation moved (feedback bumps it), so a cached recall still costs
#: one small read.
_STATE_SEEN: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, FeedbackState]]] = (
    weakref.WeakKeyDictionary()
)


async def learned_config(
    store: Any, agent: str, cfg: RecallConfig, generation: int | None = None
) -> RecallConfig:
    """The config recall runs with: ``cfg`` with the agent's learned alpha applied."""
    if not cfg.feedback.enabled or cfg.feedback.alpha_weight == 0:
        return cfg
    seen = _STATE_SEEN.setdefault(store, {}) if generation is not None else {}
    hit = seen.get(agent)
    if hit is not None and hit[0] == generation:
        state = hit[1]
    else:
        state = await feedback_state(store, agent)
        if generation is not None:
            seen[agent] = (generation, state)
    return with_alpha(cfg, learned_alpha(state, cfg.feedback))


def lexical_share(channels: Sequence[str], fb: RecallFeedback) -> float | None:
    """The share of lexical lists among the lexical and vector lists that found an item (None:
    neither found it, e.g. a graph neighbour)."""
    lex, vec = arms(channels, fb)
    return lex / (lex + vec) if lex + vec else None


def arms(channels: Sequence[str], fb: RecallFeedback) -> tuple[int, int]:
    """How many lexical and how many vector lists found an item."""
    fams = [family_of(c) for c in channels]
    return sum(f in fb.lexical_families for f in fams), sum(f in fb.vector_families for f in fams)


async def update_state(
    store: Any,
    agent: str,
    tiers: Sequence[str],
    found: Sequence[tuple[int, int]],
    useful: bool,
    weight: float,
) -> FeedbackState:
    """Add one feedback call to the agent's state: one item of ``weight`` per entry of ``tiers``
    (its tier), ``found`` the (lexical, vector) list counts of those whose channels are known."""
    lock = _STATE_LOCKS.get(store)
    if lock is None:
        lock = _STATE_LOCKS[store] = asyncio.Lock()
    async with lock:
        s = await feedback_state(store, agent)
        lex = weight * sum(1 for n_lex, n_vec in found if n_lex and not n_vec)
        vec = weight * sum(1 for n_lex, n_vec in found if n_vec and not n_lex)
        side = "useful" if useful else "rest"
        by_tier = dict(s.echo_by_tier if useful else s.fizzle_by_tier)
        for t in tiers:
            by_tier[t] = by_tier.get(t, 0.0) + weight
        s = s.model_copy(
            update={
                "echo" if useful else "fizzle": (s.echo if useful else s.fizzle) + len(tiers) * weight,
                "echo_by_tier" if useful else "fizzle_by_tier": by_tier,
                f"lex_{side}": getattr(s, f"lex_{side}") + lex,
                f"vec_{side}": getattr(s, f"vec_{side}") + vec,
            }
        )
        await store.set_meta(_state_key(agent), s.model_dump_json())
        return s


# ------------------------------------------------------------------ policy
def cost_share(tokens: int | None, fb: RecallFeedback) -> float:
    """The share of a lift a ``tokens``-long item keeps: ``min(1, echo_cost_tokens / tokens) **
    echo_cost_exponent`` (1: cost-awareness off, or the length unknown)."""
    if fb.echo_cost_tokens <= 0 or fb.echo_cost_exponent == 0 or not tokens or tokens <= 0:
        return 1.0
    return float(min(1.0, fb.echo_cost_tokens / tokens) ** fb.echo_cost_exponent)


def node_tokens(node: Node, counter: TokenCounter) -> int:
    """An item's length as the budget sees it: its text in the recall's token counter."""
    return counter.count(node.search_text() or "")


def reinforcement(
    usage: NodeUsage | None,
    rate: float | None,
    fb: RecallFeedback,
    relevance: float = 1.0,
    tokens: int | None = None,
) -> float:
    """Direct reinforcement: the node's echoes against the echoes expected of it at its tier's
    base rate ``rate``, with ``reinforce_prior`` pseudo-echoes on each side:
    ``lift = (echo + a) / (a + rate·rated)``.

    This is the posterior mean of a Beta prior centred on the base rate (worth ``a`` echoes)
    over the base rate itself, so it is 1 for a node rated as often useful as the average one:
    an echo is a strong lift where echoes are rare, a fizzle a mild de-boost where fizzles are
    the norm (``1 / (1 + rate·fizzle)`` for a fizzle-only node). An echo was earned where the
    node was relevant, so the part of a lift above 1 is scaled by ``relevance ** echo_relevance``
    (``relevance``: the candidate's fused score over the best one's, before feedback), and by
    ``cost_share(tokens)`` (``tokens``: the item's length): a long item echoed for covering a few
    of its many turns is not lifted over the short items other questions need. A lift is
    raised to ``echo_weight`` and capped at ``echo_lift_max`` (0: no cap), a de-boost raised to
    ``fizzle_weight`` (0: that side off); never 0, never hides."""
    if usage is None or usage.rated <= 0 or rate is None:
        return 1.0
    a = fb.reinforce_prior
    lift = (usage.echo + a) / (a + rate * usage.rated)
    if lift > 1.0 and fb.echo_relevance != 0:
        lift = 1.0 + (lift - 1.0) * min(1.0, max(0.0, relevance)) ** fb.echo_relevance
    if lift > 1.0:
        lift = 1.0 + (lift - 1.0) * cost_share(tokens, fb)
    w = fb.echo_weight if lift > 1.0 else fb.fizzle_weight
    if w == 0 or lift == 1.0:
        return 1.0
    factor = float(lift**w)
    return min(factor, max(1.0, fb.echo_lift_max)) if lift > 1.0 and fb.echo_lift_max > 0 else factor


def ucb(usage: NodeUsage | None, total: float, fb: RecallFeedback, rate: float | None = None) -> float:
    """Exploration: ``1 + ucb_weight·sqrt(ln(N + 1) / (n + 1))``, N the ratings over the
    candidates, n the node's own. A node with a net-positive record (a reinforcement lift above
    1) gets at least the bonus of a never-rated one, so a memory rated useful never loses ground
    to unrated noise for having been rated."""
    if fb.ucb_weight == 0 or total <= 0:
        return 1.0
    n = usage.rated if usage else 0.0
    bonus = math.sqrt(math.log(total + 1.0) / (n + 1.0))
    if n > 0 and rate is not None and usage is not None and usage.echo > rate * usage.rated:
        bonus = math.sqrt(math.log(total + 1.0))
    return 1.0 + fb.ucb_weight * bonus


def roi(cand: Candidate, usage: NodeUsage | None, fb: RecallFeedback) -> float:
    if (
        fb.roi_weight == 0
        or cand.node.tier is not Tier.PROCEDURE
        or usage is None
        or usage.fizzle <= usage.echo
    ):
        return 1.0
    return float(((usage.echo + fb.roi_prior) / (usage.fizzle + fb.roi_prior)) ** fb.roi_weight)


def is_document(cand: Candidate) -> bool:
    return isinstance(cand.node, Chunk) and cand.node.chunk_type in ("artifact", "page")


def trust(cand: Candidate, usage: NodeUsage | None, fb: RecallFeedback) -> float:
    floor = fb.document_trust_floor
    if floor >= 1.0 or not is_document(cand):
        return 1.0
    echo, fizzle = (usage.echo, usage.fizzle) if usage else (0.0, 0.0)
    return floor + (1.0 - floor) * echo / (echo + fizzle + fb.trust_prior)


def stretched_decay(age_days: float, half_life: float, shape: float) -> float:
    """FadeMem's per-type curve ``2^-((age / H)^s)``: s > 1 flat then steep, s < 1 a long tail."""
    return float(2.0 ** (-((max(0.0, age_days) / half_life) ** shape)))


def read_recency(cand: Candidate, usage: NodeUsage | None, now: datetime, fb: RecallFeedback) -> float:
    """The more recent clock wins: the node's own time or its last read."""
    tier = cand.node.tier.value
    h = fb.recency_half_life_days.get(tier, fb.default_half_life_days)
    shape = fb.recency_shape.get(tier, fb.default_shape)
    own = cand.node.time_key()
    clocks = [t for t in (own if isinstance(own, datetime) else cand.node.created_at,
                          usage.last_accessed_at if usage else None) if t is not None]  # fmt: skip
    return max(stretched_decay((now - t).total_seconds() / 86_400.0, h, shape) for t in clocks)


def recency_factor(cand: Candidate, usage: NodeUsage | None, now: datetime, fb: RecallFeedback) -> float:
    if fb.recency_weight == 0:
        return 1.0
    return 1.0 - fb.recency_weight * (1.0 - read_recency(cand, usage, now, fb))


def policy_factor(
    cand: Candidate,
    usage: NodeUsage | None,
    total: float,
    fb: RecallFeedback,
    now: datetime | None = None,
    rate: float | None = None,
    relevance: float = 1.0,
    tokens: int | None = None,
) -> float:
    """The product of the multiplicative terms for one candidate (``rate``: the base rate of
    echoes of its tier, ``tier_rate``; None: nothing rated, so no reinforcement; ``relevance``:
    its fused score over the best candidate's; ``tokens``: its length, for the cost-aware lift)."""
    factor = (
        reinforcement(usage, rate, fb, relevance, tokens)
        * ucb(usage, total, fb, rate)
        * roi(cand, usage, fb)
        * trust(cand, usage, fb)
    )
    return factor * recency_factor(cand, usage, now, fb) if now is not None else factor


def uses_rate(fb: RecallFeedback) -> bool:
    """Whether a term reads the base rate (reinforcement, or exploration's net-positive rule)."""
    return fb.echo_weight != 0 or fb.fizzle_weight != 0 or fb.ucb_weight != 0


async def apply_policy(
    store: Any,
    agent: str,
    cfg: RecallConfig,
    ranked: list[Candidate],
    counter: TokenCounter | None = None,
) -> list[Candidate]:
    """The ranking with the feedback multipliers applied (``ranked`` itself when all are 1);
    ``counter`` measures the echoed items' lengths for the cost-aware lift (default: the
    library's counter)."""
    fb = cfg.feedback
    if not fb.enabled or not ranked:
        return ranked
    head = ranked[: cfg.packing.max_candidates]
    usage: dict[str, NodeUsage] = await store.usage(agent, [c.node.id for c in head])
    total = sum(u.rated for u in usage.values())
    # The base rates are read only when a candidate was rated and a term uses them (one small
    # read; like the counts they move only on feedback, which bumps the generation).
    state = await feedback_state(store, agent) if total > 0 and uses_rate(fb) else None
    rates: dict[str, float | None] = {}
    now = cfg.reference_ts or utcnow()
    best = max(c.fused for c in head)
    fused = [c.fused for c in head]  # before any factor: relevance is this query's
    changed = False
    for c, before in zip(head, fused, strict=True):
        rate = None
        if state is not None:
            tier = c.node.tier.value
            if tier not in rates:
                rates[tier] = tier_rate(state, tier, fb)
            rate = rates[tier]
        relevance = before / best if best > 0 else 1.0
        u = usage.get(c.node.id)
        tokens = None
        if fb.echo_cost_tokens > 0 and u is not None and u.echo > 0:
            # Only an echoed node can be lifted, so only its length is counted.
            counter = counter or default_token_counter()
            tokens = node_tokens(c.node, counter)
        factor = policy_factor(c, u, total, fb, now, rate, relevance, tokens)
        if factor != 1.0:
            c.fused *= factor
            changed = True
    return by_fused(ranked) if changed else ranked


# ------------------------------------------------------------------ feedback
def rated_items(target: ContextBundle | Sequence[RecallItem | str]) -> list[tuple[str, list[str] | None]]:
    """(node id, the channels that found it, if known) for each rated item, first occurrence kept."""
    from ..errors import ValidationError

    entries: Sequence[RecallItem | str] = target.items if isinstance(target, ContextBundle) else target
    if isinstance(entries, str):
        raise ValidationError("feedback takes a bundle, items or a list of node ids, not one string")
    out: dict[str, list[str] | None] = {}
    for e in entries:
        if isinstance(e, RecallItem):
            out.setdefault(e.node_id, list(e.channels))
        elif isinstance(e, str) and e:
            out.setdefault(e, None)
        else:
            raise ValidationError(f"feedback: not an item or a node id: {e!r}")
    return list(out.items())


async def record_feedback(
    store: Any,
    agent: str,
    target: ContextBundle | Sequence[RecallItem | str],
    useful: bool,
    weight: float,
    fb: RecallFeedback,
) -> int:
    """Store one echo (``useful``) or fizzle of ``weight`` on each rated node, then step alpha on
    the items whose lexical share is known; bumps the generation (cached recalls are stale).
    Returns how many stored nodes were rated."""
    from ..errors import ValidationError

    if (
        not isinstance(weight, int | float)
        or isinstance(weight, bool)
        or not 0 < weight <= 1e6
        or math.isnan(weight)
    ):
        raise ValidationError("feedback weight must be a positive number")
    rated = rated_items(target)
    w = float(weight)
    deltas = {nid: UsageDelta(echo=w if useful else 0.0, fizzle=0.0 if useful else w) for nid, _ in rated}
    # The state first, the counts (and the generation bump) last: a recall that sees the new
    # generation also sees the new state.
    ids = [nid for nid, _ in rated]
    known = await store.get_many(agent, ids) if ids else {}
    found = [arms(ch, fb) for nid, ch in rated if ch is not None and nid in known]
    tiers = [known[nid].tier.value for nid in ids if nid in known]
    if tiers:
        await update_state(store, agent, tiers, found, useful, w)
    return int(await store.record_usage(agent, deltas, invalidates=True))
