"""The uniko system is asked exactly as a user would ask, and what it is scored on is ``bundle.render()``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from benchmarks.harness.convert import load_any
from benchmarks.harness.run import DEFAULT_TOKEN_BUDGET, TOKEN_COUNTER, reference_time
from benchmarks.harness.uniko_system import UnikoSystem
from tests.unit.ingest._support import FakeEmbedder

from uniko_memory.facade import Agent
from uniko_memory.recall import RecallConfig

BUDGETS = (120, 200, 400, 1000)


@pytest.fixture
async def spied(monkeypatch: pytest.MonkeyPatch, data_dir: Path):
    """A set-up UnikoSystem on the tiny conversation; every ``Agent.recall`` call and bundle recorded."""
    calls: list[tuple[tuple[Any, ...], dict[str, Any], Any]] = []
    original = Agent.recall

    async def recall(self: Agent, *args: Any, **kwargs: Any) -> Any:
        bundle = await original(self, *args, **kwargs)
        calls.append((args, kwargs, bundle))
        return bundle

    monkeypatch.setattr(Agent, "recall", recall)
    conv = load_any(data_dir / "locomo_tiny.json", "locomo").conversations[0]
    system = UnikoSystem(embedder=FakeEmbedder())
    await system.setup(conv)
    yield system, conv, calls
    await system.close()


async def test_the_default_call_path_and_nothing_else(spied) -> None:
    system, conv, calls = spied
    q = conv.questions[1]
    ts = reference_time(conv, q)
    for budget in BUDGETS:
        await system.retrieve(q, ts, token_budget=budget)
    await system.retrieve(q, ts, limit=3)
    assert len(calls) == len(BUDGETS) + 1
    for (args, kwargs, _), budget in zip(calls, BUDGETS, strict=False):
        # the question alone (no RecallConfig of the harness's), the budget, the question time
        assert args == (q.text,)
        assert kwargs == {"token_budget": budget, "reference_ts": ts, "use_cache": False}
    args, kwargs, bundle = calls[-1]
    assert args == (q.text,) and kwargs == {"limit": 3, "reference_ts": ts, "use_cache": False}
    assert bundle.token_budget == DEFAULT_TOKEN_BUDGET == RecallConfig().token_budget


async def test_the_text_scored_is_the_rendered_bundle_within_the_budget(spied) -> None:
    system, conv, calls = spied
    for q in conv.questions:
        ts = reference_time(conv, q)
        for budget in BUDGETS:
            res = await system.retrieve(q, ts, token_budget=budget)
            bundle = calls[-1][2]
            assert res.text == bundle.render()
            assert TOKEN_COUNTER.count(res.text) <= budget
            assert res.reported_tokens == bundle.total_tokens == TOKEN_COUNTER.count(res.text)
            assert len(res.items) == len(bundle.items)  # the items in that text, in the bundle's order
    # with room for the whole (five-turn) conversation, every gold turn is in the text: the budget binds, no limit
    for q in conv.questions:
        res = await system.retrieve(q, reference_time(conv, q), token_budget=1000)
        assert set(q.gold_turn_ids) <= {t for i in res.items for t in i.covered_turn_ids}
