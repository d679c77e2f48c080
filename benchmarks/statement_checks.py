"""Shape checks for memory statements (issue 19): is a rendered Observation / Fact a readable sentence?

Pure string heuristics, no parser, so they are fast, deterministic and usable on any text (the
statement-quality benchmark, the store audit, unit tests). They look for the failure shapes seen in
rendered memory, not for every grammar error:

* ``lemma_verb`` - a bare-lemma main verb right after a third-person singular subject: a name
  ("Priya adopt grey cat", "Wallaby Lane have asthma"), he / she / it, or "The <noun>" at the start.
  Not flagged after a modal / "to" / "does" / "did", after causatives ("helped Tomas move"),
  after a plural or compound subject ("Priya and Tomas go"), or when a finite verb follows at once
  (a noun compound: "Priya's job offer came").
* ``bare_be`` - "be" that is not governed by a modal, "to", "let" / "make" / "help" or "not"
  ("Jon be sure", "Priya's weekends be busy").
* ``dangling_possessive`` - a possessive subject whose head is followed by a bare-lemma verb
  ("Priya's roommate hide under sofa"), or a possessive followed by a determiner / an auxiliary /
  the end of a clause where a noun must follow ("Priya's the", "Priya's is").
* ``doubled_subject`` - a repeated name ("Priya Priya"), a name followed by a subject pronoun
  ("Priya she went"), or "X says X says".
* ``bad_start`` - the text starts with a lower-case letter, punctuation or a quote.
* ``caption_garbage`` - image-caption artefacts: BLIP's "arafed" family, "a photography of",
  "photo of a photo", bracketed markup, URLs, "img_url" / "blip".
* ``repeated_word`` - the same word twice in a row ("the the").
* ``first_person`` - an unresolved I / me / my / we / our outside quotes.
* ``too_short`` - fewer than three words.
* ``bad_inflection`` - a 3sg "-s" on an irregular past form ("Sofia forgots", "Priya wents").
* ``name_case`` (needs the source text: :func:`case_issues`) - a name of the source spelled in lower
  case ("Chloe says salt has a bald patch" from "Salt has a bald patch").

``filler`` (a discourse marker kept in the statement: "by the way", "lol", "honestly", a leading
"Actually," / "Anyway," / "So,") is reported as a *style* issue: counted, never a grammar failure.

Content support (the store audit): :func:`unsupported_words` lists the content words of a statement
that appear neither in its source text(s) nor in the allowed names, comparing crude stems
(:func:`stem`); words a renderer adds by design (dates, "says", "shares", "photo", auxiliaries,
pronoun renderings) are ignored.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "GRAMMAR_KINDS",
    "LEMMA_KINDS",
    "STYLE_KINDS",
    "Issue",
    "case_issues",
    "content_words",
    "grammar_failures",
    "has_keyword",
    "issues",
    "normalise",
    "stem",
    "tokens",
    "unsupported_words",
]


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


LEMMA_KINDS = frozenset({"lemma_verb", "bare_be", "dangling_possessive"})
GRAMMAR_KINDS = frozenset(
    {
        *LEMMA_KINDS,
        "doubled_subject",
        "bad_start",
        "caption_garbage",
        "repeated_word",
        "first_person",
        "too_short",
        "bad_inflection",
        "name_case",
    }
)
STYLE_KINDS = frozenset({"filler"})


@dataclass(frozen=True, slots=True)
class Issue:
    """One shape problem: ``kind`` (see the module docstring) and the offending ``span``."""

    kind: str
    span: str


# Common English verbs in their base form. Verbs whose past form equals the base (put, cut, set,
# read, hit, let, hurt, quit, cost, shut, spread, bet, cast, burst, split) are left out: "Priya
# quit her job" is past tense, not a lemma.
_BASE_VERBS = _set("""
    accept add admire adopt adore agree allow answer appear apply arrive ask attend avoid bake become
    begin believe belong bike book borrow bring build buy call camp care carry catch celebrate change
    chase chat check chew choose clean climb coach collect come compete complete consider cook cover
    crave create cry dance decide deserve design die dig discover do draw dream drink drive drop earn
    eat enjoy enter explore fall feed feel fight find finish fix fly focus follow forget get give go
    grow hang hate have hear help hide hike hold hope host hunt imagine improve include inspire
    invite join jump keep kill know land launch laugh lead learn leave lend lie like listen live look
    lose love make manage marry mean meet mind miss move need notice offer open organise organize
    own paint pass pay perform pick plan plant play practice practise prefer prepare protect prove
    pull raise reach realise realize receive recommend recover relax remember rent repair rescue rest
    return ride ring rise run save say see seem sell send serve share shop show sign sing sit skate
    ski sleep smile snorkel speak spend stand start stay stop struggle study support surf swim take
    talk teach tell thank think throw train travel try turn understand use visit volunteer wait wake
    walk want watch wear win wish wonder work worry write
    """)
_MODALS = _set(
    "will would can could may might must shall should cannot to let lets make makes made help helps "
    "helped does did do don't doesn't didn't won't wouldn't can't couldn't shouldn't 'll 'd"
)
_CAUSATIVES = _set(
    "let lets make makes made help helps helped watch watches watched see sees saw hear hears heard "
    "have has had bid bids"
)
_ADVERBS = _set(
    "not never also really just always still often usually finally recently sometimes actually even "
    "only probably definitely soon ever already rarely seldom truly totally simply barely hardly "
    "once again rather"
)
_FINITE_HINT = re.compile(
    r"^(?:is|was|are|were|has|had|have|will|would|can|could|did|does|[a-z]+ed|[a-z]{3,}s|came|went|got|took|"
    r"made|said|saw|met|found|gave|left|felt|kept|began|ran|won|bought|brought|thought|told|became|sent|"
    r"spent|built|lost|paid|sold|heard|held|stood|wrote|grew|flew|drove|ate|fell|broke|chose|knew|rode)$"
)
_DETERMINERS = _set("the a an this that these those")
_PREPOSITIONS = _set("of in on at by for from with into onto about over under near to")
_QUOTE_SPAN = re.compile(r"(?<![\w'])'[^']+'(?![\w'])|\"[^\"]+\"|“[^”]+”")
_SUBJECT_PRONOUNS = _set("he she it")
_PLURAL_NOUNS = _set(
    "children people men women feet teeth mice geese police parents kids friends family folks"
)
_PAST_FORMS = _set(
    "went got made took felt came met found gave kept began ran won bought brought thought told became "
    "sent spent built lost paid sold heard held stood wrote grew flew drove ate broke chose knew rode "
    "taught caught said sang swam wore slept meant did forgot"
)
#: Past forms that are also count nouns: "Maria's thoughts" is a plural, not "thought" + "-s".
_PAST_FORM_NOUNS = _set("thought")
#: Verbs after which a name is the object, so a bare verb after that name is the object's complement
#: ("helps Nate be", "seeing LeBron play", "making Tim think") or a second object ("gives Maria hope").
_OBJECT_VERBS = _set(
    "let lets letting make makes made making help helps helped helping watch watches watched watching "
    "see sees saw seeing hear hears heard hearing have has had having give gives gave giving giving "
    "know knows knew remember remembers remembered transport transports transported bring brings brought "
    "get gets got getting keep keeps kept keeping leave leaves left send sends sent show shows showed "
    "tell tells told teach teaches taught witness witnesses witnessed witnessing notice notices noticed noticing"
)
#: Capitalised function words that open a statement ("With support at home, John ..."): not names.
#: Words that modify a following noun ("John's first dance", "Maria's new job"), never a subject.
_NOUN_MODIFIERS = _set("first second third last next new old own big little favourite favorite best")
_OPENERS = _set(
    "with for as when if after before since while even though although because on in at by from "
    "during until once whenever"
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")


def _words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(text)]


def _is_name(word: str) -> bool:
    bare = _strip_possessive(word)
    if not bare or not bare[0].isupper() or bare.lower() in _DETERMINERS or bare == "I":
        return False
    if bare.lower() in _OPENERS:
        return False
    return not (len(bare) > 5 and bare.endswith("ing"))  # "Taking care of ..." is a gerund


def _is_possessive(word: str) -> bool:
    return word.endswith("'s") or (word.endswith("s'") and len(word) > 2)


def _strip_possessive(word: str) -> str:
    if word.endswith("'s"):
        return word[:-2]
    if word.endswith("'"):
        return word[:-1]
    return word


def _skip_adverbs_back(words: Sequence[str], j: int) -> int:
    while j >= 0 and words[j].lower() in _ADVERBS:
        j -= 1
    return j


def _lemma_issues(words: Sequence[str]) -> list[Issue]:
    found: list[Issue] = []
    for i, word in enumerate(words):
        low = word.lower()
        if low == "be":
            j = _skip_adverbs_back(words, i - 1)
            if j >= 0 and words[j].lower() in ("and", "or"):
                continue  # a coordinated bare infinitive: "helps Melanie relax and be creative"
            if j >= 1 and _is_name(words[j]) and words[j - 1].lower() in _OBJECT_VERBS:
                continue  # "helps Nate be more creative": the object's bare infinitive
            if j < 0 or words[j].lower() not in _MODALS:
                found.append(Issue("bare_be", " ".join(words[max(0, j) : i + 1])))
            continue
        if low not in _BASE_VERBS or (word.isupper() and len(word) > 1):
            continue  # an acronym ("CS:GO") is no verb
        j = _skip_adverbs_back(words, i - 1)
        if j < 0:
            continue
        prev = words[j]
        if prev.lower() in _MODALS or _is_possessive(prev):
            continue
        nxt = words[i + 1].lower() if i + 1 < len(words) else ""
        if _FINITE_HINT.match(nxt) and nxt not in ("has", "was") and not nxt.endswith("ss"):
            continue  # "Priya's job offer came": a noun compound, not a verb
        if words[j].lower() in _NOUN_MODIFIERS and j >= 1 and _is_possessive(words[j - 1]):
            continue  # "John's first dance was", "John's first call out": a noun after an adjective
        subject_kind = _subject_kind(words, j)
        if subject_kind is None:
            continue
        span = " ".join(words[max(0, j - 1) : i + 1])
        found.append(Issue("dangling_possessive" if subject_kind == "possessive" else "lemma_verb", span))
    return found


def _subject_kind(words: Sequence[str], j: int) -> str | None:
    """Whether ``words[j]`` ends a third-person singular subject: "name", "possessive", "pronoun",
    "noun" (The <noun> at the start), or None."""
    prev = words[j]
    before = words[j - 1] if j >= 1 else ""
    if prev.lower() in _SUBJECT_PRONOUNS:
        return "pronoun" if before.lower() not in _CAUSATIVES else None
    if _is_name(prev):
        k = j
        while k >= 1 and _is_name(words[k - 1]) and not _is_possessive(words[k - 1]):
            k -= 1  # multi-word name: "Wallaby Lane"
        head_before = words[k - 1].lower() if k >= 1 else ""
        if head_before in ("and", "or", "&") or head_before in _CAUSATIVES or head_before in _OBJECT_VERBS:
            return None  # "seeing LeBron play", "gives Maria hope": the name is an object
        if head_before in _DETERMINERS or head_before in _PREPOSITIONS:
            return None  # a modifier, not a subject: "a LGBTQ support group", "at Northwind work"
        if k >= 1 and _is_possessive(words[k - 1]):
            return "possessive"  # "Priya's sister Leena live"
        return "name"
    if prev.lower() in _PLURAL_NOUNS or not prev.isalpha() or not prev.islower():
        return None
    if prev.endswith("s") and not prev.endswith("ss"):
        return None  # a plural noun: "Priya's kids love ..."
    if before and _is_possessive(before) and _is_name(before) and j - 1 == 0:
        return "possessive"  # statement-initial "Priya's roommate hide"
    if j == 1 and before.lower() == "the":
        return "noun"  # statement-initial "The cat hide"
    return None


_CAPTION = re.compile(
    r"\b(?:araf\w*|araff\w*|a photography of|photo of a photo|picture of a picture|img_url|blip\w*|says shares)\b"
    r"|\ba photo:|https?://|[\[\]{}<>]",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"\b(?:by the way|btw|lol|lmao|haha+|hehe|honestly|you know|i mean|kinda|gonna)\b|^(?:actually|anyway|so|well|oh|ok|okay|yeah|wow)\b,?",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours)\b")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


def issues(text: str) -> list[Issue]:
    """Every shape problem of ``text`` (grammar and style kinds; see the module docstring)."""
    found: list[Issue] = []
    stripped = text.strip()
    words = _words(_QUOTE_SPAN.sub("Quote", stripped))  # a quoted title is one name-like word
    if len(words) < 3:
        found.append(Issue("too_short", stripped))
    if stripped and not (stripped[0].isupper() or stripped[0].isdigit()):
        found.append(Issue("bad_start", stripped[:20]))
    found.extend(_lemma_issues(words))
    for a, b in itertools.pairwise(words):
        if a.lower() == b.lower() and a.isalpha():
            if a[0].isupper():
                found.append(Issue("doubled_subject", f"{a} {b}"))
            else:
                found.append(Issue("repeated_word", f"{a} {b}"))
    m = re.match(r"^((?:[A-Z][\w'’]*\s+){0,3}?[A-Z][\w'’]*),?\s+(he|she|they|it)\b", stripped)
    if m and m.group(1) not in ("I",) and m.group(1).split()[0].lower() not in _DETERMINERS:
        found.append(Issue("doubled_subject", m.group(0)))
    m = re.match(r"^([A-Z][\w'’]*(?:\s+[A-Z][\w'’]*)*) says,? \1 says\b", stripped)
    if m:
        found.append(Issue("doubled_subject", m.group(0)))
    for i, word in enumerate(words):
        if _is_possessive(word) and _is_name(word) and i + 1 < len(words):
            nxt = words[i + 1].lower()
            if nxt in _DETERMINERS or nxt in ("is", "was", "are", "were", "has", "had", "be"):
                found.append(Issue("dangling_possessive", f"{word} {words[i + 1]}"))
    for w in words:
        if w.endswith("s") and w[:-1].lower() in _PAST_FORMS and w[:-1].lower() not in _PAST_FORM_NOUNS:
            found.append(Issue("bad_inflection", w))
    m = _CAPTION.search(stripped)
    if m:
        found.append(Issue("caption_garbage", m.group(0)))
    m = _FIRST_PERSON.search(_QUOTED.sub(" ", stripped))
    if m:
        found.append(Issue("first_person", m.group(0)))
    m = _FILLER.search(stripped)
    if m:
        found.append(Issue("filler", m.group(0)))
    return found


def case_issues(statement: str, source: str, names: Iterable[str] = ()) -> list[Issue]:
    """``name_case``: a word capitalised mid-sentence in ``source`` (a name: "Salt", "Porto"), or one of
    ``names`` (e.g. the parser's proper nouns, which also catch sentence-initial names), that the
    statement spells in lower case ("Chloe says salt has a bald patch")."""
    names = {n for n in names if n[:1].isupper() and n.isalpha() and n != "I"}
    for sentence in re.split(r"(?<=[.!?])\s+", source.replace("’", "'")):
        words = _words(sentence)
        for k, w in enumerate(words[1:], start=1):
            bare = _strip_possessive(w)
            if (
                bare[:1].isupper()
                and bare != "I"
                and bare.isalpha()
                and len(bare) > 1
                and not _in_title(words, k)
            ):
                names.add(bare)
    found: list[Issue] = []
    for w in _words(statement):
        bare = _strip_possessive(w)
        if bare.islower() and bare.capitalize() in names and bare not in _STOP:
            found.append(Issue("name_case", bare))
    return found


def _in_title(words: Sequence[str], k: int) -> bool:
    """Whether ``words[k]`` is one word of a multi-word capitalised title ("New York City", "The
    Cliffs of Moher", "Finding Home"), whose words are also common words ("new cities", "cliffs")."""

    def cap(j: int) -> bool:
        return 0 <= j < len(words) and words[j][:1].isupper() and words[j] != "I"

    def linked(j: int, step: int) -> bool:  # a capitalised neighbour, or one across "of" / "the"
        nxt = j + step
        if cap(nxt):
            return True
        return 0 <= nxt < len(words) and words[nxt].lower() in ("of", "the") and cap(nxt + step)

    return linked(k, 1) or linked(k, -1)


def grammar_failures(text: str) -> list[Issue]:
    """The grammar-kind issues of ``text`` (empty: it passes the shape checks)."""
    return [i for i in issues(text) if i.kind in GRAMMAR_KINDS]


# --- word matching ------------------------------------------------------------------------------

_STOP = _set("""
    a an the and or but if then so as of to in on at by for from with without into onto about over
    under after before since until till during through up down out off near than too very just also
    still now again ever never not no nor is am are was were be been being has have had having do
    does did doing will would can could may might must shall should 's t s d ll re ve m
    he she it they them their theirs his her hers its him himself herself itself themselves one
    this that these those there here who whom whose which what when where why how all any some each
    every more most much many other such own same only really quite rather even yet both either
    says said shares shared share photo picture image
    """)
_DATE_WORDS = _set("""
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday weekend week weeks month months year
    years day days spring summer fall autumn winter today tonight yesterday tomorrow morning evening
    night afternoon ago last next early late mid
    """)


def normalise(text: str) -> str:
    """Lower case, typographic apostrophes folded, "n't" spelled out, possessive "s'" -> "s's"."""
    out = text.replace("’", "'").lower()
    out = re.sub(r"n't\b", " not", out)
    out = re.sub(r"(\w)s'(?=\s|$|[^\w])", r"\1s's", out)
    return re.sub(r"\s+", " ", out).strip()


def tokens(text: str) -> list[str]:
    """Normalised word tokens, possessive "'s" dropped ("Priya's" -> "priya", "40,000" -> "40", "000")."""
    low = normalise(text)
    low = re.sub(r"'s\b", "", low)
    return re.findall(r"[a-z0-9]+", low)


_IRREGULAR = {
    "went": "go", "gone": "go", "got": "get", "gotten": "get", "made": "make", "took": "take",
    "taken": "take", "felt": "feel", "came": "come", "saw": "see", "seen": "see", "met": "meet",
    "found": "find", "gave": "give", "given": "give", "left": "leave", "kept": "keep", "began": "begin",
    "begun": "begin", "ran": "run", "won": "win", "bought": "buy", "brought": "bring", "thought": "think",
    "told": "tell", "became": "become", "sent": "send", "spent": "spend", "built": "build", "lost": "lose",
    "paid": "pay", "sold": "sell", "heard": "hear", "held": "hold", "stood": "stand", "wrote": "write",
    "written": "write", "grew": "grow", "grown": "grow", "flew": "fly", "flown": "fly", "drove": "drive",
    "driven": "drive", "ate": "eat", "eaten": "eat", "fell": "fall", "fallen": "fall", "broke": "break",
    "broken": "break", "chose": "choose", "chosen": "choose", "knew": "know", "known": "know",
    "rode": "ride", "ridden": "ride", "taught": "teach", "caught": "catch", "said": "say", "sang": "sing",
    "sung": "sing", "swam": "swim", "wore": "wear", "worn": "wear", "slept": "sleep", "learnt": "learn",
    "meant": "mean", "did": "do", "done": "do", "had": "have", "has": "have", "was": "be", "were": "be",
    "is": "be", "are": "be", "am": "be", "children": "child", "kids": "kid", "gonna": "go", "wanna": "want",
    "gotta": "get", "mum": "mom", "mom": "mom",
}  # fmt: skip


def stem(word: str) -> str:
    """A crude stem that forgives plural / 3sg / -ed / -ing, a final -e ("hides" ~ "hiding") and
    common irregular forms ("felt" ~ "feel", "gonna" ~ "going")."""
    w = word.lower()
    w = _IRREGULAR.get(w, w)
    if w == "going":
        return "go"
    if len(w) > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif (len(w) > 4 and w.endswith("ed")) or (
        len(w) > 4 and w.endswith(("ses", "xes", "zes", "ches", "shes"))
    ):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousl":
        w = w[:-1]  # "stopped" -> "stopp" -> "stop"
    return w


def has_keyword(keyword: str, text: str) -> bool:
    """Whether every token of ``keyword`` occurs in ``text``, contiguously and in order, by stem."""
    want = [stem(t) for t in tokens(keyword)]
    have = [stem(t) for t in tokens(text)]
    if not want:
        return True
    n = len(want)
    return any(have[i : i + n] == want for i in range(len(have) - n + 1))


def content_words(text: str) -> list[str]:
    """The content words of ``text``: tokens that are not stop words, date words or bare numbers."""
    return [
        t for t in tokens(text) if t not in _STOP and t not in _DATE_WORDS and not t.isdigit() and len(t) > 1
    ]


def unsupported_words(statement: str, sources: Iterable[str], names: Iterable[str] = ()) -> list[str]:
    """Content words of ``statement`` found (by stem) neither in ``sources`` nor in ``names``."""
    known = {stem(t) for src in sources for t in tokens(src)}
    known |= {stem(t) for name in names for t in tokens(name)}
    out: list[str] = []
    for word in content_words(statement):
        s = stem(word)
        if s in known or any(len(s) >= 5 and k.startswith(s[:5]) for k in known if len(k) >= 5):
            continue
        out.append(word)
    return out
