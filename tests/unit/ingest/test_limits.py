"""Input limits: turn size, unit size, metadata size, query length.

Each limit is a config field; going over it is a ``ValidationError`` that names the limit and the
field, raised before anything is written.
"""

from __future__ import annotations

from typing import Any

import pytest

from uniko_memory.config import UnikoConfig
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Tier

from ._support import at, open_uni, turn

AGENT = "limits"


async def nothing_stored(uni: Uniko) -> bool:
    counts = [await uni.kb.store.count(AGENT, tier) for tier in (Tier.MESSAGE, Tier.SESSION, Tier.ENTITY)]
    return counts == [0, 0, 0] and await uni.kb.store.agents() == []


def test_defaults() -> None:
    ingest = UnikoConfig().ingest
    assert (ingest.max_turn_chars, ingest.max_unit_turns, ingest.max_metadata_bytes) == (
        1_000_000,
        1_000,
        65_536,
    )
    assert ingest.max_addressed_to == 64


# ---------------------------------------------------------------------------------- turn size
async def test_turn_size() -> None:
    uni = await open_uni({"ingest": {"max_turn_chars": 40}})
    try:
        session = uni.agent(AGENT).session("s1")
        with pytest.raises(ValidationError) as err:
            await session.observe(turn("Caroline", "x" * 41, id="long"))
        msg = str(err.value)
        assert "41 characters" in msg and "limit of 40" in msg and "IngestConfig.max_turn_chars" in msg
        assert "'long'" in msg
        assert await nothing_stored(uni)
        await session.observe(turn("Caroline", "I adopted a cat called Oliver last week.", id="ok"))
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == 1
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- unit size
async def test_unit_size_refuses_the_whole_unit() -> None:
    uni = await open_uni({"ingest": {"max_unit_turns": 3}})
    try:
        session = uni.agent(AGENT).session("s1")
        builder = session.unit()
        for i in range(4):
            builder.turn("Caroline", f"Message number {i} about the pottery class.", at=at(30 * i))
        with pytest.raises(ValidationError) as err:
            await builder.commit()
        msg = str(err.value)
        assert "4 turns" in msg and "limit of 3" in msg and "IngestConfig.max_unit_turns" in msg
        assert await nothing_stored(uni)
        with pytest.raises(ValidationError, match="max_unit_turns"):  # the list API, same check
            await session.commit_unit([turn("Melanie", f"Turn {i} of the list.", i) for i in range(5)])
        assert await nothing_stored(uni)
        result = await session.commit_unit([turn("Melanie", f"Turn {i} of the list.", i) for i in range(3)])
        assert len(result.results) == 3
    finally:
        await uni.close()


# ---------------------------------------------------------------------------------- metadata size
async def test_metadata_size_counts_json_bytes() -> None:
    uni = await open_uni({"ingest": {"max_metadata_bytes": 60}})
    try:
        session = uni.agent(AGENT).session("s1")
        # 30 characters, but 60 bytes of UTF-8: {"t":"éé…"} is 68 bytes of JSON
        heavy = turn("Caroline", "I went hiking near Lake Tahoe.", metadata={"t": "é" * 30}, id="heavy")
        with pytest.raises(ValidationError) as err:
            await session.observe(heavy)
        msg = str(err.value)
        assert "68 bytes" in msg and "limit of 60" in msg and "IngestConfig.max_metadata_bytes" in msg
        assert "'heavy'" in msg
        assert await nothing_stored(uni)
        await session.observe(turn("Caroline", "I went hiking near Lake Tahoe.", metadata={"t": "e" * 30}))
        assert await uni.kb.store.count(AGENT, Tier.MESSAGE) == 1
    finally:
        await uni.close()


async def test_metadata_over_the_limit_in_a_unit_writes_nothing(uni: Uniko) -> None:
    session = uni.agent(AGENT).session("s1")
    big: dict[str, Any] = {"blob": "x" * 70_000}  # over the default 64 KiB
    with pytest.raises(ValidationError, match=r"turn 1 .*65,536 \(IngestConfig.max_metadata_bytes\)"):
        await (
            session.unit()
            .turn("Caroline", "I moved to Paris last year.", at=at(0))
            .turn("Melanie", "Paris sounds lovely, Caroline!", at=at(30), metadata=big)
            .commit()
        )
    assert await nothing_stored(uni)


async def test_metadata_must_be_json(uni: Uniko) -> None:
    session = uni.agent(AGENT).session("s1")
    with pytest.raises(ValidationError, match="not JSON-serialisable"):
        await session.observe(Turn(sender="Caroline", content="Hello there.", metadata={"obj": object()}))
    assert await nothing_stored(uni)


# ---------------------------------------------------------------------------------- query length
async def test_query_length(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    await agent.session("s1").observe(turn("Caroline", "My cat Oliver loves the garden."))
    await agent.flush()
    with pytest.raises(ValidationError) as err:
        await agent.recall("What is the name of Caroline's cat, please?", intent={"max_query_chars": 20})
    assert "43 characters" in str(err.value) and "limit of 20" in str(err.value)
    assert uni.recall_config.intent.max_query_chars == 4000
    with pytest.raises(ValidationError, match="4,000"):
        await agent.recall("cat " * 1001)
    bundle = await agent.recall("Caroline's cat?", intent={"max_query_chars": 20})
    assert bundle.items
