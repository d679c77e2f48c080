"""The wake-up's L0 line names only participants the viewer may see (issue 40, item 12): a session
lists everyone who spoke in it, private turns included, and ``wake_up(viewer=...)`` named them all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import Line, build
from uniko_memory.facade import Uniko
from uniko_memory.model import Viewer, private, team
from uniko_memory.wakeup import IDENTITY_ID

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")

AGENT = "assistant"
T0 = datetime(2024, 3, 4, 9, tzinfo=UTC)
LINES = [
    Line("s1", "Alice", "We should plan the spring offsite together.", T0),
    Line(
        "s1",
        "Zedekiah",
        "My divorce hearing is on Friday, please keep it quiet.",
        T0 + timedelta(minutes=1),
        visibility=private("p-zed"),
    ),
    Line(
        "s1",
        "Quentin",
        "The board wants the budget numbers by Monday.",
        T0 + timedelta(minutes=2),
        visibility=team("board"),
    ),
    Line("s2", "Alice", "The offsite will be in Porto this year.", T0 + timedelta(days=3)),
]


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    u = await build(LINES, agent=AGENT, uni=await open_backend(request.param))
    try:
        yield u
    finally:
        await u.close()


async def _l0(uni: Uniko, viewer: Viewer | None, **options: object) -> str:
    bundle = await uni.agent(AGENT).wake_up(2000, viewer=viewer, **options)
    [line] = [i.content for i in bundle.items if i.node_id == IDENTITY_ID]
    return line


async def test_a_viewer_is_not_told_who_spoke_privately(uni: Uniko) -> None:
    outsider = await _l0(uni, Viewer(participant_id="p-alice"))
    assert "Alice" in outsider
    assert "Zedekiah" not in outsider and "Quentin" not in outsider, outsider
    assert (
        "Zedekiah"
        not in (await uni.agent(AGENT).wake_up(2000, viewer=Viewer(participant_id="p-alice"))).render()
    )


async def test_who_may_see_a_turn_sees_its_speaker(uni: Uniko) -> None:
    zed = await _l0(uni, Viewer(participant_id="p-zed"))
    assert "Alice" in zed and "Zedekiah" in zed and "Quentin" not in zed
    board = await _l0(uni, Viewer(participant_id="p-q", teams=frozenset({"board"})))
    assert "Quentin" in board and "Zedekiah" not in board
    everyone = await _l0(uni, None)  # no viewer: unrestricted, as recall
    assert all(n in everyone for n in ("Alice", "Zedekiah", "Quentin"))


async def test_sessions_and_viewer_together(uni: Uniko) -> None:
    only_s2 = await _l0(uni, Viewer(participant_id="p-zed"), sessions=["s2"])
    assert "Alice" in only_s2 and "Zedekiah" not in only_s2
