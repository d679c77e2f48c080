"""The rendering map: one parsed sentence rewritten in the third person, token by token.

A statement must read true without the chat around it, so the map replaces, for each token:

* first person -> the speaker, second person -> the addressee (unresolved when there is none),
  third person -> its antecedent (:mod:`.reference`);
* contractions spelled out ("'m" -> "am", "n't" -> "not", "gonna" -> "going to");
* third-person singular agreement where the subject became a name ("I love" -> "loves",
  "I've" -> "has", "we were" -> "was");
* relative time phrases replaced by absolute dates ("yesterday" -> "on 7 May 2023");
* vocatives (the addressee's name used to call them) dropped.

The steps run in a fixed order, each reading what the earlier ones wrote (agreement reads the
persons; the vocative pass reads the names). The text read-out is :func:`.state.render`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uniko_memory.nlp.observation.lexicon import (
    ABSOLUTE_POSSESSIVES,
    BARE_PREPS,
    CAUSATIVE_VERBS,
    COPULA_FOLLOWERS,
    FIRST_PERSON,
    IRREGULAR_PAST,
    NAME_ENTS,
    NOMINATIVE,
    PLURAL_FIRST,
    SAME_FORM_PAST,
    SECOND_PERSON,
    SUBJ_DEPS,
    THIRD_PERSON,
    VOCATIVE_CUES,
)
from uniko_memory.nlp.observation.reference import noun_candidate, third_person
from uniko_memory.nlp.observation.state import SentenceState
from uniko_memory.nlp.observation.words import expand_contraction, person_form, third_singular
from uniko_memory.nlp.temporal import absolute_phrase, find_temporal_phrases, format_window

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = ["build_render_map"]


def build_render_map(s: SentenceState) -> None:
    """Fill ``s``'s rendering map and references; every later rule only reads them."""
    start = s.sent[0]
    if not (
        start.pos_ == "PROPN"
        or start.text == "I"
        or (start.text.isupper() and len(start.text) > 1)
        or _named_subject(start)
    ):
        s.repl[start.i] = start.text.lower()
    for tok in s.sent:
        low = tok.lower_
        # "a buddy of mine": the tagger reads "mine" as a noun (a coal mine) after "of"
        pronoun = tok.tag_ in ("PRP", "PRP$") or (
            low in ABSOLUTE_POSSESSIVES and tok.head.lower_ == "of" and tok.dep_ == "pobj"
        )
        if pronoun and low in FIRST_PERSON:
            _first_person(s, tok)
        elif pronoun and low in SECOND_PERSON:
            s.second.add(tok.i)
            if s.addressee is None:
                s.unresolved.add(tok.i)
            else:
                s.repl[tok.i] = person_form(s.addressee, SECOND_PERSON[low])
        elif tok.tag_ in ("PRP", "PRP$") and low in THIRD_PERSON:
            third_person(s, tok)
        else:
            noun_candidate(s, tok)
            _spell_out(s, tok)
    _agreement(s)
    _complement_that(s)
    _temporal(s)
    _vocatives(s)


def _named_subject(tok: Token) -> bool:
    """A capitalised sentence-initial subject that the recogniser reads as a name although the
    tagger called it a common noun ("Salt has a bald patch", Salt being a guinea pig): lower-casing
    it would turn a name into a thing, capitalising a common noun only costs style."""
    return (
        tok.text[:1].isupper()
        and tok.ent_type_ in NAME_ENTS
        and tok.ent_iob_ == "B"
        and tok.dep_ in ("nsubj", "nsubjpass")
        and not any(c.dep_ in ("det", "poss") for c in tok.children)
    )


def _first_person(s: SentenceState, tok: Token) -> None:
    """I/me/my/we ... -> the speaker's name (or "their" where the name was just said)."""
    low = tok.lower_
    s.first.add(tok.i)
    if low in PLURAL_FIRST:
        s.plural_first.add(tok.i)
    s.repl[tok.i] = person_form(s.speaker, FIRST_PERSON[low])
    if FIRST_PERSON[low] == "poss" and _first_person_subject(tok):
        s.own_possessive.add(tok.i)  # "I hurt my ankle": "Tomas hurt their ankle"


def _first_person_subject(tok: Token) -> bool:
    """Whether "my"/"our" sits after the verb of a clause whose own subject is the speaker
    ("I hurt my ankle yesterday, so I am resting"): the name once is enough."""
    head = tok.head
    while head.pos_ not in ("VERB", "AUX") and head.head.i != head.i:
        head = head.head
    subject = next((c for c in head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
    return subject is not None and subject.i < tok.i and subject.lower_ in ("i", "we")


def _spell_out(s: SentenceState, tok: Token) -> None:
    """A contracted or reduced word in full, read from what follows it where the tag is unsure."""
    low = tok.lower_
    expanded = expand_contraction(tok.text, tok.tag_, tok.lemma_)
    nxt = tok.nbor(1).lower_ if tok.i + 1 < s.sent.end else ""
    if low in ("'s", "’s") and _perfect_s(tok, nxt):
        expanded = "has"  # "it's been" = it has been, "art's allowed me" = art has allowed me
    if low in ("'s", "’s") and (nxt in ("gon", "gonna", "going") or _copula_s(tok, nxt)):
        expanded = "is"  # "tomorrow's gonna be", "pottery's a great way" (tagged a possessive)
    if low == "gon" and nxt in ("na", "to"):
        expanded = "going"  # "gonna" the tagger read as a noun
    if low == "ai" and nxt in ("n't", "n’t"):  # "ain't"
        after = tok.nbor(2).lower_ if tok.i + 2 < s.sent.end else ""
        expanded = "has" if after == "been" or tok.head.tag_ == "VBN" else "is"
    if expanded is not None:
        s.repl[tok.i] = expanded
    elif low == "got" and tok.i + 1 < s.sent.end and tok.nbor(1).lower_ == "ta":
        has_aux = any(c.dep_ == "aux" for c in tok.children) or (tok.i > 0 and tok.nbor(-1).lemma_ == "have")
        s.repl[tok.i] = "got" if has_aux else "has got"


def _copula_s(tok: Token, nxt: str) -> bool:
    """A "'s" tagged as a possessive that is "is": no noun follows it but an article or a
    degree word does ("Pottery's a great way to relax", "Lily's so happy")."""
    return tok.tag_ == "POS" and nxt in COPULA_FOLLOWERS


def _perfect_s(tok: Token, nxt: str) -> bool:
    """Whether "'s" is "has" ("it's been", "art's allowed me"), not "is"."""
    if nxt == "been":
        return True
    head = tok.head
    if head.tag_ != "VBN" or tok.dep_ not in ("aux", "auxpass"):
        return False
    # a passive takes no direct object: "'s" + participle + object is a perfect
    return tok.dep_ == "aux" or any(c.dep_ in ("dobj", "dative", "ccomp") for c in head.children)


def _agreement(s: SentenceState) -> None:
    """Third-person singular agreement for verbs whose subject became a name."""
    for subj in s.sent:
        if subj.dep_ not in ("nsubj", "nsubjpass") or not (subj.i in s.first or subj.i in s.second):
            continue
        if subj.lower_ not in NOMINATIVE:
            continue  # "let me express", "made you feel": a bare infinitive, not a finite verb
        governor = subj.head.head
        if (
            subj.head.tag_ == "VB"
            and governor.i != subj.head.i
            and governor.lemma_.lower() in CAUSATIVE_VERBS
        ):
            continue  # "hear you play", "let you know" (not a root "see": "I don't see why")
        _agree(s, subj.head, subj.i)
        shared_aux = any(c.dep_ in ("aux", "auxpass") for c in subj.head.children)
        for conj in subj.head.conjuncts:
            if conj.i < subj.head.i or any(c.dep_ in SUBJ_DEPS for c in conj.children):
                continue
            # "I will start and create": the shared auxiliary carries agreement; "I don't smoke
            # and don't drink": the second verb's own auxiliary agrees too
            if not shared_aux or any(c.dep_ in ("aux", "auxpass") for c in conj.children):
                _agree(s, conj, subj.i)


def _agree(s: SentenceState, verb: Token, after: int) -> None:
    """Make the finite word of ``verb`` (its first auxiliary, or itself) third-person singular."""
    auxes = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i > after and c.tag_ != "TO"]
    finite = auxes[0] if auxes else verb
    if auxes and finite.i > verb.i:
        return
    low = finite.lower_
    if low in ("am", "'m", "’m", "are", "'re", "’re"):
        s.repl[finite.i] = "is"
    elif low == "were":
        s.repl[finite.i] = "was"
    elif low in ("'ve", "’ve", "have") and finite.tag_ == "VBP":
        s.repl[finite.i] = "has"
    elif low in ("wanna", "gotta") and finite.tag_ == "VBP":
        s.repl[finite.i] = "wants to" if low == "wanna" else "has got to"
    elif (finite.tag_ == "VBP" or (finite.tag_ == "VB" and not auxes)) and low.isalpha():
        if low in IRREGULAR_PAST:
            return  # a past form the tagger read as a present ("Sofia, I forgot to call")
        if low in SAME_FORM_PAST and _dated_in_the_past(s):
            return  # "I hurt my ankle last week": the past, spelled as the base form
        s.repl[finite.i] = third_singular(s.repl.get(finite.i, finite.text))


def _dated_in_the_past(s: SentenceState) -> bool:
    """Whether the sentence names a time wholly before it was said ("last week", "in May")."""
    ts = s.timestamp
    if ts is None:
        return False
    return any(m.window.hi <= ts for m in find_temporal_phrases(s.sent.text, ts))


def _complement_that(s: SentenceState) -> None:
    """ "reminds me I need" -> "reminds John that John needs", not "reminds John John needs":
    an object and the subject of the clause right after it that became the same name."""
    for tok in s.sent:
        if tok.dep_ not in ("nsubj", "nsubjpass") or tok.i <= s.sent.start:
            continue
        prev = s.sent.doc[tok.i - 1]
        if prev.dep_ not in ("dobj", "dative") or prev.head.i != tok.head.head.i:
            continue
        word = s.repl.get(tok.i, tok.text)
        if word and word == s.repl.get(prev.i, prev.text):
            s.repl[tok.i] = f"that {word}"


def _temporal(s: SentenceState) -> None:
    """Relative dates -> absolute ones: a statement is read long after "yesterday" has moved on."""
    text = s.sent.text
    offset = s.sent.start_char
    for match in find_temporal_phrases(text, s.timestamp, strict=True):
        toks = [
            t.i for t in s.sent if t.idx - offset < match.end and t.idx - offset + len(t.text) > match.start
        ]
        if not toks:
            continue
        first = toks[0]
        dets: list[int] = []
        while first - len(dets) - 1 >= s.sent.start and s.sent.doc[first - len(dets) - 1].lower_ in (
            "the",
            "this",
            "that",
        ):
            dets.append(first - len(dets) - 1)
        before = first - len(dets) - 1
        prev = s.sent.doc[before] if before >= s.sent.start else None
        bare = prev is not None and prev.lower_ in BARE_PREPS
        top = [s.sent.doc[i] for i in toks if s.sent.doc[i].head.i not in toks]
        if top and top[0].dep_ in ("nsubj", "nsubjpass", "dobj", "attr", "appos"):
            bare = True  # "Yesterday was crazy" -> "7 May 2023 was crazy"
        if top and top[0].dep_ == "poss":
            bare = True  # "Tomorrow's party" -> "8 May 2023's party", "Tomorrow's gonna be" -> "... is going"
        if bare:  # "in the last month" -> "in June 2023"
            for i in dets:
                s.repl[i] = ""
        s.repl[toks[0]] = format_window(match.window) if bare else absolute_phrase(match.window)
        for i in toks[1:]:
            s.repl[i] = ""
        s.temporal.append((toks, match))


def _vocatives(s: SentenceState) -> None:
    """Drop the addressee's name used as a vocative ("Thanks for asking, Jon!"): a statement
    about the speaker does not call anyone."""
    if not s.addressee:
        return
    target = s.addressee.lower()
    for tok in s.sent:
        if tok.pos_ != "PROPN":
            continue
        before = tok.nbor(-1).text if tok.i > s.sent.start else ""
        after = tok.nbor(1).text if tok.i + 1 < s.sent.end else ""
        greeted = before.lower() in VOCATIVE_CUES
        set_off = (before in ("", ",") or greeted) and after in (",", "!", ".", "", "?")
        if tok.dep_ not in ("npadvmod", "intj", "appos", "dep", "vocative", "ROOT") and not set_off:
            continue
        low = tok.lower_
        if len(low) >= 3 and (target == low or target.startswith(low)):
            s.repl[tok.i] = ""
            if tok.i > s.sent.start and tok.nbor(-1).text == ",":
                s.repl[tok.i - 1] = ""
