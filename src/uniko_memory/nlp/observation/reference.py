"""Third-person reference: what "he", "it" and "they" point to, and what a later pronoun may.

A statement is read without its sentence, so a pronoun left in it says nothing; but a wrong
antecedent says something false. These rules resolve a pronoun only when one compatible
antecedent stands out (this sentence first, then the session's
:class:`~uniko_memory.nlp.observation.types.PronounState`) and otherwise mark it unresolved, which
drops the statement. Dummy "it" ("it's great to be back") is told apart here, because it needs no
antecedent at all. Nouns register as antecedents for the pronouns after them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from uniko_memory.nlp.observation.lexicon import (
    ACQUISITION_VERBS,
    ANIMAL_NOUNS,
    ARG_DEPS,
    CLAUSE_DEPS,
    COLLECTIVE_NOUNS,
    EATEN,
    EVALUATIVE_VERBS,
    EXPLETIVE_HEADS,
    EXPLETIVE_MARKS,
    FEMALE_NOUNS,
    MALE_NOUNS,
    NON_NAME_ENTS,
    OBJECT_DEPS,
    PERSON_NOUNS,
    PLACE_HEADS,
    QUANTIFIER_PRONOUNS,
    ROLE_RANK,
    SUBJ_DEPS,
    THIRD_PERSON,
    VAGUE_NOUNS,
    WEATHER,
)
from uniko_memory.nlp.observation.state import SentenceState, render_words
from uniko_memory.nlp.observation.types import Antecedent, AntecedentKind, Gender, known, unambiguous
from uniko_memory.nlp.observation.words import lemma_of, normalize_name, person_form

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = ["noun_candidate", "third_person", "update_state"]


def clause_of(tok: Token) -> int:
    """Index of the clause head governing ``tok``: "it" as a subject refers only into another
    clause ("I joined a club and it was fun"), never to its own clause's object."""
    cur = tok
    while cur.dep_ != "ROOT":
        if cur.pos_ in ("VERB", "AUX") and cur.dep_ in CLAUSE_DEPS:
            return int(cur.i)
        cur = cur.head
    return int(cur.i)


# ---------------------------------------------------------------------------------- pronouns


def third_person(s: SentenceState, tok: Token) -> None:
    """Resolve a he/she/it/they token into the rendering map, or mark it unresolved."""
    low = tok.lower_
    form, kind = THIRD_PERSON[low]
    if low == "her" and tok.tag_ == "PRP$":
        form = "poss"
    if form == "refl":  # himself/herself/itself stay as they are in third-person prose
        return
    if low == "it" and (_is_expletive(tok) or _idiomatic_it(tok)):
        s.expletive.add(tok.i)
        return
    if kind == "plural" and _bound_by_quantifier(s, tok):
        return  # "everyone has their own story": singular "their", kept as is
    gender: Gender = "m" if low in ("he", "him", "his") else "f" if low in ("she", "her", "hers") else None
    antecedent = _resolve(s, tok, kind, gender)
    if antecedent is not None and _binds_own_subject(s, tok, antecedent):
        antecedent = None  # "my father will never part with him": him is not the father
    if antecedent is None:
        s.unresolved.add(tok.i)
        if tok.dep_ in ("nsubj", "nsubjpass", "poss") or kind == "person":
            # what this pronoun meant is unknown, and it is what its sentence is about: a later
            # pronoun must not skip it for the next noun ("Is it near the station? -- Yes, it
            # opens at nine" is not about the station)
            blocker = Antecedent(text="", kind=kind, gender=gender, unknown=True)
            s.candidates.append((tok.i, replace(blocker, rank=ROLE_RANK.get(tok.dep_, 0))))
        return
    s.resolved[tok.i] = antecedent
    s.candidates.append((tok.i, replace(antecedent, rank=ROLE_RANK.get(tok.dep_, 0))))
    if form == "poss" and _own_subject(s, tok, antecedent):
        return  # "Tom hurt his ankle", not "Tom hurt Tom's ankle": the clause already says who
    text = antecedent.text
    if form in ("poss", "poss_abs"):
        text = f"{text}'" if text.endswith("s") and antecedent.kind == "plural" else f"{text}'s"
    s.repl[tok.i] = text


def _binds_own_subject(s: SentenceState, tok: Token, antecedent: Antecedent) -> bool:
    """Whether a non-reflexive object pronoun would name its own clause's subject: English says
    "himself" for that, so "Tom will never part with him" is about someone else."""
    if tok.dep_ not in OBJECT_DEPS:
        return False
    clause = clause_of(tok)
    return any(
        a.text == antecedent.text and s.sent.doc[i].dep_ in SUBJ_DEPS and clause_of(s.sent.doc[i]) == clause
        for i, a in s.candidates
    )


def _own_subject(s: SentenceState, tok: Token, antecedent: Antecedent) -> bool:
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
    return any(i in ids and a.text == antecedent.text for i, a in s.candidates)


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


def _bound_by_quantifier(s: SentenceState, tok: Token) -> bool:
    """Whether a quantifier earlier in the clause binds a singular "their": no antecedent then."""
    clause = clause_of(tok)
    return any(t.lower_ in QUANTIFIER_PRONOUNS and clause_of(t) == clause for t in s.sent if t.i < tok.i)


def _identifying_one(noun: Token) -> bool:
    """ "the one in Queen Square", "the one I told you about": "it is the one ..." picks out a
    thing already talked about, so its "it" refers (unlike "it is a long day", "it was one of those")."""
    return (
        noun.lower_ == "one"
        and any(c.dep_ == "det" and c.lower_ in ("the", "that", "this") for c in noun.children)
        and any(c.dep_ in ("prep", "relcl", "acl") for c in noun.children)
    )


def _is_expletive(tok: Token) -> bool:
    """Whether "it" is a dummy subject: resolving it would invent a referent ("it's raining")."""
    if tok.dep_ == "expl":
        return True
    if tok.dep_ not in ("nsubj", "nsubjpass"):
        return False
    head = tok.head
    if head.lemma_.lower() in WEATHER:
        return True
    kids = list(head.children)
    if any(
        (c.dep_ in ("attr", "acomp") or (c.dep_ == "npadvmod" and head.lemma_.lower() in EXPLETIVE_HEADS))
        and c.lemma_.lower() in VAGUE_NOUNS
        and not _identifying_one(c)
        for c in kids
    ):
        return True
    if head.lemma_.lower() not in EXPLETIVE_HEADS:
        # "it sucks when ...", "it helps if ...": an evaluative verb with a when/if clause
        return head.lemma_.lower() in EVALUATIVE_VERBS and any(
            c.dep_ == "advcl" and any(m.lower_ in ("when", "whenever", "if") for m in c.children)
            for c in kids
        )
    # "it's really uplifting hearing from you": the clause may hang on the adjective
    kids += [g for c in kids if c.dep_ == "acomp" for g in c.children if g.dep_ in ("xcomp", "ccomp")]
    if any(c.dep_ == "attr" and c.tag_ == "VBG" for c in kids):
        return True  # "it's really uplifting hearing from you" (gerund parsed as attribute)
    return any(_stands_for_clause(c, head, kids) for c in kids)


def _stands_for_clause(c: Token, head: Token, kids: list[Token]) -> bool:
    """Whether ``c``, after the head of a dummy-"it" verb, is the clause the "it" stands for."""
    if c.i < head.i:
        return False
    if c.dep_ in ("xcomp", "ccomp", "csubj"):
        return True  # "it's great to be back", "it seems (that) ..."
    if c.dep_ == "advcl" and any(m.lower_ in EXPLETIVE_MARKS for m in c.children if m.i < c.i):
        return True  # "it's great when you reach a goal", "it sounds like you're busy"
    # "it's been amazing witnessing us come together": the gerund is the subject
    return (
        c.dep_ == "advcl"
        and c.tag_ == "VBG"
        and not any(m.dep_ == "mark" for m in c.children)
        and any(k.dep_ == "acomp" and k.i < c.i for k in kids)
    )


def _resolve(s: SentenceState, tok: Token, kind: AntecedentKind, gender: Gender) -> Antecedent | None:
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
    for i, antecedent in reversed(s.candidates):
        if i >= tok.i or antecedent.kind != kind or (human_only and not antecedent.human):
            continue
        if kind != "person" and subject and clause_of(s.sent.doc[i]) == clause_of(tok):
            continue
        if gender is not None and antecedent.gender is not None and antecedent.gender != gender:
            continue
        if kind != "person":
            return known(antecedent)
        people.append(antecedent)
    if people:  # "Tom called Jim and he ...": two people, no way to tell: abstain
        return unambiguous(people, gender)
    return s.state.resolve(kind, gender, human_only=human_only)


# ---------------------------------------------------------------------------------- antecedents


def _a_pet(tok: Token) -> bool:
    """An animal noun that names an animal someone could call "she": it has a determiner or an
    owner ("a cat", "my dog", "Biscuit the cat") and is not the object of eating or cooking."""
    if tok.dep_ in ("dobj", "obj") and tok.head.lemma_.lower() in EATEN:
        return False
    return tok.pos_ == "PROPN" or any(c.dep_ in ("det", "poss") for c in tok.children)


def noun_candidate(s: SentenceState, tok: Token) -> None:
    """Register a noun head as an antecedent for later pronouns in this sentence and session."""
    # an untagged name counts as a possessor too: "Leo's visit ... his flight" is Leo's
    possessor = tok.dep_ == "poss" and tok.pos_ == "PROPN" and tok.ent_type_ in ("PERSON", "")
    if tok.pos_ not in ("NOUN", "PROPN") or (tok.dep_ not in ARG_DEPS and not possessor):
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
    place = tok.pos_ == "PROPN" and (lemma in PLACE_HEADS or any(c.dep_ == "nummod" for c in tok.children))
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
        of_name = _of_name(tok)
        if of_name:  # "the Cliffs of Moher", "the Bank of England": one named thing
            name, plural, is_person = f"{name} {of_name}", False, False
        if _is_participant(s, name):
            return  # the speaker and addressee are first/second person, never "he" or "it"
        named = _named_by(s, tok)
        if named is not None:  # "Her name is Mochi": Mochi *is* her, not a second candidate
            _alias(s, tok, name, named)
            return
        kind: AntecedentKind = "plural" if plural else ("person" if is_person else "thing")
        ent = normalize_name(name)
        det = next((c for c in tok.lefts if c.dep_ == "det" and c.lower_ == "the"), None)
        text = f"the {name}" if det is not None else name  # "the UK"
    else:
        kind = "plural" if plural else ("person" if is_person else "thing")
        ent = None
        text = _noun_phrase_text(s, tok, owner=_acquirer(s, tok))
    human = is_person or lemma in COLLECTIVE_NOUNS
    if not human and tok.dep_ in ("conj", "appos") and tok.pos_ != "PROPN":
        return  # members of a list ("relief, excitement and worry") are poor antecedents for "it"
    gender: Gender = "f" if role_lemma in FEMALE_NOUNS else "m" if role_lemma in MALE_NOUNS else None
    rank = ROLE_RANK.get(role.dep_, 0)
    if text:
        antecedent = Antecedent(text=text, kind=kind, entity=ent, gender=gender, human=human, rank=rank)
        s.candidates.append((tok.i, antecedent))
        if animal and kind == "thing":  # a pet is "it" and "she" alike, never a person in object slots
            s.candidates.append((tok.i, replace(antecedent, kind="person", human=False)))


def _named_by(s: SentenceState, tok: Token) -> Antecedent | None:
    """The antecedent whose name ``tok`` is, in "<her / the cat's> name is <tok>", else None."""
    head = tok.head
    if tok.dep_ != "attr" or head.lemma_.lower() != "be":
        return None
    subject = next((c for c in head.children if c.dep_ == "nsubj" and c.lemma_.lower() == "name"), None)
    owner = next((c for c in subject.children if c.dep_ == "poss"), None) if subject is not None else None
    return s.resolved.get(owner.i) if owner is not None else None


def _alias(s: SentenceState, tok: Token, name: str, named: Antecedent) -> None:
    """Register ``name`` in place of the antecedent it names: same kind, gender and humanity,
    and the named one leaves this sentence's candidates (so a "she" after it is not torn
    between two mentions of one animal)."""
    s.candidates = [(i, a) for i, a in s.candidates if a.text.lower() != named.text.lower()]
    alias = replace(named, text=name, entity=normalize_name(name), rank=ROLE_RANK.get("attr", 0))
    s.candidates.append((tok.i, alias))
    if alias.kind == "person" and not alias.human:  # a pet: "it" as well as "she"
        s.candidates.append((tok.i, replace(alias, kind="thing")))


def _of_name(tok: Token) -> str:
    """ "of Moher" when ``tok`` heads a name of the form "X of <Name>", else ""."""
    prep = next((c for c in tok.children if c.dep_ == "prep" and c.lower_ == "of"), None)
    pobj = next((c for c in prep.children if c.dep_ == "pobj"), None) if prep is not None else None
    if pobj is None or pobj.pos_ != "PROPN":
        return ""
    words = [t.text for t in pobj.lefts if t.dep_ in ("compound", "det")] + [pobj.text]
    return "of " + " ".join(words)


def _is_participant(s: SentenceState, name: str) -> bool:
    """Whether ``name`` is the speaker or the addressee, who are never "he" or "it" in their chat."""
    low = name.lower()
    names = [s.speaker.lower()] + ([s.addressee.lower()] if s.addressee else [])
    return any(n == low or n.startswith(low) or low.startswith(n) for n in names)


def _noun_phrase_text(s: SentenceState, tok: Token, owner: str | None = None) -> str:
    """The antecedent text of a common noun ("a grey cat" -> "the grey cat"); with ``owner``,
    the indefinite article gives way to the owner ("Priya's grey cat")."""
    keep = {"det", "poss", "amod", "compound", "nummod", "nmod", "case"}
    toks: list[Token] = []
    for child in tok.lefts:
        if child.dep_ in keep:
            toks.extend(child.subtree)
    toks.append(tok)
    words = render_words(s, toks, names=True)
    if owner is not None and words and words[0].lower() in ("a", "an"):
        return " ".join([person_form(owner, "poss"), *words[1:]])
    if words and words[0].lower() in ("a", "an", "some", "any", "another", "this", "that"):
        words[0] = "the"
    return " ".join(words)


def _acquirer(s: SentenceState, tok: Token) -> str | None:
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
    return s.speaker if subject is not None and subject.i in s.first else None


def update_state(s: SentenceState) -> None:
    """Hand this sentence's antecedents to the session, in order, so the next sentence can use them."""
    for _, antecedent in sorted(s.candidates, key=lambda c: c[0]):
        s.state.note(antecedent)
    s.state.advance()
