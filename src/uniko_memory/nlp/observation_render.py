"""Rendering half of the P3 observation rules: a parsed sentence rewritten in the third person.

:class:`SentenceRender` builds, for one sentence, a map from token index to replacement text:

* first person -> the speaker, second person -> the addressee (unresolved when there is none),
  third person -> the newest compatible antecedent (this sentence first, then the session's
  :class:`~uniko_memory.nlp.observation_types.PronounState`);
* contractions spelled out ("'m" -> "am", "n't" -> "not", "gonna" -> "going to");
* third-person singular agreement where the subject became a name ("I love" -> "loves",
  "I've" -> "has", "we were" -> "was");
* relative time phrases replaced by absolute dates ("yesterday" -> "on 7 May 2023");
* vocatives (the addressee's name used to call them) dropped.

It also registers the sentence's nouns as antecedents and gates whole sentences (questions,
pleasantries, very short ones). The clause templates live in ``observation_rules.py``.
The spaCy model is a soft dependency, so tokens are typed only for the checker.

Over 400 lines on purpose: the rendering map (persons, pronouns, agreement, dates, vocatives) is
one piece of state built in one pass; its steps depend on each other's order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from uniko_memory.nlp.observation_lexicon import (
    ACQUISITION_VERBS,
    ANIMAL_NOUNS,
    COLLECTIVE_NOUNS,
    DISCOURSE_LEADERS,
    FEMALE_NOUNS,
    FIRST_PERSON,
    MALE_NOUNS,
    PERSON_NOUNS,
    PLACE_HEADS,
    PLURAL_FIRST,
    SECOND_PERSON,
    THIRD_PERSON,
    VAGUE_NOUNS,
    Filler,
    expand_contraction,
    normalize_name,
    third_singular,
)
from uniko_memory.nlp.observation_types import (
    Antecedent,
    AntecedentKind,
    Gender,
    PronounState,
    known,
    unambiguous,
)
from uniko_memory.nlp.temporal import TemporalMatch, absolute_phrase, find_temporal_phrases, format_window

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

__all__ = ["Clause", "SentenceRender"]

SUBJ_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass"})
_CLAUSE_DEPS = frozenset({"conj", "ccomp", "advcl", "relcl", "parataxis", "csubj", "acl", "xcomp", "pcomp"})
_ARG_DEPS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "dative", "oprd", "appos", "conj"})
_ABSOLUTE_POSSESSIVES = frozenset({"mine", "yours", "ours"})
#: Object positions of a personal pronoun ("him", "them"): never bound to their own clause's subject.
_OBJECT_DEPS = frozenset({"dobj", "pobj", "dative", "iobj"})
DEFAULT_FILLER = Filler()
NON_NAME_ENTS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
_BARE_PREPS = frozenset(
    {
        "since",
        "until",
        "till",
        "for",
        "before",
        "after",
        "by",
        "from",
        "to",
        "through",
        "of",
        "during",
        "in",
        "on",
        "at",
    }
)
_EXPLETIVE_HEADS = frozenset({"be", "seem", "feel", "look", "sound", "take", "make", "become", "get"})
_WEATHER = frozenset({"rain", "snow", "pour", "drizzle", "hail"})
_QUESTION_AUX = frozenset(
    {"be", "do", "have", "will", "can", "could", "would", "should", "shall", "may", "might", "must"}
)
_WH = frozenset({"WP", "WRB", "WDT", "WP$"})
_ROLE_RANK = {"nsubj": 3, "nsubjpass": 3, "dobj": 2, "attr": 2, "dative": 1, "oprd": 1, "pobj": 1}
#: Verbs whose past tense is spelled as the base form: the tagger reads "I hurt my ankle last
#: week" as a present (VBP), which agreement would turn into "hurts".
SAME_FORM_PAST = frozenset(
    {"hurt", "put", "cut", "set", "let", "hit", "quit", "shut", "spread", "cost", "burst", "split", "bet"}
    | {"read", "upset", "broadcast", "forecast", "fit", "rid", "shed", "thrust", "bid", "cast"}
)
#: Irregular past forms: never given a third-person "-s" ("forgots", "wents").
IRREGULAR_PAST = frozenset(
    [
        "went",
        "got",
        "made",
        "took",
        "felt",
        "came",
        "saw",
        "met",
        "found",
        "gave",
        "left",
        "kept",
        "began",
        "ran",
        "won",
        "bought",
        "brought",
        "thought",
        "told",
        "became",
        "sent",
        "spent",
        "built",
        "lost",
        "paid",
        "sold",
        "heard",
        "held",
        "stood",
        "wrote",
        "grew",
        "flew",
        "drove",
        "ate",
        "fell",
        "broke",
        "chose",
        "knew",
        "rode",
        "taught",
        "caught",
        "said",
        "sang",
        "swam",
        "wore",
        "slept",
        "learnt",
        "meant",
        "did",
        "had",
        "was",
        "were",
        "forgot",
        "forgave",
        "understood",
        "woke",
        "drank",
        "spoke",
        "stole",
        "threw",
        "hid",
        "bit",
        "shook",
        "sat",
        "lay",
        "led",
        "fed",
        "fought",
        "dealt",
        "dug",
        "hung",
        "lit",
        "sought",
        "struck",
        "swore",
        "tore",
        "wept",
        "wound",
        "froze",
        "began",
        "rang",
        "sank",
        "stuck",
        "swung",
    ]
)
_EVALUATIVE_VERBS = frozenset({"suck", "hurt", "help", "matter", "bother", "annoy", "amaze", "pay", "stink"})
_EXPLETIVE_MARKS = frozenset({"like", "when", "whenever", "if", "as", "how"})
_QUANTIFIER_PRONOUNS = frozenset(
    {"everyone", "everybody", "someone", "somebody", "anyone", "anybody", "nobody", "each", "whoever"}
)
_CAUSATIVE_VERBS = frozenset({"let", "make", "help", "have", "see", "watch", "hear", "feel", "bid", "notice"})
TERMINAL = re.compile(r"[.!?…]+")
_NOMINATIVE = frozenset({"i", "we", "you", "ya", "u"})
_MIN_SENTENCE_TOKENS = 4
_SNAKE = re.compile(r"[^a-z0-9]+")


def lemma_of(tok: Token) -> str:
    low = tok.lower_
    if low in ("gon", "gonna"):
        return "go"
    if low in ("wan", "wanna"):
        return "want"
    if low in ("'m", "’m", "'re", "’re"):
        return "be"
    lemma = str(tok.lemma_).lower()
    return repair_lemma(low, lemma) if tok.tag_ in ("VBG", "VBD", "VBN") else lemma


_VOWEL_GROUP = re.compile(r"[aeiou]+")
_DOUBLED = re.compile(r"([bdgkmnprtv])\1$")


def repair_lemma(word: str, lemma: str) -> str:
    """Fix the small model's -ing/-ed lemma slips: "prepping" -> "prep" (not "preppe"),
    "hoping" -> "hope" (not "hop"); other lemmas are returned unchanged."""
    suffix = "ing" if word.endswith("ing") else "ed" if word.endswith("ed") else ""
    stem = word[: -len(suffix)] if suffix else ""
    if len(stem) < 2:
        return lemma
    if _DOUBLED.search(stem) and lemma == stem + "e":  # "blogging" -> "blogge" should be "blog"
        return stem[:-1]
    monosyllable_cvc = (
        len(_VOWEL_GROUP.findall(stem)) == 1 and re.search(r"[^aeiou][aeiou][^aeiouwxy]$", stem) is not None
    )
    if suffix == "ing" and lemma == stem and monosyllable_cvc:  # undoubled CVC: a silent e was dropped
        return stem + "e"
    return lemma


def _clause_of(tok: Token) -> int:
    """Index of the clause head governing ``tok`` (nearest verb heading a finite/non-finite clause)."""
    cur = tok
    while cur.dep_ != "ROOT":
        if cur.pos_ in ("VERB", "AUX") and cur.dep_ in _CLAUSE_DEPS:
            return int(cur.i)
        cur = cur.head
    return int(cur.i)


#: Entity labels of names: a sentence-initial word the recogniser reads as one keeps its capital.
_NAME_ENTS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "PRODUCT", "EVENT", "WORK_OF_ART"})


def _named_subject(tok: Token) -> bool:
    """A capitalised sentence-initial subject that the recogniser reads as a name although the
    tagger called it a common noun ("Salt has a bald patch", Salt being a guinea pig): lower-casing
    it would turn a name into a thing, capitalising a common noun only costs style."""
    return (
        tok.text[:1].isupper()
        and tok.ent_type_ in _NAME_ENTS
        and tok.ent_iob_ == "B"
        and tok.dep_ in ("nsubj", "nsubjpass")
        and not any(c.dep_ in ("det", "poss") for c in tok.children)
    )


def _identifying_one(noun: Token) -> bool:
    """ "the one in Queen Square", "the one I told you about": "it is the one ..." picks out a
    thing already talked about, so its "it" refers (unlike "it is a long day", "it was one of those")."""
    return (
        noun.lower_ == "one"
        and any(c.dep_ == "det" and c.lower_ in ("the", "that", "this") for c in noun.children)
        and any(c.dep_ in ("prep", "relcl", "acl") for c in noun.children)
    )


#: Verbs whose object is food, not a companion.
_EATEN = frozenset({"eat", "cook", "order", "fry", "grill", "bake", "serve", "catch", "fish"})


def _a_pet(tok: Token) -> bool:
    """An animal noun that names an animal someone could call "she": it has a determiner or an
    owner ("a cat", "my dog", "Biscuit the cat") and is not the object of eating or cooking."""
    if tok.dep_ in ("dobj", "obj") and tok.head.lemma_.lower() in _EATEN:
        return False
    return tok.pos_ == "PROPN" or any(c.dep_ in ("det", "poss") for c in tok.children)


def snake(parts: Iterable[str]) -> str:
    """Join predicate parts as a snake_case key ("not", "go", "to" -> "not_go_to")."""
    return _SNAKE.sub("_", "_".join(p for p in parts if p).lower()).strip("_")


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
class SentenceRender:
    """Rendering state of one parsed sentence (see module docstring)."""

    sent: Span
    speaker: str
    addressee: str | None
    timestamp: datetime
    state: PronounState
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

    # ------------------------------------------------------------------ sentence-level gates
    def _content_tokens(self) -> list[Token]:
        return [t for t in self.sent if not t.is_punct and not t.is_space and t.pos_ not in ("SYM", "X")]

    def is_question(self, lo: int | None = None, hi: int | None = None) -> bool:
        """Whether tokens [lo, hi) of the sentence (all by default) end with "?", or open with an
        inverted auxiliary ("Did you ...") or a wh-word + auxiliary ("What's up")."""
        lo = self.sent.start if lo is None else lo
        hi = self.sent.end if hi is None else hi
        span = self.sent.doc[lo:hi]
        text = span.text.strip()
        if "?" in text[-3:] or (hi < self.sent.end and "?" in self.sent.doc[hi].text):
            return True
        toks = [t for t in span if not t.is_punct and t.lower_ not in DISCOURSE_LEADERS and t.dep_ != "intj"]
        if len(toks) < 2:
            return False
        first, second = toks[0], toks[1]
        if (
            first.pos_ == "AUX"
            and first.lemma_.lower() in _QUESTION_AUX
            and first.dep_ in ("aux", "auxpass", "ROOT")
        ):
            return any(t.dep_ in ("nsubj", "nsubjpass", "expl") and t.i > first.i for t in span)
        return first.tag_ in _WH and second.pos_ == "AUX" and second.tag_ != "TO"

    def _has_internal_stop(self) -> bool:
        """Whether the parser left a sentence-final mark inside the sentence ("Great! Did you ...")."""
        return any(t.is_punct and TERMINAL.fullmatch(t.text) for t in self.sent[:-1])

    def _rejected_sentence(self) -> bool:
        if len(self._content_tokens()) < _MIN_SENTENCE_TOKENS and not self._age_statement():
            return self._reject("short", None)
        if not self._has_internal_stop() and self.is_question():  # else judged per stretch
            return self._reject("question", None)
        if self.filler.is_sentence(self.sent.text):
            return self._reject("filler", None)
        return False

    def _age_statement(self) -> bool:
        """ "She is six.", "He's eight.", "Noor is two": a short sentence that is a person's age."""
        toks = self._content_tokens()
        root = self.sent.root
        if len(toks) != 3 or root.lemma_.lower() != "be":
            return False
        subject = next((c for c in root.children if c.dep_ == "nsubj"), None)
        number = next((c for c in root.children if c.dep_ in ("attr", "acomp")), None)
        if subject is None or number is None or not (number.like_num or number.tag_ == "CD"):
            return False
        person = subject.i in self.resolved and self.resolved[subject.i].kind == "person"
        return person or (subject.pos_ == "PROPN" and subject.ent_type_ == "PERSON")

    def _reject(self, reason: str, clause: Clause | None) -> bool:
        """Record why a sentence or clause yields nothing (see ``rejections``); always True."""
        if self.rejections is not None:
            text = self.render(clause.tokens) if clause is not None and clause.tokens else self.sent.text
            self.rejections.append((reason, text.strip()))
        return True

    # ------------------------------------------------------------------ rendering map
    def _render_map(self) -> None:
        start = self.sent[0]
        if not (
            start.pos_ == "PROPN"
            or start.text == "I"
            or (start.text.isupper() and len(start.text) > 1)
            or _named_subject(start)
        ):
            self.repl[start.i] = start.text.lower()
        for tok in self.sent:
            low = tok.lower_
            # "a buddy of mine": the tagger reads "mine" as a noun (a coal mine) after "of"
            pronoun = tok.tag_ in ("PRP", "PRP$") or (
                low in _ABSOLUTE_POSSESSIVES and tok.head.lower_ == "of" and tok.dep_ == "pobj"
            )
            if pronoun and low in FIRST_PERSON:
                self.first.add(tok.i)
                if low in PLURAL_FIRST:
                    self.plural_first.add(tok.i)
                self.repl[tok.i] = self._person_form(self.speaker, FIRST_PERSON[low])
                if FIRST_PERSON[low] == "poss" and self._first_person_subject(tok):
                    self.own_possessive.add(tok.i)  # "I hurt my ankle": "Tomas hurt their ankle"
            elif pronoun and low in SECOND_PERSON:
                self.second.add(tok.i)
                if self.addressee is None:
                    self.unresolved.add(tok.i)
                else:
                    self.repl[tok.i] = self._person_form(self.addressee, SECOND_PERSON[low])
            elif tok.tag_ in ("PRP", "PRP$") and low in THIRD_PERSON:
                self._third_person(tok)
            else:
                self._noun_candidate(tok)
                expanded = expand_contraction(tok.text, tok.tag_, tok.lemma_)
                nxt = tok.nbor(1).lower_ if tok.i + 1 < self.sent.end else ""
                if low in ("'s", "’s") and self._perfect_s(tok, nxt):
                    expanded = "has"  # "it's been" = it has been, "art's allowed me" = art has allowed me
                if low in ("'s", "’s") and (nxt in ("gon", "gonna", "going") or self._copula_s(tok, nxt)):
                    expanded = "is"  # "tomorrow's gonna be", "pottery's a great way" (tagged a possessive)
                if low == "gon" and nxt in ("na", "to"):
                    expanded = "going"  # "gonna" the tagger read as a noun
                if low == "ai" and nxt in ("n't", "n’t"):  # "ain't"
                    after = tok.nbor(2).lower_ if tok.i + 2 < self.sent.end else ""
                    expanded = "has" if after == "been" or tok.head.tag_ == "VBN" else "is"
                if expanded is not None:
                    self.repl[tok.i] = expanded
                elif low == "got" and tok.i + 1 < self.sent.end and tok.nbor(1).lower_ == "ta":
                    has_aux = any(c.dep_ == "aux" for c in tok.children) or (
                        tok.i > 0 and tok.nbor(-1).lemma_ == "have"
                    )
                    self.repl[tok.i] = "got" if has_aux else "has got"
        self._agreement()
        self._complement_that()
        self._temporal()
        self._vocatives()

    @staticmethod
    def _person_form(name: str, form: str) -> str:
        if form in ("poss", "poss_abs"):
            return f"{name}'" if name.endswith("s") else f"{name}'s"
        if form == "refl":
            return "themselves"
        return name

    def _third_person(self, tok: Token) -> None:
        low = tok.lower_
        form, kind = THIRD_PERSON[low]
        if low == "her" and tok.tag_ == "PRP$":
            form = "poss"
        if form == "refl":  # himself/herself/itself stay as they are in third-person prose
            return
        if low == "it" and (self._is_expletive(tok) or self._idiomatic_it(tok)):
            self.expletive.add(tok.i)
            return
        if kind == "plural" and self._bound_by_quantifier(tok):
            return  # "everyone has their own story": singular "their", kept as is
        gender: Gender = (
            "m" if low in ("he", "him", "his") else "f" if low in ("she", "her", "hers") else None
        )
        antecedent = self._resolve(tok, kind, gender)
        if antecedent is not None and self._binds_own_subject(tok, antecedent):
            antecedent = None  # "my father will never part with him": him is not the father
        if antecedent is None:
            self.unresolved.add(tok.i)
            if tok.dep_ in ("nsubj", "nsubjpass", "poss") or kind == "person":
                # what this pronoun meant is unknown, and it is what its sentence is about: a later
                # pronoun must not skip it for the next noun ("Is it near the station? -- Yes, it
                # opens at nine" is not about the station)
                blocker = Antecedent(text="", kind=kind, gender=gender, unknown=True)
                self.candidates.append((tok.i, replace(blocker, rank=_ROLE_RANK.get(tok.dep_, 0))))
            return
        self.resolved[tok.i] = antecedent
        self.candidates.append((tok.i, replace(antecedent, rank=_ROLE_RANK.get(tok.dep_, 0))))
        if form == "poss" and self._own_subject(tok, antecedent):
            return  # "Tom hurt his ankle", not "Tom hurt Tom's ankle": the clause already says who
        text = antecedent.text
        if form in ("poss", "poss_abs"):
            text = f"{text}'" if text.endswith("s") and antecedent.kind == "plural" else f"{text}'s"
        self.repl[tok.i] = text

    def _binds_own_subject(self, tok: Token, antecedent: Antecedent) -> bool:
        """Whether a non-reflexive object pronoun would name its own clause's subject: English says
        "himself" for that, so "Tom will never part with him" is about someone else."""
        if tok.dep_ not in _OBJECT_DEPS:
            return False
        clause = _clause_of(tok)
        return any(
            a.text == antecedent.text
            and self.sent.doc[i].dep_ in SUBJ_DEPS
            and _clause_of(self.sent.doc[i]) == clause
            for i, a in self.candidates
        )

    @staticmethod
    def _first_person_subject(tok: Token) -> bool:
        """Whether "my"/"our" sits after the verb of a clause whose own subject is the speaker
        ("I hurt my ankle yesterday, so I am resting"): the name once is enough."""
        head = tok.head
        while head.pos_ not in ("VERB", "AUX") and head.head.i != head.i:
            head = head.head
        subject = next((c for c in head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        return subject is not None and subject.i < tok.i and subject.lower_ in ("i", "we")

    def _own_subject(self, tok: Token, antecedent: Antecedent) -> bool:
        """Whether a possessive pronoun refers to the subject of its sentence's main clause (in a
        reported clause, "Caroline heard Emma loves her teacher", "her" could be Caroline's)."""
        head = tok.head
        while head.pos_ not in ("VERB", "AUX") and head.head.i != head.i:
            head = head.head
        if head.dep_ != "ROOT":
            return False
        subject = next((c for c in head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subject is None or subject.i >= tok.i:
            return False
        ids = {subject.i} | {c.i for c in subject.children if c.dep_ == "appos"}
        return any(i in ids and a.text == antecedent.text for i, a in self.candidates)

    @staticmethod
    def _idiomatic_it(tok: Token) -> bool:
        """ "worth it", "make it (to the top / happen / through)": "it" refers to nothing."""
        head = tok.head
        if head.lower_ == "worth":
            return True
        if head.lemma_.lower() != "make" or tok.dep_ not in ("dobj", "nsubj"):
            return False
        return any(
            (c.dep_ == "prep" and c.lower_ in ("to", "through"))
            or c.dep_ in ("ccomp", "xcomp")
            or c.lower_ in ("big", "back")
            for c in head.children
            if c.i > tok.i
        )

    def _bound_by_quantifier(self, tok: Token) -> bool:
        clause = _clause_of(tok)
        return any(
            t.lower_ in _QUANTIFIER_PRONOUNS and _clause_of(t) == clause for t in self.sent if t.i < tok.i
        )

    def _is_expletive(self, tok: Token) -> bool:
        if tok.dep_ == "expl":
            return True
        if tok.dep_ not in ("nsubj", "nsubjpass"):
            return False
        head = tok.head
        if head.lemma_.lower() in _WEATHER:
            return True
        kids = list(head.children)
        if any(
            (
                c.dep_ in ("attr", "acomp")
                or (c.dep_ == "npadvmod" and head.lemma_.lower() in _EXPLETIVE_HEADS)
            )
            and c.lemma_.lower() in VAGUE_NOUNS
            and not _identifying_one(c)
            for c in kids
        ):
            return True
        if head.lemma_.lower() not in _EXPLETIVE_HEADS:
            # "it sucks when ...", "it helps if ...": an evaluative verb with a when/if clause
            return head.lemma_.lower() in _EVALUATIVE_VERBS and any(
                c.dep_ == "advcl" and any(m.lower_ in ("when", "whenever", "if") for m in c.children)
                for c in kids
            )
        # "it's really uplifting hearing from you": the clause may hang on the adjective
        kids += [g for c in kids if c.dep_ == "acomp" for g in c.children if g.dep_ in ("xcomp", "ccomp")]
        if any(c.dep_ == "attr" and c.tag_ == "VBG" for c in kids):
            return True  # "it's really uplifting hearing from you" (gerund parsed as attribute)
        for c in kids:
            if c.i < head.i:
                continue
            if c.dep_ in ("xcomp", "ccomp", "csubj"):
                return True  # "it's great to be back", "it seems (that) ..."
            if c.dep_ == "advcl" and any(m.lower_ in _EXPLETIVE_MARKS for m in c.children if m.i < c.i):
                return True  # "it's great when you reach a goal", "it sounds like you're busy"
            if (
                c.dep_ == "advcl"
                and c.tag_ == "VBG"
                and not any(m.dep_ == "mark" for m in c.children)
                and any(k.dep_ == "acomp" and k.i < c.i for k in kids)
            ):
                return True  # "it's been amazing witnessing us come together": the gerund is the subject
        return False

    def _resolve(self, tok: Token, kind: AntecedentKind, gender: Gender) -> Antecedent | None:
        """Compatible antecedent: the newest earlier in this sentence, else the most salient in
        the session state.

        Singular people resolve from any position. "it"/"they" as a subject resolve to a noun of
        an earlier, *different* clause ("I joined a club and it was fun"); "its"/"their" to any
        earlier noun ("folks who lost their jobs"). In other positions ("a chance to make
        something of it") only people are trusted: "them" = "my kids" is kept, a thing is not.
        """
        subject = tok.dep_ in ("nsubj", "nsubjpass")
        possessive = tok.dep_ == "poss" or tok.tag_ == "PRP$"
        human_only = kind != "person" and not subject and not possessive
        people: list[Antecedent] = []
        for i, antecedent in reversed(self.candidates):
            if i >= tok.i or antecedent.kind != kind or (human_only and not antecedent.human):
                continue
            if kind != "person" and subject and _clause_of(self.sent.doc[i]) == _clause_of(tok):
                continue
            if gender is not None and antecedent.gender is not None and antecedent.gender != gender:
                continue
            if kind != "person":
                return known(antecedent)
            people.append(antecedent)
        if people:  # "Tom called Jim and he ...": two people, no way to tell: abstain
            return unambiguous(people, gender)
        return self.state.resolve(kind, gender, human_only=human_only)

    def _noun_candidate(self, tok: Token) -> None:
        """Register a noun head as an antecedent for later pronouns in this sentence and session."""
        # an untagged name counts as a possessor too: "Leo's visit ... his flight" is Leo's
        possessor = tok.dep_ == "poss" and tok.pos_ == "PROPN" and tok.ent_type_ in ("PERSON", "")
        if tok.pos_ not in ("NOUN", "PROPN") or (tok.dep_ not in _ARG_DEPS and not possessor):
            return  # a named possessor counts: "Aragorn's attitude inspired me. He never gives up"
        if tok.ent_type_ in NON_NAME_ENTS or tok.lemma_.lower() in VAGUE_NOUNS:
            return
        if tok.pos_ != "PROPN" and any(c.dep_ == "appos" and c.pos_ == "PROPN" for c in tok.children):
            return  # "my brother Tom": the name stands for both
        # an appositive name takes the role and gender of the noun it names
        role = tok.head if tok.dep_ == "appos" else tok
        lemma = tok.lemma_.lower()
        role_lemma = role.lemma_.lower()
        plural = tok.tag_ in ("NNS", "NNPS") or lemma in COLLECTIVE_NOUNS
        # a street, a shop or a company is never "she", whatever the tagger said ("42 Wallaby Lane")
        place = tok.pos_ == "PROPN" and (
            lemma in PLACE_HEADS or any(c.dep_ == "nummod" for c in tok.children)
        )
        is_person = not place and (
            tok.ent_type_ == "PERSON"
            or lemma in PERSON_NOUNS
            or role_lemma in PERSON_NOUNS
            # an untagged name as the subject of a verb is most often someone ("Erin lives at ...")
            or (tok.pos_ == "PROPN" and not tok.ent_type_ and tok.dep_ in ("nsubj", "nsubjpass"))
        )
        # an animal someone has is "she" or "he"; one on a plate is food ("started eating fish
        # again ... his flight" is not the fish's flight): a bare noun or one eaten is no pet
        animal = (lemma in ANIMAL_NOUNS or role_lemma in ANIMAL_NOUNS) and _a_pet(tok)
        name_toks = [t for t in tok.lefts if t.dep_ == "compound" and t.pos_ == "PROPN"] + [tok]
        if tok.pos_ == "PROPN":
            if tok.dep_ == "pobj" and tok.head.lower_ == "of" and tok.head.head.pos_ == "PROPN":
                return  # "Moher" of "the Cliffs of Moher" is part of a name, not a thing of its own
            name = " ".join(t.text for t in name_toks)
            of_name = self._of_name(tok)
            if of_name:  # "the Cliffs of Moher", "the Bank of England": one named thing
                name, plural, is_person = f"{name} {of_name}", False, False
            if self._is_participant(name):
                return  # the speaker and addressee are first/second person, never "he" or "it"
            named = self._named_by(tok)
            if named is not None:  # "Her name is Mochi": Mochi *is* her, not a second candidate
                self._alias(tok, name, named)
                return
            kind: AntecedentKind = "plural" if plural else ("person" if is_person else "thing")
            ent = normalize_name(name)
            det = next((c for c in tok.lefts if c.dep_ == "det" and c.lower_ == "the"), None)
            text = f"the {name}" if det is not None else name  # "the UK"
        else:
            kind = "plural" if plural else ("person" if is_person else "thing")
            ent = None
            text = self._noun_phrase_text(tok, owner=self._acquirer(tok))
        human = is_person or lemma in COLLECTIVE_NOUNS
        if not human and tok.dep_ in ("conj", "appos") and tok.pos_ != "PROPN":
            return  # members of a list ("relief, excitement and worry") are poor antecedents for "it"
        gender: Gender = "f" if role_lemma in FEMALE_NOUNS else "m" if role_lemma in MALE_NOUNS else None
        rank = _ROLE_RANK.get(role.dep_, 0)
        if text:
            antecedent = Antecedent(text=text, kind=kind, entity=ent, gender=gender, human=human, rank=rank)
            self.candidates.append((tok.i, antecedent))
            if animal and kind == "thing":  # a pet is "it" and "she" alike, never a person in object slots
                self.candidates.append((tok.i, replace(antecedent, kind="person", human=False)))

    def _named_by(self, tok: Token) -> Antecedent | None:
        """The antecedent whose name ``tok`` is, in "<her / the cat's> name is <tok>", else None."""
        head = tok.head
        if tok.dep_ != "attr" or head.lemma_.lower() != "be":
            return None
        subject = next((c for c in head.children if c.dep_ == "nsubj" and c.lemma_.lower() == "name"), None)
        owner = next((c for c in subject.children if c.dep_ == "poss"), None) if subject is not None else None
        return self.resolved.get(owner.i) if owner is not None else None

    def _alias(self, tok: Token, name: str, named: Antecedent) -> None:
        """Register ``name`` in place of the antecedent it names: same kind, gender and humanity,
        and the named one leaves this sentence's candidates (so a "she" after it is not torn
        between two mentions of one animal)."""
        self.candidates = [(i, a) for i, a in self.candidates if a.text.lower() != named.text.lower()]
        alias = replace(named, text=name, entity=normalize_name(name), rank=_ROLE_RANK.get("attr", 0))
        self.candidates.append((tok.i, alias))
        if alias.kind == "person" and not alias.human:  # a pet: "it" as well as "she"
            self.candidates.append((tok.i, replace(alias, kind="thing")))

    @staticmethod
    def _of_name(tok: Token) -> str:
        """ "of Moher" when ``tok`` heads a name of the form "X of <Name>", else ""."""
        prep = next((c for c in tok.children if c.dep_ == "prep" and c.lower_ == "of"), None)
        pobj = next((c for c in prep.children if c.dep_ == "pobj"), None) if prep is not None else None
        if pobj is None or pobj.pos_ != "PROPN":
            return ""
        words = [t.text for t in pobj.lefts if t.dep_ in ("compound", "det")] + [pobj.text]
        return "of " + " ".join(words)

    def _is_participant(self, name: str) -> bool:
        low = name.lower()
        names = [self.speaker.lower()] + ([self.addressee.lower()] if self.addressee else [])
        return any(n == low or n.startswith(low) or low.startswith(n) for n in names)

    def _noun_phrase_text(self, tok: Token, owner: str | None = None) -> str:
        """The antecedent text of a common noun ("a grey cat" -> "the grey cat"); with ``owner``,
        the indefinite article gives way to the owner ("Priya's grey cat")."""
        keep = {"det", "poss", "amod", "compound", "nummod", "nmod", "case"}
        toks: list[Token] = []
        for child in tok.lefts:
            if child.dep_ in keep:
                toks.extend(child.subtree)
        toks.append(tok)
        words = self.render_words(toks, names=True)
        if owner is not None and words and words[0].lower() in ("a", "an"):
            return " ".join([self._person_form(owner, "poss"), *words[1:]])
        if words and words[0].lower() in ("a", "an", "some", "any", "another", "this", "that"):
            words[0] = "the"
        return " ".join(words)

    def _acquirer(self, tok: Token) -> str | None:
        """The speaker, when ``tok`` is what the speaker says they adopted / bought / got / own
        ("I adopted a grey cat": a later "her name" is Priya's grey cat's, not "the grey cat's")."""
        if tok.dep_ != "dobj" or tok.tag_ not in ("NN", "NNS"):
            return None
        verb = tok.head
        if lemma_of(verb) not in ACQUISITION_VERBS or any(c.dep_ == "neg" for c in verb.children):
            return None
        subject = next((c for c in verb.children if c.dep_ == "nsubj"), None)
        if subject is None and verb.dep_ == "conj":  # "I went out and bought a bike"
            subject = next((c for c in verb.head.children if c.dep_ == "nsubj"), None)
        return self.speaker if subject is not None and subject.i in self.first else None

    def _agreement(self) -> None:
        """Third-person singular agreement for verbs whose subject became a name."""
        for subj in self.sent:
            if subj.dep_ not in ("nsubj", "nsubjpass") or not (subj.i in self.first or subj.i in self.second):
                continue
            if subj.lower_ not in _NOMINATIVE:
                continue  # "let me express", "made you feel": a bare infinitive, not a finite verb
            governor = subj.head.head
            if (
                subj.head.tag_ == "VB"
                and governor.i != subj.head.i
                and governor.lemma_.lower() in _CAUSATIVE_VERBS
            ):
                continue  # "hear you play", "let you know" (not a root "see": "I don't see why")
            self._agree(subj.head, subj.i)
            shared_aux = any(c.dep_ in ("aux", "auxpass") for c in subj.head.children)
            for conj in subj.head.conjuncts:
                if conj.i < subj.head.i or any(c.dep_ in SUBJ_DEPS for c in conj.children):
                    continue
                # "I will start and create": the shared auxiliary carries agreement; "I don't smoke
                # and don't drink": the second verb's own auxiliary agrees too
                if not shared_aux or any(c.dep_ in ("aux", "auxpass") for c in conj.children):
                    self._agree(conj, subj.i)

    def _complement_that(self) -> None:
        """ "reminds me I need" -> "reminds John that John needs", not "reminds John John needs":
        an object and the subject of the clause right after it that became the same name."""
        for tok in self.sent:
            if tok.dep_ not in ("nsubj", "nsubjpass") or tok.i <= self.sent.start:
                continue
            prev = self.sent.doc[tok.i - 1]
            if prev.dep_ not in ("dobj", "dative") or prev.head.i != tok.head.head.i:
                continue
            word = self.repl.get(tok.i, tok.text)
            if word and word == self.repl.get(prev.i, prev.text):
                self.repl[tok.i] = f"that {word}"

    @staticmethod
    def _copula_s(tok: Token, nxt: str) -> bool:
        """A "'s" tagged as a possessive that is "is": no noun follows it but an article or a
        degree word does ("Pottery's a great way to relax", "Lily's so happy")."""
        return tok.tag_ == "POS" and nxt in ("a", "an", "so", "really", "very", "such", "not", "just", "too")

    @staticmethod
    def _perfect_s(tok: Token, nxt: str) -> bool:
        if nxt == "been":
            return True
        head = tok.head
        if head.tag_ != "VBN" or tok.dep_ not in ("aux", "auxpass"):
            return False
        # a passive takes no direct object: "'s" + participle + object is a perfect
        return tok.dep_ == "aux" or any(c.dep_ in ("dobj", "dative", "ccomp") for c in head.children)

    def _agree(self, verb: Token, after: int) -> None:
        auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i > after and c.tag_ != "TO"]
        finite = auxes[0] if auxes else verb
        if auxes and finite.i > verb.i:
            return
        low = finite.lower_
        if low in ("am", "'m", "’m", "are", "'re", "’re"):
            self.repl[finite.i] = "is"
        elif low == "were":
            self.repl[finite.i] = "was"
        elif low in ("'ve", "’ve", "have") and finite.tag_ == "VBP":
            self.repl[finite.i] = "has"
        elif low in ("wanna", "gotta") and finite.tag_ == "VBP":
            self.repl[finite.i] = "wants to" if low == "wanna" else "has got to"
        elif (finite.tag_ == "VBP" or (finite.tag_ == "VB" and not auxes)) and low.isalpha():
            if low in IRREGULAR_PAST:
                return  # a past form the tagger read as a present ("Sofia, I forgot to call")
            if low in SAME_FORM_PAST and self._dated_in_the_past():
                return  # "I hurt my ankle last week": the past, spelled as the base form
            self.repl[finite.i] = third_singular(self.repl.get(finite.i, finite.text))

    def _dated_in_the_past(self) -> bool:
        """Whether the sentence names a time wholly before it was said ("last week", "in May")."""
        ts = self.timestamp
        if ts is None:
            return False
        return any(m.window.hi <= ts for m in find_temporal_phrases(self.sent.text, ts))

    def _temporal(self) -> None:
        text = self.sent.text
        offset = self.sent.start_char
        for match in find_temporal_phrases(text, self.timestamp, strict=True):
            toks = [
                t.i
                for t in self.sent
                if t.idx - offset < match.end and t.idx - offset + len(t.text) > match.start
            ]
            if not toks:
                continue
            first = toks[0]
            dets: list[int] = []
            while first - len(dets) - 1 >= self.sent.start and self.sent.doc[
                first - len(dets) - 1
            ].lower_ in (
                "the",
                "this",
                "that",
            ):
                dets.append(first - len(dets) - 1)
            before = first - len(dets) - 1
            prev = self.sent.doc[before] if before >= self.sent.start else None
            bare = prev is not None and prev.lower_ in _BARE_PREPS
            top = [self.sent.doc[i] for i in toks if self.sent.doc[i].head.i not in toks]
            if top and top[0].dep_ in ("nsubj", "nsubjpass", "dobj", "attr", "appos"):
                bare = True  # "Yesterday was crazy" -> "7 May 2023 was crazy"
            if top and top[0].dep_ == "poss":
                bare = True  # "Tomorrow's party" -> "8 May 2023's party", "Tomorrow's gonna be" -> "... is going"
            if bare:  # "in the last month" -> "in June 2023"
                for i in dets:
                    self.repl[i] = ""
            self.repl[toks[0]] = format_window(match.window) if bare else absolute_phrase(match.window)
            for i in toks[1:]:
                self.repl[i] = ""
            self.temporal.append((toks, match))

    def _vocatives(self) -> None:
        """Drop the addressee's name used as a vocative ("Thanks for asking, Jon!")."""
        if not self.addressee:
            return
        target = self.addressee.lower()
        for tok in self.sent:
            if tok.pos_ != "PROPN":
                continue
            before = tok.nbor(-1).text if tok.i > self.sent.start else ""
            after = tok.nbor(1).text if tok.i + 1 < self.sent.end else ""
            greeted = before.lower() in ("hey", "hi", "hello", "thanks", "yeah", "oh", "wow", "dear")
            set_off = (before in ("", ",") or greeted) and after in (",", "!", ".", "", "?")
            if tok.dep_ not in ("npadvmod", "intj", "appos", "dep", "vocative", "ROOT") and not set_off:
                continue
            low = tok.lower_
            if len(low) >= 3 and (target == low or target.startswith(low)):
                self.repl[tok.i] = ""
                if tok.i > self.sent.start and tok.nbor(-1).text == ",":
                    self.repl[tok.i - 1] = ""

    # ------------------------------------------------------------------ rendering
    def render_words(self, toks: Sequence[Token], *, names: bool = False) -> list[str]:
        """The rendered words of ``toks`` (spacing rules applied by :meth:`render`)."""
        text = self.render(toks, names=names)
        return text.split() if text else []

    def render(self, toks: Sequence[Token], *, names: bool = False) -> str:
        """Render tokens in document order through the rendering map. A statement says "their"
        for the speaker's own possessive after the speaker as subject ("Tomas hurt their ankle");
        ``names``: the name form regardless (an antecedent's text, read in later sentences)."""
        out: list[str] = []
        prev: Token | None = None
        for tok in sorted(toks, key=lambda t: t.i):
            word = self.repl.get(tok.i, tok.text)
            if tok.i in self.own_possessive and not names:
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

    # ------------------------------------------------------------------ state
    def _update_state(self) -> None:
        for _, antecedent in sorted(self.candidates, key=lambda c: c[0]):
            self.state.note(antecedent)
        self.state.advance()
