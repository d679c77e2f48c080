"""pack(): MMR under the limit and the real token budget, and provenance-based redundancy."""

from __future__ import annotations

from datetime import UTC, datetime

from uniko_memory.providers.token_counter import MiniLMTokenCounter
from uniko_memory.recall.assemble import Charges, pack
from uniko_memory.recall.items import ContextBundle, RecallItem, RecallSource, date_label, render_item
from uniko_memory.tokens import count_tokens

#: The header line and the <memory> tags, charged once per bundle.
FRAME = Charges.of(MiniLMTokenCounter(), "grouped").frame


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


def test_statement_drawn_from_one_turn_makes_that_turn_redundant() -> None:
    obs = item("o1", "observation", "Caroline adopted a cat on 6 May 2023.", 1.0, "m1")
    turn = item(
        "m1", "message", "Caroline: I adopted a grey cat from the Boston shelter yesterday.", 0.9, "m1"
    )
    other = item("m2", "message", "Melanie: My kids painted a sunrise at the lake.", 0.8, "m2")
    packed = run([obs, turn, other])
    assert [i.node_id for i in packed.items] == ["o1", "m2"]
    assert packed.dropped["m1"] == "turn already stated in bundle"


def test_one_clause_of_a_longer_turn_is_replaced_by_the_turn() -> None:
    """Issue 17: an Observation that carries one clause of a turn made the turn redundant, and the
    answer ("once or twice a year") never reached the prompt. The turn now replaces it."""
    obs = item("o1", "observation", "Seeing Melanie's kids' faces at the beach was the best.", 1.0, "m1")
    turn = item(
        "m1",
        "message",
        "Melanie: Seeing my kids' faces at the beach was the best! We don't go often, usually only "
        "once or twice a year.",
        0.9,
        "m1",
    )
    other = item("m2", "message", "Caroline: I adopted a grey cat.", 0.8, "m2")
    packed = pack(
        [obs, turn, other],
        limit=None,
        token_budget=1000,
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        statement_carries_turn=0.6,
    )
    assert [i.node_id for i in packed.items] == ["m1", "m2"]
    assert packed.dropped["o1"] == "source turns already in bundle"
    bundle = ContextBundle(items=packed.items, total_tokens=packed.total_tokens)
    assert packed.total_tokens == count_tokens(bundle.render()) == FRAME + sum(i.tokens for i in packed.items)
    # A statement that holds most of its turn's words still stands for it.
    whole = item("o2", "observation", "Caroline adopted a grey cat.", 1.0, "m2")
    kept = pack([whole, other], limit=None, token_budget=1000, mmr_lambda=0.7, duplicate_threshold=0.85,
                statement_carries_turn=0.6)  # fmt: skip
    assert [i.node_id for i in kept.items] == ["o2"] and kept.dropped["m2"] == "turn already stated in bundle"
    # The replacement must fit: at a budget the statement fits and the turn does not, it stays.
    tight = FRAME + count_tokens(render_item(obs)) + 2
    assert [i.node_id for i in pack([obs, turn], limit=None, token_budget=tight, mmr_lambda=0.7,
            duplicate_threshold=0.85, statement_carries_turn=0.6).items] == ["o1"]  # fmt: skip


def test_fact_drawn_from_several_turns_does_not_replace_them() -> None:
    fact = item("f1", "fact", "Caroline has a cat.", 1.0, "m1", "m7")
    turn = item("m1", "message", "Caroline: I adopted a grey cat from the Boston shelter.", 0.9, "m1")
    assert [i.node_id for i in run([fact, turn]).items] == ["f1", "m1"]


def test_fact_with_an_unquoted_source_turn_is_kept() -> None:
    turn = item("m1", "message", "Caroline: I adopted a grey cat from the Boston shelter.", 1.0, "m1")
    fact = item("f1", "fact", "Caroline has a cat named Bailey.", 0.9, "m1", "m7")
    assert [i.node_id for i in run([turn, fact]).items] == ["m1", "f1"]


def test_budget_is_never_exceeded_and_smaller_items_still_fit() -> None:
    big = item("m1", "message", " ".join(["word"] * 60), 1.0, "m1")
    small = item("m2", "message", "Short turn here.", 0.5, "m2")
    budget = FRAME + count_tokens(render_item(small)) + 5
    packed = run([big, small], budget=budget)
    assert [i.node_id for i in packed.items] == ["m2"] and packed.total_tokens <= budget
    assert packed.dropped["m1"] == "token budget"


def dated(node_id: str, kind: str, text: str, score: float, day: int, *msgs: str) -> RecallItem:
    ts = datetime(2023, 5, day, 13, 0, tzinfo=UTC)
    it = item(node_id, kind, text, score, *msgs)
    return it.model_copy(update={"rendered": date_label(ts) + text, "timestamp": ts})


def test_each_date_is_charged_once_and_rendered_once() -> None:
    a = dated("m1", "message", "Caroline: I adopted a grey cat.", 1.0, 7, "m1")
    b = dated("m2", "message", "Melanie: My kids painted a sunrise.", 0.9, 7, "m2")
    c = dated("m3", "message", "Melanie: We went camping at the lake.", 0.8, 9, "m3")
    packed = run([a, b, c])
    by_id = {i.node_id: i for i in packed.items}

    def heading(it: RecallItem) -> int:
        return count_tokens(date_label(it.timestamp).strip())

    # the first of its date writes the heading line; each pays its entry as it renders
    assert by_id["m1"].tokens == heading(a) + count_tokens(render_item(a, dated=False))
    assert by_id["m2"].tokens == count_tokens(render_item(b, dated=False))
    assert by_id["m3"].tokens == heading(c) + count_tokens(render_item(c, dated=False))
    bundle = ContextBundle(items=packed.items, total_tokens=packed.total_tokens)
    assert packed.total_tokens == FRAME + sum(i.tokens for i in packed.items) == count_tokens(bundle.render())
    assert b.tokens == count_tokens(render_item(b))  # the caller's item keeps its standalone count
    text = bundle.render(header=False)
    # newest date first; under a date, the ranking order
    assert text.split("\n") == [
        "[9 May 2023]",
        "- Melanie: We went camping at the lake.",
        "[7 May 2023]",
        "- Caroline: I adopted a grey cat.",
        "- Melanie: My kids painted a sunrise.",
    ]


def test_a_shared_date_lets_a_tighter_budget_hold_more() -> None:
    a = dated("m1", "message", "Caroline: I adopted a grey cat.", 1.0, 7, "m1")
    b = dated("m2", "message", "Melanie: My kids painted a sunrise.", 0.9, 7, "m2")
    budget = FRAME + count_tokens(render_item(a)) + count_tokens(render_item(b)) - 1
    assert [i.node_id for i in run([a, b], budget=budget).items] == ["m1", "m2"]
    ranked_frame = Charges.of(MiniLMTokenCounter(), "standalone").frame  # its header has no order
    standalone = pack(
        [a, b],
        limit=None,
        token_budget=budget - (FRAME - ranked_frame),
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        layout="standalone",
    )
    assert [i.node_id for i in standalone.items] == ["m1"]  # each entry pays its own date there


def test_chunks_take_at_most_their_share_of_the_budget() -> None:
    words = " ".join(f"w{i}" for i in range(40))
    c1 = item("c1", "chunk", "Caroline: " + words, 1.0, "m1", "m2")
    c2 = item("c2", "chunk", "Melanie: " + words.replace("w", "v"), 0.9, "m3", "m4")
    turn = item("m5", "message", "Melanie: We went camping at the lake.", 0.8, "m5")
    budget = FRAME + 4 * count_tokens(c1.content)
    pack_ = pack(
        [c1, c2, turn],
        limit=50,
        token_budget=budget,
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        chunk_share=0.3,
    )
    assert [i.node_id for i in pack_.items] == ["c1", "m5"]
    assert pack_.dropped["c2"] == "chunk share of the budget"
    assert [i.node_id for i in run([c1, c2, turn], budget=budget).items] == ["c1", "c2", "m5"]


def test_no_turn_is_quoted_twice_when_a_chunk_carries_it() -> None:
    """Issue 40.5: the CLI's 2,000-token recall printed turns as Messages and again inside the
    transcript chunk that quotes them. The chunk replaces the Messages it quotes word for word."""
    a = item("m1", "message", "Priya: The new job is going well.", 1.0, "m1")
    b = item("m2", "message", "Tomas: My ankle healed and I ran 18 kilometers.", 0.9, "m2")
    chunk = item(
        "c1",
        "chunk",
        "Priya: The new job is going well.\nTomas: My ankle healed and I ran 18 kilometers.\n"
        "Priya: Biscuit learned to open the kitchen cabinet.",
        0.8,
        "m1",
        "m2",
        "m3",
    )
    statements = item("c2", "chunk", "Priya says the job is going well", 0.7, "m1")  # not verbatim
    packed = run([a, b, chunk, statements])
    ids = [i.node_id for i in packed.items]
    assert "c1" in ids and "m1" not in ids and "m2" not in ids
    assert packed.dropped["m1"] == packed.dropped["m2"] == "turn quoted in a chosen chunk"
    quoted = [m for i in packed.items if i.kind in ("message", "chunk") for m in i.message_ids()]
    assert quoted.count("m2") == 1


def test_a_chunk_over_its_share_leaves_the_messages_it_would_replace() -> None:
    a = item("m1", "message", "Priya: The new job is going well.", 1.0, "m1")
    chunk = item(
        "c1", "chunk", "Priya: The new job is going well.\nTomas: Great to hear it.", 0.8, "m1", "m2"
    )
    packed = pack(
        [a, chunk], limit=50, token_budget=1000, mmr_lambda=0.7, duplicate_threshold=0.85, chunk_share=0.0
    )
    assert [i.node_id for i in packed.items] == ["m1"]
    assert packed.dropped["c1"] == "chunk share of the budget"
