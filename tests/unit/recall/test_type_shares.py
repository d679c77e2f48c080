"""Soft per-kind budget shares in packing (issue 21.4): a share is a cap while packing, never a
reservation; what a kind leaves unused, and what the others were deferred from, refills the budget.
Off by default, and then packing is exactly what it was without the feature."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pydantic import ValidationError

from uniko_memory.config import RecallPacking
from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.providers.token_counter import MiniLMTokenCounter
from uniko_memory.recall.assemble import Charges, Packed, pack
from uniko_memory.recall.config import RecallConfig
from uniko_memory.recall.items import RecallItem, RecallSource

from ._corpus import AGENT, ALL_PHASES, MAIN, build

FRAME = Charges.of(MiniLMTokenCounter(), "grouped").frame
QUESTIONS = [
    "What did Caroline adopt?",
    "Where does the support group meet?",
    "What is Melanie painting?",
    "When did Caroline go to the support group?",
]


def item(node_id: str, kind: str, content: str, score: float, msg: str) -> RecallItem:
    return RecallItem(
        node_id=node_id,
        kind=kind,  # type: ignore[arg-type]
        score=score,
        content=content,
        rendered=content,
        sources=[RecallSource(message_id=msg)],
    )


def run(items: list[RecallItem], budget: int, shares: dict[str, float] | None = None) -> Packed:
    return pack(
        [i.model_copy() for i in items],
        limit=None,
        token_budget=budget,
        mmr_lambda=0.7,
        duplicate_threshold=0.85,
        type_shares=shares,
    )


def messages(n: int, start: float = 1.0) -> list[RecallItem]:
    return [
        item(f"m{i}", "message", f"Ana: turn {i} about the {w} trip", start - i / 1000, f"m{i}")
        for i, w in zip(range(n), ["lake", "city", "farm", "beach", "forest", "desert"] * 10, strict=False)
    ]


def facts(n: int, start: float) -> list[RecallItem]:
    return [
        item(f"f{i}", "fact", f"Bo owns {i} distinct {w} books", start - i / 1000, f"fm{i}")
        for i, w in zip(range(n), ["red", "blue", "green", "old", "rare", "thin"] * 10, strict=False)
    ]


def test_off_by_default() -> None:
    assert RecallPacking().type_shares is None
    assert RecallConfig().packing.type_shares is None


def test_a_kind_over_its_share_waits_and_the_others_get_their_turn() -> None:
    ranked = messages(80) + facts(40, start=0.5)  # every Message outranks every Fact
    plain = run(ranked, 400)
    assert all(i.kind == "message" for i in plain.items)
    shared = run(ranked, 400, {"message": 0.5})
    kinds = [i.kind for i in shared.items]
    assert "fact" in kinds and "message" in kinds
    msg_tokens = sum(i.tokens for i in shared.items if i.kind == "message")
    fact_tokens = sum(i.tokens for i in shared.items if i.kind == "fact")
    # Facts took the room the Messages' share left them; the budget is still filled (once no Fact
    # fits, a deferred Message may refill the last few tokens: at most one ~12-token entry).
    room = 400 - FRAME
    assert room * 0.5 - 12 <= msg_tokens <= room * 0.5 + 12 and fact_tokens >= room * 0.4
    assert 400 - shared.total_tokens < 12


def test_a_share_is_not_a_reservation_unused_room_backfills() -> None:
    ranked = messages(80) + facts(1, start=0.5)  # one Fact only: far below a 50% share
    shared = run(ranked, 400, {"message": 0.5, "fact": 0.5})
    assert [i.node_id for i in shared.items if i.kind == "fact"] == ["f0"]
    # The Messages deferred at their share refilled the rest of the budget.
    assert 400 - shared.total_tokens < 12
    assert sum(i.tokens for i in shared.items if i.kind == "message") > (400 - FRAME) * 0.8


def test_refill_is_in_rank_order_and_still_drops_near_duplicates() -> None:
    twin = item("m0b", "message", "Ana: turn 0 about the lake trip", 0.99, "mx")
    ranked = [*messages(10)[:1], twin, *messages(10)[1:], *facts(3, start=0.2)]
    shared = run(ranked, 400, {"message": 0.1})
    ids = [i.node_id for i in shared.items]
    assert "m0b" not in ids and shared.dropped["m0b"] == "near-duplicate"
    refilled = [i for i in ids if i.startswith("m")]
    assert refilled == sorted(refilled, key=lambda x: int(x[1:]))


def test_shares_that_never_bind_change_nothing() -> None:
    ranked = messages(30) + facts(20, start=0.5)
    for budget in (40, 200, 1000):
        base = run(ranked, budget)
        full = run(ranked, budget, {"fact": 1.0, "observation": 1.0, "message": 1.0, "chunk": 1.0})
        assert [i.model_dump() for i in full.items] == [i.model_dump() for i in base.items]
        assert full.total_tokens == base.total_tokens and full.dropped == base.dropped


def test_unknown_kinds_and_bad_shares_are_clear_errors() -> None:
    with pytest.raises((ConfigError, ValidationError), match="unknown kinds"):
        RecallConfig.model_validate({"packing": {"type_shares": {"facts": 0.5}}})
    with pytest.raises((ConfigError, ValidationError), match="within"):
        RecallConfig.model_validate({"packing": {"type_shares": {"fact": 1.5}}})


def test_shares_are_in_the_cache_key() -> None:
    base = RecallConfig()
    on = RecallConfig.model_validate({"packing": {"type_shares": {"fact": 0.4}}})
    assert base.result_key() != on.result_key()
    assert on.result_key()["packing"]["type_shares"] == {"fact": 0.4}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN, consolidate=True)
    try:
        yield u
    finally:
        await u.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_default_recall_is_byte_identical_to_packing_without_shares(uni: Uniko) -> None:
    """The default bundle equals the one packed with the feature absent (``type_shares`` never
    passed): what the user gets today does not move."""
    bundle_mod = importlib.import_module("uniko_memory.recall.bundle")

    agent = uni.agent(AGENT)
    real = bundle_mod.pack

    def without_shares(*args: object, **kwargs: object) -> Packed:
        assert kwargs.pop("type_shares") is None  # the default config passes None
        return real(*args, **kwargs)  # type: ignore[arg-type]

    for q in QUESTIONS:
        for budget in (120, 600, 2000):
            default = await agent.recall(q, token_budget=budget, use_cache=False, **ALL_PHASES)
            bundle_mod.pack = without_shares  # type: ignore[assignment]
            try:
                absent = await agent.recall(q, token_budget=budget, use_cache=False, **ALL_PHASES)
            finally:
                bundle_mod.pack = real
            assert default.render() == absent.render()
            assert [i.model_dump() for i in default.items] == [i.model_dump() for i in absent.items]


@pytest.mark.asyncio(loop_scope="module")
async def test_recall_with_shares_changes_the_mix_and_keeps_the_budget(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    q = "What did Caroline do?"
    shares = {"message": 0.3, "observation": 0.3, "fact": 0.3, "chunk": 0.1}
    on = await agent.recall(q, token_budget=300, use_cache=False, packing={"type_shares": shares})
    assert on.total_tokens <= 300 and on.total_tokens == uni.kb.token_counter.count(on.render())
    assert len({i.kind for i in on.items}) >= 2
