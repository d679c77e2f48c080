"""The relevance floor (issue 40.5): a narrow question asked with a budget is not padded with turns
that share no word with it and rank far below its best candidate; off, packing is as before."""

from __future__ import annotations

import pytest

from tests.unit.ingest._support import messages, turn
from uniko_memory.config import RecallPacking
from uniko_memory.facade import Uniko
from uniko_memory.recall.assemble import pack
from uniko_memory.recall.config import RecallConfig
from uniko_memory.recall.items import RecallItem, RecallSource
from uniko_memory.recall.relevance import (
    BELOW_FLOOR,
    RelevanceFloor,
    question_terms,
    shares_term,
    stem,
)

AGENT = "floor"
ANSWER = "My friend Maya works at Northwind Analytics as a data engineer."
UNRELATED = [
    "I baked sourdough bread this weekend and it came out flat.",
    "The weather at the lake was lovely, we swam twice.",
    "We watched a documentary about penguins last night.",
    "My guitar needs new strings before the concert.",
    "The garden tomatoes finally turned red.",
    "Did you finish that mystery novel yet?",
]


def item(node_id: str, content: str, score: float, channels: list[str] | None = None) -> RecallItem:
    return RecallItem(
        node_id=node_id,
        kind="message",
        score=score,
        content=content,
        rendered=content,
        sources=[RecallSource(message_id=node_id)],
        channels=channels or ["message_vec"],
    )


def run(items: list[RecallItem], floor: RelevanceFloor | None = None, budget: int = 2000) -> list[str]:
    packed = pack(
        [i.model_copy() for i in items],
        limit=None,
        token_budget=budget,
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        floor=floor,
    )
    return [i.node_id for i in packed.items]


def test_question_terms_leave_out_names_and_stop_words() -> None:
    terms = question_terms(["Maya", "work"], ["Northwind"], participant_names=["Maya Lee", "Ben"])
    assert terms == {"work", "northwind"}
    assert question_terms(["Ben"], participant_names=["Ben"]) == frozenset()


def test_words_match_by_light_stem_and_prefix() -> None:
    terms = question_terms(["adopt", "works"])
    assert shares_term("She adopted a dog", terms)
    assert shares_term("The adoption went through", terms)
    assert shares_term("a worker at the mill", terms)
    assert not shares_term("I baked bread", terms)
    assert stem("likes") == stem("liked") == stem("liking") == stem("like")
    assert stem("class") == "class" and stem("2022") == "2022"


def test_the_floor_keeps_out_unrelated_low_ranked_items_only() -> None:
    ranked = [
        item("a", ANSWER, 1.0),
        item("b", "Quite unrelated but ranked high", 0.9),
        item("c", "She loves her work there", 0.2),  # shares a word
        item("d", "Any plans for the summer?", 0.2, ["message_replies_bm25"]),  # a reply to a hit
        item("e", "I baked sourdough bread", 0.2),
        item("f", "The lake was lovely", 0.1),
    ]
    floor = RelevanceFloor(question_terms(["Maya", "work"], participant_names=["Ana"]), 0.6)
    assert run(ranked) == ["a", "b", "c", "d", "e", "f"]
    assert run(ranked, floor) == ["a", "b", "c", "d"]
    packed = pack(
        ranked, limit=None, token_budget=2000, mmr_lambda=0.7, duplicate_threshold=0.85, floor=floor
    )
    assert packed.dropped == {"e": BELOW_FLOOR, "f": BELOW_FLOOR}
    # A floor of 0 admits everything: the same bundle as no floor.
    assert run(ranked, RelevanceFloor(floor.terms, 0.0)) == run(ranked)


def test_config_fields_and_cache_key() -> None:
    pk = RecallPacking()
    assert pk.relevance_floor == 0.0 and pk.relevance_floor_max_budget == 2000
    on = RecallConfig().with_options(packing={"relevance_floor": 0.6}).result_key()
    off = RecallConfig().with_options(packing={"relevance_floor": 0.0}).result_key()
    assert on != off  # a floored bundle is never served for an unfloored call
    with pytest.raises(Exception, match="relevance_floor"):
        RecallConfig().with_options(packing={"relevance_floor": 1.5})


async def _memory(uni: Uniko) -> None:
    session = uni.agent(AGENT).session("s1")
    texts = [ANSWER, *UNRELATED]
    for i, text in enumerate(texts):
        await session.observe(turn("Ana" if i % 2 == 0 else "Ben", text, i))
    await uni.agent(AGENT).flush()


def _unrelated_turns(bundle_items: list[RecallItem], unrelated_ids: set[str]) -> list[str]:
    return [i.content for i in bundle_items if i.message_ids() and set(i.message_ids()) <= unrelated_ids]


async def test_a_narrow_question_is_not_padded_with_unrelated_turns(uni: Uniko) -> None:
    await _memory(uni)
    agent = uni.agent(AGENT)
    msgs = {m.content: m.id for m in await messages(uni, AGENT)}
    unrelated = {msgs[t] for t in UNRELATED}
    q = "Where does Maya work?"
    floored = await agent.recall(
        q, token_budget=2000, use_cache=False, explain=True, packing={"relevance_floor": 0.6}
    )
    assert any("Northwind" in i.content for i in floored.items)
    assert _unrelated_turns(floored.items, unrelated) == []
    assert floored.trace is not None and BELOW_FLOOR in floored.trace["dropped"].values()
    # Off (the default: a changed value said in other words must not be floored away, see
    # RecallPacking.relevance_floor): the unrelated turns fill the budget, as before the floor.
    plain = await agent.recall(q, token_budget=2000, use_cache=False)
    assert _unrelated_turns(plain.items, unrelated)
    # A long-context budget (over ``relevance_floor_max_budget``) is filled as without the floor.
    long = await agent.recall(q, token_budget=4000, use_cache=False, packing={"relevance_floor": 0.6})
    long_plain = await agent.recall(q, token_budget=4000, use_cache=False, packing={"relevance_floor": 0.0})
    assert [i.node_id for i in long.items] == [i.node_id for i in long_plain.items]
