"""Issue 16.7: bulk ingest through the API reports a refused turn and carries on."""

from __future__ import annotations

import pytest

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Message, Tier

from ._support import open_uni, turn

AGENT = "bulk"


async def test_observe_each_skips_a_refused_turn_and_stores_the_rest() -> None:
    uni: Uniko = await open_uni({"ingest": {"max_turn_chars": 200}})
    try:
        session = uni.agent(AGENT).session("import")
        turns = [
            turn("Ana", "I moved to Lisbon.", 0, id="t0"),
            turn("Ana", "x " * 500, 1, id="t1"),  # over the limit
            turn("Ben", "   ", 2, id="t2"),  # empty
            turn("Ben", "Welcome to Lisbon!", 3, id="t3"),
        ]
        result = await session.observe_each(turns)
        assert result.stored == 2 and result.replays == 0
        assert [(r.position, r.id) for r in result.refused] == [(1, "t1"), (2, "t2")]
        assert "max_turn_chars" in result.refused[0].reason and "empty content" in result.refused[1].reason
        stored = await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=10)
        assert sorted(m.external_id for m in stored if isinstance(m, Message)) == ["t0", "t3"]
        again = await session.observe_each(turns[:1])  # a replay is counted, not stored twice
        assert again.replays == 1 and again.stored == 0 and not again.refused
    finally:
        await uni.close()


async def test_a_session_id_no_node_could_carry_is_refused_when_the_session_is_named(uni: Uniko) -> None:
    with pytest.raises(ValidationError, match="session id"):
        uni.agent(AGENT).session("s" * 300)
    with pytest.raises(ValidationError, match="session id"):
        uni.agent(AGENT).session("  ")
