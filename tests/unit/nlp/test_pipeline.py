"""NlpPipeline: spaCy analysis records, rule fallback, strict mode, lazy import, threads."""

from __future__ import annotations

import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from uniko_memory.errors import MissingDependency, ValidationError
from uniko_memory.nlp import NlpPipeline, rule_analyze
from uniko_memory.nlp import pipeline as pipeline_mod

TEXT = "Caroline went to Paris last May with Melanie's dog. Hey Mel! How are you?"


def test_spacy_analysis_fields(spacy_pipeline: NlpPipeline) -> None:
    a = spacy_pipeline.analyze([TEXT])[0]
    assert a.mode == "spacy" and a.doc is not None and a.text == TEXT
    assert a.sentences == [(0, 51), (52, 60), (61, 73)]
    assert a.sentence_texts()[1] == "Hey Mel!"
    assert [t.text for t in a.sentence(1)] == ["Hey", "Mel", "!"]
    went = a.tokens[1]
    assert (went.text, went.idx, went.lemma, went.pos, went.dep, went.head) == (
        "went",
        9,
        "go",
        "VERB",
        "ROOT",
        1,
    )
    assert a.tokens[0].head == 1 and a.tokens[0].dep == "nsubj" and a.tokens[0].pos_ == "PROPN"
    assert a.tokens[2].is_stop and not a.tokens[0].is_stop
    assert ("Paris", "GPE") in [(e.text, e.label) for e in a.entities]
    paris = next(e for e in a.entities if e.text == "Paris")
    assert TEXT[paris.start : paris.end] == "Paris" and a.tokens[paris.start_token].text == "Paris"
    assert a.tokens[paris.start_token].ent_type == "GPE"


def test_batches_preserve_order(spacy_pipeline: NlpPipeline) -> None:
    texts = [f"Text number {i} about Paris." for i in range(7)]
    small = NlpPipeline(mode="spacy", batch_size=3)
    assert [a.text for a in small.analyze(texts)] == texts
    assert small.analyze([]) == []
    assert spacy_pipeline.analyze([""])[0].tokens == []


def test_health(spacy_pipeline: NlpPipeline, rules_pipeline: NlpPipeline) -> None:
    health = spacy_pipeline.health()
    assert health["mode"] == "spacy" and health["model"] in pipeline_mod.DEFAULT_MODELS
    assert "ner" in health["pipes"]
    assert rules_pipeline.health()["mode"] == "rules"


def test_rule_mode_analysis(rules_pipeline: NlpPipeline) -> None:
    a = rules_pipeline.analyze(["Hey Mel! I don't know. Caroline's dog ran 5km. Mail me@x.org"])[0]
    assert a.mode == "rules" and a.doc is None and a.entities == []
    assert len(a.sentences) == 4
    words = [t.text for t in a.tokens]
    assert words[:3] == ["Hey", "Mel", "!"]
    assert words[4:6] == ["do", "n't"] and words[8:10] == ["Caroline", "'s"]
    assert "me@x.org" in words
    assert all(t.pos == "" and t.head == t.i for t in a.tokens)
    assert next(t for t in a.tokens if t.text == "I").is_stop
    assert next(t for t in a.tokens if t.text == "5").like_num


def test_rule_split_handles_blank_and_newlines() -> None:
    assert rule_analyze("").sentences == []
    a = rule_analyze("First line\nSecond line. Third!")
    assert a.sentence_texts() == ["First line", "Second line.", "Third!"]
    for start, end in a.sentence_tokens:
        assert start <= end


def test_validation(rules_pipeline: NlpPipeline) -> None:
    with pytest.raises(ValidationError):
        rules_pipeline.analyze("not a list")
    with pytest.raises(ValidationError):
        rules_pipeline.analyze(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        NlpPipeline(batch_size=0)
    with pytest.raises(ValidationError):
        NlpPipeline(mode="gpu")  # type: ignore[arg-type]


def test_missing_model_falls_back_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_mod, "_WARNED", False)
    with pytest.warns(RuntimeWarning, match="rule-only"):
        first = NlpPipeline(model="no_such_model_for_tests").analyze(["Hello there. Bye."])
    assert first[0].mode == "rules"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = NlpPipeline(model="no_such_model_for_tests")
        assert again.analyze(["x"])[0].mode == "rules"
        health = again.health()
    assert health["mode"] == "rules" and "no_such_model_for_tests" in health["reason"]


def test_missing_spacy_strict_and_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_spacy(purpose: str = "") -> None:
        raise MissingDependency("spacy", "spacy", purpose)

    monkeypatch.setattr(pipeline_mod, "require_spacy", no_spacy)
    monkeypatch.setattr(pipeline_mod, "_CACHE", {})
    monkeypatch.setattr(pipeline_mod, "_WARNED", True)  # the one warning was already spent
    with pytest.raises(MissingDependency, match=r"uniko-memory\[spacy\]"):
        NlpPipeline(mode="spacy").analyze(["text"])
    auto = NlpPipeline()
    assert auto.mode == "rules" and "not installed" in auto.health()["reason"]


def test_import_does_not_load_spacy() -> None:
    code = "import sys, uniko_memory, uniko_memory.nlp; print('spacy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_threads_share_one_model(spacy_pipeline: NlpPipeline) -> None:
    texts = [f"Caroline met Jon in Paris on day {i}." for i in range(24)]
    expected = [a.tokens for a in spacy_pipeline.analyze(texts)]
    other = NlpPipeline(mode="spacy", batch_size=4)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: other.analyze([t])[0].tokens, texts))
    assert results == expected
    assert other.nlp is spacy_pipeline.nlp


TRICKY = [
    "I ain't got nothin' to say, there's nothing there.",
    "She's been running; he'd've gone if they'd asked. Don't you dare!",
    "There are 3 cats and the one that I like is black.",
    "I do love it, and did you do the dishes? Have you had lunch?",
    "Whatever you want, which is fine.  Two  spaces\n\nand lines.",
    "gets got getting 'cause cuz gonna wanna y'all",
]


def test_fast_attribute_ruler_matches_spacy(spacy_pipeline: NlpPipeline) -> None:
    assert "uniko_fast_attribute_ruler" in spacy_pipeline.health()["pipes"]
    original = NlpPipeline(mode="spacy", fast_attribute_ruler=False)
    assert "attribute_ruler" in original.health()["pipes"]
    for fast, slow in zip(spacy_pipeline.analyze(TRICKY), original.analyze(TRICKY), strict=True):
        assert fast.tokens == slow.tokens
        assert [str(t.morph) for t in fast.doc] == [str(t.morph) for t in slow.doc]


def test_two_stages_with_spacys_own_attribute_ruler() -> None:
    """Without the fast ruler the split is the same: spaCy's ruler runs again after the parser."""
    original = NlpPipeline(mode="spacy", fast_attribute_ruler=False)
    assert original.health()["deferred_pipes"] == ["parser", "attribute_ruler", "lemmatizer"]
    full = original.analyze(TRICKY)
    done = original.complete(original.analyze_shallow(TRICKY))
    for f, d in zip(full, done, strict=True):
        assert (d.tokens, d.sentences, d.entities) == (f.tokens, f.sentences, f.entities)
        assert [str(t.morph) for t in d.doc] == [str(t.morph) for t in f.doc]
