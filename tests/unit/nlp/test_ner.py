"""NER cascade: normalisation, admission, dedup, gazetteer and the spaCy/rule sources."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from uniko_memory.nlp import (
    Analysis,
    Entity,
    EntityMention,
    NlpPipeline,
    admit_entities,
    canonical_key,
    deduplicate,
    extract,
    extract_entities,
    normalize_entity_name,
    rule_analyze,
)

REF = datetime(2023, 5, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("Caroline's", "Caroline"),
        ("Caroline’s!", "Caroline"),
        ("  Ed   Sheeran's ", "Ed Sheeran"),
        ("“Becoming Nicole”", "Becoming Nicole"),
        ("James'", "James"),
        ("Mel!!", "Mel"),
        ("(Paris),", "Paris"),
        ("AT&T", "AT&T"),
    ],
)
def test_normalize(raw: str, normalized: str) -> None:
    assert normalize_entity_name(raw) == normalized


def test_canonical_key() -> None:
    assert canonical_key("Caroline's") == canonical_key(" caroline ") == "caroline"


def _m(name: str, etype: str = "person", conf: float = 0.85, source: str = "spacy") -> EntityMention:
    return EntityMention(name, normalize_entity_name(name), etype, 0, len(name), conf, source)  # type: ignore[arg-type]


def test_admission_rules() -> None:
    mentions = [
        _m("last May", "date", 0.9, "rule:date"),
        _m("5km", "measurement", 0.9, "rule:measurement"),
        _m("Hey"),
        _m("Thanks"),
        _m("Congrats"),
        _m("Hey Mel"),
        _m("X"),
        _m("2023", "other", 0.95),
        _m("LGBTQ", "other", 0.85),
        _m("me@x.org", "other", 0.95, "rule:email"),
        _m("Awesome", "organization"),
        _m("Last Fri"),
        _m("Paris", "location"),
    ]
    admitted = admit_entities(mentions)
    assert [(m.normalized, m.entity_type) for m in admitted] == [
        ("Mel", "person"),
        ("me@x.org", "other"),
        ("Paris", "location"),
    ]
    assert admitted[0].start == 4 and admitted[0].name == "Mel"
    assert "LGBTQ" in [m.normalized for m in admit_entities(mentions, strict=False)]


def test_deduplicate_keeps_max_confidence_and_counts() -> None:
    counts = deduplicate(
        [_m("caroline", conf=0.6), _m("Caroline's", conf=1.0, source="gazetteer"), _m("Paris", "location")]
    )
    assert [(c.name, c.entity_type, c.count, c.confidence) for c in counts] == [
        ("Caroline", "person", 2, 1.0),
        ("Paris", "location", 1, 0.85),
    ]
    assert counts[0].sources == ("spacy", "gazetteer")


def _analysis(text: str, ents: list[tuple[str, str]]) -> Analysis:
    """A rule analysis with hand-placed model entities (no spaCy needed)."""
    base = rule_analyze(text)
    entities = []
    for surface, label in ents:
        start = text.index(surface)
        toks = [t.i for t in base.tokens if start <= t.idx < start + len(surface)]
        entities.append(Entity(surface, label, start, start + len(surface), toks[0], toks[-1] + 1))
    return Analysis(text, base.tokens, base.sentences, base.sentence_tokens, entities, "spacy")


def test_spacy_label_mapping() -> None:
    text = "We saw Paris with Google staff, 3 dogs and the Eiffel Tower at Pride Month."
    a = _analysis(
        text,
        [
            ("Paris", "GPE"),
            ("Google", "ORG"),
            ("3", "CARDINAL"),
            ("Eiffel Tower", "FAC"),
            ("Pride Month", "EVENT"),
        ],
    )
    result = extract(a, reference=REF)
    assert [(m.normalized, m.entity_type) for m in result.mentions] == [
        ("Paris", "location"),
        ("Google", "organization"),
        ("Eiffel Tower", "location"),
        ("Pride Month", "event"),
    ]
    assert all(m.confidence == 0.85 for m in result.mentions)
    assert [m.name for m in result.measurements] == ["3"]


def test_gazetteer_resolves_participants() -> None:
    text = "caroline's painting is great. Hey Mel, Caroline said hi!"
    mentions = extract_entities(rule_analyze(text), ["Caroline", "Melanie"], reference=REF)
    assert [(m.name, m.normalized, m.source) for m in mentions] == [
        ("caroline", "Caroline", "gazetteer"),
        ("Mel", "Melanie", "rule:vocative"),
        ("Caroline", "Caroline", "gazetteer"),
    ]
    assert all(m.entity_type == "person" for m in mentions)
    counts = deduplicate(mentions)
    assert [(c.name, c.count) for c in counts] == [("Caroline", 2), ("Melanie", 1)]


def test_participant_mislabelled_by_model_becomes_person() -> None:
    a = _analysis("Talked to Caroline Smith today.", [("Caroline Smith", "ORG")])
    mentions = extract_entities(a, ["Caroline Smith"], reference=REF)
    assert [(m.normalized, m.entity_type, m.confidence) for m in mentions] == [
        ("Caroline Smith", "person", 1.0)
    ]
    first = extract_entities(rule_analyze("Ask Caroline about it"), ["Caroline Smith"], reference=REF)
    assert [(m.name, m.normalized) for m in first] == [("Caroline", "Caroline Smith")]


def test_prefix_resolution_needs_three_chars_and_no_ambiguity() -> None:
    assert (
        extract_entities(rule_analyze("Hey Mel!"), ["Melanie", "Melissa"], reference=REF)[0].normalized
        == "Mel"
    )
    assert extract_entities(rule_analyze("Hey Jo!"), ["Joanna"], reference=REF)[0].normalized == "Jo"
    assert extract_entities(rule_analyze("Hey Jo!"), ["Joanna"], reference=REF)[0].entity_type == "person"


def test_wordlike_participant_names_need_capitals() -> None:
    assert extract_entities(rule_analyze("I will go there."), ["Will"], reference=REF) == []
    hits = extract_entities(rule_analyze("Yesterday Will went home."), ["Will"], reference=REF)
    assert [m.normalized for m in hits] == ["Will"]


def test_rule_sources() -> None:
    text = 'Mail jo@x.org or see https://x.com/a. I read "Becoming Nicole" and ran 5 km on 7 May 2023.'
    result = extract(rule_analyze(text), reference=REF)
    got = {(m.normalized, m.entity_type, m.source) for m in result.mentions}
    assert got == {
        ("jo@x.org", "other", "rule:email"),
        ("https://x.com/a", "other", "rule:url"),
        ("Becoming Nicole", "work_of_art", "rule:quoted"),
    }
    assert [m.name for m in result.dates] == ["on 7 May 2023"]
    assert [m.name for m in result.measurements] == ["5 km"]


def test_rule_mode_propn_runs_are_not_admitted_alone() -> None:
    result = extract(rule_analyze("We visited the Grand Canyon with Oscar."), reference=REF)
    assert result.mentions == []
    loose = extract(rule_analyze("We visited the Grand Canyon with Oscar."), reference=REF, strict=False)
    assert {m.normalized for m in loose.mentions} == {"Grand Canyon", "Oscar"}


def test_spacy_cascade(spacy_pipeline: NlpPipeline) -> None:
    a = spacy_pipeline.analyze(["Hey Caroline! Fingers crossed. I read a book by Amy Ellis Nutt in Paris."])[
        0
    ]
    result = extract(a, ["Caroline", "Melanie"], reference=REF)
    people = {m.normalized for m in result.mentions if m.entity_type == "person"}
    assert {"Caroline", "Amy Ellis Nutt"} <= people
    assert "Fingers" not in people
    assert ("Paris", "location") in {(e.name, e.entity_type) for e in result.entities}
