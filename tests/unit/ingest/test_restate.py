"""Write-time near-duplicates (issue 21.5) on both stores: a restatement reinforces the stored
Observation (count, confidence, a RESTATED_IN edge) instead of adding a copy; an opposite stance,
another speaker or another subject is never one; recall never cites the later turn as the
Observation's source (it stays covered by its own Message); a replay counts once; forgetting
the later turn takes back what it gave. Off by default."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.unit.recall._corpus import S1_START, S2_START, Line, build, message_by_text
from tests.unit.wakeup._support import BACKENDS, open_backend
from uniko_memory.config import IngestConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest.restate import RESTATE_GAIN, RestatePolicy
from uniko_memory.model import Direction, EdgeType, Observation, Tier
from uniko_memory.nlp.polarity import is_negated, same_stance
from uniko_memory.pipeline.recovery import items_for_messages

AGENT = "a"
FIRST = "I love hiking in the mountains with my dog."
AGAIN = "I love hiking in the mountains with my dog!"
NO_LONGER = "I no longer love hiking in the mountains with my dog."
ON: dict[str, Any] = {"ingest": {"observation_restate_threshold": 0.9}}


def lines(*texts: tuple[str, str]) -> list[Line]:
    return [
        Line("s1" if i == 0 else "s2", who, text, (S1_START if i == 0 else S2_START) + timedelta(minutes=i))
        for i, (who, text) in enumerate(texts)
    ]


async def observations(uni: Uniko) -> list[Observation]:
    found = await uni.kb.store.find(AGENT, Tier.OBSERVATION, limit=1000)
    return [o for o in found if isinstance(o, Observation)]


async def restated_in(uni: Uniko, obs_id: str) -> list[str]:
    edges = await uni.kb.store.neighbors(AGENT, [obs_id], [EdgeType.RESTATED_IN], Direction.OUT)
    return [e.dst for e in edges]


def about_hiking(found: list[Observation]) -> list[Observation]:
    return [o for o in found if "hiking" in o.content]


def test_off_by_default() -> None:
    assert IngestConfig().observation_restate_threshold is None
    assert RestatePolicy.of(IngestConfig()) is None


def test_stance() -> None:
    assert not is_negated("Caroline loves jazz")
    for text in ("Caroline no longer loves jazz", "I don't like it", "I can\u2019t swim", "She never paints",
                 "He used to paint", "She quit painting"):  # fmt: skip
        assert is_negated(text), text
    assert not same_stance("Caroline loves jazz", "Caroline no longer loves jazz")
    assert same_stance("I don't eat meat", "I do not eat meat")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_default_keeps_every_copy(backend: str) -> None:
    uni = await build(lines(("Caroline", FIRST), ("Caroline", AGAIN)), uni=await open_backend(backend))
    try:
        hiking = about_hiking(await observations(uni))
        assert len(hiking) == 2 and all(o.restatements == 0 for o in hiking)
    finally:
        await uni.close()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flush_between", [False, True])  # same P3 batch, or a stored one
async def test_a_restatement_reinforces_and_an_opposite_stance_is_kept(
    backend: str, flush_between: bool
) -> None:
    uni = await open_backend(backend, ON)
    try:
        texts = [("Caroline", FIRST), ("Caroline", AGAIN), ("Caroline", NO_LONGER)]
        if flush_between:
            for i in range(len(texts)):
                await build(lines(*texts)[i : i + 1], uni=uni, finalize=False)
        else:
            await build(lines(*texts), uni=uni)
        first = await message_by_text(uni, FIRST)
        again = await message_by_text(uni, AGAIN)
        hiking = about_hiking(await observations(uni))
        assert len(hiking) == 2  # the restatement is absorbed; "no longer" is its own
        kept = next(o for o in hiking if o.message_id == first.id)
        negated = next(o for o in hiking if o is not kept)
        assert "no longer" in negated.content and negated.restatements == 0
        assert kept.restatements == 1 and kept.confidence > 0.5
        assert await restated_in(uni, kept.id) == [again.id]
        edges = await uni.kb.store.neighbors(AGENT, [kept.id], [EdgeType.RESTATED_IN], Direction.OUT)
        assert edges[0].props[RESTATE_GAIN] > 0
        # Its one source is still the first turn, whose words it carries.
        observed = await uni.kb.store.neighbors(AGENT, [kept.id], [EdgeType.OBSERVED_IN], Direction.OUT)
        assert [e.dst for e in observed] == [first.id]
    finally:
        await uni.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_another_speaker_or_subject_is_not_a_restatement(backend: str) -> None:
    uni = await open_backend(backend, ON)
    try:
        await build(
            lines(("Caroline", FIRST), ("Melanie", AGAIN), ("Caroline", "Melanie loves hiking in the mountains.")),
            uni=uni,
        )  # fmt: skip
        found = await observations(uni)
        assert len(about_hiking(found)) == 3 and all(o.restatements == 0 for o in found)
    finally:
        await uni.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_recall_never_cites_the_later_turn_as_the_observations_source(backend: str) -> None:
    uni = await open_backend(backend, ON)
    try:
        await build(lines(("Caroline", FIRST), ("Caroline", AGAIN)), uni=uni)
        first = await message_by_text(uni, FIRST)
        again = await message_by_text(uni, AGAIN)
        (kept,) = about_hiking(await observations(uni))
        bundle = await uni.agent(AGENT).recall("Does Caroline love hiking with her dog?", token_budget=2000)
        by_id = {i.node_id: i for i in bundle.items}
        assert kept.id in by_id
        assert by_id[kept.id].message_ids() == [first.id]
        # No item claims the later turn unless it carries that turn's words (its own Message).
        claiming = [i for i in bundle.items if again.id in i.message_ids()]
        assert all(i.kind in ("message", "chunk", "passage") for i in claiming)
        assert again.id in by_id  # the later turn is still covered, by itself
    finally:
        await uni.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_replay_counts_once_and_forgetting_the_turn_takes_it_back(backend: str) -> None:
    uni = await open_backend(backend, ON)
    try:
        await build(lines(("Caroline", FIRST), ("Caroline", AGAIN)), uni=uni)
        again = await message_by_text(uni, AGAIN)
        (before,) = about_hiking(await observations(uni))
        items = await items_for_messages(uni.kb.store, AGENT, [again.id])
        await uni._post.observe(AGENT, items)  # recovery / a dead letter re-runs P3
        (replayed,) = about_hiking(await observations(uni))
        assert replayed.restatements == 1 and replayed.confidence == before.confidence
        await uni.agent(AGENT).forget_turn("s2", again.external_id)
        (after,) = about_hiking(await observations(uni))
        assert after.restatements == 0 and after.confidence == pytest.approx(0.8)
        assert await restated_in(uni, after.id) == []
    finally:
        await uni.close()
