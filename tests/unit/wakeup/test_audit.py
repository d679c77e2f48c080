"""``Agent.audit`` on both stores: one check per read path, clean on a healthy memory with
forgotten, private and invalidated nodes in it; a leaking path is caught with its offending ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio

from tests.unit.recall._corpus import AGENT, MAIN, S1_START, Line, build, message_by_text
from uniko_memory.facade import Uniko
from uniko_memory.integrity import PROBES, AuditConfig, ReadPath, probe_for
from uniko_memory.model import Fact, Tier, private
from uniko_memory.store.protocol import Hit

from ._support import BACKENDS, open_backend

pytestmark = pytest.mark.asyncio(loop_scope="module")
SECRET = "My passport number is QX7781234 and I keep it in the blue drawer."
PRIVATE = "I keep the spare house key under the zebra statue."
SMALL = AuditConfig(probe_queries=3, sample_size=20)


@pytest_asyncio.fixture(loop_scope="module", params=BACKENDS)
async def uni(request: pytest.FixtureRequest) -> AsyncIterator[Uniko]:
    lines = [
        *MAIN,
        Line("s1", "Caroline", SECRET, S1_START + timedelta(minutes=30)),
        Line("s1", "Melanie", PRIVATE, S1_START + timedelta(minutes=31), visibility=private("p-mel")),
    ]
    u = await build(lines, uni=await open_backend(request.param), consolidate=True)
    agent = u.agent(AGENT)
    await agent.forget_turn("s1", (await message_by_text(u, SECRET)).external_id)
    store = u.kb.store
    fact = next(f for f in await store.find(AGENT, Tier.FACT, limit=100) if isinstance(f, Fact))
    async with store.unit(AGENT) as w:
        w.put(fact.model_copy(update={"valid_to": fact.valid_from + timedelta(days=1)}))
    try:
        yield u
    finally:
        await u.close()


async def test_every_read_path_has_its_probe() -> None:
    assert set(PROBES) == set(ReadPath)
    with pytest.raises(NotImplementedError):
        probe_for("no-such-path")  # type: ignore[arg-type]


async def test_a_healthy_memory_is_clean_on_every_path(uni: Uniko) -> None:
    report = await uni.agent(AGENT).audit(SMALL)
    assert report.ok, report.offending_ids()
    assert [c.path for c in report.checks] == list(ReadPath)
    assert report.sampled["forgotten"] > 0 and report.sampled["out_of_scope"] > 0
    assert report.sampled["invalidated"] > 0
    assert all(c.probes > 0 for c in report.checks)
    assert sum(c.returned for c in report.checks) > 0
    assert set(report.counts().values()) == {0}


async def test_a_leaking_path_is_reported_with_its_offending_ids(uni: Uniko, monkeypatch: Any) -> None:
    store = uni.kb.store
    redacted = [
        n for n in await store.find(AGENT, Tier.MESSAGE, limit=1000, include_redacted=True) if n.redacted
    ]
    assert redacted
    real = store.text_search

    async def leaky(agent: str, tier: Tier, text: str, **kw: Any) -> list[Hit]:
        hits = await real(agent, tier, text, **kw)
        return [*hits, Hit(redacted[0], 1.0)] if tier is Tier.MESSAGE else hits

    monkeypatch.setattr(store, "text_search", leaky)
    report = await uni.agent(AGENT).audit(SMALL)
    assert not report.ok
    assert report.offending_ids()[ReadPath.STORE_TEXT_SEARCH.value] == [redacted[0].id]
    assert all(f.reason == "forgotten" for f in report.findings if f.path is ReadPath.STORE_TEXT_SEARCH)


async def test_a_failing_probe_is_a_finding_never_clean(uni: Uniko, monkeypatch: Any) -> None:
    store = uni.kb.store

    async def broken(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("backend down")

    monkeypatch.setattr(store, "hybrid_search", broken)
    report = await uni.agent(AGENT).audit(SMALL)
    failures = [f for f in report.findings if f.path is ReadPath.STORE_HYBRID_SEARCH]
    assert failures and all(f.reason == "probe_failure" for f in failures)
