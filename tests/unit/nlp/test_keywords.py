"""Keywords: POS-filtered surface words in spaCy mode, non-stop words in rule mode."""

from __future__ import annotations

from uniko_memory.nlp import NlpPipeline, keyword_query, keywords, rule_analyze

TEXT = "Caroline went to Paris last May with Melanie's dog."


def test_spacy_keywords(spacy_pipeline: NlpPipeline) -> None:
    words = keywords(spacy_pipeline.analyze([TEXT])[0])
    assert words == ["Caroline", "went", "Paris", "May", "Melanie", "dog"]
    lemmas = keywords(spacy_pipeline.analyze([TEXT])[0], use_lemma=True)
    assert "go" in lemmas and "caroline" in lemmas


def test_keywords_deduplicate_case_insensitively(spacy_pipeline: NlpPipeline) -> None:
    a = spacy_pipeline.analyze(["Dogs and dogs and DOGS ran 5 miles in 2022!"])[0]
    words = keywords(a)
    assert [w.casefold() for w in words].count("dogs") == 1
    assert "5" in words and "2022" in words and "and" not in words


def test_rule_mode_keywords() -> None:
    assert keywords(rule_analyze(TEXT)) == ["Caroline", "went", "Paris", "Melanie", "dog"]


def test_keyword_query(spacy_pipeline: NlpPipeline, rules_pipeline: NlpPipeline) -> None:
    query = "When did Caroline go to the LGBTQ support group?"
    assert keyword_query(query, spacy_pipeline) == "Caroline LGBTQ support group"
    assert keyword_query("what is it?", rules_pipeline) == "what is it?"
