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


async def _stored(uni: Uniko, agent: str) -> list[tuple[str, int, str, str]]:
    found = await uni.kb.store.find(agent, Tier.MESSAGE, limit=100, order_by="seq")
    return [(m.external_id, m.seq, m.sender_name, m.content) for m in found if isinstance(m, Message)]


async def _edges(uni: Uniko, agent: str, ids: list[str]) -> list[tuple[str, str, str]]:
    from uniko_memory.model import EdgeType
    from uniko_memory.store.protocol import Direction

    edges = await uni.kb.store.neighbors(agent, ids, list(EdgeType), Direction.OUT)
    return sorted((e.type.value, e.src.split("_", 1)[0], e.dst.split("_", 1)[0]) for e in edges)


LISBON = [
    ("Ana", "I moved to Lisbon with my sister Maria last spring."),
    ("Ben", "Lisbon! Did you find a flat near Alfama?"),
    ("Ana", "Yes, Maria found one. We adopted a cat named Biscuit."),
    ("Ben", "I went hiking in Sintra on Saturday with Carlos."),
    ("Ana", "Say hi to Carlos from me."),
    ("Ben", "Will do. He starts at Google in June."),
]


async def test_a_windowed_import_stores_what_one_observe_per_turn_stores() -> None:
    """Windows (here 4 turns) share an NLP pass and a transaction; ids, order, entities and
    edges are those of one ``observe`` per turn, turns without an id included."""
    uni: Uniko = await open_uni({"ingest": {"import_window_turns": 4}})
    try:
        turns = [turn(who, text, i, id=None if i % 2 else f"t{i}") for i, (who, text) in enumerate(LISBON)]
        for t in turns:
            await uni.agent("one").session("s").observe(t)
        result = await uni.agent("bulk").session("s").observe_each(iter(turns))
        assert (result.stored, result.replays, result.refused) == (len(turns), 0, [])
        await uni.agent("one").flush()
        await uni.agent("bulk").flush()
        one, bulk = await _stored(uni, "one"), await _stored(uni, "bulk")
        assert one == bulk and [seq for _, seq, _, _ in bulk] == list(range(len(turns)))
        for tier in (Tier.ENTITY, Tier.PARTICIPANT, Tier.OBSERVATION, Tier.SESSION):
            assert await uni.kb.store.count("one", tier) == await uni.kb.store.count("bulk", tier) > 0
        ids = {
            a: [m.id for m in await uni.kb.store.find(a, Tier.MESSAGE, limit=100)] for a in ("one", "bulk")
        }
        assert await _edges(uni, "one", ids["one"]) == await _edges(uni, "bulk", ids["bulk"])
        # The same turns through observe are replays of the import (the same ids).
        again = await uni.agent("bulk").session("s").observe(turns[1])
        assert again.was_replay
    finally:
        await uni.close()


async def test_a_windowed_import_settles_each_turn_on_its_own() -> None:
    """Replays (stored before, or twice in one window), an id reused with other content and
    an invalid turn are each about their turn; the rest of the window is stored."""
    uni: Uniko = await open_uni({"ingest": {"import_window_turns": 8, "max_turn_chars": 200}})
    try:
        session = uni.agent(AGENT).session("resume")
        first = [turn(who, text, i, id=f"t{i}") for i, (who, text) in enumerate(LISBON)]
        assert (await session.observe_each(first[:2])).stored == 2  # an interrupted import
        window = [
            *first,  # t0, t1 stored already: replays
            turn("Ana", "Something else entirely.", 9, id="t2"),  # t2 again, other content
            turn("Ana", "x " * 500, 10, id="long"),  # over max_turn_chars
            first[3],  # t3 twice in the window: a replay of itself
        ]
        result = await session.observe_each(window)
        assert result.stored == 4 and result.replays == 3
        assert [(r.position, r.id) for r in result.refused] == [(6, "t2"), (7, "long")]
        assert "different content" in result.refused[0].reason
        stored = await _stored(uni, AGENT)
        assert [ext for ext, *_ in stored] == [f"t{i}" for i in range(len(LISBON))]
        assert [seq for _, seq, _, _ in stored] == list(range(len(LISBON)))
    finally:
        await uni.close()


async def test_a_window_raced_by_another_writer_falls_back_to_one_unit_per_turn() -> None:
    """Another writer storing one of the window's turns between the check and the write makes
    the window's unit a partial replay: each turn is then settled as a single observe."""
    uni: Uniko = await open_uni({"ingest": {"import_window_turns": 8}})
    try:
        session = uni.agent(AGENT).session("race")
        turns = [turn(who, text, i, id=f"r{i}") for i, (who, text) in enumerate(LISBON)]
        atomic = uni._atomic
        real_extract = atomic._extract

        def extract_then_race(prepared: list, names: list[str]) -> None:
            real_extract(prepared, names)
            if len(prepared) > 1:  # the window's pass: another writer stores r2 meanwhile
                uni.run_sync(uni.agent(AGENT).session("race").observe(turns[2]))

        atomic._extract = extract_then_race  # type: ignore[method-assign]
        result = await session.observe_each(turns)
        assert result.stored == len(turns) - 1 and result.replays == 1 and not result.refused
        assert [ext for ext, *_ in await _stored(uni, AGENT)] == [f"r{i}" for i in (2, 0, 1, 3, 4, 5)]
    finally:
        await uni.close()
