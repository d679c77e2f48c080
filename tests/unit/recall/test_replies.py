"""Reply expansion: the turn that answers a question the keyword search found joins the pool, on
both stores, through the scope filters (a private or forgotten reply never comes in this way)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from tests.unit.wakeup._support import BACKENDS, open_backend
from uniko_memory.facade import Uniko
from uniko_memory.model import Viewer, private
from uniko_memory.recall import ContextBundle

from ._corpus import AGENT, ALL_PHASES, S1_START, Line, build, message_by_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "How long have you had the aquarium with the neon tetras?"
REPLY = "Since my birthday in 2019, so about four years now."  # no word of the question
ASKED = "What colour are the neon tetras in your aquarium?"
FOLLOW_UP = "Twice a week I scrub the glass myself."  # the asker's own next turn: not an answer
PRIVATE_REPLY = "Grandpa left it to me before he passed away."
FORGOTTEN_QUESTION = "Who gave you the aquarium with the neon tetras?"
FORGOTTEN_REPLY = "My cousin Rosalind sold it to me cheaply."
STATEMENT = "The neon tetras in my aquarium glow under the blue lamp."
AFTER_STATEMENT = "Lovely, blue light suits them."
QUERY = "neon tetras aquarium"
#: The forgotten reply's node id per engine (its text is gone once it is forgotten).
FORGOTTEN_IDS: dict[int, str] = {}


def corpus() -> list[Line]:
    turns: list[tuple[str, str, Any]] = [
        ("Melanie", QUESTION, "public"),
        ("Jon", REPLY, "public"),
        ("Jon", ASKED, "public"),
        ("Jon", FOLLOW_UP, "public"),
        ("Melanie", FORGOTTEN_QUESTION, "public"),
        ("Jon", FORGOTTEN_REPLY, "public"),
        ("Jon", "Why did you want an aquarium with neon tetras at all?", "public"),
        ("Melanie", PRIVATE_REPLY, private("Melanie")),
        ("Jon", STATEMENT, "public"),
        ("Melanie", AFTER_STATEMENT, "public"),
    ]
    return [
        Line("s1", who, text, S1_START + timedelta(minutes=2 * i), visibility=vis)
        for i, (who, text, vis) in enumerate(turns)
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    u = await build(corpus(), uni=await open_backend(request.param))
    gone = await message_by_text(u, FORGOTTEN_REPLY)
    FORGOTTEN_IDS[id(u)] = gone.id
    await u.agent(AGENT).forget_turn("s1", gone.external_id)
    yield u
    await u.close()


async def recall(uni: Uniko, *, replies: bool = True, viewer: Viewer | None = None) -> ContextBundle:
    # neighbours off: the turn after a hit must come from the reply list alone
    options: dict[str, Any] = {
        **ALL_PHASES,
        "channels": {"reply_expansion": replies, "neighbor_expansion": False, "chunk_to_message": False},
        "graph": {"enabled": False},
    }
    return await uni.agent(AGENT).recall(
        QUERY, limit=50, use_cache=False, explain=True, viewer=viewer, **options
    )


def reply_list(bundle: ContextBundle) -> set[str]:
    assert bundle.trace is not None
    return {
        e["id"]
        for name, ranked in bundle.trace["channels"].items()
        if name.split(":", 1)[0].endswith("_replies_bm25")
        for e in ranked
    }


async def test_the_answer_to_a_found_question_joins_the_pool(uni: Uniko) -> None:
    reply = await message_by_text(uni, REPLY)
    b = await recall(uni)
    assert reply.id in reply_list(b)
    # quoted as its Message, or inside a chosen transcript chunk that replaced it (no turn twice)
    assert any(reply.id in i.message_ids() and i.kind in ("message", "chunk") for i in b.items)


async def test_off_means_no_reply_list(uni: Uniko) -> None:
    b = await recall(uni, replies=False)
    assert not reply_list(b)


async def test_only_questions_by_someone_else_are_answered(uni: Uniko) -> None:
    found = reply_list(await recall(uni))
    # the asker's own next turn, and the turn after a statement, are not replies
    assert (await message_by_text(uni, FOLLOW_UP)).id not in found
    assert (await message_by_text(uni, AFTER_STATEMENT)).id not in found


async def test_a_forgotten_or_private_reply_never_comes_in(uni: Uniko) -> None:
    forgotten = FORGOTTEN_IDS[id(uni)]
    hidden = (await message_by_text(uni, PRIVATE_REPLY)).id
    b = await recall(uni, viewer=Viewer(participant_id="Jon"))
    assert forgotten not in reply_list(b) and hidden not in reply_list(b)
    assert all(i.node_id not in (forgotten, hidden) for i in b.items)
    assert all(PRIVATE_REPLY not in i.content and FORGOTTEN_REPLY not in i.content for i in b.items)
    # the owner of the private turn does get it as the answer to the question
    mine = await recall(uni, viewer=Viewer(participant_id="Melanie"))
    assert hidden in reply_list(mine)
