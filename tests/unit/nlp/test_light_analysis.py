"""Two-stage analysis: ``analyze_shallow`` (ingest hot path) then ``complete`` (P3).

The contract: a completed shallow analysis is exactly the full pipeline's (tokens with POS, tags,
dependencies, heads and lemmas, morphology, sentences, entities), and the NER the hot path runs on
the shallow analysis finds exactly what it finds on the full one.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from uniko_memory.nlp import Analysis, NlpPipeline, extract, rule_analyze
from uniko_memory.nlp import pipeline as pipeline_mod
from uniko_memory.nlp.analysis import Token, punctuation_sentence_starts

ROOT = Path(__file__).resolve().parents[3]
LOCOMO_DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
GOLD = ROOT / "tests" / "data" / "locomo_person_gold.json"
REF = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

TEXTS = [
    "Caroline went to Paris last May with Melanie's dog. Hey Mel! How are you?",
    "I ain't got nothin' to say, there's nothing there.",
    "She's been running; he'd've gone if they'd asked. Don't you dare!",
    "There are 3 cats and the one that I like is black. But I do love it.",
    "Whatever you want, which is fine.  Two  spaces\n\nand lines.",
    'Wait... what?! I met Dr. Smith at the U.S. embassy on 5 June 2022 "Hello World" (really).',
    "",
    "   ",
    "ok",
]


def _locomo_turns(limit: int) -> list[str]:
    if not LOCOMO_DEV.is_file():
        return []
    texts: list[str] = []
    for sample in json.loads(LOCOMO_DEV.read_text("utf-8")):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(t["text"] for t in turns)
    return texts[:limit]


def _gold_texts() -> list[str]:
    return [g["text_snippet"] for g in json.loads(GOLD.read_text("utf-8"))]


def _signature(a: Analysis) -> tuple[Any, ...]:
    """Everything an analysis carries, including what only the Doc holds (morphology, sentence
    starts, entity IOB)."""
    doc = a.doc
    extra = [(str(t.morph), t.is_sent_start, t.ent_iob_) for t in doc] if doc is not None else None
    return (a.text, a.tokens, a.sentences, a.sentence_tokens, a.entities, a.mode, extra)


def _entity_sets(analyses: list[Analysis], names: list[str]) -> list[list[tuple[str, str, int]]]:
    return [
        sorted((e.key, e.entity_type, e.count) for e in extract(a, names, reference=REF).entities)
        for a in analyses
    ]


# --------------------------------------------------------------------------- equality


def test_shallow_then_complete_equals_full(spacy_pipeline: NlpPipeline) -> None:
    texts = TEXTS + _gold_texts()
    full = spacy_pipeline.analyze(texts)
    # one text per call, as the hot path does
    shallow = [spacy_pipeline.analyze_shallow([t])[0] for t in texts]
    assert all(a.shallow for a in shallow)
    done = spacy_pipeline.complete(shallow)
    assert not any(a.shallow for a in done)
    for f, d in zip(full, done, strict=True):
        assert _signature(d) == _signature(f), f.text


def test_locomo_turns_complete_to_the_full_parse(spacy_pipeline: NlpPipeline) -> None:
    texts = _locomo_turns(200)
    if not texts:
        pytest.skip(f"no LoCoMo data at {LOCOMO_DEV}")
    full = spacy_pipeline.analyze(texts)
    shallow = [spacy_pipeline.analyze_shallow([t])[0] for t in texts]
    done = spacy_pipeline.complete(shallow)
    mismatched = [f.text for f, d in zip(full, done, strict=True) if _signature(d) != _signature(f)]
    assert mismatched == []
    # P2 runs NER on the shallow analysis: it must find what the full analysis gives
    names = ["Caroline", "Melanie"]
    assert _entity_sets(shallow, names) == _entity_sets(full, names)


def test_ner_on_shallow_matches_full_on_gold(spacy_pipeline: NlpPipeline) -> None:
    gold = json.loads(GOLD.read_text("utf-8"))
    texts = [g["text_snippet"] for g in gold]
    full = spacy_pipeline.analyze(texts)
    shallow = spacy_pipeline.analyze_shallow(texts)
    for g, f, s in zip(gold, full, shallow, strict=True):
        assert _entity_sets([s], g["participants"]) == _entity_sets([f], g["participants"]), g["text_snippet"]


# --------------------------------------------------------------------------- shallow records


def test_shallow_fields(spacy_pipeline: NlpPipeline) -> None:
    [full] = spacy_pipeline.analyze([TEXTS[0]])
    [a] = spacy_pipeline.analyze_shallow([TEXTS[0]])
    assert a.shallow and a.mode == "spacy" and a.doc is not None and not full.shallow
    assert all(t.dep == "" and t.head == t.i for t in a.tokens)
    # no lemmatizer yet: the lower-cased text, or the attribute ruler's lemma ("are" -> "be")
    assert all(t.lemma in (t.text.lower(), f.lemma) for t, f in zip(a.tokens, full.tokens, strict=True))
    assert any(t.lemma != f.lemma for t, f in zip(a.tokens, full.tokens, strict=True))  # "went"
    assert a.entities == full.entities
    assert [t.pos for t in a.tokens if t.pos == "PROPN"] == [t.pos for t in full.tokens if t.pos == "PROPN"]
    assert [(t.text, t.tag, t.is_stop, t.ent_type) for t in a.tokens] == [
        (t.text, t.tag, t.is_stop, t.ent_type) for t in full.tokens
    ]
    assert a.sentence_texts() == [
        "Caroline went to Paris last May with Melanie's dog.",
        "Hey Mel!",
        "How are you?",
    ]
    assert a.doc.tensor.shape[0] == len(a.tokens)  # tok2vec output kept for the parser
    assert a != full  # the records differ until completed


def test_health_names_the_deferred_components(spacy_pipeline: NlpPipeline) -> None:
    health = spacy_pipeline.health()
    assert health["deferred_pipes"][0] == "parser" and health["deferred_pipes"][-1] == "lemmatizer"
    assert "ner" not in health["deferred_pipes"]


def test_complete_is_idempotent_and_passes_full_analyses(spacy_pipeline: NlpPipeline) -> None:
    full = spacy_pipeline.analyze(TEXTS[:3])
    shallow = spacy_pipeline.analyze_shallow(TEXTS[:3])
    once = spacy_pipeline.complete(shallow)
    twice = spacy_pipeline.complete(shallow)  # the same shallow records again: Docs already parsed
    assert [_signature(a) for a in once] == [_signature(a) for a in twice] == [_signature(a) for a in full]
    passed = spacy_pipeline.complete(full)
    assert all(p is f for p, f in zip(passed, full, strict=True))
    assert spacy_pipeline.complete([]) == []


def test_complete_without_the_doc_analyses_again(spacy_pipeline: NlpPipeline) -> None:
    [shallow] = spacy_pipeline.analyze_shallow([TEXTS[0]])
    orphan = replace(shallow, doc=None)  # e.g. unpickled: the Doc and its tensor are gone
    [done] = spacy_pipeline.complete([orphan])
    [full] = spacy_pipeline.analyze([TEXTS[0]])
    assert not done.shallow and done.tokens == full.tokens and done.sentences == full.sentences


def test_complete_keeps_order_across_chunks(spacy_pipeline: NlpPipeline) -> None:
    texts = [f"Jon met Gina in Rome on day {i}. She liked it." for i in range(40)]
    mixed = spacy_pipeline.analyze_shallow(texts)
    mixed[5] = spacy_pipeline.analyze([texts[5]])[0]  # a full one in the middle
    done = spacy_pipeline.complete(mixed)
    assert [a.text for a in done] == texts
    assert [a.tokens for a in done] == [a.tokens for a in spacy_pipeline.analyze(texts)]


def test_threads_mix_shallow_and_complete(spacy_pipeline: NlpPipeline) -> None:
    texts = [f"Caroline met Jon in Paris on day {i}. Hey Mel!" for i in range(24)]
    expected = [_signature(a) for a in spacy_pipeline.analyze(texts)]

    def one(text: str) -> tuple[Any, ...]:
        return _signature(spacy_pipeline.complete(spacy_pipeline.analyze_shallow([text]))[0])

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(one, texts)) == expected


def test_try_shallow_is_shallow_when_the_model_is_free(spacy_pipeline: NlpPipeline) -> None:
    got = spacy_pipeline.try_analyze_shallow(TEXTS)
    assert got is not None
    assert [_signature(a) for a in got] == [_signature(a) for a in spacy_pipeline.analyze_shallow(TEXTS)]
    assert all(a.shallow for a in got if a.tokens)


def test_try_shallow_does_not_wait_for_a_busy_model(spacy_pipeline: NlpPipeline) -> None:
    lock = spacy_pipeline._ensure().lock  # type: ignore[union-attr]
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:  # what an ingest batch in a worker thread does
        with lock:
            holding.set()
            release.wait(10)

    with ThreadPoolExecutor(1) as pool:
        pool.submit(hold)
        assert holding.wait(10)
        started = time.perf_counter()
        assert spacy_pipeline.try_analyze_shallow(["Caroline met Jon."]) is None
        assert time.perf_counter() - started < 0.5
        release.set()
    [a] = spacy_pipeline.try_analyze_shallow(["Caroline met Jon."]) or []  # free again
    assert _signature(a) == _signature(spacy_pipeline.analyze_shallow(["Caroline met Jon."])[0])


def test_try_shallow_leaves_the_first_load_to_a_worker(
    spacy_pipeline: NlpPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = spacy_pipeline._ensure()
    cache: dict[Any, Any] = {}
    monkeypatch.setattr(pipeline_mod, "_CACHE", cache)  # a process that has not loaded spaCy yet
    fresh = NlpPipeline(mode="spacy")
    assert fresh.try_analyze_shallow(["Caroline met Jon."]) is None and fresh._loaded is None
    cache[(fresh._candidates, fresh._disable, fresh._fast)] = loaded
    [a] = fresh.try_analyze_shallow(["Caroline met Jon."]) or []  # loaded (by a worker): here
    assert _signature(a) == _signature(spacy_pipeline.analyze_shallow(["Caroline met Jon."])[0])


def test_validation(spacy_pipeline: NlpPipeline) -> None:
    from uniko_memory.errors import ValidationError

    with pytest.raises(ValidationError):
        spacy_pipeline.analyze_shallow("not a list")
    with pytest.raises(ValidationError):
        spacy_pipeline.analyze_shallow(["ok", 3])  # type: ignore[list-item]


# --------------------------------------------------------------------------- fallbacks


def test_rule_mode_has_no_second_stage(rules_pipeline: NlpPipeline) -> None:
    [a] = rules_pipeline.analyze_shallow(["Hey Mel! I met Jon."])
    assert a.mode == "rules" and not a.shallow
    assert a == rule_analyze("Hey Mel! I met Jon.")
    assert rules_pipeline.complete([a])[0] is a
    assert rules_pipeline.try_analyze_shallow(["Hey Mel! I met Jon."]) == [a]


def test_stages_split_only_known_pipelines() -> None:
    def nlp(*names: str) -> Any:
        return SimpleNamespace(pipe_names=list(names))

    sm = nlp("tok2vec", "tagger", "parser", "uniko_fast_attribute_ruler", "lemmatizer", "ner")
    assert pipeline_mod._stages(sm) == (
        ("tok2vec", "tagger", "uniko_fast_attribute_ruler", "ner"),
        ("parser", "uniko_fast_attribute_ruler", "lemmatizer"),
    )
    # a ruler before the parser never saw a parse: it is not run again
    early = nlp("tok2vec", "attribute_ruler", "parser", "ner")
    assert pipeline_mod._stages(early) == (("tok2vec", "attribute_ruler", "ner"), ("parser",))
    # an unknown component might read the parse: no split
    custom = nlp("tok2vec", "tagger", "parser", "merge_noun_chunks", "ner")
    assert pipeline_mod._stages(custom) == (tuple(custom.pipe_names), ())
    assert pipeline_mod._stages(nlp("tok2vec", "ner")) == (("tok2vec", "ner"), ())


# --------------------------------------------------------------------------- punctuation sentences


def _tokens(*words: str) -> list[Token]:
    return [
        Token(i, w, 0, w.lower(), "", "", "", i, "", False, False, is_punct=not any(c.isalnum() for c in w))
        for i, w in enumerate(words)
    ]


@pytest.mark.parametrize(
    ("words", "starts"),
    [
        ((), []),
        (("Hey", "Mel", "!", "How", "are", "you", "?"), [0, 3]),
        (("Wait", "...", "what", "?!", "Oh", "."), [0, 2, 4]),
        (("He", "said", '"', "no", ".", '"', "Then", "left"), [0, 6]),
        (("!", "Hey"), [0, 1]),
        (("first", "line", "\n\n", "second"), [0, 3]),
        (("Dr.", "Smith", "came", "."), [0]),
        (("3.5", "km", ":)", "fine"), [0]),
    ],
)
def test_punctuation_sentence_starts(words: tuple[str, ...], starts: list[int]) -> None:
    assert punctuation_sentence_starts(_tokens(*words)) == starts
