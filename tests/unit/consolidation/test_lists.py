"""Compiled lists (issue 41.2): what someone did or has, of one kind, as one dated, cited line.

The rules on hand-made statements (what adds an item, what never does: plans, negations, someone
else's act, an artwork named "painting"), then the facade end to end with the real models: the
line is written by consolidation, cites exactly the turns whose words it carries, grows as new
turns come, keeps the old version for a recall as of the past, is found by a list question, and
loses its line when one of its turns is forgotten.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.ingest._support import open_uni
from uniko_memory.consolidation.lists import LIST_REVISED, LIST_RULE, entries, owner_of
from uniko_memory.ingest import Turn
from uniko_memory.model import EdgeType, Fact, Observation, Tier
from uniko_memory.store.filters import Eq

T = datetime(2024, 5, 3, 18, 0, tzinfo=UTC)


def obs(content: str, subject: str, predicate: str, obj: str | None = None, **extra: object) -> Observation:
    return Observation(
        id="obs_x",
        agent="a",
        content=content,
        subject=subject,
        predicate=predicate,
        object=obj,
        observed_at=T,
        **extra,  # type: ignore[arg-type]
    )


def items(o: Observation) -> list[tuple[str, str]]:
    return [(e.kind, e.item) for e in entries(o)]


@pytest.mark.parametrize(
    ("content", "subject", "predicate", "obj", "expected"),
    [
        ("Maya went camping in the mountains", "Maya", "go", "camping in the mountains", [("activity", "camping")]),
        ("Maya enjoys hiking in the mountains", "Maya", "enjoy_hike_in", "mountains", [("activity", "hiking")]),
        ("Maya signed up for a pottery class", "Maya", "sign_up_for", "pottery class",
         [("event", "pottery class"), ("activity", "pottery")]),
        ("Maya is a big fan of yoga", "Maya", "be", "big fan of yoga", [("activity", "yoga")]),
        ("Maya plays the clarinet", "Maya", "play", "the clarinet", [("instrument", "clarinet")]),
        ("Maya got another cat named Bailey", "Maya", "get", "another cat named Bailey", [("pet", "Bailey the cat")]),
        ("Maya adopted a puppy", "Maya", "adopt", "a puppy", [("pet", "puppy")]),
        ('Maya loved reading "Charlotte\'s Web" as a kid', "Maya", "love_read", "Charlotte's Web",
         [("book", "Charlotte's Web")]),
        ("Maya has been to Paris", "Maya", "be_to", "Paris", [("place", "Paris")]),
        ("Maya went to Leo's cousin's wedding in Leicester", "Maya", "go_to", "Leo's cousin's wedding in Leicester",
         [("place", "Leicester"), ("event", "Leo's cousin's wedding")]),
        ("Maya attended a poetry reading", "Maya", "attend", "a poetry reading", [("event", "poetry reading")]),
        ("Maya painted a sunset with a palm tree", "Maya", "paint", "a sunset with a palm tree",
         [("made", "sunset"), ("activity", "painting")]),
        ("Maya and the kids went swimming", "Maya and the kids", "go", "swimming", [("activity", "swimming")]),
    ],
)  # fmt: skip
def test_a_statement_of_something_done_or_had_adds_its_item(
    content: str, subject: str, predicate: str, obj: str, expected: list[tuple[str, str]]
) -> None:
    assert items(obs(content, subject, predicate, obj)) == expected


@pytest.mark.parametrize(
    ("content", "subject", "predicate", "obj", "why"),
    [
        ("Maya will go camping in June", "Maya", "will_go", "camping", "a plan"),
        ("Maya wants to try pottery", "Maya", "want_to_try", "pottery", "a wish"),
        ("Maya is thinking about going camping", "Maya", "think_about", "going camping", "a thought"),
        ("Maya has not done pottery yet", "Maya", "not_do", "pottery", "a negation"),
        ("Maya no longer goes running", "Maya", "go", "running", "stopped"),
        ("Maya loves that painting", "Maya", "love", "that painting", "an artwork, not the pastime"),
        ("Maya loves that Leo chose pottery", "Maya", "love", "that Leo chose pottery", "someone else's act"),
        ("Maya's kids went camping", "Maya's kids", "go", "camping", "a possession is not the owner"),
        ("camping has been a dream", "camping", "be", "a dream", "no named subject"),
        ("Maya runs a bakery", "Maya", "run", "a bakery", "managing, not running"),
        ("Maya suggests a pottery class", "Maya", "suggest", "a pottery class", "a suggestion"),
    ],
)  # fmt: skip
def test_a_plan_a_negation_or_another_s_act_adds_nothing(
    content: str, subject: str, predicate: str, obj: str, why: str
) -> None:
    assert items(obs(content, subject, predicate, obj)) == [], why


def test_a_superseded_or_redacted_statement_adds_nothing() -> None:
    o = obs("Maya went camping", "Maya", "go", "camping")
    assert items(o)
    assert items(o.model_copy(update={"superseded_at": T})) == []
    assert items(o.model_copy(update={"redacted": True})) == []


def test_the_owner_is_a_name() -> None:
    assert owner_of("Maya Lopez") == "Maya Lopez"
    assert owner_of("Maya and Leo") == "Maya"
    assert owner_of("Maya's brother") is None
    assert owner_of("the kids") is None


async def _lists(agent: object, store: object) -> list[Fact]:
    found = await store.find(agent.agent_id, Tier.FACT, Eq("source_rule", LIST_RULE), limit=100)  # type: ignore[attr-defined]
    return sorted((f for f in found if isinstance(f, Fact)), key=lambda f: f.valid_from)


async def test_consolidation_compiles_a_cited_dated_list_that_grows_and_forgets() -> None:
    uni = await open_uni({"pipeline": {"consolidation_threshold": 1000}}, real_embedder=True)
    try:
        agent = uni.agent("lists")
        store = uni.kb.store
        said = [
            ("s1", T, "We went camping at the lake last weekend, the kids loved it."),
            ("s1", T + timedelta(minutes=1), "Work has been busy, lots of meetings."),
            ("s2", T + timedelta(days=30), "I signed up for a pottery class yesterday!"),
            ("s2", T + timedelta(days=30, minutes=1), "I will try surfing next summer maybe."),
        ]
        for i, (session, at, text) in enumerate(said):
            turn = Turn(id=f"t{i}", sender="Maya", content=text, at=at, addressed_to="Sam")
            await agent.session(session).observe(turn)
        await agent.flush()
        stats = await agent.consolidate()
        assert stats is not None and stats.lists_written >= 1
        (line,) = [f for f in await _lists(agent, store) if f.category == "list:activity"]
        assert line.valid_to is None and line.text is not None
        assert line.text.startswith("Maya's activities: camping (")
        assert "pottery (June 2024)" in line.text
        assert "surfing" not in line.text  # a plan is not something done
        # It cites the two turns that carry an item, and no other.
        support = await store.neighbors(agent.agent_id, [line.id], [EdgeType.SUPPORTED_BY])
        cited = await store.get_many(agent.agent_id, [e.dst for e in support])
        words = [o.content for o in cited.values() if isinstance(o, Observation)]
        assert len(words) == 2
        assert any("camping" in w for w in words) and any("pottery" in w for w in words)

        bundle = await agent.recall("What activities does Maya do?", token_budget=200)
        assert "Maya's activities: camping" in bundle.render()
        profile = await agent.profile("Maya", max_tokens=400)
        assert any(i.content.startswith("Maya's activities:") and i.sources for i in profile.items)

        # A new item: a new version; the old one is closed, and read as of the past.
        await agent.session("s3").observe(
            Turn(
                sender="Maya",
                content="I went hiking with Leo on Sunday.",
                at=T + timedelta(days=60),
                addressed_to="Sam",
            )
        )
        await agent.flush()
        await agent.consolidate()
        versions = [f for f in await _lists(agent, store) if f.category == "list:activity"]
        assert [f.valid_to is None for f in versions] == [False, True]
        assert versions[0].invalidation_reason == LIST_REVISED
        assert "hiking" in (versions[1].text or "") and "pottery" in (versions[1].text or "")
        past = await agent.recall(
            "What activities does Maya do?", token_budget=200, reference_ts=T + timedelta(days=40)
        )
        assert "hiking" not in past.render().split("Maya's activities:")[-1].split("\n")[0]

        # Forgetting a turn the line quotes takes the line away (until a later cycle rebuilds it).
        await agent.forget_turn("s1", "t0")
        live = [f for f in await _lists(agent, store) if f.valid_to is None and not f.redacted]
        assert all("camping" not in (f.text or "") for f in live)
    finally:
        await uni.close()


@pytest.mark.parametrize("backend", ["embedded", "weaviate"])
async def test_every_store_keeps_the_list_and_its_versions(backend: str) -> None:
    """The list's reads (subject_key, source_rule, valid_to filters) and writes on both stores."""
    from tests.unit.wakeup._support import open_backend

    uni = await open_backend(backend)
    try:
        agent = uni.agent("lists-store")
        store = uni.kb.store
        for i, text in enumerate(["We went camping last weekend.", "I took up pottery on Monday."]):
            turn = Turn(
                id=f"t{i}", sender="Maya", content=text, at=T + timedelta(days=7 * i), addressed_to="Sam"
            )
            await agent.session(f"s{i}").observe(turn)
        await agent.flush()
        await agent.consolidate()
        await agent.session("s9").observe(
            Turn(
                id="t9", sender="Maya", content="I went hiking with Leo yesterday.", at=T + timedelta(days=30)
            )
        )
        await agent.flush()
        await agent.consolidate()
        versions = [f for f in await _lists(agent, store) if f.category == "list:activity"]
        assert [f.valid_to is None for f in versions] == [False, True]
        assert all(w in (versions[1].text or "") for w in ("camping", "pottery", "hiking"))
        support = await store.neighbors(agent.agent_id, [versions[1].id], [EdgeType.SUPPORTED_BY])
        assert len(support) == 3
    finally:
        await uni.close()
