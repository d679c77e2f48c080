"""Plain analysis records (tokens, sentences, entities) plus the rule-only analyser.

Downstream code (NER, keywords, observation extraction) consumes these records instead of spaCy
objects so that it works unchanged when spaCy or its model is missing, and so results can be
pickled, compared and built by hand in tests. Field names follow spaCy's token attributes; the
``*_`` aliases exist so code written against spaCy tokens reads the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["spacy", "rules"]


# Compact English stop list for rule mode, used only when spaCy (and its list) is unavailable.
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_BUILTIN_STOP_WORDS = _wordset(
    """a about above after again against all almost also am among an and any are aren't as at be
    because been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each either else even ever every few for from further
    get gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
    herself him himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its
    itself just let's made make many may me might more most much must mustn't my myself neither no
    nor not now of off often on once only or other ought our ours ourselves out over own per quite
    rather really same say says she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll they're
    they've this those though through thus to too under until up upon us very was wasn't we we'd
    we'll we're we've were weren't what what's when when's where where's whether which while who
    who's whom whose why why's will with won't would wouldn't yet you you'd you'll you're you've
    your yours yourself yourselves"""
)


def stop_words() -> frozenset[str]:
    """spaCy's English stop list when spaCy is importable, else the built-in compact list."""
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:
        return _BUILTIN_STOP_WORDS
    return frozenset(STOP_WORDS)


@dataclass(frozen=True, slots=True)
class Token:
    """One token. ``head`` is the index (``i``) of the syntactic head; a root points at itself.

    In rule mode ``pos``/``tag``/``dep``/``ent_type`` are empty strings and ``lemma`` is the
    lower-cased text.
    """

    i: int
    text: str
    idx: int
    lemma: str
    pos: str
    tag: str
    dep: str
    head: int
    ent_type: str
    is_stop: bool
    like_num: bool
    is_punct: bool = False
    whitespace: str = ""

    @property
    def lower_(self) -> str:
        return self.text.lower()

    @property
    def lemma_(self) -> str:
        return self.lemma

    @property
    def pos_(self) -> str:
        return self.pos

    @property
    def tag_(self) -> str:
        return self.tag

    @property
    def dep_(self) -> str:
        return self.dep

    @property
    def ent_type_(self) -> str:
        return self.ent_type

    @property
    def end(self) -> int:
        """Character offset just past the token."""
        return self.idx + len(self.text)


@dataclass(frozen=True, slots=True)
class Entity:
    """A model entity span: ``[start, end)`` are character offsets, ``label`` the spaCy label."""

    text: str
    label: str
    start: int
    end: int
    start_token: int
    end_token: int


@dataclass(frozen=True)
class Analysis:
    """Everything one text yields.

    ``sentences`` are character spans ``[start, end)`` into ``text``; ``sentence_tokens`` are the
    same sentences as token index ranges ``[start, end)``. ``doc`` is the raw spaCy ``Doc`` in
    spaCy mode (for advanced consumers) and None in rule mode; it is excluded from comparisons.

    ``shallow`` marks a spaCy analysis made without the dependency parse and lemmas
    (``NlpPipeline.analyze_shallow``): tokens, POS and entities are final, but every ``dep`` is
    empty, every ``head`` points at the token itself, ``lemma`` is the lower-cased text (except the
    few the attribute ruler sets, e.g. "are" -> "be") and the sentences come from punctuation
    (``punctuation_sentence_starts``).
    ``NlpPipeline.complete`` turns it into the full analysis. Rule-mode analyses are never shallow.
    """

    text: str
    tokens: list[Token]
    sentences: list[tuple[int, int]]
    sentence_tokens: list[tuple[int, int]]
    entities: list[Entity]
    mode: Mode
    doc: Any = field(default=None, compare=False, repr=False)
    shallow: bool = False

    def sentence_texts(self) -> list[str]:
        return [self.text[s:e] for s, e in self.sentences]

    def sentence(self, index: int) -> list[Token]:
        """Tokens of sentence ``index``."""
        start, end = self.sentence_tokens[index]
        return self.tokens[start:end]


# Tokens made only of these characters end a sentence ("." "!!" "?!" "..." "…").
_TERMINAL = frozenset(".!?…。！？‼⁇⁈⁉")


def punctuation_sentence_starts(tokens: Sequence[Token]) -> list[int]:
    """Sentence starts (token indices) from punctuation, as spaCy's rule ``sentencizer`` finds them.

    A sentence ends at a token made of terminal punctuation, plus the punctuation that follows it
    (closing quotes and brackets, more dots); a newline ends one too. The next word token starts
    the next sentence. This stands in for the parser's boundaries in a shallow analysis; the NER
    rules only use sentences to tell a capital that comes from position from a name's capital.
    """
    if not tokens:
        return []
    starts = [0]
    ended = False
    for i, t in enumerate(tokens):
        text = t.text
        if text.isspace():
            ended = ended or "\n" in text
        elif all(ch in _TERMINAL for ch in text):
            ended = True
        elif ended and not t.is_punct:
            starts.append(i)
            ended = False
    return starts


# --- rule-only analysis --------------------------------------------------------------------

# Sentence end: terminal punctuation (plus closing quotes/brackets) followed by whitespace, or newlines.
_SENT_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n\s*\n?")
_TOKEN = re.compile(
    r"https?://\S+[^\s.,;:!?)\]\"']"  # URL
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # email
    r"|\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|s)?"  # numbers, times, dates
    r"|\w+(?:[-]\w+)*(?=['’]s\b)"  # word before a possessive
    r"|['’](?:s|m|re|ve|ll|d)\b|n['’]t\b"  # clitics
    r"|\w+(?=n['’]t\b)"  # "do" of "don't"
    r"|\w+(?:[-'’]\w+)*"  # words
    r"|\S"  # any other symbol
)
_NUMBER_WORDS = _wordset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion"
)
_NUMERIC = re.compile(r"^[+-]?\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|s)?$")


def _split_sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        end = m.start()
        if text[start:end].strip():
            spans.append(_trim(text, start, end))
        start = m.end()
    if text[start:].strip():
        spans.append(_trim(text, start, len(text)))
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def rule_analyze(text: str, stops: frozenset[str] | None = None) -> Analysis:
    """Regex sentence split and tokenisation; no POS, parse or entities (spaCy unavailable)."""
    stops = stop_words() if stops is None else stops
    tokens: list[Token] = []
    sentences = _split_sentences(text)
    sentence_tokens: list[tuple[int, int]] = []
    for s_start, s_end in sentences:
        first = len(tokens)
        for m in _TOKEN.finditer(text, s_start, s_end):
            word = m.group(0)
            low = word.lower()
            i = len(tokens)
            tokens.append(
                Token(
                    i=i,
                    text=word,
                    idx=m.start(),
                    lemma=low,
                    pos="",
                    tag="",
                    dep="",
                    head=i,
                    ent_type="",
                    is_stop=low in stops,
                    like_num=bool(_NUMERIC.match(word)) or low in _NUMBER_WORDS,
                    is_punct=not any(ch.isalnum() for ch in word),
                    whitespace=" " if m.end() < len(text) and text[m.end()].isspace() else "",
                )
            )
        sentence_tokens.append((first, len(tokens)))
    return Analysis(text, tokens, sentences, sentence_tokens, [], "rules")
