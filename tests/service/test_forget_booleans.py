"""``hard`` is a boolean, never a string read by its truth (issue 40, item 12): the inspector's
forget took ``"hard": "false"`` as a hard delete; ``forget_participant(hard="yes")`` ran; the
MCP ``forget`` tool turned ``"yes"`` into ``True``. Each refuses with an error naming ``hard``,
and nothing is forgotten."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.unit.ingest._support import open_uni, turn
from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.model import Tier
from uniko_memory.service import tools
from uniko_memory.service.inspector import InspectorData

NOT_BOOLEANS = ["false", "true", "yes", "no", "0", "", 0, 1, None, [], {}]


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    u = await open_uni()
    a = u.agent("alice")
    for i, text in enumerate(["My cat is called Miso.", "Miso loves tuna."]):
        await a.session("s1").observe(turn("alice", text, i, id=f"t{i}"))
    await a.flush()
    try:
        yield u
    finally:
        await u.close()


async def _untouched(uni: Uniko) -> None:
    assert await uni.kb.store.count("alice", Tier.MESSAGE) == 2
    found = await uni.kb.store.find("alice", Tier.MESSAGE, limit=10)
    assert all(not m.redacted for m in found)


@pytest.mark.parametrize("hard", NOT_BOOLEANS)
async def test_the_inspector_takes_json_booleans_only(uni: Uniko, hard: Any) -> None:
    data = InspectorData(uni)
    for target in ({"session": "s1", "turn_id": "t0"}, {"session": "s1"}, {"participant": "alice"}):
        with pytest.raises(ValidationError, match="hard must be a JSON boolean"):
            await data.forget("alice", {**target, "hard": hard, "confirm": True})
    await _untouched(uni)


async def test_the_inspector_redacts_with_hard_false(uni: Uniko) -> None:
    out = await InspectorData(uni).forget(
        "alice", {"session": "s1", "turn_id": "t0", "hard": False, "confirm": True}
    )
    assert out["hard"] is False and out["reports"][0]["messages"] == 1
    assert await uni.kb.store.count("alice", Tier.MESSAGE) == 1  # redacted: counted out, kept as a tombstone


@pytest.mark.parametrize("hard", ["yes", "false", 1, None])
async def test_the_facade_refuses_a_hard_that_is_not_a_bool(uni: Uniko, hard: Any) -> None:
    agent = uni.agent("alice")
    with pytest.raises(ValidationError, match=r"forget_participant: hard must be True or False, got"):
        await agent.forget_participant("alice", hard=hard)
    with pytest.raises(ValidationError, match=r"forget_session: hard must be True or False, got"):
        await agent.forget_session("s1", hard=hard)
    await _untouched(uni)


async def test_the_facade_refuses_an_about_that_is_not_a_bool_or_none(uni: Uniko) -> None:
    with pytest.raises(ValidationError, match=r"forget_participant: about must be True or False \(or None\)"):
        await uni.agent("alice").forget_participant("alice", about="no")
    await _untouched(uni)


async def test_the_tool_function_refuses_a_string_hard(uni: Uniko) -> None:
    for hard in ("false", "yes", 0):
        with pytest.raises(ValidationError, match="hard must be true or false"):
            await tools.forget(uni.agent("alice"), session="s1", turn_id="t0", hard=hard)  # type: ignore[arg-type]
    await _untouched(uni)


async def test_the_mcp_forget_tool_takes_json_booleans_only(uni: Uniko) -> None:
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from uniko_memory.service.mcp_server import build_server

    async with mcp.Client(build_server(uni, agent="alice")) as client:
        schema = {t.name: t for t in (await client.list_tools()).tools}["forget"].input_schema
        assert schema["properties"]["hard"]["type"] == "boolean"
        for hard in ("yes", "false", "true", 1):
            got = await client.call_tool("forget", {"session": "s1", "turn_id": "t0", "hard": hard})
            assert got.is_error and "hard" in got.content[0].text, (hard, got.content)
    await _untouched(uni)


async def test_the_sync_twin_refuses_too(uni: Uniko) -> None:
    import asyncio

    agent = uni.agent("alice")
    with pytest.raises(ValidationError, match="hard must be True or False"):
        await asyncio.to_thread(agent.forget_participant_sync, "alice", hard="yes")
    await _untouched(uni)
