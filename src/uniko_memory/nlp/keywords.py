"""Query keywords (design §7.2): content words by POS, the default BM25/embedding query variant.

Keywords are *surface* forms (as written, deduplicated case-insensitively): the full-text index
does its own stemming, and surface forms keep names and numbers recognisable ("Caroline",
"2022"). Pass ``use_lemma=True`` for lower-cased lemmas instead. In rule mode there is no POS,
so every non-stop-word, non-punctuation token is a keyword.
"""

from __future__ import annotations

from uniko_memory.nlp.analysis import Analysis
from uniko_memory.nlp.pipeline import NlpPipeline, default_pipeline

__all__ = ["KEYWORD_POS", "keyword_query", "keywords"]

KEYWORD_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "NUM"})


def keywords(analysis: Analysis, *, use_lemma: bool = False) -> list[str]:
    """Content words of ``analysis`` in text order, without duplicates."""
    seen: set[str] = set()
    out: list[str] = []
    for tok in analysis.tokens:
        if tok.is_punct or not any(ch.isalnum() for ch in tok.text):
            continue
        if analysis.mode == "spacy":
            # Proper nouns and numbers survive the stop list ("May", "one").
            if tok.pos not in KEYWORD_POS or (tok.is_stop and tok.pos not in ("PROPN", "NUM")):
                continue
        elif tok.is_stop:
            continue
        word = tok.lemma.lower() if use_lemma else tok.text
        if len(word) < 2 and not tok.like_num:
            continue
        key = word.casefold()
        if key not in seen:
            seen.add(key)
            out.append(word)
    return out


def keyword_query(text: str, pipeline: NlpPipeline | None = None) -> str:
    """Keywords joined by spaces; the stripped text itself when no keyword survives."""
    analysis = (pipeline or default_pipeline()).analyze([text])[0]
    words = keywords(analysis)
    return " ".join(words) if words else text.strip()
