"""F50 decay: only Episodes, pruned at importance · exp(−ln2 · age / half-life) ≤ prune_below."""

from __future__ import annotations

import math
from datetime import timedelta

from tests.unit.consolidation._support import AGENT, T0, new_kb
from uniko_memory.cortex import decay_episodes, decay_score
from uniko_memory.model import Episode, Tier, make_id


def test_decay_score_halves_every_half_life() -> None:
    assert decay_score(0.8, 0, 30) == 0.8
    assert math.isclose(decay_score(0.8, 30, 30), 0.4)
    assert math.isclose(decay_score(0.8, 60, 30), 0.2)
    assert decay_score(0.5, -5, 30) == 0.5  # a future timestamp does not grow


async def test_old_unimportant_episodes_are_pruned() -> None:
    kb = await new_kb()
    try:
        now = T0 + timedelta(days=365)
        cases = {  # (importance, age days) → kept?
            "fresh": (0.5, 1, True),
            "old": (0.5, 120, False),  # 0.5 · 2^-4 = 0.031
            "important": (1.0, 120, True),  # 0.0625 > 0.05
            "edge": (0.1, 30, True),  # exactly 0.05: pruned? 0.1 · 0.5 = 0.05 → pruned (≤)
        }
        async with kb.store.unit(AGENT) as u:
            for name, (imp, age, _) in cases.items():
                u.put(
                    Episode(
                        id=make_id("epi", AGENT, name),
                        agent=AGENT,
                        action_type="ask",
                        importance=imp,
                        timestamp=now - timedelta(days=age),
                    )
                )
        n = await decay_episodes(kb.store, kb.config, AGENT, now=now)
        left = {e.id for e in await kb.store.find(AGENT, Tier.EPISODE)}
        assert n == 2
        assert left == {make_id("epi", AGENT, "fresh"), make_id("epi", AGENT, "important")}
    finally:
        await kb.close()
