"""Visibility pushed into candidate generation: a viewer never receives what it may not see, and
the bundle is still full (the filter is not applied after truncation)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from uniko_memory.facade import Agent, Uniko
from uniko_memory.model import Message, Tier, Viewer, private, team
from uniko_memory.recall import ContextBundle

from ._corpus import AGENT, ALL_PHASES, S1_START, Line, build, nodes_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET_WORDS = ("zebra", "vault", "4471", "sapphire")
# The private turns match the garden questions BETTER than the public ones (more shared words), so
# an after-the-fact filter would leave the bundle short.
PRIVATE = [
    "Garden tomatoes garden basil garden secret: the vault code is zebra-4471.",
    "My garden tomatoes and garden basil hide the sapphire ring under the shed.",
    "Garden tomatoes, garden basil, garden peppers: zebra vault plans for the garden.",
    "The garden tomatoes sapphire stash and garden basil vault are mine alone.",
    "Garden basil garden tomatoes garden zebra sapphire vault 4471.",
]
PUBLIC = [
    "The garden tomatoes are finally turning red this week.",
    "I planted basil next to the tomatoes in the garden.",
    "Our community garden needs more volunteers on Sunday.",
    "The garden peppers got eaten by a rabbit again.",
    "I water the tomatoes every morning before work.",
    "Basil pesto from the garden is the best thing about summer.",
    "The garden club meets at the library on Thursdays.",
    "We built a raised bed for the tomatoes and herbs.",
    "My neighbor gave me cucumber seedlings for the garden.",
    "The tomatoes need a cage or they fall over.",
    "Snails ate half of the basil in the garden.",
    "I compost kitchen scraps for the garden beds.",
]
TEAM = "Team garden notes: tomatoes and basil rotate beds next year."


def corpus() -> list[Line]:
    lines: list[Line] = []
    t = S1_START
    for i, text in enumerate(PUBLIC):
        lines.append(Line("g", "Melanie" if i % 2 else "Caroline", text, t + timedelta(minutes=2 * i)))
        if i < len(PRIVATE):
            lines.append(
                Line("g", "p2", PRIVATE[i], t + timedelta(minutes=2 * i + 1), visibility=private("p2"))
            )
    lines.append(Line("g", "Caroline", TEAM, t + timedelta(hours=1), visibility=team("growers")))
    return lines


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(corpus(), consolidate=True)  # private turns make private Facts too
    try:
        yield u
    finally:
        await u.close()


@pytest.fixture
def agent(uni: Uniko) -> Agent:
    return uni.agent(AGENT)


async def private_message_ids(uni: Uniko) -> set[str]:
    msgs = await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=1000)
    return {m.id for m in msgs if isinstance(m, Message) and m.visibility == private("p2")}


async def ask(agent: Agent, query: str, **options: Any) -> ContextBundle:
    return await agent.recall(query, use_cache=False, **options)


QUESTIONS = [
    "garden tomatoes garden basil",
    "What is in the garden?",
    "zebra vault code 4471",
    "sapphire ring",
    "Who waters the tomatoes?",
]


@pytest.mark.parametrize("phases", ["default", "all"])
async def test_viewer_never_gets_private_nodes_and_the_bundle_is_full(
    uni: Uniko, agent: Agent, phases: str
) -> None:
    extra = ALL_PHASES if phases == "all" else {}
    secret_msgs = await private_message_ids(uni)
    assert len(secret_msgs) == len(PRIVATE)
    unrestricted = await ask(agent, "garden tomatoes garden basil", limit=6, **extra)
    top = await nodes_of(uni, unrestricted)
    # without a viewer the private turns dominate this question ...
    assert sum(n.visibility != "public" for n in top.values()) >= 1
    for q in QUESTIONS:
        b = await ask(agent, q, limit=6, viewer=Viewer(participant_id="p1"), **extra)
        nodes = await nodes_of(uni, b)
        assert all(n.visibility == "public" for n in nodes.values()), q
        for item in b.items:
            if item.kind in ("message", "observation"):
                assert not set(item.message_ids()) & secret_msgs, (q, item.rendered)
        if q.startswith("garden"):
            # ... and the viewer's bundle is still full of public evidence
            assert len(b.items) == 6


async def test_owner_and_team_members_see_their_items(uni: Uniko, agent: Agent) -> None:
    secret_msgs = await private_message_ids(uni)
    b = await ask(agent, "zebra vault code 4471", viewer=Viewer(participant_id="p2"))
    assert {m for i in b.items for m in i.message_ids()} & secret_msgs
    team_view = Viewer(participant_id="p1", teams=frozenset({"growers"}))
    outsider = Viewer(participant_id="p1")
    q = "team garden notes rotate beds next year"
    # phase1_strategy "off": Boost can push this turn out of the bundle (see test_cascade)
    member = await ask(agent, q, viewer=team_view, phases={"phase1_strategy": "off"})
    assert any(TEAM in i.content for i in member.items)
    assert not any(TEAM in i.content for i in (await ask(agent, q, viewer=outsider, **ALL_PHASES)).items)
    assert not any(
        TEAM in i.content
        for i in (await ask(agent, q, viewer=outsider, phases={"phase1_strategy": "off"})).items
    )


async def test_private_facts_stay_private(uni: Uniko, agent: Agent) -> None:
    facts = await uni.kb.store.find(AGENT, Tier.FACT, limit=1000)
    assert any(f.visibility == private("p2") for f in facts)
    for q in QUESTIONS:
        b = await ask(agent, q, limit=15, viewer=Viewer(participant_id="p1"), **ALL_PHASES)
        for item in b.items:
            if item.kind == "fact":
                assert not any(w in item.content.lower() for w in SECRET_WORDS), item.content
    mine = await ask(agent, "zebra vault code 4471", viewer=Viewer(participant_id="p2"), **ALL_PHASES)
    assert mine.items


async def test_unrestricted_recall_sees_everything(uni: Uniko, agent: Agent) -> None:
    b = await ask(agent, "zebra vault code 4471", limit=10)
    assert {m for i in b.items for m in i.message_ids()} & await private_message_ids(uni)


@pytest.mark.parametrize("phases", ["default", "all"])
async def test_no_item_carries_private_evidence(uni: Uniko, agent: Agent, phases: str) -> None:
    extra = ALL_PHASES if phases == "all" else {}
    secret_msgs = await private_message_ids(uni)
    for q in QUESTIONS:
        b = await ask(agent, q, limit=15, viewer=Viewer(participant_id="p1"), **extra)
        for item in b.items:
            assert not set(item.message_ids()) & secret_msgs, (q, item.kind, item.rendered)
            assert not any(w in item.content.lower() for w in SECRET_WORDS), (q, item.kind, item.content)
