"""Freed heap goes back to the OS when the pipeline goes idle (``pipeline.memory``)."""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.ingest._support import open_uni, turn, wait_until
from uniko_memory.facade import Uniko
from uniko_memory.pipeline.memory import MemoryReleaser

AGENT = "mem"
TEXT = "I adopted a grey cat named Miso last week."


def releases(uni: Uniko) -> int:
    return int(uni.health()["pipeline"]["memory_releases"])


async def wait_for_release(uni: Uniko, above: int) -> int:
    await wait_until(lambda: releases(uni) > above, timeout=5)
    return releases(uni)


def test_releases_are_rate_limited() -> None:
    r = MemoryReleaser(True, min_interval_secs=3600)
    if not r.enabled:
        pytest.skip("this C library has no malloc_trim")
    r.release()
    r.release()
    assert r.releases == 1
    assert not r.due()


def test_a_disabled_releaser_never_trims() -> None:
    r = MemoryReleaser(False, min_interval_secs=0)
    r.release()
    assert r.releases == 0 and not r.due()


async def test_an_idle_pipeline_and_a_consolidation_cycle_release_memory() -> None:
    if not MemoryReleaser(True, 0).enabled:
        pytest.skip("this C library has no malloc_trim")
    uni = await open_uni({"pipeline": {"release_memory_min_interval_secs": 0}})
    try:
        agent = uni.agent(AGENT)
        await agent.session("s").observe(turn("priya", TEXT))
        await agent.flush()
        after_ingest = await wait_for_release(uni, 0)
        assert after_ingest >= 1
        await agent.consolidate()
        assert await wait_for_release(uni, after_ingest) > after_ingest
    finally:
        await uni.close()


async def test_the_switch_turns_it_off() -> None:
    uni = await open_uni({"pipeline": {"release_memory_when_idle": False}})
    try:
        agent = uni.agent(AGENT)
        await agent.session("s").observe(turn("priya", TEXT))
        await agent.flush()
        await agent.consolidate()
        await asyncio.sleep(0.05)
        assert releases(uni) == 0
    finally:
        await uni.close()
