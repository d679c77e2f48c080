"""HTML to text with the standard library: the visible words, in blocks, headings kept as ``#`` lines.

Scripts, styles and other non-content elements are dropped; block elements become paragraph
breaks so chunks keep to sentence and paragraph boundaries; ``<h1>``-``<h6>`` become Markdown
heading lines so the document splits at headings like Markdown does; ``<title>`` is the title.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

from ..turn import clean_content

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "canvas"})
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "main", "nav",
        "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "tr", "ul",
    }
)  # fmt: skip
_LINE = frozenset({"br", "li", "td", "th"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SPACES = re.compile(r"[ \t\f\v\r\n]+")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._pre = 0
        self._in_title = False
        self._heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
            self._heading = True
        elif tag in _BLOCK:
            self.parts.append("\n\n")
            self._pre += tag == "pre"
        elif tag in _LINE:
            self.parts.append(" " if self._heading else "\n- " if tag == "li" else "\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _LINE or tag in _BLOCK:  # <br/>, <hr/>
            self.parts.append(" " if self._heading else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS:
            self.parts.append("\n\n")
            self._heading = False
        elif tag in _BLOCK:
            self.parts.append("\n\n")
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in_title:
            self.title.append(data)
        elif self._pre and not self._heading:
            self.parts.append(data)
        else:
            self.parts.append(_SPACES.sub(" ", data))


def html_to_text(html: str) -> tuple[str | None, str]:
    """``(title, text)`` of an HTML document; the title is None when it has none."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    title = _SPACES.sub(" ", "".join(parser.title)).strip() or None
    # Lines are stripped (inline whitespace is noise; a <pre>'s indentation is lost, its lines kept).
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return title, clean_content(text.strip("\n"))


def decode_declared(data: bytes) -> str | None:
    """The document decoded with the charset its ``<meta>`` declares, or None if that fails."""
    m = _CHARSET.search(data[:4096])
    if m is None:
        return None
    try:
        return clean_content(data.decode(codecs.lookup(m.group(1).decode("ascii")).name))
    except (LookupError, UnicodeDecodeError):
        return None
