"""The subject / predicate / object triple of a clause, read from the head's dependency frame.

Consolidation votes observations into Facts by their triple, so the same fact said two ways must
give the same key: the predicate is built from lemmas, not from the words as said. Normalisation:
``[modal_][not_]lemma[_particle]`` followed, along an xcomp chain, by ``_to_lemma``
("plan_to_open"), then ``_prep`` when the object is a prepositional object ("go_to"); copular
adjectives with a preposition give ``be_<adj>_<prep>`` ("be_excited_about"); "be going to V"
gives ``will_V``. Objects lose leading articles and are cut to their head phrase when longer
than 20 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from uniko_memory.nlp.observation.clauses import have_noun_root
from uniko_memory.nlp.observation.lexicon import (
    ARTICLES,
    DEGREE_NOUNS,
    LIGHT_VERBS,
    LOCATIVE_ADVERBS,
    MANNER_ADVERBS,
    MODALS,
)
from uniko_memory.nlp.observation.state import Clause, SentenceState, render_words
from uniko_memory.nlp.observation.words import lemma_of, snake

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = ["Triple", "head_phrase", "object_text", "pobj", "read_triple"]

#: Objects longer than this are cut to their head phrase: a triple's object is a key, not a story.
_MAX_OBJECT_TOKENS = 20


class Triple(NamedTuple):
    """A clause's predicate key, its object head, and whether the verb has a complement at all
    (a light verb without one says nothing)."""

    predicate: str
    obj: Token | None
    complete: bool


def read_triple(s: SentenceState, clause: Clause) -> Triple:
    """The clause's triple, following an xcomp chain ("plan to open") at most four verbs deep."""
    verb = clause.head
    parts = _modality(clause)
    if have_noun_root(verb):  # "I have type 2 diabetes" parsed with "type" as the root
        return Triple(snake([*parts, "have"]), verb, True)
    temporal_ids = {i for toks, _ in s.temporal for i in toks}
    allowed = {t.i for t in clause.tokens}
    chained = False
    for _ in range(4):
        kids = [c for c in verb.children if c.i in allowed and c.i not in temporal_ids]
        xcomp = next((c for c in kids if c.dep_ == "xcomp" and c.pos_ in ("VERB", "AUX")), None)
        dobj = next((c for c in kids if c.dep_ == "dobj" and c.i not in s.expletive), None)
        if xcomp is not None and dobj is None and _going_to(verb, xcomp):
            parts.append("will")
            verb = xcomp
            continue
        parts.append(lemma_of(verb))
        parts.extend(c.lower_ for c in kids if c.dep_ == "prt")
        if any(c.dep_ == "neg" for c in verb.children) and "not" not in parts:
            parts.insert(0, "not")
        found = _complement(parts, kids, dobj, allowed)
        if found is not None:
            return found
        if xcomp is not None:
            if _has_to(xcomp):
                parts.append("to")
            verb = xcomp
            chained = True
            continue
        found = _prepositional_or_clausal(s, parts, kids)
        if found is not None:
            return found
        purpose = next((c for c in kids if c.dep_ == "advcl" and c.pos_ == "VERB" and _has_to(c)), None)
        if purpose is not None and lemma_of(verb) in LIGHT_VERBS:  # "went there to relax"
            parts.append("to")
            verb = purpose
            chained = True
            continue
        return _without_object(parts, verb, kids, chained)
    return Triple(snake(parts), None, False)


def _modality(clause: Clause) -> list[str]:
    """The predicate's leading parts: a modal ("will_") and a negation ("not_") in the head's frame
    (or, for a coordinated verb, the frame it shares: "I won't go or call")."""
    verb = clause.head
    parts: list[str] = []
    governors = (verb, verb.head) if clause.inherited else (verb,)
    frame = [t for t in clause.tokens if t.head in governors and t.i != verb.i]
    modal = next((c for c in frame if c.dep_ == "aux" and c.tag_ == "MD"), None)
    if modal is not None and modal.lower_ in MODALS:
        parts.append(MODALS[modal.lower_])
    if any(c.dep_ == "neg" for c in frame):
        parts.append("not")
    return parts


def _has_to(verb: Token) -> bool:
    return any(c.dep_ == "aux" and c.tag_ == "TO" for c in verb.children)


def _going_to(verb: Token, xcomp: Token) -> bool:
    """ "is going to move": the future, keyed as "will_move" like "will move"."""
    return lemma_of(verb) == "go" and verb.tag_ == "VBG" and _has_to(xcomp)


def _complement(parts: list[str], kids: list[Token], dobj: Token | None, allowed: set[int]) -> Triple | None:
    """A direct object, an attribute, or an adjective (with its prepositional object when it has
    one: "excited about the trip" -> be_excited_about / trip)."""
    if dobj is not None:
        return Triple(snake(parts), dobj, True)
    attr = next((c for c in kids if c.dep_ in ("attr", "oprd")), None)
    if attr is not None:
        return Triple(snake(parts), attr, True)
    acomp = next((c for c in kids if c.dep_ == "acomp"), None)
    if acomp is None:
        return None
    prep = next(
        (c for c in acomp.children if c.dep_ == "prep" and c.i in allowed and pobj(c) is not None), None
    )
    if prep is not None:
        parts += [acomp.lemma_.lower(), prep.lower_]
        return Triple(snake(parts), pobj(prep), True)
    return Triple(snake(parts), acomp, True)


def _prepositional_or_clausal(s: SentenceState, parts: list[str], kids: list[Token]) -> Triple | None:
    """A prepositional object that is not a date ("went to Rome" -> go_to / Rome), else a
    clausal complement ("said she was moving")."""
    prep = next((c for c in kids if c.dep_ in ("prep", "agent", "dative") and _timeless_pobj(s, c)), None)
    if prep is not None:
        parts.append(prep.lower_)
        return Triple(snake(parts), pobj(prep), True)
    ccomp = next((c for c in kids if c.dep_ == "ccomp"), None)
    if ccomp is not None:
        return Triple(snake(parts), ccomp, True)
    return None


def _without_object(parts: list[str], verb: Token, kids: list[Token], chained: bool) -> Triple:
    """A verb with no object: complete when a place adverb, a particle, a manner adverb or a
    content verb down the chain says what happened ("went home", "gave up", "went well",
    "keep pushing"); a bare light verb is not."""
    loc = next((c for c in kids if c.dep_ in ("advmod", "npadvmod") and c.lower_ in LOCATIVE_ADVERBS), None)
    has_particle = any(c.dep_ == "prt" for c in kids)  # "come over", "give up"
    phrasal = next(
        (c for c in kids if c.dep_ == "advmod" and any(g.dep_ in ("xcomp", "prep") for g in c.children)),
        None,
    )
    if phrasal is not None:  # "I'm down to join", "I'm up for a challenge"
        return Triple(snake([*parts, phrasal.lower_]), phrasal, True)
    manner = any(c.dep_ == "advmod" and c.lower_ in MANNER_ADVERBS for c in kids)  # "went well"
    # a verb complement carries the content of a light verb ("keep pushing", "went hiking")
    content_verb = chained and lemma_of(verb) not in LIGHT_VERBS
    return Triple(snake(parts), loc, loc is not None or has_particle or manner or content_verb)


def _timeless_pobj(s: SentenceState, prep: Token) -> bool:
    """Whether ``prep`` has an object that is not a date ("on Friday" is not an object)."""
    obj = pobj(prep)
    temporal_ids = {i for toks, _ in s.temporal for i in toks}
    return obj is not None and obj.i not in temporal_ids and obj.ent_type_ not in ("DATE", "TIME")


def pobj(prep: Token) -> Token | None:
    """The object of a preposition (a noun or a clause)."""
    return next((c for c in prep.children if c.dep_ in ("pobj", "pcomp")), None)


def head_phrase(s: SentenceState, head: Token) -> str:
    """The head word with its left modifiers, articles stripped ("a big park near X" -> "big park")."""
    return _words_text(s, [t for c in head.lefts if c.dep_ != "punct" for t in c.subtree] + [head])


def _words_text(s: SentenceState, toks: Sequence[Token]) -> str:
    """A triple part: names, never "their" (it is read without its sentence)."""
    words = render_words(s, toks, names=True)
    while words and words[0].lower() in ARTICLES:
        words = words[1:]
    while words and words[-1].lower().strip(",;:-") in ("and", "but", "or", "so", ""):
        words = words[:-1]
    return " ".join(words).strip(" ,;:.!-")


def object_text(s: SentenceState, obj: Token, allowed: set[int]) -> str | None:
    """The object's words within the clause, or None when it is only a degree ("a lot")."""
    toks = [t for t in obj.subtree if t.i in allowed]
    if have_noun_root(obj):  # the object starts after "have": "type 2 diabetes"
        have = max(c.i for c in obj.children if c.dep_ == "aux" and c.lemma_.lower() == "have")
        toks = [t for t in toks if t.i > have]
    if len(toks) <= 2 and obj.lemma_.lower() in DEGREE_NOUNS:  # "a lot", "a bit": adverbial
        return None
    if len(toks) > _MAX_OBJECT_TOKENS:
        toks = [t for c in obj.lefts if c.dep_ != "punct" for t in c.subtree if t.i in allowed] + [obj]
    return _words_text(s, toks) or None
