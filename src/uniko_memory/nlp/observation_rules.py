"""Clause templates of the P3 observation rules (see :mod:`uniko_memory.nlp.observations`).

:class:`SentenceRules` extends the rendering of
:class:`~uniko_memory.nlp.observation_render.SentenceRender`:

1. *clause heads* are the sentence root, the verbs coordinated with it, and comma-spliced
   clauses the parser hung on it; each head whose subject is known (its own, one shared through
   coordination, or the speaker for a subject-less chat sentence such as "Went to the beach")
   becomes one candidate statement;
2. each candidate is checked (light verbs without complement, pronoun-only objects, unresolved
   pronouns, indefinite subjects, group statements) and turned into content plus a
   subject / predicate / object triple; statements not about the speaker or a third person are
   attributed ("Melanie says the lake was calm").

Over 400 lines on purpose: :class:`SentenceRules` is one pass over one parsed sentence whose
clause, triple and rejection rules read and write the same rendering state; split into modules,
that state would have to travel between them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from uniko_memory.nlp.observation_lexicon import (
    DISCOURSE_LEADERS,
    EVENT_NOUNS,
    EVENT_OFF_WORDS,
    FEELING_WORDS,
    INDEFINITE_PRONOUNS,
    LIGHT_VERBS,
    PERSON_NOUNS,
    REJECT_OBJECT_PRONOUNS,
    normalize_name,
    third_singular,
)
from uniko_memory.nlp.observation_render import (
    NON_NAME_ENTS,
    SUBJ_DEPS,
    TERMINAL,
    Clause,
    SentenceRender,
    lemma_of,
    snake,
)
from uniko_memory.nlp.observation_types import ObservationDraft

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = ["SentenceRules", "snake"]

_MODALS = {"will": "will", "'ll": "will", "’ll": "will", "wo": "will", "would": "would", "'d": "would",
           "’d": "would", "can": "can", "ca": "can", "could": "could", "should": "should",
           "shall": "shall", "might": "might", "may": "may", "must": "must"}  # fmt: skip
_TRIMMABLE = frozenset({"advcl", "relcl", "acl", "conj", "parataxis"})
_VOLITIONAL_MODALS = frozenset({"can", "could", "would", "will"})
_MANNER_ADVERBS = frozenset(
    {"well", "badly", "great", "fine", "smoothly", "okay", "ok", "far", "wrong", "right"}
)
_ARTICLES = frozenset({"a", "an", "the"})
_LOCATIVE_ADVERBS = frozenset({"home", "abroad", "overseas", "downtown", "upstate", "outside", "back"})
_ATTITUDE_VERBS = frozenset(
    {"love", "like", "hope", "think", "guess", "feel", "bet", "appreciate", "admire", "adore", "hate", "reckon",
     "wish", "need", "want"}
)  # fmt: skip
#: Adverbs that are a preposition's object ("for now", "until then", "from here"), not a sign of a
#: stranded one ("the studio I go to often").
_ADVERB_OBJECTS = frozenset(
    {
        "now",
        "then",
        "later",
        "here",
        "there",
        "ever",
        "today",
        "tonight",
        "tomorrow",
        "yesterday",
        "long",
        "once",
    }
)
_TAG_PRONOUNS = frozenset({"i", "you", "we", "he", "she", "it", "they", "there"})
_WEATHER_VERBS = frozenset({"rain", "snow", "pour", "drizzle", "hail", "freeze", "thunder"})
_DEGREE_NOUNS = frozenset({"lot", "lots", "bit", "ton", "tons", "bunch", "little"})
_MAX_OBJECT_TOKENS = 20


# A statement that ends on "to", a preposition or a conjunction lost its point to another clause.
_DANGLING_END = re.compile(
    r"\b(?:to|of|for|with|about|at|from|into|and|or|but|because|than|the|a|an|my|your"
    r"|would|could|should|will|can|might|must|did|does|do|so|only|if)[\s.,!?;:-]*$",
    re.IGNORECASE,
)


# Objects that only announce content ("I have news", "I've got a question"): no statement in them.
_TEASER_OBJECTS = frozenset(
    {
        "news",
        "update",
        "question",
        "something",
        "stuff",
        "story",
        "change",
        "decision",
        "announcement",
        "confession",
    }
)
_HYPOTHETICAL_MODALS = frozenset({"would", "could", "might", "'d", "’d"})
#: A modal that, before "have", says what did not happen ("would have moved"); the speculative ones
#: say it even alone ("he might come").
_COUNTERFACTUAL_MODALS = frozenset({"would", "could", "should", "might", "may", "must", "'d", "’d"})
_SPECULATIVE_MODALS = frozenset({"might"})


def _lead(clause: Clause) -> list[Token]:
    """The clause's words before its subject, up to the last comma there (empty when none)."""
    subject = [t.i for t in clause.subject]
    if not subject:
        return []
    lead = [t for t in clause.tokens if t.i < min(subject)]
    commas = [k for k, t in enumerate(lead) if t.text in (",", ":", ";")]
    return lead[: commas[-1] + 1] if commas else []


def _have_noun_root(tok: Token) -> bool:
    """A noun the parser made the root of "I have <noun phrase>", with "have" as its auxiliary
    ("I have type 2 diabetes": root "type"): the clause is a "have" statement."""
    return (
        tok.dep_ == "ROOT"
        and tok.pos_ == "NOUN"
        and any(c.dep_ == "aux" and c.lemma_.lower() == "have" and c.i < tok.i for c in tok.children)
        and any(c.dep_ in ("nsubj", "nsubjpass") for c in tok.children)
    )


def _has_to(verb: Token) -> bool:
    return any(c.dep_ == "aux" and c.tag_ == "TO" for c in verb.children)


@dataclass(slots=True)
class SentenceRules(SentenceRender):
    """Observation templates applied to one parsed sentence (see module docstring)."""

    # ------------------------------------------------------------------ entry point
    def run(self) -> list[ObservationDraft]:
        """Render the sentence, extract its statements, and update the pronoun state."""
        self._render_map()
        drafts: list[ObservationDraft] = []
        if not self._rejected_sentence():
            for head in self._clause_heads():
                clause = self._clause(head)
                if clause is None:
                    continue
                draft = self._draft(clause)
                if draft is not None:
                    drafts.append(draft)
        self._update_state()
        return drafts

    # ------------------------------------------------------------------ clauses
    def _clause_heads(self) -> list[Token]:
        root = self.sent.root
        heads: list[Token] = []

        def side_clause(child: Token, parent: Token) -> bool:
            """Coordinated verbs, and comma splices the parser hangs on the root ("I just got a
            puppy, this is Max": a ccomp *before* its head, or any parataxis) with their own subject."""
            if child.pos_ not in ("VERB", "AUX"):
                return False
            has_subject = any(c.dep_ in SUBJ_DEPS for c in child.children)
            if child.dep_ == "conj":
                # shared-subject verbs are split too (one predicate per statement); a verb
                # coordinated with a complement ("passionate about X and it'd be great") needs its own
                return parent.pos_ in ("VERB", "AUX") or has_subject
            return has_subject and (
                child.dep_ == "parataxis" or (child.dep_ == "ccomp" and child.i < parent.i)
            )

        def visit(tok: Token, own: bool) -> None:
            if own:
                heads.append(tok)
            for child in tok.children:
                if side_clause(child, tok):
                    visit(child, True)
                elif child.dep_ in ("acomp", "attr", "dobj"):
                    for grandchild in child.children:
                        if grandchild.dep_ == "conj" and side_clause(grandchild, child):
                            visit(grandchild, True)

        verbal = root.pos_ in ("VERB", "AUX") or _have_noun_root(root)
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

    def _clause(self, head: Token) -> Clause | None:
        heads = set(t.i for t in self._clause_heads())
        excluded: set[int] = set()
        for tok in head.subtree:
            if tok.i in heads and tok.i != head.i:
                excluded.update(t.i for t in tok.subtree)
        # the parser sometimes hangs the subject on an auxiliary ("your enthusiasm is inspiring")
        frame = [
            *head.children,
            *(g for c in head.children if c.dep_ in ("aux", "auxpass") for g in c.children),
        ]
        subject = [
            c
            for c in frame
            if (c.dep_ in SUBJ_DEPS or c.dep_ == "expl") and self.repl.get(c.i, c.text)  # not a vocative
        ]
        tokens = [t for t in head.subtree if t.i not in excluded]
        clause = Clause(head=head, subject=[], tokens=tokens)
        if self._misparsed_attitude(subject, head):  # "Love seeing your work" with "Love" as a noun
            self.repl[subject[0].i] = third_singular(subject[0].lower_)
            clause.elided = True
            subject = []
        elif subject:
            clause.subject = [t for s in subject for t in s.subtree]
            clause.existential = subject[0].dep_ == "expl"
            clause.expletive = subject[0].i in self.expletive
        else:
            parent = head
            while parent.dep_ == "conj" and not clause.subject:
                parent = parent.head
                subj = [c for c in parent.children if c.dep_ in SUBJ_DEPS]
                if subj:
                    if subj[0].i in self.expletive and lemma_of(head) not in _WEATHER_VERBS:
                        # "It's tough ..., but don't let it get you down", "it's important to show
                        # care, celebrate ...": a dummy "it" is nobody's subject for another verb
                        self._reject("expletive_conj", clause)
                        return None
                    clause.subject = [t for s in subj for t in s.subtree]
                    clause.inherited = True
                    clause.expletive = subj[0].i in self.expletive
                    clause.tokens = clause.subject + self._shared_aux(head, parent) + tokens
            elided_aux = None if clause.subject else self._elided_subject(head)
            if not clause.subject and elided_aux is None:
                self._reject("no_subject", clause)
                return None
            if elided_aux is not None:
                clause.elided = True
                clause.elided_aux = elided_aux
                if head.tag_ in ("VB", "VBP") and not any(c.dep_ == "aux" for c in head.children):
                    self.repl[head.i] = third_singular(head.text.lower())
        if clause.subject and not any(t.is_alpha for t in clause.subject):
            self._reject("no_word_subject", clause)  # a bracket or a symbol parsed as the subject
            return None
        lo, hi = self._segment(head)
        if any(not lo <= t.i < hi for t in clause.subject):
            self._reject("split_subject", clause)
            return None
        if self.is_question(lo, hi):
            self._reject("question", clause)  # "... great! Where is it?" left unsplit by the parser
            return None
        kept = [t for t in clause.tokens if lo <= t.i < hi]
        cut = self._asides(head, clause.subject)
        clause.tokens = self._strip_edges([t for t in kept if t.i not in cut])
        if not clause.tokens or self.filler.is_sentence(self.sent.doc[lo:hi].text):
            self._reject("filler", clause)
            return None
        if lemma_of(head) == "be" and any(c.lower_ == "here" and c.i < head.i for c in head.children):
            clause.presented = next(
                (c for c in head.children if c.dep_ in ("nsubj", "attr") and c.i > head.i), None
            )
        return clause

    @staticmethod
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

    def _asides(self, head: Token, subject: list[Token]) -> set[int]:
        """Token ids a statement leaves out: a leading "as for me" / "for me" before a first- or
        second-person subject ("As for me, I've been volunteering" -> "Maria has been
        volunteering", not "As for Maria, Maria has") and a tag question ("..., shouldn't I")."""
        cut: set[int] = set()
        start = min((t.i for t in subject), default=head.i)
        for group in (self.first, self.second):  # the lead names the subject's own person
            if not any(t.i in group for t in subject):
                continue
            lead = [t for t in self.sent if t.i < start and t.i not in group]
            pronouns = [t for t in self.sent if t.i < start and t.i in group]
            if pronouns and all(t.pos_ in ("ADP", "PUNCT") or t.lower_ == "same" for t in lead):
                cut.update(t.i for t in self.sent if t.i < start)  # "Same with us - we have ..."
        for tok in head.subtree:
            if tok.i <= head.i or tok.i in cut:
                continue
            if tok.tag_ == "MD" or (tok.pos_ == "AUX" and tok.lemma_.lower() in ("be", "do", "have")):
                nxt = [t for t in self.sent.doc[tok.i + 1 : min(tok.i + 3, self.sent.end)]]
                if nxt and nxt[0].lower_ in ("n't", "n’t", "not"):
                    nxt = nxt[1:]
                after = nxt[0].text.lower().rstrip(".") if nxt else ""
                is_tag = after in _TAG_PRONOUNS and tok.head.i != nxt[0].head.i if nxt else False
                if is_tag and not any(c.dep_ in SUBJ_DEPS for c in tok.children):
                    cut.update(range(tok.i, self.sent.end))  # "..., shouldn't I. That seems ..."
                    break
        return cut

    def _misparsed_attitude(self, subject: list[Token], head: Token) -> bool:
        if len(subject) != 1 or head.tag_ not in ("VBG", "VB"):
            return False
        subj = subject[0]
        first = next((t for t in self.sent if not t.is_punct and t.lower_ not in DISCOURSE_LEADERS), None)
        return (
            first is not None
            and first.i == subj.i
            and subj.pos_ in ("NOUN", "PROPN")
            and subj.lower_ in _ATTITUDE_VERBS
            and not any(True for _ in subj.children)
        )

    def _segment(self, head: Token) -> tuple[int, int]:
        """[lo, hi) token bounds of the stretch around ``head`` between sentence-final marks the
        parser left inside the sentence ("Awesome! Must be so rewarding")."""
        lo, hi = self.sent.start, self.sent.end
        for tok in self.sent[:-1]:
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

    def _elided_subject(self, head: Token) -> str | None:
        """The auxiliary to insert after the speaker's name when a chat sentence drops its
        subject ("Went hiking yesterday" -> "", "Been to Rome once" -> "has", "Loving it" -> "is",
        "Can't wait to go" -> "", "Love seeing your work" -> ""), else None. Present-tense bare
        verbs count only for attitude verbs (love, hope, ...); others are imperatives."""
        if head.dep_ != "ROOT":
            return None
        auxes = [c for c in head.children if c.dep_ in ("aux", "auxpass", "neg") and c.i < head.i]
        lead = [t for t in self.sent if t.i < head.i and not t.is_punct and t.lower_ not in DISCOURSE_LEADERS]
        if not all(t.pos_ in ("ADV", "PART") or t in auxes for t in lead):
            return None
        if auxes:
            first = next((t for t in lead if t in auxes), None)
            if first is not None and first.tag_ == "MD" and _MODALS.get(first.lower_) in _VOLITIONAL_MODALS:
                return ""  # "Can't wait to see it", "Would love to join" (not "Must be nice": that is "it")
            if first is not None and first.lower_ == "been" and head.tag_ == "VBG":
                return "has"  # "Just been tinkering with that recipe"
            return None
        if head.tag_ in ("VB", "VBP"):
            return "" if head.lemma_.lower() in _ATTITUDE_VERBS else None
        if head.tag_ not in ("VBD", "VBN", "VBG"):
            return None
        if head.tag_ in ("VBG", "VBN") and any(t.tag_ in ("VBZ", "VBP", "VBD", "MD") for t in self.sent):
            return None  # "Seeing these figures makes me ...": a gerund subject, not an elided one
        return {"VBN": "has", "VBG": "is"}.get(head.tag_, "")

    def _strip_edges(self, toks: list[Token]) -> list[Token]:
        def junk(t: Token) -> bool:
            if not self.repl.get(t.i, t.text):
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
            return (
                t.pos_ == "ADJ" and t.dep_ in ("npadvmod", "advcl", "dep", "intj", "advmod") and not t.n_lefts
            )

        toks = sorted(toks, key=lambda t: t.i)
        while toks and (junk(toks[0]) or leader(toks[0]) or reaction(toks[0])):
            toks = toks[1:]
        while toks and (junk(toks[-1]) and toks[-1].dep_ != "prt"):
            toks = toks[:-1]
        return toks

    # ------------------------------------------------------------------ triple + draft
    def _triple(self, clause: Clause) -> tuple[str, Token | None, bool]:
        """(predicate, object head, has_complement) from the head's dependency frame.

        Predicate normalisation: ``[modal_][not_]lemma[_particle]`` followed, along an xcomp chain,
        by ``_to_lemma`` ("plan_to_open"), then ``_prep`` when the object is a prepositional
        object ("go_to"); copular adjectives with a preposition give ``be_<adj>_<prep>``
        ("be_excited_about"); "be going to V" gives ``will_V``.
        """
        verb = clause.head
        parts: list[str] = []
        governors = (verb, verb.head) if clause.inherited else (verb,)
        frame = [t for t in clause.tokens if t.head in governors and t.i != verb.i]
        modal = next((c for c in frame if c.dep_ == "aux" and c.tag_ == "MD"), None)
        if modal is not None and modal.lower_ in _MODALS:
            parts.append(_MODALS[modal.lower_])
        if any(c.dep_ == "neg" for c in frame):
            parts.append("not")
        if _have_noun_root(verb):  # "I have type 2 diabetes" parsed with "type" as the root
            return snake([*parts, "have"]), verb, True
        temporal_ids = {i for toks, _ in self.temporal for i in toks}
        allowed = {t.i for t in clause.tokens}
        chained = False
        for _ in range(4):
            kids = [c for c in verb.children if c.i in allowed and c.i not in temporal_ids]
            xcomp = next((c for c in kids if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
            dobj = next((c for c in kids if c.dep_ == "dobj" and c.i not in self.expletive), None)
            if (
                lemma_of(verb) == "go"
                and verb.tag_ == "VBG"
                and xcomp is not None
                and _has_to(xcomp)
                and dobj is None
            ):
                parts.append("will")
                verb = xcomp
                continue
            parts.append(lemma_of(verb))
            parts.extend(c.lower_ for c in kids if c.dep_ == "prt")
            if any(c.dep_ == "neg" for c in verb.children) and "not" not in parts:
                parts.insert(0, "not")
            if dobj is not None:
                return snake(parts), dobj, True
            attr = next((c for c in kids if c.dep_ in ("attr", "oprd")), None)
            if attr is not None:
                return snake(parts), attr, True
            acomp = next((c for c in kids if c.dep_ == "acomp"), None)
            if acomp is not None:
                prep = next(
                    (
                        c
                        for c in acomp.children
                        if c.dep_ == "prep" and c.i in allowed and self._pobj(c) is not None
                    ),
                    None,
                )
                if prep is not None:
                    parts += [acomp.lemma_.lower(), prep.lower_]
                    return snake(parts), self._pobj(prep), True
                return snake(parts), acomp, True
            if xcomp is not None:
                if _has_to(xcomp):
                    parts.append("to")
                verb = xcomp
                chained = True
                continue
            prep = next(
                (c for c in kids if c.dep_ in ("prep", "agent", "dative") and self._timeless_pobj(c)), None
            )
            if prep is not None:
                parts.append(prep.lower_)
                return snake(parts), self._pobj(prep), True
            ccomp = next((c for c in kids if c.dep_ == "ccomp"), None)
            if ccomp is not None:
                return snake(parts), ccomp, True
            loc = next(
                (c for c in kids if c.dep_ in ("advmod", "npadvmod") and c.lower_ in _LOCATIVE_ADVERBS), None
            )
            purpose = next((c for c in kids if c.dep_ == "advcl" and c.pos_ == "VERB" and _has_to(c)), None)
            if purpose is not None and lemma_of(verb) in LIGHT_VERBS:  # "went there to relax"
                parts.append("to")
                verb = purpose
                chained = True
                continue
            has_particle = any(c.dep_ == "prt" for c in kids)  # "come over", "give up"
            phrasal = next(
                (
                    c
                    for c in kids
                    if c.dep_ == "advmod" and any(g.dep_ in ("xcomp", "prep") for g in c.children)
                ),
                None,
            )
            if phrasal is not None:  # "I'm down to join", "I'm up for a challenge"
                return snake([*parts, phrasal.lower_]), phrasal, True
            manner = any(c.dep_ == "advmod" and c.lower_ in _MANNER_ADVERBS for c in kids)  # "went well"
            # a verb complement carries the content of a light verb ("keep pushing", "went hiking")
            content_verb = chained and lemma_of(verb) not in LIGHT_VERBS
            return snake(parts), loc, loc is not None or has_particle or manner or content_verb
        return snake(parts), None, False

    def _timeless_pobj(self, prep: Token) -> bool:
        """Whether ``prep`` has an object that is not a date ("on Friday" is not an object)."""
        pobj = self._pobj(prep)
        temporal_ids = {i for toks, _ in self.temporal for i in toks}
        return pobj is not None and pobj.i not in temporal_ids and pobj.ent_type_ not in ("DATE", "TIME")

    @staticmethod
    def _pobj(prep: Token) -> Token | None:
        return next((c for c in prep.children if c.dep_ in ("pobj", "pcomp")), None)

    def _head_phrase(self, head: Token) -> str:
        """The head word with its left modifiers, articles stripped ("a big park near X" -> "big park")."""
        return self._words_text([t for c in head.lefts if c.dep_ != "punct" for t in c.subtree] + [head])

    def _words_text(self, toks: Sequence[Token]) -> str:
        """A triple part: names, never "their" (it is read without its sentence)."""
        words = self.render_words(toks, names=True)
        while words and words[0].lower() in _ARTICLES:
            words = words[1:]
        while words and words[-1].lower().strip(",;:-") in ("and", "but", "or", "so", ""):
            words = words[:-1]
        return " ".join(words).strip(" ,;:.!-")

    def _object_text(self, obj: Token, allowed: set[int]) -> str | None:
        toks = [t for t in obj.subtree if t.i in allowed]
        if _have_noun_root(obj):  # the object starts after "have": "type 2 diabetes"
            have = max(c.i for c in obj.children if c.dep_ == "aux" and c.lemma_.lower() == "have")
            toks = [t for t in toks if t.i > have]
        if len(toks) <= 2 and obj.lemma_.lower() in _DEGREE_NOUNS:  # "a lot", "a bit": adverbial
            return None
        if len(toks) > _MAX_OBJECT_TOKENS:
            toks = [t for c in obj.lefts if c.dep_ != "punct" for t in c.subtree if t.i in allowed] + [obj]
        return self._words_text(toks) or None

    def _presentation(self, clause: Clause, shown: Token) -> ObservationDraft | None:
        """ "Here's a photo of my kids at the beach" -> "Melanie shares a photo of Melanie's kids at
        the beach": showing something is the speaker's act, rendered as such."""
        ids = {t.i for t in clause.tokens}
        toks = [t for t in shown.subtree if t.i in ids]
        if toks and (toks[0].i in self.unresolved or any(t.i in self.unresolved for t in toks)):
            return None
        obj = self._object_text(shown, ids)
        if not obj or shown.lower_ in REJECT_OBJECT_PRONOUNS:
            return None
        temporal = [m for t, m in self.temporal if t[0] in ids]
        return ObservationDraft(
            content=f"{self.speaker} shares {self.render(toks)}",
            subject=self.speaker,
            predicate="share",
            object=obj,
            temporal_phrase=temporal[0].phrase if temporal else None,
            anchor=temporal[0].window if temporal else None,
            entities=list(dict.fromkeys([normalize_name(self.speaker), *self._entities(clause, shown)])),
            sentence=self.sent.text.strip(),
            confidence=0.6,
        )

    def _draft(self, clause: Clause) -> ObservationDraft | None:
        ids = {t.i for t in clause.tokens}
        if clause.presented is not None:
            return self._presentation(clause, clause.presented)
        lead = clause.tokens[0]
        if not any(t.pos_ in ("VERB", "AUX") for t in clause.tokens):
            self._reject("verbless", clause)  # "Mālō e lelei Tevita!": a greeting or a bare answer
            return None
        if any(c.dep_ == "mark" and c.i < clause.head.i for c in clause.head.children):
            self._reject("fragment", clause)  # "Since I was 17 or so." (a subordinate clause alone)
            return None
        if lead.tag_ == "WRB" and lead.head.i == clause.head.i:
            self._reject("wh_fragment", clause)  # "How I felt alone!" / "Why I left"
            return None
        if self._group_statement(clause):
            self._reject("group", clause)
            return None
        if any(
            lemma_of(t) == "let" and t.i + 1 < len(t.doc) and t.doc[t.i + 1].lower_ in ("'s", "’s", "us")
            for t in clause.tokens
        ):
            # "let's make it happen", "Let's go to a dance class, it'll be fun": a proposal, not a statement
            self._reject("suggestion", clause)
            return None
        self._cut_request_tail(clause)
        if self._request(clause):
            self._reject("request", clause)  # "so only veggie dishes for me please": asked, not stated
            return None
        if clause.tokens[0].lower_ in ("lemme", "gimme"):
            self._reject("imperative", clause)  # "Lemme know when you got time"
            return None
        if self._stranded_preposition(clause):
            self._reject("dangling", clause)  # "(a studio) I go to often": its object is outside
            return None
        if self._hypothetical(clause):
            self._reject("hypothetical", clause)  # "If I got the job I'd move": nothing happened
            return None
        if self._consolation(clause):
            self._reject("consolation", clause)  # "I'm so sorry. She had a good long life."
            return None
        if self._counterfactual(clause):
            self._reject("counterfactual", clause)  # "I would have moved into a hotel": it did not happen
            return None
        if self._bare_feeling(clause):
            self._reject("bare_feeling", clause)  # "I'm so afraid": how, about what, is elsewhere
            return None
        if self._lead_fragment(clause):
            self._reject(
                "lead_fragment", clause
            )  # "Inti, for the festival, I guess", "Not Inti, my father ..."
            return None
        self._cut_loose_lead(clause)
        subj_head = next((t for t in clause.subject if t.dep_ in SUBJ_DEPS or t.dep_ == "expl"), None)
        if subj_head is not None and not clause.existential and not clause.expletive:
            low = subj_head.lower_
            bare = len([t for t in clause.subject if t.head.i == subj_head.i and t.dep_ != "punct"]) == 0
            if (
                low in INDEFINITE_PRONOUNS
                and subj_head.pos_ != "PROPN"
                and (bare or subj_head.pos_ in ("PRON", "DET"))
            ):
                self._reject("indefinite_subject", clause)
                return None
        self._trim_unresolved(clause)
        ids = {t.i for t in clause.tokens}
        predicate, obj, has_complement = self._triple(clause)
        head_lemma = lemma_of(clause.head)
        human_ref = obj is not None and obj.i in self.resolved and self.resolved[obj.i].human
        if (
            obj is not None
            and len([t for t in obj.subtree if t.i in ids]) == 1
            and obj.lower_ in REJECT_OBJECT_PRONOUNS
            and not human_ref  # "I took them (= my kids) to the beach" keeps its object
        ):
            self._reject("pronoun_object", clause)
            return None
        if (
            obj is not None
            and obj.pos_ == "PRON"
            and obj.i not in self.resolved
            and obj.i not in self.first | self.second
        ):
            self._reject("pronoun_object", clause)
            return None
        if ids & self.unresolved:
            self._reject("unresolved_pronoun", clause)
            return None
        if (
            obj is not None
            and head_lemma in LIGHT_VERBS
            and obj.lemma_.lower() in _TEASER_OBJECTS
            and not any(c.dep_ in ("prep", "relcl", "acl", "ccomp") for c in obj.children)
        ):
            self._reject("teaser", clause)  # "I've got (big) news": what it is comes next, if at all
            return None
        last_verb = predicate.split("_")[-1] if obj is None else None
        status = self._event_status(clause, ids) if not has_complement else None
        if status == "off":
            predicate = snake([predicate, "off"])  # "the trip is off": be_off, a cancellation
        elif (
            status is None
            and not has_complement
            and (head_lemma in LIGHT_VERBS or (last_verb and last_verb in LIGHT_VERBS))
        ):
            self._reject("light_verb", clause)
            return None
        content = self.filler.strip(self.render(clause.tokens))
        if len(content.split()) < 3:
            self._reject("short", clause)
            return None
        if _DANGLING_END.search(content) and "," in content:
            kept, tail = content.rsplit(",", 1)
            if len(tail.split()) <= 3 and len(kept.split()) >= 3:
                content = kept  # "Maya is vegetarian, so only": the cut-off tail goes, the clause stays
        if _DANGLING_END.search(content):
            self._reject("dangling", clause)  # "I love to." / "we talked about" : the point is elsewhere
            return None
        subject = self.render(clause.subject) if clause.subject else self.speaker
        object_text = self._object_text(obj, ids) if obj is not None else None
        if clause.elided:
            content = " ".join(w for w in (self.speaker, clause.elided_aux, content) if w)
        if clause.existential:
            attr = next((c for c in clause.head.children if c.dep_ in ("attr", "nsubj")), None)
            if attr is None:
                return None
            subject = self._head_phrase(attr)
            preps = [c for c in attr.children if c.dep_ == "prep" and self._pobj(c) is not None]
            predicate = snake(["exist", preps[0].lower_ if preps else ""])
            pobj = self._pobj(preps[0]) if preps else None
            object_text = self._object_text(pobj, ids) if pobj is not None else None
        elif clause.expletive:
            extra = next((c for c in clause.head.children if c.dep_ in ("xcomp", "ccomp", "csubj")), None)
            subject = self.render(list(extra.subtree)) if extra is not None else "it"
        about_person = self._about_person(clause)
        if not about_person:  # an opinion or report about something else: attribute it
            content = f"{self.speaker} says {content}"
        content = content[:1].upper() + content[1:]
        temporal = [m for toks, m in self.temporal if toks[0] in ids]
        confidence = self._confidence(clause, object_text, about_person)
        return ObservationDraft(
            content=content,
            subject=subject.strip(),
            predicate=predicate or head_lemma,
            object=object_text or None,
            temporal_phrase=temporal[0].phrase if temporal else None,
            anchor=temporal[0].window if temporal else None,
            entities=self._entities(clause, obj),
            sentence=self.sent.text.strip(),
            confidence=confidence,
        )

    @staticmethod
    def _cut_request_tail(clause: Clause) -> None:
        """ "I'm vegetarian, so please no meat": the statement ends at the comma before a request
        the parser hung on it."""
        doc = clause.head.doc
        ids = [t.i for t in clause.tokens]
        please = next((i for i in ids if doc[i].lower_ == "please"), None)
        if please is None:
            return
        comma = max((i for i in ids if clause.head.i < i < please and doc[i].text == ","), default=None)
        if comma is not None:
            clause.tokens = [t for t in clause.tokens if t.i < comma]

    @staticmethod
    def _request(clause: Clause) -> bool:
        """A "please" inside the clause or right after it (punctuation aside): a request."""
        first, last = clause.tokens[0].i, clause.tokens[-1].i
        doc = clause.head.doc
        after = last + 1
        while after < len(doc) and doc[after].is_punct and doc[after].text not in ".!?,;":
            after += 1
        return any(doc[i].lower_ == "please" for i in range(first, min(after + 1, len(doc))))

    def _event_status(self, clause: Clause, ids: set[int]) -> str | None:
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
        if any(toks[0] in ids for toks, _ in self.temporal):
            return ""
        return None

    @staticmethod
    def _stranded_preposition(clause: Clause) -> bool:
        """Whether the clause ends on a preposition with no object, adverbs aside ("I go to
        often"): the object was a relative clause's head the statement does not hold."""
        toks = [t for t in clause.tokens if not t.is_punct]
        while toks and toks[-1].pos_ == "ADV" and toks[-1].lower_ not in _ADVERB_OBJECTS:
            toks = toks[:-1]
        if not toks or toks[-1].dep_ != "prep" or toks[-1].pos_ != "ADP":
            return False
        return not any(
            c.dep_ in ("pobj", "pcomp") and (c.pos_ != "ADV" or c.lower_ in _ADVERB_OBJECTS)
            for c in toks[-1].children
        )

    def _hypothetical(self, clause: Clause) -> bool:
        """A conditional's consequence ("..., I would move") or its "if" clause itself."""
        head = clause.head
        conditional_modal = any(c.dep_ == "aux" and c.lower_ in _HYPOTHETICAL_MODALS for c in head.children)
        has_if = any(t.lower_ in ("if", "unless") and t.dep_ == "mark" for t in self.sent)
        if has_if and conditional_modal:
            return True
        # "I hope (that) it does not rain", "I wish he'd call": a wish, not something that is so
        return lemma_of(head) in ("hope", "wish") and any(c.dep_ == "ccomp" for c in head.children)

    @staticmethod
    def _counterfactual(clause: Clause) -> bool:
        """ "I would have moved", "she could have won", "I should have called", "he might come":
        what did not (or may not) happen; a statement of it would read as a fact."""
        aux = [c for c in clause.head.children if c.dep_ == "aux"]
        modal = next((c for c in aux if c.lower_ in _COUNTERFACTUAL_MODALS), None)
        if modal is None:
            return False
        return modal.lower_ in _SPECULATIVE_MODALS or any(c.lower_ == "have" and c.i > modal.i for c in aux)

    @staticmethod
    def _bare_feeling(clause: Clause) -> bool:
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

    @staticmethod
    def _lead_fragment(clause: Clause) -> bool:
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
        lead = _lead(clause)
        return bool(lead) and lead[0].lower_ in ("not", "only")

    @staticmethod
    def _cut_loose_lead(clause: Clause) -> None:
        """Words before the subject that are not the clause's own adverbial go: a request ("Please
        send me her number, my office needs a caterer") or a vocative ("Guðrún, small correction:
        ..."). A time or place phrase ("Last week, I moved") is the clause's own and stays."""
        lead = _lead(clause)
        if any(
            (t.tag_ == "VB" and not any(c.dep_ in SUBJ_DEPS for c in t.children))
            or (t.dep_ in ("dep", "npadvmod", "appos", "intj") and t.pos_ in ("PROPN", "NOUN", "PRON"))
            for t in lead
        ) and not any(t.ent_type_ in NON_NAME_ENTS for t in lead):
            cut = max(t.i for t in lead)
            clause.tokens = [t for t in clause.tokens if t.i > cut]

    def _consolation(self, clause: Clause) -> bool:
        """After sympathy earlier in the turn, a clause whose subject is a pronoun for something
        the turn has not itself mentioned (the other speaker's news) consoles; it reports nothing
        the listener knows ("I'm so sorry. She had a good long life"). "I'm sorry. My dad died
        last year. He was 80" still states its facts: "he" is this turn's own dad."""
        if not self.consoling:
            return False
        return any(
            t.dep_ in SUBJ_DEPS
            and t.i in self.resolved
            and self.resolved[t.i].text.lower() not in self.turn_mentions
            for t in clause.subject
        )

    def _trim_unresolved(self, clause: Clause) -> None:
        """Cut a modifier clause or phrase that holds an unresolvable pronoun ("I submitted my
        screenplay just to see how others might like it" -> "... submitted Caroline's screenplay"),
        so long as it is neither the subject nor the head's own argument. Content is only dropped,
        never guessed."""
        subject = {t.i for t in clause.subject}
        for _ in range(3):
            ids = {t.i for t in clause.tokens}
            bad = sorted((ids & self.unresolved) - subject)
            if not bad:
                return
            # go up to a *modifier* (a complement cannot go alone: "it'd be great to share it")
            cur = self.sent.doc[bad[0]]
            while cur.i != clause.head.i and cur.dep_ not in _TRIMMABLE:
                cur = cur.head
            if cur.i == clause.head.i or cur.head.i == cur.i:
                return
            if cur.dep_ in ("relcl", "acl") and cur.head.pos_ in ("PRON", "DET"):
                return  # cutting "who ..." from "those who ..." would leave "those" dangling
            cut = {t.i for t in cur.subtree}
            kept = [t for t in clause.tokens if t.i not in cut]
            if len(kept) < 3:
                return
            clause.tokens = self._strip_edges(kept)

    def _group_statement(self, clause: Clause) -> bool:
        """ "We all have unique paths", "we support each other": about a group, not the speaker."""
        ids = {t.i for t in clause.tokens}
        for tok in clause.tokens:  # "I'll miss you both", "see you all": the addressee is a group
            if tok.i not in self.second or tok.i + 1 >= self.sent.end:
                continue
            word = tok.nbor(1).lower_
            after = tok.nbor(2) if tok.i + 2 < self.sent.end else None
            if word == "both" or (word == "all" and (after is None or after.pos_ not in ("ADP", "DET"))):
                return True  # (not "I told you all about it": "all" = everything)
        if not ids & self.plural_first:
            return False
        for tok in clause.tokens:
            if tok.i in self.plural_first and any(c.lower_ in ("all", "both", "each") for c in tok.children):
                return True
            if tok.lower_ in ("other", "another") and tok.i > 0 and tok.nbor(-1).lower_ in ("each", "one"):
                return True
            if tok.lower_ in ("all", "both") and tok.i > 0:
                prev = tok.nbor(-1)
                while (
                    prev.i > self.sent.start
                    and prev.pos_ in ("AUX", "PART")
                    and prev.i not in self.plural_first
                ):
                    prev = prev.nbor(-1)  # "we'd all", "we've both"
                if prev.i in self.plural_first:
                    return True
        return False

    def _about_person(self, clause: Clause) -> bool:
        """Whether the statement reports on the speaker or a third person (or what they own); a
        statement about the addressee ("you're so brave") or about a thing is the speaker's view
        and gets attributed ("Melanie says Caroline is so brave")."""
        if clause.elided:
            return True
        if clause.existential or clause.expletive:
            return False
        subject_ids = {t.i for t in clause.subject}
        if subject_ids & self.first:
            return True
        if subject_ids & self.second:
            return False
        for tok in clause.subject:
            ref = self.resolved.get(tok.i)
            if ref is not None and ref.kind == "person":
                return True
            if tok.dep_ in SUBJ_DEPS and (tok.ent_type_ == "PERSON" or tok.lemma_.lower() in PERSON_NOUNS):
                return True
        return False

    def _confidence(self, clause: Clause, obj: str | None, about_person: bool) -> float:
        """0.8 for subject + verb + object, 0.6 without an object; minus 0.1 each for a subject
        taken from pronoun resolution, "we" read as the speaker, an elided or expletive subject,
        or a statement wrapped as reported speech; clamped to [0.3, 0.9]."""
        score = 0.8 if obj else 0.6
        ids = {t.i for t in clause.subject}
        if ids & set(self.resolved):
            score -= 0.1
        if ids & self.plural_first:
            score -= 0.1
        if clause.elided or clause.expletive or clause.existential:
            score -= 0.1
        if not about_person:
            score -= 0.1
        return round(min(0.9, max(0.3, score)), 2)

    def _entities(self, clause: Clause, obj: Token | None) -> list[str]:
        ids = {t.i for t in clause.tokens}
        out: list[str] = []
        if clause.elided or ids & self.first or not self._about_person(clause):
            out.append(normalize_name(self.speaker))
        if self.addressee and ids & self.second:
            out.append(normalize_name(self.addressee))
        for i in sorted(ids & set(self.resolved)):
            # "he" = "Caroline's brother": the statement is also about Caroline
            text = self.resolved[i].text
            out.extend(normalize_name(p) for p in (self.speaker, self.addressee) if p and f"{p}'" in text)
            entity = self.resolved[i].entity
            if entity:
                out.append(entity)
        scope = {t.i for t in clause.subject}
        if obj is not None:
            scope |= {t.i for t in obj.subtree}
        scope &= ids
        for ent in self.sent.ents:
            if ent.label_ not in NON_NAME_ENTS and any(t.i in scope for t in ent):
                out.append(normalize_name(ent.text))
        run: list[str] = []
        for tok in [*sorted(self.sent, key=lambda t: t.i), None]:
            if tok is not None and tok.i in scope and tok.pos_ == "PROPN" and not tok.ent_type_:
                run.append(tok.text)
                continue
            if run:
                out.append(normalize_name(" ".join(run)))
                run = []
        unique: dict[str, str] = {}
        for entity in out:
            if entity:
                unique.setdefault(entity.lower(), entity)
        return list(unique.values())
