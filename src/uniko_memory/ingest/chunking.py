"""Token-bounded text chunking at sentence boundaries (paragraphs → sentences → words).

Chunks target ``max_tokens`` (256), pieces under ``min_tokens`` (32) merge into a neighbour, and
consecutive chunks overlap by about ``overlap`` tokens (10 % of the maximum by default), taken from
whole sentences or words of the previous chunk. A chunk also holds at most ``MAX_CHARS_PER_TOKEN``
characters per token of ``max_tokens``: a run without spaces (a pasted key, a base64 blob) is cut
by characters, so no chunk is a giant text that counts as a few unknown tokens.

Time is linear in the text's length (every sentence is counted a bounded number of times, the
heading of each chunk is found by bisection). ``passage_spans`` turns the (overlapping) chunks into
non-overlapping spans that cover the text: the units a long turn is analysed in (NER, observations).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..tokens import count_tokens

_PARA = re.compile(r"\n\s*\n")
_SENT = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(\S(?:[^\n]*\S)?)[ \t]*$", re.MULTILINE)
_CLOSING_HASHES = re.compile(r"(?:[ \t]+#+|^#+)$")
_WORDS = re.compile(r"\S+")
#: A chunk holds at most this many characters per token of its ``max_tokens``.
MAX_CHARS_PER_TOKEN = 8


@dataclass(frozen=True, slots=True)
class TextChunk:
    index: int
    text: str
    start: int
    end: int
    token_count: int
    heading: str | None = None


def _pieces(text: str, max_tokens: int, max_chars: int) -> list[tuple[int, int]]:
    """Sentence spans (char offsets), with over-long sentences split at words (and words at
    characters)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for para in _PARA.split(text):
        p_start = text.find(para, pos)
        pos = p_start + len(para)
        s_pos = 0
        for sent in _SENT.split(para):
            if not sent.strip():
                continue
            s_start = para.find(sent, s_pos)
            s_pos = s_start + len(sent)
            a = p_start + s_start
            b = a + len(sent)
            if len(sent) <= max_chars and count_tokens(sent) <= max_tokens:
                spans.append((a, b))
                continue
            spans.extend(_split_words(text, a, b, max_tokens, max_chars))
    return spans


def _words(text: str, a: int, b: int, max_chars: int) -> list[tuple[int, int]]:
    """Word spans of ``text[a:b]``; a word longer than ``max_chars`` is cut into slices."""
    out: list[tuple[int, int]] = []
    for m in _WORDS.finditer(text, a, b):
        ws, we = m.span()
        while we - ws > max_chars:
            out.append((ws, ws + max_chars))
            ws += max_chars
        out.append((ws, we))
    return out


def _split_words(text: str, a: int, b: int, max_tokens: int, max_chars: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = None
    count = 0
    last_end = a
    for ws, we in _words(text, a, b, max_chars):
        t = count_tokens(text[ws:we])
        if start is not None and (count + t > max_tokens or we - start > max_chars):
            out.append((start, last_end))
            start, count = None, 0
        if start is None:
            start = ws
        count += t
        last_end = we
    if start is not None:
        out.append((start, last_end))
    return out


def chunk_text(
    text: str, *, max_tokens: int = 256, min_tokens: int = 32, overlap: int = 25
) -> list[TextChunk]:
    """Split ``text`` into chunks; returns [] for blank text and one chunk for short text."""
    if not text.strip():
        return []
    max_chars = max_tokens * MAX_CHARS_PER_TOKEN
    spans = _pieces(text, max_tokens, max_chars)
    groups: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    tokens = 0
    for span in spans:
        t = count_tokens(text[span[0] : span[1]])
        if current and (tokens + t > max_tokens or span[1] - current[0][0] > max_chars):
            groups.append(current)
            carry = _overlap(text, current, overlap, max_tokens - t)
            if carry and span[1] - carry[0][0] > max_chars:
                carry = []
            current, tokens = carry, sum(count_tokens(text[a:b]) for a, b in carry)
        current.append(span)
        tokens += t
    if current:
        groups.append(current)
    if len(groups) > 1 and _tok(text, groups[-1]) < min_tokens:
        tail = groups.pop()
        groups[-1] = sorted(set(groups[-1]) | set(tail))
    headings = [(m.start(), _CLOSING_HASHES.sub("", m.group(1)).strip()) for m in _HEADING.finditer(text)]
    positions = [pos for pos, _ in headings]
    chunks = []
    for i, g in enumerate(groups):
        start, end = g[0][0], g[-1][1]
        at = bisect_right(positions, start)
        heading = (headings[at - 1][1] or None) if at else None
        body = text[start:end]
        chunks.append(TextChunk(i, body, start, end, count_tokens(body), heading))
    return chunks


def _tok(text: str, group: list[tuple[int, int]]) -> int:
    return count_tokens(text[group[0][0] : group[-1][1]])


def _overlap(text: str, group: list[tuple[int, int]], overlap: int, room: int) -> list[tuple[int, int]]:
    """Trailing sentences of ``group`` worth about ``overlap`` tokens (never more than ``room``)."""
    budget = min(overlap, max(0, room))
    if budget <= 0:
        return []
    carry: list[tuple[int, int]] = []
    used = 0
    for span in reversed(group[1:] if len(group) > 1 else []):
        t = count_tokens(text[span[0] : span[1]])
        if used + t > budget:
            break
        carry.insert(0, span)
        used += t
    return carry


class _Span(Protocol):
    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def passage_spans(chunks: Sequence[_Span]) -> list[tuple[int, int]]:
    """Non-overlapping ``(start, end)`` spans, one per chunk in order: each chunk without the
    part the next one repeats (chunks overlap by whole sentences, so every span still starts and
    ends at a sentence or word boundary). Together they cover the chunks' text exactly once."""
    ordered = sorted(chunks, key=lambda c: c.start)
    out: list[tuple[int, int]] = []
    for i, c in enumerate(ordered):
        end = c.end if i + 1 == len(ordered) else min(c.end, ordered[i + 1].start)
        start = max(c.start, out[-1][1]) if out else c.start
        if end > start:
            out.append((start, end))
    return out
