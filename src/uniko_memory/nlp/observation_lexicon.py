"""Word lists and English inflection helpers for the P3 observation rules.

Everything here is closed-class or general-purpose English (pronouns, auxiliaries, kinship nouns,
discourse fillers); nothing is fitted to a particular corpus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from uniko_memory.nlp.ner import normalize_entity_name

__all__ = [
    "ACQUISITION_VERBS",
    "COLLECTIVE_NOUNS",
    "DISCOURSE_LEADERS",
    "FEMALE_NOUNS",
    "FILLER_LEMMAS",
    "FIRST_PERSON",
    "INDEFINITE_PRONOUNS",
    "LIGHT_VERBS",
    "MALE_NOUNS",
    "PERSON_NOUNS",
    "PLURAL_FIRST",
    "REJECT_OBJECT_PRONOUNS",
    "SECOND_PERSON",
    "THIRD_PERSON",
    "VAGUE_NOUNS",
    "Filler",
    "expand_contraction",
    "is_condolence",
    "is_filler_sentence",
    "normalize_name",
    "strip_filler",
    "third_singular",
]

# First person. "we"/"us"/"our" are mapped to the speaker alone (see observations.py): the speaker
# is always part of the group, so the statement stays true of them, only less specific.
FIRST_PERSON: dict[str, str] = {
    "i": "subj",
    "me": "obj",
    "my": "poss",
    "mine": "poss_abs",
    "myself": "refl",
    "we": "subj",
    "us": "obj",
    "our": "poss",
    "ours": "poss_abs",
    "ourselves": "refl",
    "ourself": "refl",
}
PLURAL_FIRST = frozenset({"we", "us", "our", "ours", "ourselves", "ourself"})

SECOND_PERSON: dict[str, str] = {
    "you": "subj",
    "your": "poss",
    "yours": "poss_abs",
    "yourself": "refl",
    "yourselves": "refl",
    "ya": "subj",
    "u": "subj",
}

# Third person pronoun -> (form, kind) with kind "person" (singular human), "thing" (singular
# non-human) or "plural".
THIRD_PERSON: dict[str, tuple[str, Literal["person", "thing", "plural"]]] = {
    "he": ("subj", "person"),
    "him": ("obj", "person"),
    "his": ("poss", "person"),
    "himself": ("refl", "person"),
    "she": ("subj", "person"),
    "her": ("obj", "person"),  # PRP$ "her" is re-labelled "poss" from the tag
    "hers": ("poss_abs", "person"),
    "herself": ("refl", "person"),
    "it": ("subj", "thing"),
    "its": ("poss", "thing"),
    "itself": ("refl", "thing"),
    "they": ("subj", "plural"),
    "them": ("obj", "plural"),
    "their": ("poss", "plural"),
    "theirs": ("poss_abs", "plural"),
    "themselves": ("refl", "plural"),
}

# A whole object made of one of these carries no content ("I love it", "I did that").
REJECT_OBJECT_PRONOUNS = frozenset(
    {"it", "that", "this", "them", "these", "those", "one", "ones", "so", "which", "what"}
)
INDEFINITE_PRONOUNS = frozenset(
    {
        "something", "anything", "everything", "nothing", "someone", "anyone", "everyone", "noone",
        "somebody", "anybody", "everybody", "nobody", "all", "both", "each", "either", "neither",
        "none", "some", "any", "many", "much", "few", "more", "most", "less", "little", "other",
        "others", "another", "such", "whatever", "whoever", "who", "whom", "what", "which", "that",
        "this", "these", "those", "there", "here", "one", "ones", "lot", "lots", "stuff", "thing",
        "things",
    }
)  # fmt: skip

# Verbs that say almost nothing without a complement (design §3.3).
LIGHT_VERBS = frozenset({"do", "make", "get", "have", "be", "go", "take", "give", "keep", "let", "come"})
#: Occasions that happen on a date: "the trip is off" and "the party is on Friday" say something
#: about them although "be" has no complement (a light verb otherwise).
EVENT_NOUNS = frozenset(
    [
        "visit",
        "trip",
        "party",
        "wedding",
        "surgery",
        "operation",
        "appointment",
        "meeting",
        "interview",
        "flight",
        "concert",
        "dinner",
        "lunch",
        "brunch",
        "holiday",
        "vacation",
        "exam",
        "ceremony",
        "reunion",
        "birthday",
        "match",
        "game",
        "housewarming",
        "launch",
        "presentation",
        "deadline",
        "show",
        "gig",
        "festival",
        "conference",
        "barbecue",
        "bbq",
        "picnic",
        "checkup",
        "check-up",
        "hearing",
        "graduation",
        "funeral",
        "shower",
        "recital",
        "tournament",
        "race",
        "marathon",
        "retreat",
        "move",
        "move-in",
        "date",
        "call",
        "session",
        "lesson",
        "playdate",
        "sleepover",
        "viewing",
        "tour",
        "hike",
        "camping",
        "adoption",
        "booking",
        "reservation",
        "plan",
        "plans",
        "sale",
        "purchase",
        "order",
        "delivery",
        "treatment",
        "procedure",
        "scan",
    ]
)
#: What "be" says of an event without a complement: it is cancelled ("the trip is off").
EVENT_OFF_WORDS = frozenset({"off", "cancelled", "canceled", "over"})

# Singular human nouns that a later he/she can point to (closed, general English).
PERSON_NOUNS = frozenset(
    {
        "mom", "mum", "mother", "dad", "father", "parent", "sister", "brother", "sibling", "son",
        "daughter", "kid", "child", "baby", "husband", "wife", "partner", "boyfriend", "girlfriend",
        "fiance", "fiancee", "spouse", "grandma", "grandmother", "grandpa", "grandfather",
        "grandparent", "grandson", "granddaughter", "grandchild", "aunt", "uncle", "cousin", "niece",
        "nephew", "friend", "buddy", "pal", "roommate", "neighbor", "neighbour", "boss", "coworker",
        "colleague", "teacher", "mentor", "student", "coach", "doctor", "therapist", "counselor",
        "nurse", "man", "woman", "guy", "girl", "boy", "lady", "gentleman", "person", "stepmom",
        "stepdad", "stepmother", "stepfather", "mentee", "classmate", "teammate", "client",
        "customer", "manager", "landlord", "relative", "ex",
    }
)  # fmt: skip
FEMALE_NOUNS = frozenset(
    {
        "mom", "mum", "mother", "sister", "daughter", "wife", "girlfriend", "fiancee", "grandma",
        "grandmother", "granddaughter", "aunt", "niece", "girl", "woman", "lady", "stepmom",
        "stepmother",
    }
)  # fmt: skip
MALE_NOUNS = frozenset(
    {
        "dad", "father", "brother", "son", "husband", "boyfriend", "fiance", "grandpa",
        "grandfather", "grandson", "uncle", "nephew", "boy", "man", "guy", "gentleman", "stepdad",
        "stepfather",
    }
)  # fmt: skip
# Animals a later he / she (or it) can point to: "my cat ... she hides under the sofa".
ANIMAL_NOUNS = frozenset(
    {
        "cat", "kitten", "kitty", "dog", "puppy", "pup", "pet", "horse", "pony", "bird", "parrot",
        "rabbit", "bunny", "hamster", "guinea", "turtle", "tortoise", "fish", "snake", "lizard",
        "gecko", "ferret", "chicken", "hen", "goat", "cow", "pig", "sheep", "duck", "mouse", "rat",
    }
)  # fmt: skip
# Heads of proper names that name a place or an organisation, never a person ("42 Wallaby Lane",
# "Baker Street", "Northwind Analytics"), whatever the entity tagger says.
PLACE_HEADS = frozenset(
    {
        "lane", "street", "st", "road", "rd", "avenue", "ave", "drive", "boulevard", "blvd", "way",
        "court", "place", "square", "terrace", "crescent", "close", "park", "hill", "heights",
        "mountain", "mount", "lake", "river", "beach", "bay", "island", "valley", "city", "town",
        "county", "state", "province", "hospital", "clinic", "school", "academy", "university",
        "college", "institute", "center", "centre", "cafe", "café", "restaurant", "bar", "pub",
        "hotel", "inn", "airport", "station", "mall", "market", "store", "shop", "church",
        "museum", "gallery", "library", "theater", "theatre", "stadium", "arena", "studio", "gym",
        "inc", "ltd", "llc", "corp", "company", "co", "group", "analytics", "labs", "bank",
    }
)  # fmt: skip
# Singular nouns for groups of people, which a later "they" points to.
COLLECTIVE_NOUNS = frozenset({"family", "folks", "crew", "team", "gang", "couple", "parents"})

# Nouns too generic to be a useful antecedent for "it".
VAGUE_NOUNS = frozenset(
    {
        "lot", "lots", "thing", "things", "stuff", "time", "times", "way", "ways", "kind", "sort",
        "bit", "day", "days", "week", "weeks", "month", "months", "year", "years", "moment", "today",
        "tonight", "tomorrow", "yesterday", "weekend", "morning", "evening", "night", "afternoon",
        "while", "minute", "hour", "something", "anything", "everything", "nothing", "one",
        "part", "end", "fact", "idea", "reason", "sense", "point", "matter", "case", "luck",
        "spring", "summer", "autumn", "fall", "winter", "season", "holidays", "weekday", "weekdays",
    }
)  # fmt: skip

# Feelings that say nothing recallable without what they are about ("I'm so happy"); a state of
# health ("he's fine now" after an injury) is not one of them.
FEELING_WORDS = frozenset(
    {
        "happy", "glad", "sad", "afraid", "scared", "nervous", "excited", "tired", "exhausted",
        "sorry", "upset", "angry", "bored", "stressed",
        "relieved", "thrilled", "proud", "worried", "anxious", "jealous", "curious", "confused",
        "grateful", "thankful", "lucky", "blessed", "busy", "sure", "ready",
    }
)  # fmt: skip

# Verbs by which the subject comes to own their object: "I adopted a cat" makes it the speaker's cat.
ACQUISITION_VERBS = frozenset({"adopt", "buy", "get", "own", "rescue", "inherit", "purchase", "receive"})

# Words that open a chat sentence without adding content; stripped from the start of a clause.
DISCOURSE_LEADERS = frozenset(
    {
        "oh", "ooh", "ah", "aw", "aww", "wow", "whoa", "yeah", "yea", "yes", "yep", "yup", "no",
        "nope", "well", "so", "and", "but", "plus", "anyway", "anyways", "haha", "lol", "hmm", "um",
        "uh", "ok", "okay", "hey", "hi", "hello", "honestly", "btw", "omg", "gosh", "man", "dude",
        "or", "then", "now", "right", "sure", "totally", "definitely", "absolutely", "actually",
    }
)  # fmt: skip

# Sentence roots that make a greeting, thanks or pleasantry rather than a statement.
FILLER_LEMMAS = frozenset(
    {
        "thank", "thanks", "congrats", "congratulation", "congratulations", "congratulate", "hi",
        "hello", "hey", "bye", "goodbye", "welcome", "cheer", "cheers", "sorry", "bless", "wish",
        "appreciate", "glad", "nice", "sound", "see", "talk", "catch", "care", "luck", "awesome",
        "great", "cool", "wow", "agree",
    }
)  # fmt: skip

_IRREGULAR_3SG = {"be": "is", "have": "has", "do": "does", "go": "goes", "am": "is", "are": "is"}
_VOWELS = frozenset("aeiou")


def third_singular(word: str) -> str:
    """Third-person singular present of a base-form verb: love -> loves, try -> tries, go -> goes."""
    low = word.lower()
    if low in _IRREGULAR_3SG:
        out = _IRREGULAR_3SG[low]
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    elif low.endswith("y") and len(low) > 1 and low[-2] not in _VOWELS:
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    return out.capitalize() if word[:1].isupper() else out


# Contracted or reduced tokens as spaCy splits them -> full form (None = not a contraction).
_CONTRACTIONS = {
    "'m": "am",
    "’m": "am",
    "'re": "are",
    "’re": "are",
    "'ve": "have",
    "’ve": "have",
    "'ll": "will",
    "’ll": "will",
    "n't": "not",
    "n’t": "not",
    "ca": "can",
    "wo": "will",
    "sha": "shall",
    "gon": "going",
    "wan": "want",
}


def expand_contraction(text: str, tag: str, lemma: str) -> str | None:
    """The spelled-out form of a clitic token ("'m" -> "am", "'d" -> "would"/"had"), else None."""
    low = text.lower()
    if low in ("'s", "’s"):
        if lemma == "be":
            return "is"
        if lemma == "have":
            return "has"
        if lemma == "us":
            return "us"
        return None
    if low in ("'d", "’d"):
        return "would" if tag == "MD" else "had"
    if low in ("na", "ta") and tag == "TO":
        return "to"
    if low in ("ca", "wo", "sha") and tag != "MD":
        return None
    if low in ("gon", "wan") and tag.startswith("VB"):
        return _CONTRACTIONS[low]
    if low in ("gon", "wan"):
        return None
    return _CONTRACTIONS.get(low)


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


def normalize_name(name: str) -> str:
    """An entity name as the NER layer normalises it (possessive and edge punctuation stripped)."""
    return normalize_entity_name(name)
