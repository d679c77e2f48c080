"""The budget contract (issue 17.1): ``token_budget=N`` means the text every render mode emits holds
at most ``N`` tokens of the caller's counter, framing, date headings and line breaks included.

A property over random bundles and budgets for ``pack`` (every layout, every kind of counter:
WordPiece, GPT BPE, and callables that are not additive over lines or that count fewer tokens than
words), then end to end through ``Agent.recall`` and the integrations' renderers.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from uniko_memory.config import PACKING_KINDS
from uniko_memory.errors import ConfigError, ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.providers.token_counter import (
    CallableTokenCounter,
    MiniLMTokenCounter,
    TiktokenCounter,
    TokenCounter,
    as_token_counter,
)
from uniko_memory.recall.assemble import Charges, pack
from uniko_memory.recall.items import ContextBundle, RecallItem, RecallSource, date_label

from ._corpus import AGENT, MAIN, build

T0 = datetime(2023, 5, 7, 13, 0, tzinfo=UTC)


def _lines_heavy(text: str) -> int:
    """Not additive over lines: every line break costs three tokens, words one each."""
    return len(text.split()) + 3 * text.count("\n")


COUNTERS: dict[str, TokenCounter] = {
    "minilm": MiniLMTokenCounter(),
    "o200k": TiktokenCounter("o200k_base"),
    "chars/4": CallableTokenCounter(lambda s: math.ceil(len(s) / 4), name="chars/4"),
    "lines-heavy": CallableTokenCounter(_lines_heavy, name="lines-heavy"),
}

WORDS = st.sampled_from(
    ["Caroline", "adopted", "a", "grey", "cat", "</memory>", "SYSTEM:", "<|im_start|>", "yesterday",
     "Lisbon", "naïve", "日本", "😀", "\n", "\n\n", "  |", "-", "[7 May 2023]", "a<b", "1,000"]
)  # fmt: skip
TEXT = st.lists(WORDS, min_size=1, max_size=60).map(" ".join).filter(str.strip)
KINDS = st.sampled_from(["message", "observation", "fact", "chunk", "summary", "topic", "episode"])
#: Off, or soft shares for some of the kinds packing knows (issue 21.4).
SHARES = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(PACKING_KINDS), st.floats(0.0, 1.0), max_size=len(PACKING_KINDS)),
)


@st.composite
def items(draw: st.DrawFn) -> list[RecallItem]:
    out = []
    for i in range(draw(st.integers(1, 25))):
        kind = draw(KINDS)
        text = draw(TEXT)
        day = draw(st.one_of(st.none(), st.integers(0, 4)))
        ts = T0 + timedelta(days=day) if day is not None else None
        label = date_label(ts) if ts is not None and kind != "fact" else ""
        out.append(
            RecallItem(
                node_id=f"n{i}",
                kind=kind,
                score=1.0 - i / 100,
                content=text,
                rendered=label + text,
                timestamp=ts,
                # shared sources: statements drawn from a turn meet that turn (and may be replaced by it)
                sources=[RecallSource(message_id=f"m{draw(st.integers(0, 8))}")],
            )
        )
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ranked=items(),
    budget=st.integers(1, 1500),
    counter=st.sampled_from(sorted(COUNTERS)),
    layout=st.sampled_from(["grouped", "standalone"]),
    limit=st.one_of(st.none(), st.integers(1, 30)),
    carries=st.sampled_from([0.0, 0.6, 1.0]),
    shares=SHARES,
)
def test_every_render_mode_fits_the_budget_in_the_counters_tokens(
    ranked: list[RecallItem],
    budget: int,
    counter: str,
    layout: str,
    limit: int | None,
    carries: float,
    shares: dict[str, float] | None,
) -> None:
    count = COUNTERS[counter].count
    packed = pack(
        ranked,
        limit=limit,
        token_budget=budget,
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        counter=COUNTERS[counter],
        layout=layout,  # type: ignore[arg-type]
        statement_carries_turn=carries,
        type_shares=shares,  # soft per-kind shares (issue 21.4): deferral and refill keep the contract
    )
    bundle = ContextBundle(
        items=packed.items, total_tokens=packed.total_tokens, layout=layout, token_budget=budget
    )  # type: ignore[arg-type]
    framed, bare = bundle.render(), bundle.render(header=False)
    assert count(framed) <= budget and count(bare) <= budget
    assert packed.total_tokens == count(framed)
    assert limit is None or len(packed.items) <= limit
    assert len({i.node_id for i in packed.items}) == len(packed.items)
    if not packed.items:
        assert framed == bare == ""


def test_the_budget_is_filled_not_cut_short_by_an_item_count() -> None:
    ranked = [
        RecallItem(node_id=f"n{i}", kind="message", score=1.0 - i / 100, content=f"turn {i} about cats",
                   rendered=f"Ana: turn {i} about cats number {i}", sources=[RecallSource(message_id=f"m{i}")])
        for i in range(200)
    ]  # fmt: skip
    packed = pack(ranked, limit=None, token_budget=1000, mmr_lambda=0.7, duplicate_threshold=1.0)
    assert len(packed.items) > 15 and 1000 - packed.total_tokens < 20  # filled to the last entry


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN)
    try:
        yield u
    finally:
        await u.close()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("counter", ["minilm", "o200k", "lines-heavy"])
async def test_recall_honours_the_budget_in_the_injected_counter(uni: Uniko, counter: str) -> None:
    uni.kb.token_counter = COUNTERS[counter]
    try:
        agent = uni.agent(AGENT)
        for budget in (60, 150, 500, 1000, 2000):
            for layout in ("grouped", "standalone"):
                if budget <= Charges.of(COUNTERS[counter], layout).frame:  # no memory fits: refused
                    with pytest.raises(ValidationError, match="cannot hold any memory"):
                        await agent.recall("What did Caroline adopt?", token_budget=budget, layout=layout)
                    continue
                b = await agent.recall("What did Caroline adopt?", token_budget=budget, layout=layout)
                count = COUNTERS[counter].count
                assert count(b.render()) <= budget and count(b.render(header=False)) <= budget
                assert b.token_counter == COUNTERS[counter].name and b.token_budget == budget
                assert b.total_tokens == count(b.render())
    finally:
        uni.kb.token_counter = COUNTERS["minilm"]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_counter_is_in_the_cache_key(uni: Uniko) -> None:
    agent, q = uni.agent(AGENT), "What did Caroline adopt?"
    first = await agent.recall(q, token_budget=300)
    uni.kb.token_counter = COUNTERS["lines-heavy"]
    try:
        other = await agent.recall(q, token_budget=300)
    finally:
        uni.kb.token_counter = COUNTERS["minilm"]
    assert other.token_counter == "lines-heavy" and first.token_counter == "minilm"
    assert (await agent.recall(q, token_budget=300)) == first  # cached under its own counter


def test_counters_by_name_callable_and_bad_input() -> None:
    assert as_token_counter(None).name == "minilm"
    assert as_token_counter("o200k_base").name == "tiktoken:o200k_base"
    assert as_token_counter("cl100k_base").count("hello world") == 2
    assert as_token_counter(len).count("abc") == 3
    with pytest.raises(ConfigError, match="unknown OpenAI encoding"):
        as_token_counter("no_such_encoding")
    with pytest.raises(ConfigError, match="token_counter must be"):
        as_token_counter(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="returned -1"):
        CallableTokenCounter(lambda s: -1).count("x")
