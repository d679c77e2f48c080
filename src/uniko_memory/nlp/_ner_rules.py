"""Rule side of the NER cascade: name normalisation, participant gazetteer and regex recognisers."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from datetime import datetime

from uniko_memory.nlp.analysis import Analysis, stop_words
from uniko_memory.nlp.temporal import find_temporal_phrases


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Chat openers/closers and fillers that spaCy often tags PERSON/PROPN/ORG ("Hey", "Congrats").
GREETINGS = _wordset(
    """hey hi hello hiya heya yo howdy thanks thank thx ty wow bye goodbye congrats congratulations
    lol lmao omg haha hahaha hehe yay oh ah aw aww awww ooh ugh hmm ok okay yeah yes yep nope no sure
    cheers dear good morning evening night great awesome cool nice sorry welcome hugs xoxo btw wowza
    whoa woah gosh geez damn amazing glad love please wanna gonna lemme nah ya yup kinda bummer looky
    woohoo phew oof dang yum mmm anytime gotcha agreed totally absolutely fyi"""
)
# Names that are also ordinary words: matched only with their exact capitalisation.
_WORDLIKE_NAMES = _wordset(
    """will may june april august grace joy hope faith bill mark rose sky summer autumn max art hunter
    rich pat sandy dawn frank river rock sunny lily jack ray"""
)
# Calendar words (with abbreviations) are never names: "Last Fri", "Tues".
CALENDAR = _wordset(
    """january february march april may june july august september october november december jan feb
    mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
    mon tue tues wed thu thur thurs fri sat sun last next this today tomorrow yesterday tonight"""
)

_EDGE_PUNCT = string.punctuation.replace("&", "").replace("+", "").replace("#", "") + "“”‘’«»…–—"
_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])$", re.IGNORECASE)


def normalize_entity_name(name: str) -> str:
    """Strip edge punctuation and a possessive ("Caroline's" -> "Caroline"), collapse whitespace."""
    text = " ".join(name.split()).strip(_EDGE_PUNCT + " ")
    while True:
        stripped = _POSSESSIVE.sub("", text).strip(_EDGE_PUNCT + " ")
        if stripped == text:
            return text
        text = stripped


def canonical_key(name: str) -> str:
    """Matching key: the casefolded normalized name."""
    return normalize_entity_name(name).casefold()


class Gazetteer:
    """Participant names: full names, unique first names and unambiguous ≥3-char prefixes.

    Matching in text is case-insensitive, except for names that are ordinary words ("Will",
    "May", stop words), which must appear capitalised.
    """

    def __init__(self, participants: Iterable[str]) -> None:
        names = list(
            dict.fromkeys(n for n in (normalize_entity_name(p) for p in participants) if len(n) >= 2)
        )
        self.names = names
        self._lookup: dict[str, str] = {canonical_key(n): n for n in names}
        firsts: dict[str, list[str]] = {}
        for n in names:
            parts = n.split()
            if len(parts) > 1:
                firsts.setdefault(parts[0].casefold(), []).append(n)
        for first, owners in firsts.items():
            if len(owners) == 1 and first not in self._lookup and len(first) >= 2:
                self._lookup[first] = owners[0]
        self._firsts = [(n.split()[0].casefold(), n) for n in names]
        stops = stop_words()
        loose = [k for k in self._lookup if k not in stops and k not in _WORDLIKE_NAMES]
        exact = [self._surface(k) for k in self._lookup if k in stops or k in _WORDLIKE_NAMES]
        self._loose = _alternation(loose, re.IGNORECASE)
        self._exact = _alternation(exact, 0)

    def _surface(self, key: str) -> str:
        owner = self._lookup[key]
        return next((p for p in owner.split() if p.casefold() == key), owner)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Spans ``[start, end)`` of participant names in ``text`` with the canonical name."""
        hits: list[tuple[int, int, str]] = []
        for pattern in (self._loose, self._exact):
            if pattern is None:
                continue
            for m in pattern.finditer(text):
                hits.append((m.start(), m.end(), self._lookup[canonical_key(m.group(0))]))
        return sorted(hits)

    def canonical(self, name: str) -> str | None:
        """The participant whose full or (unique) first name is ``name``."""
        return self._lookup.get(canonical_key(name))

    def by_prefix(self, name: str) -> str | None:
        """The one participant whose first name starts with ``name`` (≥3 chars, one word)."""
        key = canonical_key(name)
        if len(key) < 3 or " " in key:
            return None
        owners = {n for first, n in self._firsts if first.startswith(key)}
        return owners.pop() if len(owners) == 1 else None


def _alternation(words: list[str], flags: int) -> re.Pattern[str] | None:
    if not words:
        return None
    body = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![\w@])(?:{body})(?![\w@])", flags)


# "Hey Jo!", "Thanks, Mell!", "Way to go, Jon!": a capitalised word addressed right after a
# greeting or compliment and closed by punctuation is a person's name in chat text.
_VOCATIVE = re.compile(
    r"(?i:\b(?:hey|hi|hello|hiya|yo|thanks|thank\s+you|thx|congrats|congratulations|wow|whoa|woah|bye"
    r"|goodbye|cheers|yeah|yep|yes|no|sure|ok|okay|oh|aww+|ooh|great|awesome|amazing|cool|nice|sweet"
    r"|agreed|totally|absolutely|definitely|exactly|anytime|sorry|welcome|dear|way\s+to\s+go|take\s+care"
    r"|good\s+(?:job|luck|morning|night|point)|nice\s+(?:job|one|work)|see\s+(?:you|ya)|sounds\s+(?:great|good|fun)"
    r"|no\s+(?:worries|prob(?:lem)?))\b),?[ \t]+"
    r"(?P<name>[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)?)(?=[ \t]*(?:[,!.?…]|$))"
)


def vocatives(text: str) -> list[tuple[int, int]]:
    """Spans of names addressed in chat ("Hey Jo!"), excluding greeting and calendar words."""
    stops = stop_words()
    spans: list[tuple[int, int]] = []
    for m in _VOCATIVE.finditer(text):
        words = m.group("name").casefold().split()
        if any(w in GREETINGS or w in stops or w in CALENDAR or w.endswith("ly") for w in words):
            continue
        spans.append((m.start("name"), m.end("name")))
    return spans


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"\bhttps?://[^\s<>\"]+|\bwww\.[^\s<>\"]+", re.IGNORECASE)
_UNITS = (
    r"%|percent|km|kms|kilomet(?:er|re)s?|mi|miles?|m|met(?:er|re)s?|cm|mm|kg|kgs|kilos?|kilograms?|g|grams?"
    r"|lbs?|pounds?|oz|ounces?|ft|feet|foot|inch(?:es)?|hours?|hrs?|h|minutes?|mins?|seconds?|secs?|days?"
    r"|weeks?|months?|years?|yrs?|dollars?|bucks|euros?|cents?|degrees?|°[CF]?|mph|kph|calories|kcal|l|liters?"
    r"|litres?|ml|gb|mb|tb|k"
)
_MEASURE = re.compile(
    rf"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|million|billion))?\b"
    rf"|(?<![\w.])\d[\d,]*(?:\.\d+)?(?:-|\s)?(?:{_UNITS})(?![\w]))",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,80}?)[\"”]")


def structured_mentions(text: str, reference: datetime) -> list[tuple[int, int, str]]:
    """Emails, URLs, temporal phrases and measurements as ``(start, end, kind)``."""
    out: list[tuple[int, int, str]] = [(m.start(), m.end(), "email") for m in _EMAIL.finditer(text)]
    for m in _URL.finditer(text):
        end = m.end()
        while end > m.start() and text[end - 1] in ".,;:!?)]'\"":
            end -= 1
        out.append((m.start(), end, "url"))
    out.extend((m.start, m.end, "date") for m in find_temporal_phrases(text, reference))
    out.extend((m.start(), m.end(), "measurement") for m in _MEASURE.finditer(text))
    return out


def quoted_titles(text: str) -> list[tuple[int, int]]:
    """Quoted spans that look like titles: 1–8 words, capitalised, not a quoted sentence."""
    stops = stop_words()
    spans: list[tuple[int, int]] = []
    for m in _QUOTED.finditer(text):
        inner = m.group(1).strip()
        words = inner.split()
        if not words or len(words) > 8 or not inner[0].isupper() or inner[-1] in ".,;:":
            continue
        if all(w.casefold() in stops for w in words):
            continue
        start = m.start(1) + (len(m.group(1)) - len(m.group(1).lstrip()))
        spans.append((start, start + len(inner)))
    return spans


def _is_cap_word(word: str) -> bool:
    return word[:1].isupper() and word.replace("-", "").replace("'", "").replace("’", "").isalpha()


def propn_runs(analysis: Analysis) -> list[tuple[int, int]]:
    """Character spans of proper-noun runs.

    spaCy mode: maximal PROPN token runs. Rule mode: runs of capitalised words, skipping a
    sentence's first word, "I", stop words, greetings, months and weekdays.
    """
    tokens = analysis.tokens
    if analysis.mode == "spacy":
        keep = [t.pos == "PROPN" for t in tokens]
    else:
        stops = stop_words()
        sentence_starts = {start for start, _ in analysis.sentence_tokens}
        keep = [
            _is_cap_word(t.text)
            and t.i not in sentence_starts
            and t.text.casefold() not in stops
            and t.text.casefold() not in GREETINGS
            and t.text.casefold() not in CALENDAR
            for t in tokens
        ]
    boundaries = {start for start, _ in analysis.sentence_tokens}
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not keep[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(tokens) and keep[j + 1] and tokens[j].whitespace and j + 1 not in boundaries:
            j += 1
        spans.append((tokens[i].idx, tokens[j].end))
        i = j + 1
    return spans
