"""The view of a text the secret rules read: NFKC per character, invisible characters dropped.

A secret can hide from a pattern behind characters a reader does not see or reads as ASCII: a
zero-width space inside ``sk-proj-…``, a full-width ``ＡＫＩＡ…`` key, ``password：`` with a
full-width colon, a no-break space after ``token=``. The scanner therefore also reads a
*normalised view* of each text: every character that is invisible (Unicode format characters,
category ``Cf``, and the other default-ignorable code points: soft hyphen, variation selectors,
the combining grapheme joiner, Hangul fillers, tags) is dropped, and every other character is
replaced by its own NFKC form (``ｐ`` → ``p``, ``：`` → ``:``, ``ﬁ`` → ``fi``).

The view is for detection only: the stored text is never normalised. ``View.span`` maps a span of
the view back to the span of the original text it came from, so masking covers exactly the
original characters of the secret (the invisible ones between them included) and nothing else.
Building the view is linear and mostly C-speed: one ``str.translate``, plus one regex pass for the
characters that do not become exactly one character (the only places where offsets drift).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache

__all__ = ["View", "is_ignorable", "normalised_view", "visible_key"]

# Default-ignorable code points that are not in category Cf (DerivedCoreProperties.txt): the
# combining grapheme joiner, Hangul and Khmer fillers, Mongolian variation selectors, variation
# selectors, and the tag / variation-selector-supplement plane. Cf itself is added from unicodedata.
_IGNORABLE_EXTRA = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)
#: Up to here each code point is checked against unicodedata; above it NFKC changes nothing and
#: the only format characters are the tags, covered by ``_IGNORABLE_EXTRA`` (a test checks both).
_TABLE_END = 0x30000


def _ranges(points: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in sorted(points):
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _char_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges
    )


@dataclass(frozen=True)
class _Tables:
    #: Every character the view changes, to what it becomes (``str.translate`` table).
    table: dict[int, str]
    #: A character the view changes (a quick test for "the view is the text itself").
    changing: re.Pattern[str]
    #: A character whose replacement is not exactly one character (dropped, or ``ﬁ`` → ``fi``):
    #: the only places where view and original offsets drift apart.
    uneven: re.Pattern[str]


@cache
def _tables() -> _Tables:
    """Built on first use (~50 ms), so importing the package does not pay for it."""
    ignorable = {cp for cp in range(0x80, _TABLE_END) if unicodedata.category(chr(cp)) == "Cf"}
    ignorable |= {cp for a, b in _IGNORABLE_EXTRA for cp in range(a, b + 1)}
    table = {cp: "" for cp in ignorable}
    for cp in range(0x80, _TABLE_END):
        if cp not in table and not 0xD800 <= cp <= 0xDFFF:
            out = unicodedata.normalize("NFKC", chr(cp))
            if out != chr(cp):
                table[cp] = out
    uneven = [cp for cp, out in table.items() if len(out) != 1]
    return _Tables(
        table,
        re.compile(f"[{_char_class(_ranges(list(table)))}]"),
        re.compile(f"[{_char_class(_ranges(uneven))}]"),
    )


def is_ignorable(ch: str) -> bool:
    """An invisible character the view drops (a format character or another default-ignorable)."""
    return _tables().table.get(ord(ch)) == ""


@dataclass(frozen=True)
class View:
    """A normalised text and the pieces that map it back onto the original.

    Piece ``j`` starts at ``norm_starts[j]`` in the view and ``orig_starts[j]`` in the original. A
    linear piece maps character for character (copied, or each replaced by exactly one character);
    any other piece is one original character that became several characters, or none.
    """

    text: str
    norm_starts: tuple[int, ...] = ()
    orig_starts: tuple[int, ...] = ()
    linear: tuple[bool, ...] = ()
    #: Whether the view differs from the text at all.
    changed: bool = False

    def _orig(self, pos: int) -> int:
        """The original index of the view's character at ``pos``."""
        j = bisect_right(self.norm_starts, pos) - 1
        return self.orig_starts[j] + (pos - self.norm_starts[j] if self.linear[j] else 0)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the view's ``[start, end)`` (``end > start``)."""
        if not self.norm_starts:
            return start, end
        return self._orig(start), self._orig(end - 1) + 1


def normalised_view(text: str) -> View:
    """The detection view of ``text`` (``changed`` False: the text itself)."""
    if text.isascii():
        return View(text)
    tables = _tables()
    if tables.changing.search(text) is None:
        return View(text)
    view = text.translate(tables.table)
    norm_starts: list[int] = [0]
    orig_starts: list[int] = [0]
    linear: list[bool] = [True]
    drift = 0  # view offset minus original offset, after the characters so far
    for m in tables.uneven.finditer(text):
        i = m.start()
        size = len(tables.table[ord(text[i])])
        norm_starts.append(i + drift)
        orig_starts.append(i)
        linear.append(False)
        drift += size - 1
        norm_starts.append(i + 1 + drift)
        orig_starts.append(i + 1)
        linear.append(True)
    return View(view, tuple(norm_starts), tuple(orig_starts), tuple(linear), changed=True)


def visible_key(key: str) -> str:
    """A metadata key as the key rules read it (``ｐａｓｓ\u200bword`` → ``password``)."""
    return normalised_view(key).text
