"""The rejection rules: why a sentence or a clause makes no statement, one named rule at a time.

A wrong statement in memory is worse than a missing one, so the rules refuse freely. Each is a
:class:`Check`: ``name`` is what the caller's ``rejections`` list records, ``reason`` says why
such a clause is refused, and ``refuses`` decides. The lists run in order and the first check
that refuses wins, so the order is part of the behaviour. Between the clause checks sit a few
:class:`Edit` steps (:mod:`.edits`) that cut words off a clause (a trailing request, a loose
lead, a modifier holding an unresolved pronoun): the checks after an edit read the edited clause.

Checks run at four points: on the whole sentence (:data:`SENTENCE_CHECKS`), on a clause
(:data:`CLAUSE_STEPS`), on its triple (:data:`TRIPLE_CHECKS`) and on its rendered text
(:data:`CONTENT_CHECKS`). A clause that cannot be built at all is refused in :mod:`.clauses`.

Over 400 lines on purpose: every rejection rule is here with its reason, next to the lists that
fix the order they run in, so what refuses a clause, and before what, reads top to bottom.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from uniko_memory.nlp.observation.clauses import TERMINAL, is_question, lead
from uniko_memory.nlp.observation.edits import cut_loose_lead, cut_request_tail, trim_unresolved
from uniko_memory.nlp.observation.lexicon import (
    ADVERB_OBJECTS,
    COUNTERFACTUAL_MODALS,
    EVENT_NOUNS,
    EVENT_OFF_WORDS,
    FEELING_WORDS,
    HYPOTHETICAL_MODALS,
    INDEFINITE_PRONOUNS,
    LIGHT_VERBS,
    NOBODY_OBJECTS,
    REJECT_OBJECT_PRONOUNS,
    SPECULATIVE_MODALS,
    SUBJ_DEPS,
    TEASER_OBJECTS,
)
from uniko_memory.nlp.observation.state import Clause, SentenceState
from uniko_memory.nlp.observation.triples import Triple
from uniko_memory.nlp.observation.words import lemma_of

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

__all__ = [
    "CLAUSE_STEPS",
    "CONTENT_CHECKS",
    "SENTENCE_CHECKS",
    "TRIPLE_CHECKS",
    "Check",
    "Edit",
    "Reading",
    "clause_refusal",
    "cut_dangling_tail",
    "event_status",
    "first_refusal",
]

T = TypeVar("T")

#: Sentences shorter than this (in content words) are chat, not statements ("Yes, me too!").
_MIN_SENTENCE_TOKENS = 4
#: A statement that ends on "to", a preposition or a conjunction lost its point to another clause.
_DANGLING_END = re.compile(
    r"\b(?:to|of|for|with|about|at|from|into|and|or|but|because|than|the|a|an|my|your"
    r"|would|could|should|will|can|might|must|did|does|do|so|only|if)[\s.,!?;:-]*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Check(Generic[T]):
    """One rejection rule: what ``rejections`` records, why, and the test itself."""

    name: str
    reason: str
    refuses: Callable[[SentenceState, T], bool]


@dataclass(frozen=True)
class Edit:
    """A cut made to a clause between two checks, so the checks after it read the shorter clause."""

    name: str
    reason: str
    apply: Callable[[SentenceState, Clause], None]


class Reading(NamedTuple):
    """A clause with its triple: what the triple checks judge."""

    clause: Clause
    triple: Triple


def first_refusal(checks: Iterable[Check[T]], s: SentenceState, item: T) -> Check[T] | None:
    """The first of ``checks`` that refuses ``item``, or None when all let it through."""
    return next((check for check in checks if check.refuses(s, item)), None)


def clause_refusal(s: SentenceState, clause: Clause) -> Check[Clause] | None:
    """Run :data:`CLAUSE_STEPS` in order (edits included) up to the first check that refuses."""
    for step in CLAUSE_STEPS:
        if isinstance(step, Edit):
            step.apply(s, clause)
        elif step.refuses(s, clause):
            return step
    return None


# ---------------------------------------------------------------------------------- sentence


def _content_tokens(s: SentenceState) -> list[Token]:
    return [t for t in s.sent if not t.is_punct and not t.is_space and t.pos_ not in ("SYM", "X")]


def _age_statement(s: SentenceState) -> bool:
    """ "She is six.", "He's eight.", "Noor is two": a short sentence that is a person's age."""
    toks = _content_tokens(s)
    root = s.sent.root
    if len(toks) != 3 or root.lemma_.lower() != "be":
        return False
    subject = next((c for c in root.children if c.dep_ == "nsubj"), None)
    number = next((c for c in root.children if c.dep_ in ("attr", "acomp")), None)
    if subject is None or number is None or not (number.like_num or number.tag_ == "CD"):
        return False
    person = subject.i in s.resolved and s.resolved[subject.i].kind == "person"
    return person or (subject.pos_ == "PROPN" and subject.ent_type_ == "PERSON")


def _short_sentence(s: SentenceState, sent: Span) -> bool:
    return len(_content_tokens(s)) < _MIN_SENTENCE_TOKENS and not _age_statement(s)


def _question_sentence(s: SentenceState, sent: Span) -> bool:
    # with a sentence-final mark inside ("Great! Did you ..."), each stretch is judged on its own
    internal_stop = any(t.is_punct and TERMINAL.fullmatch(t.text) for t in sent[:-1])
    return not internal_stop and is_question(s)


def _filler_sentence(s: SentenceState, sent: Span) -> bool:
    return s.filler.is_sentence(sent.text)


SENTENCE_CHECKS: tuple[Check[Span], ...] = (
    Check(
        "short",
        "Under four content words is a reaction, not a statement (a person's age aside).",
        _short_sentence,
    ),
    Check("question", "A question asks; it states nothing about anyone.", _question_sentence),
    Check("filler", "A greeting, thanks or pleasantry carries no fact to recall.", _filler_sentence),
)


# ---------------------------------------------------------------------------------- clause shape


def _verbless(s: SentenceState, clause: Clause) -> bool:
    return not any(t.pos_ in ("VERB", "AUX") for t in clause.tokens)


def _subordinate(s: SentenceState, clause: Clause) -> bool:
    return any(c.dep_ == "mark" and c.i < clause.head.i for c in clause.head.children)


def _wh_fragment(s: SentenceState, clause: Clause) -> bool:
    first = clause.tokens[0]
    return first.tag_ == "WRB" and first.head.i == clause.head.i


def _group_statement(s: SentenceState, clause: Clause) -> bool:
    """ "We all have unique paths", "we support each other": about a group, not the speaker."""
    ids = {t.i for t in clause.tokens}
    for tok in clause.tokens:  # "I'll miss you both", "see you all": the addressee is a group
        if tok.i not in s.second or tok.i + 1 >= s.sent.end:
            continue
        word = tok.nbor(1).lower_
        after = tok.nbor(2) if tok.i + 2 < s.sent.end else None
        if word == "both" or (word == "all" and (after is None or after.pos_ not in ("ADP", "DET"))):
            return True  # (not "I told you all about it": "all" = everything)
    if not ids & s.plural_first:
        return False
    for tok in clause.tokens:
        if tok.i in s.plural_first and any(c.lower_ in ("all", "both", "each") for c in tok.children):
            return True
        if tok.lower_ in ("other", "another") and tok.i > 0 and tok.nbor(-1).lower_ in ("each", "one"):
            return True
        if tok.lower_ in ("all", "both") and tok.i > 0:
            prev = tok.nbor(-1)
            while prev.i > s.sent.start and prev.pos_ in ("AUX", "PART") and prev.i not in s.plural_first:
                prev = prev.nbor(-1)  # "we'd all", "we've both"
            if prev.i in s.plural_first:
                return True
    return False


def _suggestion(s: SentenceState, clause: Clause) -> bool:
    return any(
        lemma_of(t) == "let" and t.i + 1 < len(t.doc) and t.doc[t.i + 1].lower_ in ("'s", "’s", "us")
        for t in clause.tokens
    )


# ---------------------------------------------------------------------------------- clause mood


def _request(s: SentenceState, clause: Clause) -> bool:
    """A "please" inside the clause or right after it (punctuation aside): a request."""
    first, last = clause.tokens[0].i, clause.tokens[-1].i
    doc = clause.head.doc
    after = last + 1
    while after < len(doc) and doc[after].is_punct and doc[after].text not in ".!?,;":
        after += 1
    return any(doc[i].lower_ == "please" for i in range(first, min(after + 1, len(doc))))


def _lemme(s: SentenceState, clause: Clause) -> bool:
    return clause.tokens[0].lower_ in ("lemme", "gimme")


def _stranded_preposition(s: SentenceState, clause: Clause) -> bool:
    """Whether the clause ends on a preposition with no object, adverbs aside ("I go to
    often"): the object was a relative clause's head the statement does not hold."""
    toks = [t for t in clause.tokens if not t.is_punct]
    while toks and toks[-1].pos_ == "ADV" and toks[-1].lower_ not in ADVERB_OBJECTS:
        toks = toks[:-1]
    if not toks or toks[-1].dep_ != "prep" or toks[-1].pos_ != "ADP":
        return False
    return not any(
        c.dep_ in ("pobj", "pcomp") and (c.pos_ != "ADV" or c.lower_ in ADVERB_OBJECTS)
        for c in toks[-1].children
    )


def _hypothetical(s: SentenceState, clause: Clause) -> bool:
    """A conditional's consequence ("..., I would move") or its "if" clause itself."""
    head = clause.head
    conditional_modal = any(c.dep_ == "aux" and c.lower_ in HYPOTHETICAL_MODALS for c in head.children)
    has_if = any(t.lower_ in ("if", "unless") and t.dep_ == "mark" for t in s.sent)
    if has_if and conditional_modal:
        return True
    # "I hope (that) it does not rain", "I wish he'd call": a wish, not something that is so
    return lemma_of(head) in ("hope", "wish") and any(c.dep_ == "ccomp" for c in head.children)


def _consolation(s: SentenceState, clause: Clause) -> bool:
    """After sympathy earlier in the turn, a clause whose subject is a pronoun for something
    the turn has not itself mentioned (the other speaker's news) consoles; it reports nothing
    the listener knows ("I'm so sorry. She had a good long life"). "I'm sorry. My dad died
    last year. He was 80" still states its facts: "he" is this turn's own dad."""
    if not s.consoling:
        return False
    return any(
        t.dep_ in SUBJ_DEPS and t.i in s.resolved and s.resolved[t.i].text.lower() not in s.turn_mentions
        for t in clause.subject
    )


def _counterfactual(s: SentenceState, clause: Clause) -> bool:
    """ "I would have moved", "she could have won", "I should have called", "he might come":
    what did not (or may not) happen; a statement of it would read as a fact."""
    aux = [c for c in clause.head.children if c.dep_ == "aux"]
    modal = next((c for c in aux if c.lower_ in COUNTERFACTUAL_MODALS), None)
    if modal is None:
        return False
    return modal.lower_ in SPECULATIVE_MODALS or any(c.lower_ == "have" and c.i > modal.i for c in aux)


def _bare_feeling(s: SentenceState, clause: Clause) -> bool:
    """A feeling with nothing it is about ("I'm so happy", "she's scared"): what caused it is
    in another sentence, and the statement alone carries no fact to recall."""
    head = clause.head
    if lemma_of(head) not in ("be", "feel", "seem", "look", "sound"):
        return False
    ids = {t.i for t in clause.tokens}
    comps = [c for c in head.children if c.dep_ in ("acomp", "attr", "oprd") and c.i in ids]
    if len(comps) != 1 or comps[0].lemma_.lower() not in FEELING_WORDS:
        return False
    said = {c.dep_ for c in (*head.children, *comps[0].children) if c.i in ids}
    return not said & {"prep", "xcomp", "ccomp", "advcl", "npadvmod", "dobj", "conj"}


def _lead_fragment(s: SentenceState, clause: Clause) -> bool:
    """A clause whose lead before the subject is an answer to something else: two subjects
    ("Inti, for the festival, I guess") or a negated or restricted phrase ("Not Inti, my
    father ...", "Only until the exams, then I stop"); the rest means nothing without it."""
    subjects = [c for c in clause.head.children if c.dep_ in SUBJ_DEPS]
    comma = (
        next((t.i for t in clause.tokens if t.text == "," and t.i > subjects[0].i), None)
        if subjects
        else None
    )
    if (
        len(subjects) > 1
        and subjects[0].pos_ == "PROPN"
        and comma is not None
        and comma < subjects[-1].i
        and not any(t.pos_ in ("VERB", "AUX") and subjects[0].i < t.i < comma for t in clause.tokens)
    ):
        return True  # the first subject has no verb before the comma: a loose answer
    before = lead(clause)
    return bool(before) and before[0].lower_ in ("not", "only")


# ---------------------------------------------------------------------------------- clause subject


def _indefinite_subject(s: SentenceState, clause: Clause) -> bool:
    subj_head = next((t for t in clause.subject if t.dep_ in SUBJ_DEPS or t.dep_ == "expl"), None)
    if subj_head is None or clause.existential or clause.expletive:
        return False
    bare = len([t for t in clause.subject if t.head.i == subj_head.i and t.dep_ != "punct"]) == 0
    return (
        subj_head.lower_ in INDEFINITE_PRONOUNS
        and subj_head.pos_ != "PROPN"
        and (bare or subj_head.pos_ in ("PRON", "DET"))
    )


CLAUSE_STEPS: tuple[Check[Clause] | Edit, ...] = (
    Check("verbless", 'No verb: a greeting or a bare answer ("Mālō e lelei Tevita!").', _verbless),
    Check(
        "fragment",
        'A subordinate clause alone ("Since I was 17 or so.") answers something else.',
        _subordinate,
    ),
    Check("wh_fragment", 'A wh-exclamation or fragment ("How I felt alone!", "Why I left").', _wh_fragment),
    Check(
        "group",
        'About a group ("we all ...", "each other"), not true of the speaker alone.',
        _group_statement,
    ),
    Check("suggestion", '"Let\'s ..." proposes; nothing has happened.', _suggestion),
    Edit(
        "request_tail",
        "A request hung on the clause after a comma is not part of the statement.",
        cut_request_tail,
    ),
    Check("request", 'With "please" the clause asks for something; it states nothing.', _request),
    Check("imperative", '"Lemme know ...", "gimme ..." ask the listener; no statement.', _lemme),
    Check(
        "dangling",
        'Ends on a preposition whose object is outside the clause ("I go to often").',
        _stranded_preposition,
    ),
    Check(
        "hypothetical",
        'A conditional or a wish ("If I got the job I\'d move"): nothing happened.',
        _hypothetical,
    ),
    Check(
        "consolation",
        "After sympathy, a remark on the other speaker's news consoles; it reports nothing.",
        _consolation,
    ),
    Check(
        "counterfactual",
        '"I would have moved", "he might come": it did not (or may not) happen.',
        _counterfactual,
    ),
    Check(
        "bare_feeling",
        'A feeling without what it is about ("I\'m so afraid") carries no fact.',
        _bare_feeling,
    ),
    Check("lead_fragment", 'A lead that answers something else ("Not Inti, my father ...").', _lead_fragment),
    Edit("loose_lead", "A request or vocative before the subject is not the clause's own.", cut_loose_lead),
    Check(
        "indefinite_subject",
        '"That is awesome", "someone said": the subject names nobody.',
        _indefinite_subject,
    ),
    Edit(
        "unresolved_modifier",
        "A modifier holding an unresolved pronoun goes; content is never guessed.",
        trim_unresolved,
    ),
)


# ---------------------------------------------------------------------------------- triple


def event_status(s: SentenceState, clause: Clause, ids: set[int]) -> str | None:
    """What "be" says of an event that has no complement: "off" for "the trip is off", ""
    for "the party is on Friday" (its date), None when the subject is no event or nothing is
    said (then "be" is a light verb)."""
    if lemma_of(clause.head) != "be":
        return None
    subject = next((t for t in clause.subject if t.dep_ in SUBJ_DEPS), None)
    if subject is None or subject.lemma_.lower() not in EVENT_NOUNS:
        return None
    if any(t.lower_ in EVENT_OFF_WORDS and t.head.i == clause.head.i for t in clause.tokens):
        return "off"
    if any(toks[0] in ids for toks, _ in s.temporal):
        return ""
    return None


def _pronoun_object(s: SentenceState, reading: Reading) -> bool:
    obj = reading.triple.obj
    if obj is None:
        return False
    ids = {t.i for t in reading.clause.tokens}
    human_ref = obj.i in s.resolved and s.resolved[obj.i].human
    lone = (
        len([t for t in obj.subtree if t.i in ids]) == 1
        and obj.lower_ in REJECT_OBJECT_PRONOUNS
        and not human_ref  # "I took them (= my kids) to the beach" keeps its object
    )
    if obj.lower_ in NOBODY_OBJECTS and any(c.dep_ == "neg" for c in reading.clause.head.children):
        return False  # "not seeing anyone": nobody, said of the subject
    return lone or (obj.pos_ == "PRON" and obj.i not in s.resolved and obj.i not in s.first | s.second)


def _unresolved_pronoun(s: SentenceState, reading: Reading) -> bool:
    return bool({t.i for t in reading.clause.tokens} & s.unresolved)


def _teaser(s: SentenceState, reading: Reading) -> bool:
    obj = reading.triple.obj
    return (
        obj is not None
        and lemma_of(reading.clause.head) in LIGHT_VERBS
        and obj.lemma_.lower() in TEASER_OBJECTS
        and not any(c.dep_ in ("prep", "relcl", "acl", "ccomp") for c in obj.children)
    )


def _light_verb(s: SentenceState, reading: Reading) -> bool:
    clause, (predicate, obj, complete) = reading
    if complete or event_status(s, clause, {t.i for t in clause.tokens}) is not None:
        return False
    last_verb = predicate.split("_")[-1] if obj is None else None
    return lemma_of(clause.head) in LIGHT_VERBS or bool(last_verb and last_verb in LIGHT_VERBS)


TRIPLE_CHECKS: tuple[Check[Reading], ...] = (
    Check(
        "pronoun_object",
        'The object is a bare pronoun ("I love it"): the statement says nothing alone.',
        _pronoun_object,
    ),
    Check(
        "unresolved_pronoun",
        "A pronoun nobody could be found for: guessing would make it false.",
        _unresolved_pronoun,
    ),
    Check("teaser", '"I\'ve got news" announces; what the news is comes next, if at all.', _teaser),
    Check("light_verb", "do/make/get/have/be/go ... without a complement say almost nothing.", _light_verb),
)


# ---------------------------------------------------------------------------------- content


def cut_dangling_tail(content: str) -> str:
    """ "Maya is vegetarian, so only": a short cut-off tail after the last comma goes, the
    clause before it stays."""
    if _DANGLING_END.search(content) and "," in content:
        kept, tail = content.rsplit(",", 1)
        if len(tail.split()) <= 3 and len(kept.split()) >= 3:
            return kept
    return content


def _short_content(s: SentenceState, content: str) -> bool:
    return len(content.split()) < 3


def _dangling_end(s: SentenceState, content: str) -> bool:
    return _DANGLING_END.search(content) is not None


CONTENT_CHECKS: tuple[Check[str], ...] = (
    Check("short", "Under three words rendered, there is no statement left.", _short_content),
    Check(
        "dangling",
        'Ends on "to", a preposition or a conjunction: the point is in another clause.',
        _dangling_end,
    ),
)
