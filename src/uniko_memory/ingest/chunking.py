"""Token-bounded text chunking at sentence boundaries (paragraphs → sentences → words).

Chunks target ``max_tokens`` (256), pieces under ``min_tokens`` (32) merge into a neighbour, and
consecutive chunks overlap by about ``overlap`` tokens (10 % of the maximum by default), taken from
whole sentences or words of the previous chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..tokens import count_tokens

_PARA = re.compile(r"\n\s*\n")
_SENT = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class TextChunk:
    index: int
    text: str
    start: int
    end: int
    token_count: int
    heading: str | None = None


def _pieces(text: str, max_tokens: int) -> list[tuple[int, int]]:
    """Sentence spans (char offsets), with over-long sentences split at words."""
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
            if count_tokens(sent) <= max_tokens:
                spans.append((a, b))
                continue
            spans.extend(_split_words(text, a, b, max_tokens))
    return spans


def _split_words(text: str, a: int, b: int, max_tokens: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    words = [(m.start() + a, m.end() + a) for m in re.finditer(r"\S+", text[a:b])]
    start = None
    count = 0
    last_end = a
    for ws, we in words:
        t = count_tokens(text[ws:we])
        if start is not None and count + t > max_tokens:
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
    spans = _pieces(text, max_tokens)
    groups: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    tokens = 0
    for span in spans:
        t = count_tokens(text[span[0] : span[1]])
        if current and tokens + t > max_tokens:
            groups.append(current)
            carry = _overlap(text, current, overlap, max_tokens - t)
            current, tokens = carry, sum(count_tokens(text[a:b]) for a, b in carry)
        current.append(span)
        tokens += t
    if current:
        groups.append(current)
    if len(groups) > 1 and _tok(text, groups[-1]) < min_tokens:
        tail = groups.pop()
        groups[-1] = sorted(set(groups[-1]) | set(tail))
    headings = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)]
    chunks = []
    for i, g in enumerate(groups):
        start, end = g[0][0], g[-1][1]
        heading = next((h for pos, h in reversed(headings) if pos <= start), None)
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
