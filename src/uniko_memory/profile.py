"""A current-state view of one participant or entity: what is true *now* about them.

``await build_profile(kb, agent=..., name="Maya", max_tokens=400)`` returns a ``ContextBundle``
(``render()`` within ``max_tokens`` of the caller's token counter, like recall) whose lines are the
open Facts about the name, as of ``reference_ts`` (default now), grouped by attribute: the slot
values first (``consolidation.slots``: residence, employer, job, partner, diet, event dates ...,
labelled ``residence: ...``), then its compiled lists (``consolidation.lists``: "Maya's
activities: ..."), then the other statements, best supported and newest first. A value a
newer one replaced is left out (its Fact is closed); each line is dated ("as of 10 June 2024") and
cites its turns (``RecallItem.sources``).

A Fact is about the name when its subject is the name ("Maya ..."), the name's possession ("Maya's
cat ..."), its slot's subject, or it is ABOUT the name's participant or entity node. Admission is
recall's: the scope's viewer and sessions, every line's evidence re-checked in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from .consolidation.plan import subject_key
from .errors import ValidationError
from .model import Direction, EdgeType, Entity, Fact, Participant, Tier, Viewer
from .model.nodes import LIST_SOURCE_RULE
from .model.time import utcnow
from .providers.token_counter import TokenCounter, as_token_counter
from .recall.assemble import fact_validity, node_to_item
from .recall.bundle import check_sources, fact_sources
from .recall.config import RecallConfig
from .recall.items import ContextBundle, RecallItem, render_text
from .recall.scope import OutOfScope, Scope
from .store.filters import Eq, In, Range

#: Facts read per name at most (the best are kept).
POOL = 2_000
#: The order attributes are listed in (others follow, alphabetically).
ATTRIBUTE_ORDER = ("residence", "employer", "job", "partner", "diet", "drink")


def name_keys(name: str) -> list[str]:
    """The subject keys a name goes by: "Maya Lopez" is "maya lopez" and "maya"."""
    key = subject_key(name)
    words = key.split()
    return [key, words[0]] if len(words) > 1 else [key]


def _about(fact: Fact, keys: Sequence[str]) -> bool:
    """Whether the statement is about the name itself (not something the name said about another
    subject: "Maya says the flat is lovely" is about the flat)."""
    subj = fact.subject_key or subject_key(fact.subject)
    slot_subject = fact.slot.split("/", 1)[1] if fact.slot and "/" in fact.slot else ""
    owner = (fact.slot_event or "").split("|", 1)[0]
    return any(subj == k or subj.startswith(k + "'s ") or k in (slot_subject, owner) for k in keys)


def _attribute(fact: Fact) -> str:
    return fact.slot.split("/", 1)[0] if fact.slot and "/" in fact.slot else ""


def _order(fact: Fact) -> tuple[int, str, int, float]:
    """Slot values first, then compiled lists (one line holds what a dozen statements say), then
    the other statements."""
    attr = _attribute(fact)
    rank = ATTRIBUTE_ORDER.index(attr) if attr in ATTRIBUTE_ORDER else len(ATTRIBUTE_ORDER)
    group = 0 if attr else 1 if fact.source_rule == LIST_SOURCE_RULE else 2
    return (group, f"{rank:02d}{attr}", -fact.observation_count, -fact.valid_from.timestamp())


async def _nodes_named(store: Any, agent: str, keys: Sequence[str]) -> list[str]:
    """The participant and entity nodes whose name is one of ``keys``."""
    ids: list[str] = []
    for tier in (Tier.PARTICIPANT, Tier.ENTITY):
        for node in await store.find(agent, tier, limit=100_000):
            if (
                isinstance(node, (Participant, Entity))
                and not node.redacted
                and subject_key(node.name) in keys
            ):
                ids.append(node.id)
    return ids


async def build_profile(
    kb: Any,
    *,
    agent: str,
    name: str,
    max_tokens: int = 400,
    viewer: Viewer | None = None,
    reference_ts: datetime | None = None,
    token_counter: TokenCounter | None = None,
) -> ContextBundle:
    """The current-state profile of ``name`` in ``agent``'s memory (see the module docstring)."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("profile() needs the name of a participant or entity")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValidationError("max_tokens must be a positive integer")
    counter = as_token_counter(token_counter if token_counter is not None else kb.token_counter)
    store = kb.store
    keys = name_keys(name)
    ref = reference_ts or utcnow()
    slack = timedelta(seconds=kb.config.recall.breadth.fact_validity_slack_secs)
    valid = Range("valid_from", lt=ref + slack) & (Eq("valid_to", None) | Range("valid_to", gt=ref))
    scope = Scope(agent, RecallConfig(viewer=viewer))
    flt = scope.combine(Tier.FACT, valid)
    if flt is None or isinstance(flt, OutOfScope):
        return ContextBundle(items=[], total_tokens=0, token_budget=max_tokens, token_counter=counter.name)
    found: dict[str, Fact] = {}
    for f in await store.find(agent, Tier.FACT, flt & In("subject_key", tuple(keys)), limit=POOL):
        if isinstance(f, Fact):
            found[f.id] = f
    about = await store.neighbors(
        agent, await _nodes_named(store, agent, keys), [EdgeType.ABOUT], Direction.IN
    )
    linked = [e.src for e in about if e.src.startswith("fct_") and e.src not in found]
    for f in (await store.get_many(agent, linked)).values():
        live = isinstance(f, Fact) and not f.redacted and (f.valid_to is None or f.valid_to > ref)
        if live and isinstance(f, Fact) and f.valid_from < ref + slack and _about(f, keys):
            found[f.id] = f
    if len(found) < POOL:  # possessions ("maya's cat") and slots whose subject key is the name
        for f in await store.find(agent, Tier.FACT, flt, limit=POOL, order_by="time", descending=True):
            if isinstance(f, Fact) and f.id not in found and _about(f, keys):
                found[f.id] = f
    facts = sorted((f for f in found.values() if not f.redacted), key=_order)
    items: list[RecallItem] = []
    for f in facts:
        item = node_to_item(f, float(f.confidence), ["profile"], as_of=ref)
        if item is None:
            continue
        attr = _attribute(f)
        if attr == "date" and f.slot:
            attr = f"{f.slot.split('/', 1)[1]} date"  # "visit date: ..."
        # A profile is ordered by attribute, not by date: each line carries its own validity.
        item.rendered = (f"{attr}: " if attr else "") + item.content + fact_validity(f, item.content, ref)
        items.append(item)
    await fact_sources(store, agent, items)
    refused = await check_sources(store, agent, viewer, items)
    items = [i for i in items if i.node_id not in refused and i.sources]
    return _fit(items, max_tokens, counter)


def _fit(items: list[RecallItem], budget: int, counter: TokenCounter) -> ContextBundle:
    """Take the lines in order while the whole rendered text fits; a line too long is skipped,
    and a statement already shown (same words) is not shown twice."""
    chosen: list[RecallItem] = []
    seen: set[str] = set()
    total = 0
    for item in items:
        words = " ".join(item.content.casefold().split())
        if words in seen:
            continue
        trial = [*chosen, item]
        tokens = counter.count(render_text(trial))
        if tokens <= budget:
            chosen, total = trial, tokens
            seen.add(words)
    return ContextBundle(items=chosen, total_tokens=total, token_budget=budget, token_counter=counter.name)
