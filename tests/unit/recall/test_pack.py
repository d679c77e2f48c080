"""pack(): MMR under the limit and the real token budget, and provenance-based redundancy."""

from __future__ import annotations

from uniko_memory.recall.assemble import pack
from uniko_memory.recall.items import RecallItem, RecallSource
from uniko_memory.tokens import count_tokens


def item(node_id: str, kind: str, content: str, score: float, *msgs: str) -> RecallItem:
    return RecallItem(
        node_id=node_id,
        kind=kind,  # type: ignore[arg-type]
        score=score,
        content=content,
        rendered=content,
        sources=[RecallSource(message_id=m) for m in msgs],
    )


def run(items: list[RecallItem], budget: int = 1000, limit: int = 50):
    return pack(items, limit=limit, token_budget=budget, mmr_lambda=0.7, duplicate_threshold=0.85)


def test_statement_whose_turn_is_already_quoted_is_dropped() -> None:
    turn = item(
        "m1", "message", "Caroline: I adopted a grey cat from the Boston shelter yesterday.", 1.0, "m1"
    )
    obs = item("o1", "observation", "Caroline adopted a cat on 6 May 2023.", 0.9, "m1")
    other = item("m2", "message", "Melanie: My kids painted a sunrise at the lake.", 0.8, "m2")
    packed = run([turn, obs, other])
    assert [i.node_id for i in packed.items] == ["m1", "m2"]
    assert packed.dropped["o1"] == "source turns already in bundle"


def test_statement_chosen_first_keeps_its_turn() -> None:
    obs = item("o1", "observation", "Caroline adopted a cat on 6 May 2023.", 1.0, "m1")
    turn = item(
        "m1", "message", "Caroline: I adopted a grey cat from the Boston shelter yesterday.", 0.9, "m1"
    )
    assert [i.node_id for i in run([obs, turn]).items] == ["o1", "m1"]


def test_fact_with_an_unquoted_source_turn_is_kept() -> None:
    turn = item("m1", "message", "Caroline: I adopted a grey cat from the Boston shelter.", 1.0, "m1")
    fact = item("f1", "fact", "Caroline has a cat named Bailey.", 0.9, "m1", "m7")
    assert [i.node_id for i in run([turn, fact]).items] == ["m1", "f1"]


def test_budget_is_never_exceeded_and_smaller_items_still_fit() -> None:
    big = item("m1", "message", " ".join(["word"] * 60), 1.0, "m1")
    small = item("m2", "message", "Short turn here.", 0.5, "m2")
    budget = count_tokens(small.content) + 5
    packed = run([big, small], budget=budget)
    assert [i.node_id for i in packed.items] == ["m2"] and packed.total_tokens <= budget
    assert packed.dropped["m1"] == "token budget"
