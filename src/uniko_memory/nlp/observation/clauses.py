"""Clause heads and clauses: where in a sentence one statement starts and ends.

One statement per clause head, because a chat sentence often says two things ("I got a puppy,
this is Max"; "I moved and started a new job"): the sentence root, the verbs coordinated with it
and comma-spliced clauses the parser hung on it. Each head whose subject is known (its own, one
shared through coordination, or the speaker for a subject-less chat sentence such as "Went to
the beach") becomes a :class:`~.state.Clause`; a head whose clause cannot be built is refused
here, where it fails, since the checks in :mod:`.checks` need a whole clause.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from uniko_memory.nlp.observation.lexicon import (
    ATTITUDE_VERBS,
    DISCOURSE_LEADERS,
    MODALS,
    QUESTION_AUX,
    SUBJ_DEPS,
    TAG_PRONOUNS,
    VOLITIONAL_MODALS,
    WEATHER_VERBS,
    WH,
)
from uniko_memory.nlp.observation.state import Clause, SentenceState, reject
from uniko_memory.nlp.observation.words import lemma_of, third_singular

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = [
    "TERMINAL",
    "build_clause",
    "clause_heads",
    "have_noun_root",
    "is_question",
    "lead",
    "strip_edges",
]

#: Sentence-final marks: the parser sometimes leaves one inside a sentence ("Great! Did you ...").
TERMINAL = re.compile(r"[.!?…]+")


def have_noun_root(tok: Token) -> bool:
    """A noun the parser made the root of "I have <noun phrase>", with "have" as its auxiliary
    ("I have type 2 diabetes": root "type"): the clause is a "have" statement."""
    return (
        tok.dep_ == "ROOT"
        and tok.pos_ == "NOUN"
        and any(c.dep_ == "aux" and c.lemma_.lower() == "have" and c.i < tok.i for c in tok.children)
        and any(c.dep_ in ("nsubj", "nsubjpass") for c in tok.children)
    )


def lead(clause: Clause) -> list[Token]:
    """The clause's words before its subject, up to the last comma (or colon, semicolon, dash)
    there; empty when none."""
    subject = [t.i for t in clause.subject]
    if not subject:
        return []
    before = [t for t in clause.tokens if t.i < min(subject)]
    commas = [k for k, t in enumerate(before) if t.text in (",", ":", ";", "--", "-", "–", "—")]
    return before[: commas[-1] + 1] if commas else []


def is_question(s: SentenceState, lo: int | None = None, hi: int | None = None) -> bool:
    """Whether tokens [lo, hi) of the sentence (all by default) end with "?", or open with an
    inverted auxiliary ("Did you ...") or a wh-word + auxiliary ("What's up"): a question asks,
    it states nothing."""
    lo = s.sent.start if lo is None else lo
    hi = s.sent.end if hi is None else hi
    span = s.sent.doc[lo:hi]
    text = span.text.strip()
    if "?" in text[-3:] or (hi < s.sent.end and "?" in s.sent.doc[hi].text):
        return True
    toks = [t for t in span if not t.is_punct and t.lower_ not in DISCOURSE_LEADERS and t.dep_ != "intj"]
    if len(toks) < 2:
        return False
    first, second = toks[0], toks[1]
    if (
        first.pos_ == "AUX"
        and first.lemma_.lower() in QUESTION_AUX
        and first.dep_ in ("aux", "auxpass", "ROOT")
    ):
        # the subject comes right after the auxiliary (past a "not"): "Did you ...", "Don't you
        # ...", "Can the kids ..."; "Don't judge me, but I'm ..." and "Had fish and that was it"
        # open with a verb that has no subject of its own there, and state
        nxt = next((t for t in span if t.i > first.i and t.dep_ != "neg"), None)
        return nxt is not None and any(
            t.dep_ in ("nsubj", "nsubjpass", "expl") and t.left_edge.i == nxt.i for t in span
        )
    return first.tag_ in WH and second.pos_ == "AUX" and second.tag_ != "TO"


# ---------------------------------------------------------------------------------- heads


def _side_clause(child: Token, parent: Token) -> bool:
    """Coordinated verbs, and comma splices the parser hangs on the root ("I just got a
    puppy, this is Max": a ccomp *before* its head, or any parataxis) with their own subject."""
    if child.pos_ not in ("VERB", "AUX"):
        return False
    has_subject = any(c.dep_ in SUBJ_DEPS for c in child.children)
    if child.dep_ == "conj":
        # shared-subject verbs are split too (one predicate per statement); a verb
        # coordinated with a complement ("passionate about X and it'd be great") needs its own
        return parent.pos_ in ("VERB", "AUX") or has_subject
    if has_subject and child.dep_ == "ccomp" and child.i > parent.i:
        return _after_imperative(child, parent)
    return has_subject and (child.dep_ == "parataxis" or (child.dep_ == "ccomp" and child.i < parent.i))


def _after_imperative(child: Token, parent: Token) -> bool:
    """ "Scratch that, Priya works at Deloitte", "Guess what, we're engaged": a subject-less
    imperative, a comma, then a clause with its own subject that the parser hung on it as its
    complement. The clause states; the imperative is a lead ("Tell her I said hi" has no comma:
    what is told stays the imperative's)."""
    if parent.tag_ != "VB" or any(c.dep_ in SUBJ_DEPS for c in parent.children):
        return False
    subject = next(c for c in child.children if c.dep_ in SUBJ_DEPS)
    between = parent.doc[parent.i + 1 : subject.left_edge.i]
    return any(t.text == "," for t in between)


def clause_heads(s: SentenceState) -> list[Token]:
    """The heads of the sentence's statements, in sentence order."""
    root = s.sent.root
    heads: list[Token] = []

    def visit(tok: Token, own: bool) -> None:
        if own:
            heads.append(tok)
        for child in tok.children:
            if _side_clause(child, tok):
                visit(child, True)
            elif child.dep_ in ("acomp", "attr", "dobj"):
                for grandchild in child.children:
                    if grandchild.dep_ == "conj" and _side_clause(grandchild, child):
                        visit(grandchild, True)

    verbal = root.pos_ in ("VERB", "AUX") or have_noun_root(root)
    visit(root, verbal)
    colon = next((t for t in root.children if t.text == ":"), None)
    if not verbal and colon is not None:
        # "Big news: I'm pescatarian now": a label, then the clause (parsed as its modifier)
        for child in root.children:
            if (
                child.i > colon.i
                and child.pos_ in ("VERB", "AUX")
                and any(c.dep_ in SUBJ_DEPS for c in child.children)
            ):
                visit(child, True)
    return sorted(heads, key=lambda t: t.i)


# ---------------------------------------------------------------------------------- clause


def build_clause(s: SentenceState, head: Token, heads: set[int]) -> Clause | None:
    """The clause of ``head`` (the other ``heads``' clauses cut out), or None when it has no
    subject, sits across a sentence break, asks, or is filler (the refusal is recorded)."""
    # (a sentence cut after its heading keeps the heading's words out: "Correction: the dinner ...")
    excluded = {t.i for t in head.subtree if not s.sent.start <= t.i < s.sent.end}
    if head.dep_ == "ccomp" and head.i > head.head.i and _after_imperative(head, head.head):
        # the imperative's object the parser gave the clause ("Scratch that, ...") goes with it
        comma = max(t.i for t in head.doc[head.head.i : head.i] if t.text == ",")
        excluded.update(t.i for t in head.subtree if t.i <= comma)
    for tok in head.subtree:
        if tok.i in heads and tok.i != head.i:
            excluded.update(t.i for t in tok.subtree)
    tokens = [t for t in head.subtree if t.i not in excluded]
    clause = Clause(head=head, subject=[], tokens=tokens)
    if not _find_subject(s, clause, tokens):
        return None
    if clause.subject and not any(t.is_alpha for t in clause.subject):
        reject(s, "no_word_subject", clause)  # a bracket or a symbol parsed as the subject
        return None
    lo, hi = _segment(s, head)
    if any(not lo <= t.i < hi for t in clause.subject):
        reject(s, "split_subject", clause)
        return None
    if is_question(s, lo, hi):
        reject(s, "question", clause)  # "... great! Where is it?" left unsplit by the parser
        return None
    kept = [t for t in clause.tokens if lo <= t.i < hi]
    cut = _asides(s, head, clause.subject)
    clause.tokens = strip_edges(s, [t for t in kept if t.i not in cut])
    if not clause.tokens or s.filler.is_sentence(s.sent.doc[lo:hi].text):
        reject(s, "filler", clause)
        return None
    if lemma_of(head) == "be" and any(c.lower_ == "here" and c.i < head.i for c in head.children):
        clause.presented = next(
            (c for c in head.children if c.dep_ in ("nsubj", "attr") and c.i > head.i), None
        )
    return clause


def _find_subject(s: SentenceState, clause: Clause, tokens: list[Token]) -> bool:
    """Give ``clause`` its subject: its own, a misparsed attitude verb's speaker, or (failing
    both) one shared through coordination or elided; False (refusal recorded) when none is."""
    head = clause.head
    # the parser sometimes hangs the subject on an auxiliary ("your enthusiasm is inspiring")
    frame = [*head.children, *(g for c in head.children if c.dep_ in ("aux", "auxpass") for g in c.children)]
    subject = [
        c
        for c in frame
        if (c.dep_ in SUBJ_DEPS or c.dep_ == "expl")
        and s.repl.get(c.i, c.text)  # not a vocative
        and s.sent.start <= c.i  # not a heading cut off before its colon
    ]
    if _misparsed_attitude(s, subject, head):  # "Love seeing your work" with "Love" as a noun
        s.repl[subject[0].i] = third_singular(subject[0].lower_)
        clause.elided = True
    elif subject:
        clause.subject = [t for c in subject for t in c.subtree]
        clause.existential = subject[0].dep_ == "expl"
        clause.expletive = subject[0].i in s.expletive
    else:
        return _borrowed_subject(s, clause, tokens)
    return True


def _borrowed_subject(s: SentenceState, clause: Clause, tokens: list[Token]) -> bool:
    """A subject-less head takes the subject of the verb it is coordinated with ("I moved and
    started a job"), else the speaker of a chat sentence that drops it ("Went hiking")."""
    head = clause.head
    parent = head
    while parent.dep_ == "conj" and not clause.subject:
        parent = parent.head
        subj = [c for c in parent.children if c.dep_ in SUBJ_DEPS]
        if subj:
            if subj[0].i in s.expletive and lemma_of(head) not in WEATHER_VERBS:
                # "It's tough ..., but don't let it get you down", "it's important to show
                # care, celebrate ...": a dummy "it" is nobody's subject for another verb
                reject(s, "expletive_conj", clause)
                return False
            clause.subject = [t for c in subj for t in c.subtree]
            clause.inherited = True
            clause.expletive = subj[0].i in s.expletive
            clause.tokens = clause.subject + _shared_aux(head, parent) + tokens
    elided_aux = None if clause.subject else _elided_subject(s, head)
    if not clause.subject and elided_aux is None:
        reject(s, "no_subject", clause)
        return False
    if elided_aux is not None:
        clause.elided = True
        clause.elided_aux = elided_aux
        if head.tag_ in ("VB", "VBP") and not any(c.dep_ == "aux" for c in head.children):
            s.repl[head.i] = third_singular(head.text.lower())
    return True


def _shared_aux(head: Token, parent: Token) -> list[Token]:
    """The auxiliaries a coordinated verb shares with the verb whose subject it takes:
    "I will start X and create Y" -> "will"; "we'd get comfy and be absorbed" -> "would" (its
    own bare "be" needs the modal); "I'm gonna chat with X, get support" -> "am going to"
    (a base form parallel to the infinitive)."""
    aux = [c for c in parent.children if c.dep_ in ("aux", "auxpass", "neg") and c.i < parent.i]
    own = [c for c in head.children if c.dep_ in ("aux", "auxpass")]
    infinitive = next(
        (
            c
            for c in parent.children
            if c.dep_ == "xcomp"
            and c.i < head.i
            and any(g.dep_ == "aux" and g.tag_ == "TO" for g in c.children)
        ),
        None,
    )
    if not own and head.tag_ in ("VB", "VBP") and infinitive is not None and parent.tag_ == "VBG":
        to = next(g for g in infinitive.children if g.dep_ == "aux" and g.tag_ == "TO")
        return [*aux, parent, to]
    if own and all(o.tag_ == "VB" for o in own):
        return [c for c in aux if c.tag_ == "MD" or c.dep_ == "neg"]
    return aux if aux and not own and head.tag_ in ("VB", "VBN", "VBG") else []


def _asides(s: SentenceState, head: Token, subject: list[Token]) -> set[int]:
    """Token ids a statement leaves out: a leading "as for me" / "for me" before a first- or
    second-person subject ("As for me, I've been volunteering" -> "Maria has been
    volunteering", not "As for Maria, Maria has") and a tag question ("..., shouldn't I")."""
    cut: set[int] = set()
    start = min((t.i for t in subject), default=head.i)
    for group in (s.first, s.second):  # the lead names the subject's own person
        if not any(t.i in group for t in subject):
            continue
        before = [t for t in s.sent if t.i < start and t.i not in group]
        pronouns = [t for t in s.sent if t.i < start and t.i in group]
        if pronouns and all(t.pos_ in ("ADP", "PUNCT") or t.lower_ == "same" for t in before):
            cut.update(t.i for t in s.sent if t.i < start)  # "Same with us - we have ..."
    for tok in head.subtree:
        if tok.i <= head.i or tok.i in cut:
            continue
        if tok.tag_ == "MD" or (tok.pos_ == "AUX" and tok.lemma_.lower() in ("be", "do", "have")):
            nxt = [t for t in s.sent.doc[tok.i + 1 : min(tok.i + 3, s.sent.end)]]
            if nxt and nxt[0].lower_ in ("n't", "n’t", "not"):
                nxt = nxt[1:]
            after = nxt[0].text.lower().rstrip(".") if nxt else ""
            is_tag = after in TAG_PRONOUNS and tok.head.i != nxt[0].head.i if nxt else False
            if is_tag and not any(c.dep_ in SUBJ_DEPS for c in tok.children):
                cut.update(range(tok.i, s.sent.end))  # "..., shouldn't I. That seems ..."
                break
    return cut


def _misparsed_attitude(s: SentenceState, subject: list[Token], head: Token) -> bool:
    """ "Love seeing your work": the parser made "Love" a noun subject; it is the speaker's verb."""
    if len(subject) != 1 or head.tag_ not in ("VBG", "VB"):
        return False
    subj = subject[0]
    first = next((t for t in s.sent if not t.is_punct and t.lower_ not in DISCOURSE_LEADERS), None)
    return (
        first is not None
        and first.i == subj.i
        and subj.pos_ in ("NOUN", "PROPN")
        and subj.lower_ in ATTITUDE_VERBS
        and not any(True for _ in subj.children)
    )


def _segment(s: SentenceState, head: Token) -> tuple[int, int]:
    """[lo, hi) token bounds of the stretch around ``head`` between sentence-final marks the
    parser left inside the sentence ("Awesome! Must be so rewarding")."""
    lo, hi = s.sent.start, s.sent.end
    for tok in s.sent[:-1]:
        if tok.text in (":", "—") and tok.i < head.i:
            lo = tok.i + 1  # a label before the clause ("Update: I'm pescatarian now")
            continue
        if tok.is_punct and TERMINAL.fullmatch(tok.text) and not tok.is_sent_end:
            if tok.i < head.i:
                lo = tok.i + 1
            elif tok.i > head.i:
                hi = tok.i
                break
    return lo, hi


def _elided_subject(s: SentenceState, head: Token) -> str | None:
    """The auxiliary to insert after the speaker's name when a chat sentence drops its
    subject ("Went hiking yesterday" -> "", "Been to Rome once" -> "has", "Loving it" -> "is",
    "Can't wait to go" -> "", "Love seeing your work" -> ""), else None. Present-tense bare
    verbs count only for attitude verbs (love, hope, ...); others are imperatives."""
    if head.dep_ != "ROOT":
        return None
    auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass", "neg") and c.i < head.i]
    before = [t for t in s.sent if t.i < head.i and not t.is_punct and t.lower_ not in DISCOURSE_LEADERS]
    if not all(t.pos_ in ("ADV", "PART") or t in auxes for t in before):
        return None
    if auxes:
        first = next((t for t in before if t in auxes), None)
        if first is not None and first.tag_ == "MD" and MODALS.get(first.lower_) in VOLITIONAL_MODALS:
            return ""  # "Can't wait to see it", "Would love to join" (not "Must be nice": that is "it")
        if first is not None and first.lower_ == "been" and head.tag_ == "VBG":
            return "has"  # "Just been tinkering with that recipe"
        return None
    if head.tag_ in ("VB", "VBP"):
        return "" if head.lemma_.lower() in ATTITUDE_VERBS else None
    if head.tag_ not in ("VBD", "VBN", "VBG"):
        return None
    if head.tag_ in ("VBG", "VBN") and any(t.tag_ in ("VBZ", "VBP", "VBD", "MD") for t in s.sent):
        return None  # "Seeing these figures makes me ...": a gerund subject, not an elided one
    return {"VBN": "has", "VBG": "is"}.get(head.tag_, "")


def strip_edges(s: SentenceState, toks: list[Token]) -> list[Token]:
    """``toks`` without the interjections, conjunctions, discourse leaders and punctuation at
    either end, which a statement would otherwise start or end on ("Oh, and I ..." -> "I ...")."""

    def junk(t: Token) -> bool:
        if not s.repl.get(t.i, t.text):
            return True
        return bool(
            t.is_punct
            or t.is_space
            or t.pos_ in ("SYM", "X", "INTJ", "CCONJ")
            or t.dep_ in ("intj", "cc", "punct", "discourse")
        )

    def leader(t: Token) -> bool:
        return t.lower_ in DISCOURSE_LEADERS and t.dep_ in ("advmod", "npadvmod", "dep", "prep", "aux")

    def reaction(t: Token) -> bool:  # "Impressive(,) you're learning German"
        return t.pos_ == "ADJ" and t.dep_ in ("npadvmod", "advcl", "dep", "intj", "advmod") and not t.n_lefts

    toks = sorted(toks, key=lambda t: t.i)
    while toks and (junk(toks[0]) or leader(toks[0]) or reaction(toks[0])):
        toks = toks[1:]
    while toks and (junk(toks[-1]) and toks[-1].dep_ != "prt"):
        toks = toks[:-1]
    return toks
