"""P3 rule observations and P7a embeddings, off the ingest path."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from uniko_memory.facade import Uniko
from uniko_memory.ingest.atomic import PostIngestItem
from uniko_memory.model import EdgeType, Message, Observation, Tier, participant_id
from uniko_memory.nlp import Analysis, NlpPipeline

from ._support import T0, edges, messages, nodes, open_uni, turn

AGENT = "post"


async def test_issue_example_relative_date_becomes_an_anchored_observation(uni: Uniko) -> None:
    r = await (
        uni.agent(AGENT)
        .session("s1")
        .observe(turn("Caroline", "I went to a LGBTQ support group yesterday", at=T0, addressed_to="Melanie"))
    )
    await uni.agent(AGENT).flush()
    found = [o for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]
    assert len(found) == 1
    [obs] = found
    assert "Caroline" in obs.content and "LGBTQ support group" in obs.content
    assert "7 May 2023" in obs.content and "yesterday" not in obs.content
    assert obs.content == "Caroline went to a LGBTQ support group on 7 May 2023"
    assert (obs.subject, obs.object) == ("Caroline", "LGBTQ support group")
    assert obs.temporal_phrase == "yesterday"
    assert obs.anchor_lo == datetime(2023, 5, 7, tzinfo=UTC)
    assert obs.anchor_hi == datetime(2023, 5, 8, tzinfo=UTC)
    assert obs.anchor_granularity == "day"
    assert obs.observed_at == T0
    assert obs.message_id == r.message_node_id and obs.speaker_id == r.sender_node_id
    assert obs.session_id == r.session_node_id and obs.extractor == "rules"

    out = await edges(uni, AGENT, [obs.id])
    assert {(e.type, e.dst) for e in out} == {
        (EdgeType.OBSERVED_IN, r.message_node_id),
        (EdgeType.ABOUT, r.sender_node_id),  # Caroline, the speaker behind "I"
    }


async def test_second_person_resolves_to_the_addressee(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.observe(turn("Melanie", "You adopted a cat named Biscuit last week.", addressed_to="Caroline"))
    await uni.agent(AGENT).flush()
    contents = [o.content for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]
    assert any("Caroline adopted a cat named Biscuit" in c for c in contents), contents
    about = await edges(uni, AGENT, [o.id for o in await nodes(uni, AGENT, Tier.OBSERVATION)], EdgeType.ABOUT)
    assert participant_id(AGENT, "Caroline") in {e.dst for e in about}


async def test_questions_and_light_verbs_give_no_observation(uni: Uniko) -> None:
    s = uni.agent(AGENT).session("s1")
    await s.commit_unit([turn("A", "Did you go to the support group?", 0), turn("B", "It was.", 1)])
    await uni.agent(AGENT).flush()
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 0


async def test_post_ingest_marks_messages_done(uni: Uniko) -> None:
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I went hiking in Yosemite on Saturday."))
    await uni.agent(AGENT).flush()
    [m] = await messages(uni, AGENT)
    assert m.post_ingest_done


async def test_message_bm25_at_commit_and_vector_after_flush() -> None:
    """Real embedder: the Message is keyword-searchable as soon as observe returns, and
    vector-searchable (with its observations and entities) once flush() has let P7a land."""
    uni = await open_uni(real_embedder=True)
    try:
        store = uni.kb.store
        # Hold P7a back so the "before" state is observable deterministically.
        gate = _Gate(uni)
        r = (
            await uni.agent(AGENT)
            .session("s1")
            .observe(
                turn("Priya", "I finally signed up for the pottery class at the Riverside Community Center.")
            )
        )
        hits = await store.text_search(AGENT, Tier.MESSAGE, "pottery class")
        assert [h.id for h in hits] == [r.message_node_id]
        assert await store.get_vectors(AGENT, [r.message_node_id]) == {}
        gate.open()
        await uni.agent(AGENT).flush()

        q = await uni.kb.embedder.embed_query("Which class did Priya sign up for?")
        vhits = await store.vector_search(AGENT, Tier.MESSAGE, q, k=3)
        assert vhits and vhits[0].id == r.message_node_id and vhits[0].score > 0.3
        obs = [o for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]
        ents = await nodes(uni, AGENT, Tier.ENTITY)
        assert obs and ents
        vectors = await store.get_vectors(
            AGENT, [r.message_node_id, *(o.id for o in obs), *(e.id for e in ents)]
        )
        assert len(vectors) == 1 + len(obs) + len(ents)
        for v in vectors.values():
            assert v.shape == (384,) and abs(float(np.linalg.norm(v)) - 1.0) < 1e-3
        ohits = await store.vector_search(AGENT, Tier.OBSERVATION, q, k=1)
        assert ohits and ohits[0].id == obs[0].id
    finally:
        await uni.close()


async def test_redacted_before_post_ingest_gets_no_observation_or_vector(uni: Uniko) -> None:
    gate = _Gate(uni)
    r = await uni.agent(AGENT).session("s1").observe(turn("Caroline", "I moved to Paris last year."))
    await uni.kb.store.redact(AGENT, [r.message_node_id])
    gate.open()
    await uni.agent(AGENT).flush()
    assert await uni.kb.store.count(AGENT, Tier.OBSERVATION) == 0
    assert await uni.kb.store.get_vectors(AGENT, [r.message_node_id]) == {}
    node = await uni.kb.store.get(AGENT, r.message_node_id)
    assert isinstance(node, Message) and node.redacted


class _Gate:
    """Blocks the post-ingest worker's P3 step until ``open()``."""

    def __init__(self, uni: Uniko) -> None:
        import asyncio

        self._event = asyncio.Event()
        real = uni._post.observe

        async def gated(*args: object, **kwargs: object) -> list[Observation]:
            await self._event.wait()
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        uni._post.observe = gated  # type: ignore[method-assign]

    def open(self) -> None:
        self._event.set()


# --------------------------------------------------------------------------- two-stage analysis

ISSUE_TURN = "I went to a LGBTQ support group yesterday"
ISSUE_OBSERVATION = "Caroline went to a LGBTQ support group on 7 May 2023"


async def _issue_observations(uni: Uniko) -> list[str]:
    await uni.agent(AGENT).session("s1").observe(turn("Caroline", ISSUE_TURN, at=T0, addressed_to="Melanie"))
    await uni.agent(AGENT).flush()
    return [o.content for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]


async def test_p2_hands_a_shallow_analysis_that_p3_completes(uni: Uniko) -> None:
    if uni.nlp.mode != "spacy":
        pytest.skip("spaCy model unavailable")
    seen: list[tuple[bool, bool]] = []
    real = uni._post.observe

    async def spy(agent: str, items: Sequence[PostIngestItem]) -> list[Observation]:
        before = [it.analysis.shallow for it in items]
        out = await real(agent, items)
        after = [it.analysis.shallow or not any(t.dep for t in it.analysis.tokens) for it in items]
        seen.extend(zip(before, after, strict=True))
        return out

    uni._post.observe = spy  # type: ignore[method-assign]
    assert await _issue_observations(uni) == [ISSUE_OBSERVATION]
    assert seen == [(True, False)]  # shallow from P2, parsed once P3 is done


class _OneStage:
    """An NLP backend with only ``analyze`` (a custom ``nlp=``): P2 and P3 use full analyses."""

    def __init__(self, inner: NlpPipeline) -> None:
        self.inner = inner

    def analyze(self, texts: list[str]) -> list[Analysis]:
        return self.inner.analyze(texts)


class _NoComplete(_OneStage):
    """Shallow analyses but no ``complete``: P3 analyses those turns again."""

    def analyze_shallow(self, texts: list[str]) -> list[Analysis]:
        return self.inner.analyze_shallow(texts)


@pytest.mark.parametrize("backend", [_OneStage, _NoComplete])
async def test_backends_without_two_stages(backend: type[_OneStage]) -> None:
    inner = NlpPipeline()
    if inner.mode != "spacy":
        pytest.skip("spaCy model unavailable")
    uni = await open_uni(nlp=backend(inner))
    try:
        assert await _issue_observations(uni) == [ISSUE_OBSERVATION]
    finally:
        await uni.close()


async def test_rule_mode_ingest_and_post_ingest() -> None:
    uni = await open_uni(nlp=NlpPipeline(mode="rules"))
    try:
        r = await (
            uni.agent(AGENT)
            .session("s1")
            .observe(turn("Caroline", "Hey Melanie! I moved to Paris last year.", addressed_to="Melanie"))
        )
        assert r.extracted_entities == ["Melanie"]  # the rule cascade: gazetteer + vocative
        await uni.agent(AGENT).flush()
        [m] = await messages(uni, AGENT)
        assert m.post_ingest_done
    finally:
        await uni.close()


async def test_a_deployment_adds_its_own_filler_phrases() -> None:
    """``NlpConfig.filler_phrases`` join the built-in write gate (issue 19.5): a sentence that is
    one makes no Observation, a statement ending on one loses it; bad phrases are refused."""
    from uniko_memory.errors import ConfigError

    said = ["The ball is in your court now.", "I moved to Leeds last month, innit."]
    found: dict[bool, list[str]] = {}
    for configured in (False, True):
        extra = {"nlp": {"filler_phrases": ["the ball is in your court now", "innit"]}} if configured else {}
        uni = await open_uni(extra)
        try:
            s = uni.agent(AGENT).session("s1")
            for i, text in enumerate(said):
                await s.observe(turn("Caroline", text, i, addressed_to="Melanie"))
            await uni.agent(AGENT).flush()
            obs = sorted(
                o.content for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)
            )
            found[configured] = obs
        finally:
            await uni.close()
    assert found[False] == [
        "Caroline moved to Leeds in April 2023, innit",
        "Caroline says the ball is in Melanie's court now",
    ], found[False]
    assert found[True] == ["Caroline moved to Leeds in April 2023"], found[True]
    with pytest.raises(ConfigError):
        await open_uni({"nlp": {"filler_phrases": ["   "]}})
