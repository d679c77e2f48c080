"""F50 memory decay: Episodes fade with age and are pruned once they matter too little.

An Episode's weight is ``importance · exp(−ln2 · age_days / half_life_days)``; at or below
``prune_below`` it is deleted (with its edges). Only Episodes decay: Facts, Observations and
Messages are evidence and never age out.
"""

from __future__ import annotations

import math
from datetime import datetime

from ..config import UnikoConfig
from ..model import Episode, Tier
from ..model.time import utcnow
from ..store.protocol import Store

MAX_EPISODES = 1_000_000


def decay_score(importance: float, age_days: float, half_life_days: float) -> float:
    """importance · exp(−ln2 · age / half-life); a future timestamp counts as age 0."""
    return importance * math.exp(-math.log(2) * max(age_days, 0.0) / half_life_days)


async def decay_episodes(
    store: Store, config: UnikoConfig, agent: str, *, now: datetime | None = None
) -> int:
    """Delete the agent's Episodes whose decayed importance fell to ``prune_below``; returns how many."""
    cc = config.cortex
    ref = now or utcnow()
    doomed = []
    for e in await store.find(agent, Tier.EPISODE, limit=MAX_EPISODES):
        if not isinstance(e, Episode):
            continue
        age = (ref - e.timestamp).total_seconds() / 86400.0
        if decay_score(e.importance, age, cc.half_life_days) <= cc.prune_below:
            doomed.append(e.id)
    return await store.delete(agent, doomed) if doomed else 0
