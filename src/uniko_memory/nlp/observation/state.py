"""The render state of one parsed sentence, and how it reads out as text.

Every rule module reads the same few facts about a sentence: which tokens are the speaker or the
addressee, what each pronoun was resolved to, which tokens a date replaced. They are worked out
once (:mod:`.render`, :mod:`.reference`) into :class:`SentenceState` and then only read; plain
functions take the state as their first argument, so no rule needs to live on a class.
The spaCy model is a soft dependency, so tokens are typed only for the checker.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from uniko_memory.nlp.observation.filler import DEFAULT_FILLER, Filler
from uniko_memory.nlp.observation.types import Antecedent, PronounState
from uniko_memory.nlp.temporal import TemporalMatch

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

__all__ = ["Clause", "SentenceState", "reject", "render", "render_words"]


@dataclass(slots=True)
class Clause:
    """One candidate statement: its head verb, subject tokens and content tokens."""

    head: Token
    subject: list[Token]
    tokens: list[Token]
    inherited: bool = False
    elided: bool = False
    elided_aux: str = ""
    expletive: bool = False
    existential: bool = False
    presented: Token | None = None  # "here is a photo of X": the thing shown


@dataclass(slots=True)
class SentenceState:
    """What the rules know about one parsed sentence: the rendering map and the references."""

    sent: Span
    speaker: str
    addressee: str | None
    timestamp: datetime
    state: PronounState
    #: Token index -> the text that replaces it in a statement ("" drops it).
    repl: dict[int, str] = field(default_factory=dict)
    first: set[int] = field(default_factory=set)
    plural_first: set[int] = field(default_factory=set)
    #: The speaker's own possessives after the speaker as subject ("I hurt my ankle"): "their".
    own_possessive: set[int] = field(default_factory=set)
    second: set[int] = field(default_factory=set)
    resolved: dict[int, Antecedent] = field(default_factory=dict)
    unresolved: set[int] = field(default_factory=set)
    expletive: set[int] = field(default_factory=set)
    temporal: list[tuple[list[int], TemporalMatch]] = field(default_factory=list)
    candidates: list[tuple[int, Antecedent]] = field(default_factory=list)
    rejections: list[tuple[str, str]] | None = None
    #: The filler rules (built-in lexicon plus ``NlpConfig.filler_phrases``).
    filler: Filler = DEFAULT_FILLER
    #: An earlier sentence of the turn offered sympathy ("I'm so sorry."); see ``turn_mentions``.
    consoling: bool = False
    #: Antecedent texts (lower case) mentioned in the earlier sentences of this turn.
    turn_mentions: frozenset[str] = frozenset()


def reject(s: SentenceState, reason: str, clause: Clause | None) -> bool:
    """Record why a sentence or clause yields nothing, so a caller can see what was refused and by
    which rule (see ``rejections``); always True."""
    if s.rejections is not None:
        text = render(s, clause.tokens) if clause is not None and clause.tokens else s.sent.text
        s.rejections.append((reason, text.strip()))
    return True


def render_words(s: SentenceState, toks: Sequence[Token], *, names: bool = False) -> list[str]:
    """The rendered words of ``toks``, for the callers that trim words off either end."""
    text = render(s, toks, names=names)
    return text.split() if text else []


def render(s: SentenceState, toks: Sequence[Token], *, names: bool = False) -> str:
    """Render tokens in document order through the rendering map. A statement says "their"
    for the speaker's own possessive after the speaker as subject ("Tomas hurt their ankle");
    ``names``: the name form regardless (an antecedent's text, read in later sentences)."""
    out: list[str] = []
    prev: Token | None = None
    for tok in sorted(toks, key=lambda t: t.i):
        word = s.repl.get(tok.i, tok.text)
        if tok.i in s.own_possessive and not names:
            word = "their"
        if not word:
            prev = tok
            continue
        if out:
            glued = prev is not None and prev.i == tok.i - 1 and not prev.whitespace_
            clitic = tok.text != word and (
                tok.text[:1] in ("'", "’") or tok.lower_ in ("n't", "n’t", "na", "ta")
            )
            if not glued or (clitic and word[:1].isalnum()):
                out.append(" ")
        out.append(word)
        prev = tok
    text = "".join(out)
    text = re.sub(r"\s+([,;:.!?])", r"\1", text)
    text = re.sub(r"\s{2,}", " ", text)
    return text.strip(" ,;:-–—")
