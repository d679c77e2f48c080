"""Edits: words cut off a built clause between two checks, because a statement that kept them
would say something else or nothing.

Cuts only: content is dropped, never guessed or rewritten. :data:`.checks.CLAUSE_STEPS` says
where each runs; the checks after an edit read the shorter clause.
"""

from __future__ import annotations

from uniko_memory.nlp.observation.clauses import lead, strip_edges
from uniko_memory.nlp.observation.lexicon import NON_NAME_ENTS, SUBJ_DEPS, TRIMMABLE
from uniko_memory.nlp.observation.state import Clause, SentenceState

__all__ = ["cut_loose_lead", "cut_request_tail", "trim_unresolved"]


def cut_request_tail(s: SentenceState, clause: Clause) -> None:
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


def cut_loose_lead(s: SentenceState, clause: Clause) -> None:
    """Words before the subject that are not the clause's own adverbial go: a request ("Please
    send me her number, my office needs a caterer"), a vocative ("Guðrún, small correction:
    ..."), or a reply that opens on an auxiliary with no subject ("Can't, sorry, I'm at a
    wedding", "Been busy lately, I ..."). A time or place phrase ("Last week, I moved") or a
    subordinate one ("Since moving to Lyon, I ...") is the clause's own and stays."""
    before = lead(clause)
    opens_on_verb = bool(before) and (
        # an auxiliary: "Lost my job, so I ..." opens on a main verb and says what the speaker
        # did: it stays
        before[0].pos_ == "AUX" and not any(c.dep_ in SUBJ_DEPS for c in before[0].children)
    )
    if opens_on_verb or (
        any(
            (t.tag_ == "VB" and not any(c.dep_ in SUBJ_DEPS for c in t.children))
            or (t.dep_ in ("dep", "npadvmod", "appos", "intj") and t.pos_ in ("PROPN", "NOUN", "PRON"))
            for t in before
        )
        and not any(t.ent_type_ in NON_NAME_ENTS for t in before)
    ):
        cut = max(t.i for t in before)
        clause.tokens = [t for t in clause.tokens if t.i > cut]


def trim_unresolved(s: SentenceState, clause: Clause) -> None:
    """Cut a modifier clause or phrase that holds an unresolvable pronoun ("I submitted my
    screenplay just to see how others might like it" -> "... submitted Caroline's screenplay"),
    so long as it is neither the subject nor the head's own argument. Content is only dropped,
    never guessed."""
    subject = {t.i for t in clause.subject}
    for _ in range(3):
        ids = {t.i for t in clause.tokens}
        bad = sorted((ids & s.unresolved) - subject)
        if not bad:
            return
        # go up to a *modifier* (a complement cannot go alone: "it'd be great to share it")
        cur = s.sent.doc[bad[0]]
        while cur.i != clause.head.i and cur.dep_ not in TRIMMABLE:
            cur = cur.head
        if cur.i == clause.head.i or cur.head.i == cur.i:
            return
        if cur.dep_ in ("relcl", "acl") and cur.head.pos_ in ("PRON", "DET"):
            return  # cutting "who ..." from "those who ..." would leave "those" dangling
        cut = {t.i for t in cur.subtree}
        kept = [t for t in clause.tokens if t.i not in cut]
        if len(kept) < 3:
            return
        clause.tokens = strip_edges(s, kept)
