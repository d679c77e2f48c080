"""The write gate's filler rules: pleasantries that make no statement, and discourse markers that
a statement sheds at either end.

Chat is mostly greetings, thanks and encouragement; a statement made of one ("Melanie says
thanks") would crowd out the facts recall is for, so these are refused before any rule runs. A
deployment adds its own phrases through :class:`Filler` (``NlpConfig.filler_phrases``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["DEFAULT_FILLER", "Filler", "is_condolence", "is_filler_sentence", "strip_filler"]

# Whole-sentence pleasantries: greetings, thanks, farewells, sympathy and encouragement formulas.
_FILLER = re.compile(
    r"^\W*(?:(?:oh|no|wow|hey|hi|yeah|yes|yep|yup|aw+|well|haha|lol|lmao|ok|okay|hmm+|um+|uh|ah|and|so)\W+)*(?:"
    r"thanks?\b|thank\s+you|thx\b|ty\b|congrat|good\s*night\b"
    r"|(?:hi|hello|hey|hiya|bye|goodbye)\b(?:\s+[a-z]+)?\W*$"
    r"|good\s+(?:morning|afternoon|evening|luck|job|idea|point|question)\b|take\s+care\b|see\s+(?:you|ya)\b"
    r"|talk\s+(?:to\s+you\s+)?(?:soon|later)\b|catch\s+you\b|cheers\b|welcome\b|you'?re\s+welcome\b"
    r"|no\s+(?:problem|worries)\b|sounds?\s+(?:good|great|fun|awesome|amazing|like)\b|keep\s+(?:it\s+up|going|up)\b"
    r"|you\s+(?:got|can\s+do)\s+this\b|hang\s+in\s+there\b|way\s+to\s+go\b|well\s+done\b|nice\s+one\b"
    r"|(?:it'?s|it\s+is)\s+(?:so\s+)?(?:good|great|nice)\s+to\s+(?:see|hear|talk|chat|catch)\b"
    r"|(?:i'?m|i\s+am)\s+(?:so\s+|really\s+|very\s+|truly\s+)*(?:glad|happy|sorry)\s+(?:to\s+hear|for\s+you|you)\b"
    r"|(?:i\s+)?(?:can'?t|cannot)\s+wait\s+to\s+(?:see|hear)\b|let\s+me\s+know\b|glad\s+to\s+hear\b"
    r"|glad\b|(?:you'?re|you\s+are|that'?s|that\s+is)\s+(?:so\s+|totally\s+|absolutely\s+|definitely\s+)?right\b"
    r"|(?:so\s+)?(?:happy|proud)\s+(?:for\s+you|of\s+you|that|you)\b|nice\s+to\s+(?:meet|see|hear)\b"
    r"|good\s+to\s+(?:see|hear|know)\b|my\s+pleasure\b|anytime\b|(?:noted|got\s+it|will\s+do)\W*$"
    r"|(?:i\s+)?hope\s+(?:you'?re|you\s+are|you'?ve\s+been|all\s+is|everything'?s|everything\s+is)\s+"
    r"(?:doing\s+)?(?:well|good|ok|okay|fine|great)\b"
    r"|(?:i'?m|i\s+am)\s+(?:so\s+|really\s+|very\s+|truly\s+)*sorry\W*$"
    r"|(?:i'?m|i\s+am)\s+(?:so\s+|really\s+|very\s+|truly\s+)*(?:proud\s+of|happy\s+for)\s+you\W*$"
    r"|(?:i\s+)?(?:can'?t|cannot|can\s+not)\s+(?:imagine|believe\s+it|believe)\W*$)",
    re.IGNORECASE,
)


# Discourse tails that add nothing to a statement ("..., by the way", "..., honestly", "..., lol").
FILLER_TAIL = re.compile(
    r"[,;]?\s+(?:by\s+the\s+way|btw|honestly|tbh|lol|haha+|though|you\s+know|i\s+guess|anyway|anyways"
    r"|just\s+saying|fyi)\W*$",
    re.IGNORECASE,
)


# ... and the same words leading one ("By the way, Priya started ...", "Actually, ...").
FILLER_LEAD = re.compile(
    r"^(?:by\s+the\s+way|btw|anyway|anyways|actually|honestly|fyi|oh\s+and|also)\s*[,;:-]?\s+(?=\S)",
    re.IGNORECASE,
)


def strip_filler(text: str) -> str:
    """``"By the way, Priya's favourite colour is green, honestly"`` -> ``"Priya's favourite colour is
    green"``: discourse markers at either end of a statement say nothing about anyone."""
    while True:
        cut = FILLER_LEAD.sub("", FILLER_TAIL.sub("", text))
        if cut == text:
            return text
        text = cut


@dataclass(frozen=True)
class Filler:
    """The write gate's filler rules: the built-in lexicon plus a deployment's own ``phrases``
    (``NlpConfig.filler_phrases``: "roger that", "innit"). A sentence that is one of them makes no
    statement; a statement ending on ", <phrase>" loses it."""

    phrases: tuple[str, ...] = ()
    _whole: re.Pattern[str] | None = field(init=False, default=None, repr=False, compare=False)
    _tail: re.Pattern[str] | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = [r"\s+".join(map(re.escape, p.split())) for p in self.phrases if p.split()]
        if words:
            alt = "|".join(sorted(words, key=len, reverse=True))
            object.__setattr__(self, "_whole", re.compile(rf"^\W*(?:{alt})\W*$", re.IGNORECASE))
            object.__setattr__(self, "_tail", re.compile(rf"[,;]?\s+(?:{alt})\W*$", re.IGNORECASE))

    def is_sentence(self, text: str) -> bool:
        """Whether the whole sentence is filler (built-in pleasantries or one of ``phrases``)."""
        return is_filler_sentence(text) or (self._whole is not None and self._whole.search(text) is not None)

    def strip(self, text: str) -> str:
        """``text`` without filler at either end."""
        while True:
            cut = strip_filler(text)
            if self._tail is not None:
                cut = self._tail.sub("", cut)
            if cut == text:
                return text
            text = cut


# Sympathy for a loss or a setback: what follows it in the same turn about the other speaker's
# news ("She had a good long life", "He was lucky to have you") is consolation, not a fact.
_CONDOLENCE = re.compile(
    r"\b(?:i'?m|i\s+am)\s+(?:so\s+|really\s+|very\s+|truly\s+|deeply\s+)*sorry\b"
    r"|\bsorry\s+(?:to\s+hear|for\s+your\s+loss|about\s+(?:your|the|that))\b|\bcondolences\b"
    r"|\brest\s+in\s+peace\b",
    re.IGNORECASE,
)


def is_condolence(text: str) -> bool:
    """Whether the sentence offers sympathy ("I'm so sorry", "Sorry to hear that", "My condolences")."""
    return _CONDOLENCE.search(text.replace("’", "'")) is not None


def is_filler_sentence(text: str) -> bool:
    """Whether the sentence is a greeting, thanks, farewell or stock pleasantry."""
    return _FILLER.search(text.replace("’", "'")) is not None


#: The built-in rules alone, for callers that add no phrases of their own.
DEFAULT_FILLER = Filler()
