"""Intent profiling: entity references resolved against the store, temporal windows, keywords."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import pytest_asyncio

from uniko_memory.config import RecallIntent
from uniko_memory.errors import StoreError
from uniko_memory.facade import Uniko
from uniko_memory.model import Entity, Participant, Tier, entity_id, participant_id
from uniko_memory.recall import IntentProfile, RecallConfig, build_intent_at
from uniko_memory.recall.channels import graph_seeds
from uniko_memory.recall.intent import begin_intent
from uniko_memory.recall.phases import run_cascade

from ._corpus import AGENT, MAIN, build

pytestmark = pytest.mark.asyncio(loop_scope="module")
REF = datetime(2024, 1, 10, 12, 0, tzinfo=UTC)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uni() -> AsyncIterator[Uniko]:
    u = await build(MAIN, finalize=False)
    try:
        yield u
    finally:
        await u.close()


async def intent(
    uni: Uniko, query: str, ref: datetime | None = REF, variants: list[str] | None = None
) -> IntentProfile:
    return await build_intent_at(
        uni.kb.store, AGENT, query, ref, nlp=uni.nlp, embedder=uni.kb.embedder, variants=variants
    )


async def test_entity_refs_resolve_to_stored_participants_and_entities(uni: Uniko) -> None:
    it = await intent(uni, "Where did Caroline's cat Bailey come from?")
    assert "Caroline" in it.entity_refs and "Bailey" in it.entity_refs  # possessive 's stripped
    caroline = participant_id(AGENT, "Caroline")
    assert it.participant_ids == [caroline]
    stored = await uni.kb.store.get_many(AGENT, it.entity_ids)
    assert set(stored) == set(it.entity_ids) and it.entity_ids
    assert all(isinstance(n, Entity) for n in stored.values())
    assert {n.name for n in stored.values() if isinstance(n, Entity)} >= {"Caroline", "Bailey"}
    assert caroline in it.seed_ids and set(it.entity_ids) <= set(it.seed_ids)
    assert isinstance(await uni.kb.store.get(AGENT, caroline), Participant)


async def test_the_walk_starts_from_entities_that_are_not_participants(uni: Uniko) -> None:
    it = await intent(uni, "Where did Caroline's cat Bailey come from?")
    stored = await uni.kb.store.get_many(AGENT, it.entity_ids)
    names = {nid: n.name for nid, n in stored.items() if isinstance(n, Entity)}
    assert [names[e] for e in it.participant_entity_ids] == ["Caroline"]  # the participant's Entity
    seeds = graph_seeds(it, RecallConfig())
    assert {names[s] for s in seeds} == {"Bailey"} and participant_id(AGENT, "Caroline") not in seeds
    # seeding from participants brings back both hubs
    hubs = graph_seeds(it, RecallConfig.model_validate({"graph": {"seed_participants": True}}))
    assert set(hubs) == set(it.seed_ids) >= {participant_id(AGENT, "Caroline"), *it.entity_ids}
    # a question about participants only does not walk at all
    assert graph_seeds(await intent(uni, "What does Caroline think of Melanie?"), RecallConfig()) == []


async def test_case_insensitive_participant_match(uni: Uniko) -> None:
    it = await intent(uni, "What did jon say about salsa?")
    # lower-cased names may or may not be tagged by NER; when they are, they resolve to the Participant
    if it.entity_refs:
        assert it.participant_ids == [participant_id(AGENT, "Jon")]


async def test_unknown_entities_are_refs_but_not_seeds(uni: Uniko) -> None:
    it = await intent(uni, "Did Caroline ever visit Reykjavik?")
    assert "Reykjavik" in it.entity_refs  # named, but nothing stored under that name
    assert it.participant_ids == [participant_id(AGENT, "Caroline")]
    assert all(entity_id(AGENT, "Reykjavik", t) not in it.entity_ids for t in ("location", "other"))
    assert all(s in it.entity_ids or s in it.participant_ids for s in it.seed_ids)


async def test_temporal_window_from_last_may_uses_reference_ts(uni: Uniko) -> None:
    it = await intent(uni, "Where did Caroline go last May?")
    assert it.temporal_window == (datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    assert it.temporal_granularity == "month"
    assert it.expected_answer_type == "location"
    later = await intent(uni, "Where did Caroline go last May?", ref=datetime(2025, 7, 1, tzinfo=UTC))
    assert later.temporal_window == (datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 6, 1, tzinfo=UTC))


async def test_yesterday_is_a_half_open_day(uni: Uniko) -> None:
    it = await intent(uni, "What happened yesterday?")
    assert it.temporal_window == (datetime(2024, 1, 9, tzinfo=UTC), datetime(2024, 1, 10, tzinfo=UTC))


async def test_no_temporal_phrase_no_window(uni: Uniko) -> None:
    it = await intent(uni, "What instrument does Ava play?")
    assert it.temporal_window is None


async def test_reference_ts_defaults_to_now(uni: Uniko) -> None:
    it = await intent(uni, "What did Melanie do yesterday?", ref=None)
    assert it.reference_ts.tzinfo is not None
    assert abs((datetime.now(UTC) - it.reference_ts).total_seconds()) < 60
    assert it.temporal_window is not None and it.temporal_window[1] <= it.reference_ts


async def test_keywords_drop_function_words(uni: Uniko) -> None:
    it = await intent(uni, "What is the name of the dance studio that Jon opened?")
    low = {k.lower() for k in it.keywords}
    assert {"dance", "studio", "jon"} <= low
    assert not low & {"what", "is", "the", "of", "that"}
    assert dict(it.variants)["keywords"] == " ".join(it.keywords)
    assert dict(it.variants)["original"] == it.query


async def test_variants_are_embedded_and_opt_in(uni: Uniko) -> None:
    default = await intent(uni, "Who did Caroline adopt a cat with?")
    assert {v for v, _ in default.variants} == {"original", "keywords"}
    assert "original" in default.vectors and set(default.vectors) <= {v for v, _ in default.variants}
    assert default.primary_vector is not None
    full = await intent(
        uni,
        "Who did Caroline adopt a cat with?",
        variants=["keywords", "original", "declarative", "type_anchored"],
    )
    assert {"original", "keywords", "type_anchored"} <= {v for v, _ in full.variants}
    assert {"original", "type_anchored"} <= set(full.vectors) <= {v for v, _ in full.variants}
    summary = full.summary()
    assert summary["expected_answer_type"] == "person" and summary["entity_refs"] == full.entity_refs


async def test_embedder_failure_leaves_bm25_only(uni: Uniko) -> None:
    class Broken:
        async def embed_queries(self, texts: object) -> object:
            raise RuntimeError("model gone")

    it = await build_intent_at(uni.kb.store, AGENT, "Caroline cat", REF, nlp=uni.nlp, embedder=Broken())
    assert it.vectors == {} and it.keywords


class _Recorded:
    """What ``build_intent_at`` hands to worker threads and when it asks for the embedding."""

    def __init__(self, uni: Uniko, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[str] = []
        real_to_thread = asyncio.to_thread

        async def to_thread(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            self.events.append(getattr(fn, "__name__", "?"))
            return await real_to_thread(fn, *args, **kwargs)

        monkeypatch.setattr(asyncio, "to_thread", to_thread)
        self.uni = uni

    async def embed_queries(self, texts: list[str]) -> Any:
        self.events.append("embed")
        return await self.uni.kb.embedder.embed_queries(texts)

    async def intent(self, query: str, inline_nlp_chars: int) -> IntentProfile:
        tuning = RecallIntent(inline_nlp_chars=inline_nlp_chars)
        return await build_intent_at(
            self.uni.kb.store, AGENT, query, REF, nlp=self.uni.nlp, embedder=self, tuning=tuning
        )


async def test_the_embedding_is_under_way_before_the_nlp_pass_is_handed_to_a_thread(
    uni: Uniko, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Handed over second, the embedding's worker waited for the NLP thread's GIL (recall +2 ms).
    rec = _Recorded(uni, monkeypatch)
    it = await rec.intent("Caroline cat", inline_nlp_chars=0)
    assert "analyze_shallow" in rec.events
    assert rec.events.index("embed") < rec.events.index("analyze_shallow")
    assert "original" in it.vectors


async def test_a_short_question_is_analysed_without_a_worker_thread(
    uni: Uniko, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorded(uni, monkeypatch)
    query = "Where did Caroline's cat Bailey come from?"
    here = await rec.intent(query, inline_nlp_chars=len(query))
    assert "analyze_shallow" not in rec.events
    rec.events.clear()
    worker = await rec.intent(query, inline_nlp_chars=len(query) - 1)  # one character too long
    assert "analyze_shallow" in rec.events
    assert here.summary() == worker.summary() and here.keywords == worker.keywords
    # the model busy in another thread (an ingest batch): the question goes to a worker, no wait
    rec.events.clear()
    lock = uni.nlp._ensure().lock  # type: ignore[union-attr]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(5)  # a loop that waited here would be held 5 s and then see no worker

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(5)
        task = asyncio.ensure_future(rec.intent(query, inline_nlp_chars=len(query)))
        for _ in range(500):
            if "analyze_shallow" in rec.events or task.done():
                break
            await asyncio.sleep(0.01)
        assert "analyze_shallow" in rec.events and not task.done()  # waiting in a worker
    finally:
        release.set()
        holder.join()
    assert (await task).summary() == here.summary()


class _SlowEmbedder:
    """The real embedder, 50 ms late: what happens while the question's vectors are computed."""

    def __init__(self, uni: Uniko, events: list[str]) -> None:
        self.uni, self.events = uni, events

    async def embed_queries(self, texts: list[str]) -> Any:
        self.events.append("embed")
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        vectors = await self.uni.kb.embedder.embed_queries(texts)
        self.events.append("vectors")
        return vectors


async def test_keyword_lists_are_searched_while_the_vectors_are_computed(
    uni: Uniko, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    store = uni.kb.store
    real_text_search = store.text_search

    async def text_search(*args: Any, **kwargs: Any) -> Any:
        events.append("keywords")
        return await real_text_search(*args, **kwargs)

    monkeypatch.setattr(store, "text_search", text_search)
    query, cfg = "Where did Caroline's cat Bailey come from?", RecallConfig(reference_ts=REF)
    slow = _SlowEmbedder(uni, events)
    draft = await begin_intent(store, AGENT, query, REF, nlp=uni.nlp, embedder=slow)
    assert draft.profile.vectors == {} and draft.profile.keywords
    drafted = await run_cascade(store, AGENT, cfg, draft)
    # the keyword lists of Phase 2 (the named speaker's too) ran before the vectors were in
    early = events[: events.index("vectors")]
    assert early.count("keywords") >= 3 and early[0] == "embed"
    assert "original" in draft.profile.vectors and not drafted.degraded
    # the same bundle as from the finished profile
    whole = await run_cascade(
        store, AGENT, cfg, await build_intent_at(store, AGENT, query, REF, nlp=uni.nlp, embedder=slow)
    )
    assert drafted.render() == whole.render() and drafted.items
    assert [(i.node_id, i.score, i.fused) for i in drafted.items] == [
        (i.node_id, i.score, i.fused) for i in whole.items
    ]


async def test_a_failed_keyword_search_drops_the_pending_vectors(
    uni: Uniko, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    store = uni.kb.store

    async def text_search(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("disk gone")

    monkeypatch.setattr(store, "text_search", text_search)
    draft = await begin_intent(
        store, AGENT, "Caroline cat", REF, nlp=uni.nlp, embedder=_SlowEmbedder(uni, events)
    )
    with pytest.raises(StoreError, match="disk gone"):
        await run_cascade(store, AGENT, RecallConfig(reference_ts=REF), draft)
    await asyncio.sleep(0)
    assert events == ["embed", "cancelled"]


async def test_intent_sees_only_its_agent(uni: Uniko) -> None:
    it = await build_intent_at(
        uni.kb.store, "someone-else", "Where does Caroline live?", REF, nlp=uni.nlp, embedder=None
    )
    assert it.participant_ids == [] and it.entity_ids == []
    assert await uni.kb.store.count("someone-else", Tier.PARTICIPANT) == 0


async def test_a_named_participant_gets_the_question_without_their_name(uni: Uniko) -> None:
    caroline = participant_id(AGENT, "Caroline")
    it = await intent(uni, "Where did Caroline's cat Bailey come from?")
    words, vec = it.without_name[caroline]
    assert "Caroline" not in words and "Bailey" in words and "cat" in words
    expected = await uni.kb.embedder.embed_queries(["Where did cat Bailey come from?"])
    assert vec is not None and float(vec @ expected[0]) == pytest.approx(1.0, abs=1e-5)
    assert it.primary_vector is not None and float(vec @ it.primary_vector) < 0.999
    # nobody named, nothing scoped; a name inside another word is not the name
    assert (await intent(uni, "Who adopted a cat?")).without_name == {}
    assert (await intent(uni, "What did Carolinexyz say?")).without_name == {}


async def test_without_names_matches_whole_names_and_possessives() -> None:
    from uniko_memory.recall.intent import _without_names

    names = {"Ann": "p1", "Ann Lee": "p2", "Bob": "p3"}
    assert _without_names("Did Ann Lee's dog bite bob?", names) == {
        "p2": "Did dog bite bob?",
        "p3": "Did Ann Lee's dog bite ?",
    }
    assert _without_names("Where is Annie?", names) == {}
