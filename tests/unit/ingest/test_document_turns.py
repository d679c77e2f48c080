"""Document turns (issue 40, item 7): past a length, a turn is read as a document.

One 900,000-character turn used to cost 37 s in ``observe`` and 176 s in ``flush`` and became 742
Observations: NER, the parse and the statement rules read every passage. A turn over
``IngestConfig.document_turn_chars`` characters is now stored whole and in passages (all of them
embedded and recalled), but its NLP reads only its first passages and it keeps at most
``IngestConfig.document_turn_statements`` Observations. A shorter turn is read as before.
"""

from __future__ import annotations

from typing import Any

from uniko_memory.config import UnikoConfig
from uniko_memory.ingest.chunking import MAX_CHARS_PER_TOKEN
from uniko_memory.ingest.document import DocumentTurns
from uniko_memory.ingest.post import observation_id
from uniko_memory.model import Chunk, Message, Observation, Tier
from uniko_memory.nlp import NlpPipeline
from uniko_memory.nlp.observation.types import ObservationDraft

from ._support import NlpSpy, nodes, open_uni, turn

AGENT = "docs"
NEEDLE = "The vault code word is zanzibar and Quentin Marchetti keeps the spare key in Reykjavik."

_PEOPLE = ("Caroline", "Melanie", "Priya", "Tomas", "Erin")
_DOINGS = (
    "moved to Lisbon",
    "started a pottery class",
    "adopted a dog named Biscuit",
    "visited Kyoto",
    "finished the quarterly report",
    "bought a red bike",
)


def statements(n: int, year: int = 1990) -> str:
    """Prose the statement rules read one Observation or more from per sentence (~45 characters)."""
    return " ".join(f"{_PEOPLE[i % 5]} {_DOINGS[(i // 5) % 6]} in {year + i % 30}." for i in range(n))


def document(chars: int) -> str:
    """Paragraphs of statements, about ``chars`` characters, with the needle as the last one."""
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        paragraphs.append(statements(12, 1950 + len(paragraphs) % 50))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join([*paragraphs, NEEDLE])


async def _observations(uni: Any) -> list[Observation]:
    return [o for o in await nodes(uni, AGENT, Tier.OBSERVATION) if isinstance(o, Observation)]


def test_defaults_are_named_fields() -> None:
    ingest = UnikoConfig().ingest
    assert (ingest.document_turn_chars, ingest.document_turn_statements) == (10_000, 50)
    assert DocumentTurns() == DocumentTurns.of(ingest)
    assert ingest.document_turn_chars < ingest.max_turn_chars


async def test_a_document_turn_keeps_at_most_the_bound_of_observations() -> None:
    """Default config: a 60,000-character turn (hundreds of statements) keeps 50 Observations,
    the first in text order, and its NLP read only about its first 10,000 characters."""
    spy = NlpSpy(NlpPipeline(), count_complete=False)
    uni = await open_uni(nlp=spy)
    try:
        text = document(60_000)
        r = await uni.agent(AGENT).session("s1").observe(turn("Archivist", text, id="doc"))
        await uni.agent(AGENT).flush()
        limits = uni.kb.config.ingest
        observations = await _observations(uni)
        assert 0 < len(observations) <= limits.document_turn_statements
        assert len(observations) == limits.document_turn_statements  # the text has far more
        assert all(o.message_id == r.message_node_id for o in observations)
        # The first statements, in order: none from the end of the text.
        assert not any("zanzibar" in o.content or "Quentin" in o.content for o in observations)
        first = {observation_id(AGENT, r.message_node_id, i) for i in range(len(observations))}
        assert {o.id for o in observations} == first
        # NER and the rules read the passages in the first 10,000 characters, no more.
        passage = uni.kb.config.chunking.max_chunk_tokens * MAX_CHARS_PER_TOKEN
        assert sum(spy.lengths) <= limits.document_turn_chars + passage
        assert "Quentin Marchetti" not in r.extracted_entities  # said after the part read
        # Nothing is lost: the whole text is stored, and in passages, every one of them embedded.
        [msg] = [m for m in await nodes(uni, AGENT, Tier.MESSAGE) if isinstance(m, Message)]
        assert msg.content == text and msg.post_ingest_done
        chunks = [c for c in await nodes(uni, AGENT, Tier.CHUNK) if isinstance(c, Chunk)]
        assert len(chunks) == len(r.chunk_node_ids) > 40
        assert max(c.end for c in chunks) == len(text)
        vectors = await uni.kb.store.get_vectors(AGENT, [c.id for c in chunks])
        assert len(vectors) == len(chunks)
    finally:
        await uni.close()


async def test_a_passage_near_the_end_of_a_document_turn_is_recalled() -> None:
    uni = await open_uni()
    try:
        text = document(60_000)
        session = uni.agent(AGENT).session("s1")
        await session.observe(turn("Archivist", text, id="doc"))
        await session.observe(turn("Caroline", "I adopted a cat called Oliver last week.", 1))
        await session.flush()
        for question in ("What is the vault code word?", "Where does Quentin Marchetti keep the spare key?"):
            bundle = await uni.agent(AGENT).recall(question, token_budget=2000)
            passages = [i for i in bundle.items if i.kind == "passage"]
            assert any("zanzibar" in i.content and "Reykjavik" in i.content for i in passages), question
            assert all(len(i.content) < len(text) // 10 for i in bundle.items)  # quoted, never whole
    finally:
        await uni.close()


async def test_short_and_long_turns_are_read_as_before() -> None:
    """Under ``document_turn_chars`` a turn (with passages or not) gets every Observation it did
    before document turns existed (a configuration that makes no turn a document)."""
    short = statements(20)
    long = "\n\n".join(statements(12, 1950 + k) for k in range(20))  # ~9,000 characters, passages
    assert len(short) < 1_000 and 8_000 < len(long) < 10_000
    found: list[list[list[str]]] = []
    for document_turn_chars in (None, 1_000_000):
        config = {"ingest": {"document_turn_chars": document_turn_chars}} if document_turn_chars else {}
        uni = await open_uni(config)
        try:
            session = uni.agent(AGENT).session("s1")
            a = await session.observe(turn("Archivist", short, 0, id="short"))
            b = await session.observe(turn("Archivist", long, 1, id="long"))
            await session.flush()
            assert not a.chunk_node_ids and len(b.chunk_node_ids) > 5
            observations = await _observations(uni)
            found.append(
                [sorted(o.content for o in observations if o.message_id == r.message_node_id) for r in (a, b)]
            )
        finally:
            await uni.close()
    assert found[0] == found[1]
    assert len(found[0][1]) > UnikoConfig().ingest.document_turn_statements  # no bound under the length


async def test_a_document_is_any_turn_over_the_length_with_passages() -> None:
    """Past ``document_turn_chars`` a turn gets passages even under the token threshold, and the
    bound holds for any value of the two fields."""
    cfg = {"ingest": {"document_turn_chars": 2_000, "document_turn_statements": 3}}
    uni = await open_uni(cfg)
    try:
        text = statements(70)  # ~3,000 characters: under ``message_chunk_threshold`` tokens
        r = await uni.agent(AGENT).session("s1").observe(turn("Archivist", text))
        await uni.agent(AGENT).flush()
        assert r.chunk_node_ids
        assert len(await _observations(uni)) == 3
    finally:
        await uni.close()
    uni = await open_uni({"ingest": {"document_turn_chars": 2_000, "document_turn_statements": 0}})
    try:
        await uni.agent(AGENT).session("s1").observe(turn("Archivist", document(8_000)))
        await uni.agent(AGENT).flush()
        assert await _observations(uni) == []
    finally:
        await uni.close()


async def test_a_recovered_document_turn_reads_the_same_part() -> None:
    """After a restart P3 rebuilds the passages from the stored chunks: the same first ones."""
    from uniko_memory.pipeline.recovery import items_for_messages

    spy = NlpSpy(NlpPipeline(), count_complete=False)
    uni = await open_uni({"ingest": {"document_turn_chars": 3_000, "document_turn_statements": 20}}, nlp=spy)
    try:
        session = uni.agent(AGENT).session("s1")
        r = await session.observe(turn("Archivist", document(20_000)))
        await session.flush()
        before = sorted(o.id for o in await _observations(uni))
        assert len(before) == 20
        spy.lengths.clear()
        [item] = await items_for_messages(uni.kb.store, AGENT, [r.message_node_id])
        assert item.chunk_ids and not item.passage_spans
        report = await uni._post.run([item])
        assert report.observations == 20  # the same observations (same ids) as the first run
        assert sorted(o.id for o in await _observations(uni)) == before
        assert sum(spy.lengths) <= 3_000 + uni.kb.config.chunking.max_chunk_tokens * MAX_CHARS_PER_TOKEN
    finally:
        await uni.close()


async def test_a_custom_extractor_reads_a_document_s_first_passages_only() -> None:
    class Extractor:
        def __init__(self) -> None:
            self.texts: list[str] = []

        async def extract(self, text: str, speaker: str, *args: Any, **kwargs: Any) -> list[ObservationDraft]:
            self.texts.append(text)
            return [
                ObservationDraft(
                    content=f"{speaker} said: {sentence}",
                    subject=speaker,
                    predicate="say",
                    object=None,
                    temporal_phrase=None,
                    anchor=None,
                    entities=[],
                    sentence=sentence,
                    confidence=0.5,
                )
                for sentence in text.split(". ")
            ]

    uni = await open_uni({"ingest": {"document_turn_statements": 30}})
    extractor = Extractor()
    uni._post.extractor = extractor
    try:
        text = document(40_000)
        await uni.agent(AGENT).session("s1").observe(turn("Archivist", text))
        await uni.agent(AGENT).flush()
        assert len(await _observations(uni)) == 30
        assert extractor.texts and sum(len(t) for t in extractor.texts) < 10_000
        assert not any("zanzibar" in t for t in extractor.texts)
    finally:
        await uni.close()


async def test_a_nine_hundred_thousand_character_turn_is_a_document() -> None:
    """The issue's size: ~2 s here with the fake embedder (minutes before, most of it NLP)."""
    spy = NlpSpy(NlpPipeline(), count_complete=False)
    uni = await open_uni(nlp=spy)
    try:
        text = document(900_000)
        assert 900_000 <= len(text) < uni.kb.config.ingest.max_turn_chars
        session = uni.agent(AGENT).session("s1")
        r = await session.observe(turn("Archivist", text))
        await session.flush()
        assert len(await _observations(uni)) <= uni.kb.config.ingest.document_turn_statements
        assert sum(spy.lengths) < 20_000  # was every one of the 900,000 characters, twice
        assert len(r.chunk_node_ids) > 500
        bundle = await uni.agent(AGENT).recall("What is the vault code word?", token_budget=1000)
        assert any("zanzibar" in i.content for i in bundle.items if i.kind == "passage")
    finally:
        await uni.close()
