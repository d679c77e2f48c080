"""The L1 score of a wake-up candidate: no query, so importance, confidence, recency and reads.

``L1 = w_i·importance + w_c·confidence + w_r·recency7 + w_f·frequency``, every weight a field of
``WakeupConfig``. ``recency7`` is the wake-up's own fixed curve (half-life
``recency_half_life_days``) on both clocks, the node's time and its last read, the more recent
winning: a memory read yesterday is as fresh as one written yesterday. It is deliberately not the
per-type decay recall may use: a primer favours what is current, whatever its type.
"""

from __future__ import annotations

from datetime import datetime

from ..config import WakeupConfig
from ..model import Episode, Fact, Node, NodeUsage, Observation, Procedure, Topic

SECONDS_PER_DAY = 86_400.0


def importance(node: Node, cfg: WakeupConfig) -> float:
    """How much the memory matters, in [0, 1]: support for Facts and Topics, a Procedure's
    effectiveness, an Episode's importance; ``neutral_score`` for the rest."""
    if isinstance(node, Fact):
        return min(1.0, node.observation_count / cfg.support_saturation)
    if isinstance(node, Topic):
        return min(1.0, node.fact_count / cfg.support_saturation)
    if isinstance(node, Procedure):
        return min(1.0, max(0.0, node.effectiveness))
    if isinstance(node, Episode):
        return min(1.0, max(0.0, node.importance))
    return cfg.neutral_score


def confidence(node: Node, cfg: WakeupConfig) -> float:
    if isinstance(node, Fact | Observation):
        return min(1.0, max(0.0, node.confidence))
    if isinstance(node, Procedure) and node.use_count:
        return min(1.0, node.success_count / node.use_count)
    return cfg.neutral_score


def half_life_decay(at: datetime | None, now: datetime, half_life_days: float) -> float:
    """``2^(-age / half-life)`` with age in days (0 for no time; a future time is age 0)."""
    if at is None:
        return 0.0
    age = max(0.0, (now - at).total_seconds() / SECONDS_PER_DAY)
    return float(2.0 ** (-age / half_life_days))


def recency(node: Node, usage: NodeUsage | None, now: datetime, cfg: WakeupConfig) -> float:
    """The dual clock: the node's own time or its last read, whichever is more recent."""
    created = node.time_key()
    own = half_life_decay(created if isinstance(created, datetime) else None, now, cfg.recency_half_life_days)
    read = half_life_decay(usage.last_accessed_at if usage else None, now, cfg.recency_half_life_days)
    return max(own, read)


def frequency(usage: NodeUsage | None, cfg: WakeupConfig) -> float:
    return min(1.0, (usage.access_count if usage else 0) / cfg.frequency_saturation)


def l1_score(node: Node, usage: NodeUsage | None, now: datetime, cfg: WakeupConfig) -> float:
    return (
        cfg.importance_weight * importance(node, cfg)
        + cfg.confidence_weight * confidence(node, cfg)
        + cfg.recency_weight * recency(node, usage, now, cfg)
        + cfg.frequency_weight * frequency(usage, cfg)
    )
