"""Pseudo-relevance feedback (issue 41.1): the words a question's first hits share."""

from __future__ import annotations

from uniko_memory.recall.expansion import expansion_terms

DOCS = [
    "Caroline: Painting helps me unwind after work, honestly.",
    "Melanie: I unwind with pottery and long walks.",
    "Caroline: A long walk and painting, that is my weekend.",
]


def test_shared_words_the_question_lacks_come_first() -> None:
    terms = expansion_terms("What does Caroline do to relax?", DOCS, names=["Caroline", "Melanie"])
    assert terms[:2] == ["unwind", "painting"]
    assert "caroline" not in terms and "melanie" not in terms  # names occur everywhere
    assert not {"that", "with", "and", "the"} & set(terms)  # function words never


def test_a_word_of_one_hit_alone_or_of_the_question_is_no_expansion() -> None:
    terms = expansion_terms("painting", DOCS, names=["Caroline", "Melanie"])
    assert "painting" not in terms and "pottery" not in terms  # asked already / in one hit only
    assert expansion_terms("relax", DOCS, max_terms=1) == ["unwind"]
    assert expansion_terms("relax", DOCS[:1]) == []  # one hit: nothing is shared


async def test_the_expansion_is_one_more_keyword_list_when_on() -> None:
    from tests.unit.recall._corpus import AGENT, MAIN, build

    uni = await build(MAIN)
    try:
        agent = uni.agent(AGENT)
        q = "What did Melanie do with her kids?"
        off = await agent.recall(q, use_cache=False, explain=True)
        on = await agent.recall(q, use_cache=False, explain=True, channels={"prf_docs": 5})
        assert off.trace is not None and on.trace is not None
        assert "message_prf" not in off.trace["channels"]
        assert "message_prf" in on.trace["channels"] and on.trace.get("expansion")
    finally:
        await uni.close()
