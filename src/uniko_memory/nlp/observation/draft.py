"""One parsed sentence in, its observation drafts out: the order the other modules run in.

The order matters and lives here only: the rendering map first (every later rule reads it),
then the sentence checks, then per clause head the clause, its checks, its triple and its text;
last, the sentence's antecedents go to the session state, also when nothing was said (a question
still introduces the "it" of the answer). Statements about the speaker or a third person are
stated as facts; those about the addressee or a thing are the speaker's view and are attributed
("Melanie says the lake was calm").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uniko_memory.nlp.observation.checks import (
    CONTENT_CHECKS,
    SENTENCE_CHECKS,
    TRIPLE_CHECKS,
    Reading,
    clause_refusal,
    cut_dangling_tail,
    event_status,
    first_refusal,
)
from uniko_memory.nlp.observation.clauses import build_clause, clause_heads
from uniko_memory.nlp.observation.lexicon import (
    NON_NAME_ENTS,
    PERSON_NOUNS,
    REJECT_OBJECT_PRONOUNS,
    SUBJ_DEPS,
)
from uniko_memory.nlp.observation.reference import update_state
from uniko_memory.nlp.observation.render import build_render_map
from uniko_memory.nlp.observation.state import Clause, SentenceState, reject, render
from uniko_memory.nlp.observation.triples import Triple, head_phrase, object_text, pobj, read_triple
from uniko_memory.nlp.observation.types import ObservationDraft
from uniko_memory.nlp.observation.words import lemma_of, normalize_name, snake

if TYPE_CHECKING:
    from spacy.tokens import Token

__all__ = ["sentence_drafts"]


def sentence_drafts(s: SentenceState) -> list[ObservationDraft]:
    """Render the sentence, extract its statements, and update the pronoun state."""
    build_render_map(s)
    drafts: list[ObservationDraft] = []
    refusal = first_refusal(SENTENCE_CHECKS, s, s.sent)
    if refusal is not None:
        reject(s, refusal.name, None)
    else:
        heads = clause_heads(s)
        head_ids = {t.i for t in heads}
        for head in heads:
            clause = build_clause(s, head, head_ids)
            if clause is None:
                continue
            draft = _draft(s, clause)
            if draft is not None:
                drafts.append(draft)
    update_state(s)
    return drafts


def _draft(s: SentenceState, clause: Clause) -> ObservationDraft | None:
    """The clause's statement, or None when a check refuses it (the refusal is recorded)."""
    if clause.presented is not None:
        return _presentation(s, clause, clause.presented)
    refusal = clause_refusal(s, clause)
    if refusal is not None:
        reject(s, refusal.name, clause)
        return None
    triple = read_triple(s, clause)
    triple_refusal = first_refusal(TRIPLE_CHECKS, s, Reading(clause, triple))
    if triple_refusal is not None:
        reject(s, triple_refusal.name, clause)
        return None
    content = cut_dangling_tail(s.filler.strip(render(s, clause.tokens)))
    content_refusal = first_refusal(CONTENT_CHECKS, s, content)
    if content_refusal is not None:
        reject(s, content_refusal.name, clause)
        return None
    return _statement(s, clause, triple, content)


def _statement(s: SentenceState, clause: Clause, triple: Triple, content: str) -> ObservationDraft | None:
    """The draft of a clause every check let through: subject, predicate and object as stated,
    the content attributed to the speaker unless it is about a person."""
    ids = {t.i for t in clause.tokens}
    predicate, obj, complete = triple
    if not complete and event_status(s, clause, ids) == "off":
        predicate = snake([predicate, "off"])  # "the trip is off": be_off, a cancellation
    subject = render(s, clause.subject) if clause.subject else s.speaker
    obj_text = object_text(s, obj, ids) if obj is not None else None
    if clause.elided:
        content = " ".join(w for w in (s.speaker, clause.elided_aux, content) if w)
    if clause.existential:
        existential = _existential(s, clause, ids)
        if existential is None:
            return None
        subject, predicate, obj_text = existential
    elif clause.expletive:
        extra = next((c for c in clause.head.children if c.dep_ in ("xcomp", "ccomp", "csubj")), None)
        subject = render(s, list(extra.subtree)) if extra is not None else "it"
    about = _about_person(s, clause)
    if not about:  # an opinion or report about something else: attribute it
        content = f"{s.speaker} says {content}"
    content = content[:1].upper() + content[1:]
    temporal = [m for toks, m in s.temporal if toks[0] in ids]
    return ObservationDraft(
        content=content,
        subject=subject.strip(),
        predicate=predicate or lemma_of(clause.head),
        object=obj_text or None,
        temporal_phrase=temporal[0].phrase if temporal else None,
        anchor=temporal[0].window if temporal else None,
        entities=_entities(s, clause, obj),
        sentence=s.sent.text.strip(),
        confidence=_confidence(s, clause, obj_text, about),
    )


def _existential(s: SentenceState, clause: Clause, ids: set[int]) -> tuple[str, str, str | None] | None:
    """ "There is a park near my flat": the thing that exists is the subject (exist_near / flat),
    not "there"; None when the parse has no such thing."""
    attr = next((c for c in clause.head.children if c.dep_ in ("attr", "nsubj")), None)
    if attr is None:
        return None
    preps = [c for c in attr.children if c.dep_ == "prep" and pobj(c) is not None]
    predicate = snake(["exist", preps[0].lower_ if preps else ""])
    obj = pobj(preps[0]) if preps else None
    return head_phrase(s, attr), predicate, object_text(s, obj, ids) if obj is not None else None


def _presentation(s: SentenceState, clause: Clause, shown: Token) -> ObservationDraft | None:
    """ "Here's a photo of my kids at the beach" -> "Melanie shares a photo of Melanie's kids at
    the beach": showing something is the speaker's act, rendered as such."""
    ids = {t.i for t in clause.tokens}
    toks = [t for t in shown.subtree if t.i in ids]
    if toks and (toks[0].i in s.unresolved or any(t.i in s.unresolved for t in toks)):
        return None
    obj = object_text(s, shown, ids)
    if not obj or shown.lower_ in REJECT_OBJECT_PRONOUNS:
        return None
    temporal = [m for t, m in s.temporal if t[0] in ids]
    return ObservationDraft(
        content=f"{s.speaker} shares {render(s, toks)}",
        subject=s.speaker,
        predicate="share",
        object=obj,
        temporal_phrase=temporal[0].phrase if temporal else None,
        anchor=temporal[0].window if temporal else None,
        entities=list(dict.fromkeys([normalize_name(s.speaker), *_entities(s, clause, shown)])),
        sentence=s.sent.text.strip(),
        confidence=0.6,
    )


def _about_person(s: SentenceState, clause: Clause) -> bool:
    """Whether the statement reports on the speaker or a third person (or what they own); a
    statement about the addressee ("you're so brave") or about a thing is the speaker's view
    and gets attributed ("Melanie says Caroline is so brave")."""
    if clause.elided:
        return True
    if clause.existential or clause.expletive:
        return False
    subject_ids = {t.i for t in clause.subject}
    if subject_ids & s.first:
        return True
    if subject_ids & s.second:
        return False
    for tok in clause.subject:
        ref = s.resolved.get(tok.i)
        if ref is not None and ref.kind == "person":
            return True
        if tok.dep_ in SUBJ_DEPS and (tok.ent_type_ == "PERSON" or tok.lemma_.lower() in PERSON_NOUNS):
            return True
    return False


def _confidence(s: SentenceState, clause: Clause, obj: str | None, about_person: bool) -> float:
    """0.8 for subject + verb + object, 0.6 without an object; minus 0.1 each for a subject
    taken from pronoun resolution, "we" read as the speaker, an elided or expletive subject,
    or a statement wrapped as reported speech (each a way the statement may be off); clamped
    to [0.3, 0.9]."""
    score = 0.8 if obj else 0.6
    ids = {t.i for t in clause.subject}
    if ids & set(s.resolved):
        score -= 0.1
    if ids & s.plural_first:
        score -= 0.1
    if clause.elided or clause.expletive or clause.existential:
        score -= 0.1
    if not about_person:
        score -= 0.1
    return round(min(0.9, max(0.3, score)), 2)


def _entities(s: SentenceState, clause: Clause, obj: Token | None) -> list[str]:
    """The names the statement is about, so recall can find it by any of them: the speaker or
    addressee it names, a resolved pronoun's owner ("he" = "Caroline's brother" is about
    Caroline too), and the named entities in its subject and object."""
    ids = {t.i for t in clause.tokens}
    out: list[str] = []
    if clause.elided or ids & s.first or not _about_person(s, clause):
        out.append(normalize_name(s.speaker))
    if s.addressee and ids & s.second:
        out.append(normalize_name(s.addressee))
    for i in sorted(ids & set(s.resolved)):
        text = s.resolved[i].text
        out.extend(normalize_name(p) for p in (s.speaker, s.addressee) if p and f"{p}'" in text)
        entity = s.resolved[i].entity
        if entity:
            out.append(entity)
    scope = {t.i for t in clause.subject}
    if obj is not None:
        scope |= {t.i for t in obj.subtree}
    scope &= ids
    for ent in s.sent.ents:
        if ent.label_ not in NON_NAME_ENTS and any(t.i in scope for t in ent):
            out.append(normalize_name(ent.text))
    run: list[str] = []
    for tok in [*sorted(s.sent, key=lambda t: t.i), None]:
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
