"""Memory that learns from use: what echo / fizzle counts (``Agent.feedback``) do to recall.

Four terms, each a field of ``RecallFeedback``, each neutral until feedback exists:

- **alpha** (per agent): an EWMA of the lexical share of rated items, clamped to
  [``alpha_min``, ``alpha_max``]; it scales the lexical family's channel weight by 2·α and the
  vector families' by 2·(1 − α) before fusion, in ``alpha_bucket`` steps. The bucket is resolved
  before the cache lookup and lands in the key through the weights (``learned_config``);
- **UCB exploration**: ``1 + ucb_weight·sqrt(ln(N + 1) / (n + 1))``, N the ratings over the
  candidates, n the candidate's own (N = 0: factor 1);
- **ROI de-boost** of a Procedure rated more often useless than useful:
  ``(echo + prior) / (fizzle + prior)``;
- **trust floor** of document chunks, lifted by echoes: ``floor + (1 − floor)·echo / (echo +
  fizzle + prior)``.

The last three multiply the fused score after fusion (``apply_policy``): they reorder, they
never remove a candidate, and a factor is never 0. With no factor away from 1 the ranking is
left exactly as it was (not even re-sorted).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..config import RecallFeedback
from ..model import Chunk, NodeUsage, Tier, UsageDelta
from ..model.time import utcnow
from .config import RecallConfig
from .fusion import Candidate, by_fused, family_of
from .items import ContextBundle, RecallItem

ALPHA_META_PREFIX = "recall.alpha:"
ALPHA_START = 0.5
#: Serialises this process's alpha updates per store (the EWMA is a read-modify-write of one meta
#: record; across processes a concurrent step may be lost, which only slows learning).
_ALPHA_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


# ------------------------------------------------------------------ alpha
def _alpha_key(agent: str) -> str:
    return ALPHA_META_PREFIX + agent


async def learned_alpha(store: Any, agent: str) -> float:
    raw = await store.get_meta(_alpha_key(agent))
    if raw is None:
        return ALPHA_START
    try:
        return float(json.loads(raw)["alpha"])
    except (ValueError, KeyError, TypeError):
        return ALPHA_START  # a damaged record must not fail recall


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


#: The learned alpha per store and agent with the generation it was read at: a recall reads the
#: meta record only when the generation moved (feedback bumps it), so a cached recall still costs
#: one small read.
_ALPHA_SEEN: weakref.WeakKeyDictionary[Any, dict[str, tuple[int, float]]] = weakref.WeakKeyDictionary()


async def learned_config(
    store: Any, agent: str, cfg: RecallConfig, generation: int | None = None
) -> RecallConfig:
    """The config recall runs with: ``cfg`` with the agent's learned alpha applied."""
    if not cfg.feedback.enabled or cfg.feedback.alpha_weight == 0:
        return cfg
    seen = _ALPHA_SEEN.setdefault(store, {}) if generation is not None else {}
    hit = seen.get(agent)
    if hit is not None and hit[0] == generation:
        alpha = hit[1]
    else:
        alpha = await learned_alpha(store, agent)
        if generation is not None:
            seen[agent] = (generation, alpha)
    return with_alpha(cfg, alpha)


def lexical_share(channels: Sequence[str], fb: RecallFeedback) -> float | None:
    """The share of lexical lists among the lexical and vector lists that found an item (None:
    neither found it, e.g. a graph neighbour, so it says nothing about alpha)."""
    fams = [family_of(c) for c in channels]
    lex = sum(f in fb.lexical_families for f in fams)
    vec = sum(f in fb.vector_families for f in fams)
    return lex / (lex + vec) if lex + vec else None


async def update_alpha(
    store: Any, agent: str, shares: Sequence[float], useful: bool, fb: RecallFeedback
) -> float:
    """One EWMA step per rated item (target: its share on an echo, 1 − it on a fizzle)."""
    lock = _ALPHA_LOCKS.get(store)
    if lock is None:
        lock = _ALPHA_LOCKS[store] = asyncio.Lock()
    async with lock:
        raw = await store.get_meta(_alpha_key(agent))
        state = {"alpha": ALPHA_START, "samples": 0}
        if raw is not None:
            with contextlib.suppress(ValueError):  # a damaged record restarts from 0.5
                state = {**state, **json.loads(raw)}
        a = float(state["alpha"])
        lam = fb.alpha_learning_rate
        for s in shares:
            target = s if useful else 1.0 - s
            a = min(fb.alpha_max, max(fb.alpha_min, (1 - lam) * a + lam * target))
        state = {"alpha": a, "samples": int(state["samples"]) + len(shares)}
        await store.set_meta(_alpha_key(agent), json.dumps(state))
        return a


# ------------------------------------------------------------------ policy
def ucb(usage: NodeUsage | None, total: float, fb: RecallFeedback) -> float:
    n = usage.rated if usage else 0.0
    return 1.0 + fb.ucb_weight * math.sqrt(math.log(total + 1.0) / (n + 1.0)) if total > 0 else 1.0


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
    cand: Candidate, usage: NodeUsage | None, total: float, fb: RecallFeedback, now: datetime | None = None
) -> float:
    factor = ucb(usage, total, fb) * roi(cand, usage, fb) * trust(cand, usage, fb)
    return factor * recency_factor(cand, usage, now, fb) if now is not None else factor


async def apply_policy(store: Any, agent: str, cfg: RecallConfig, ranked: list[Candidate]) -> list[Candidate]:
    """The ranking with the feedback multipliers applied (``ranked`` itself when all are 1)."""
    fb = cfg.feedback
    if not fb.enabled or not ranked:
        return ranked
    head = ranked[: cfg.packing.max_candidates]
    usage: dict[str, NodeUsage] = await store.usage(agent, [c.node.id for c in head])
    total = sum(u.rated for u in usage.values())
    now = cfg.reference_ts or utcnow()
    changed = False
    for c in head:
        factor = policy_factor(c, usage.get(c.node.id), total, fb, now)
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
    # Alpha first, the counts (and the generation bump) last: a recall that sees the new
    # generation also sees the new alpha.
    with_channels = [nid for nid, ch in rated if ch is not None]
    known = await store.get_many(agent, with_channels) if with_channels else {}
    shares = [
        s for nid, ch in rated if ch is not None and nid in known and (s := lexical_share(ch, fb)) is not None
    ]
    if shares:
        await update_alpha(store, agent, shares, useful, fb)
    return int(await store.record_usage(agent, deltas, invalidates=True))
