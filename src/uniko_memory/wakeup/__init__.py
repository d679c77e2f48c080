"""The wake-up context: what an agent should know before the first question of a conversation.

``await wake_up(kb, agent=..., cfg=...)`` returns a ``ContextBundle`` (rendered like recall's,
``bundle.render()`` within ``max_tokens`` of the caller's token counter) holding:

- **L0**, one line: who the memory is about (the participants), the span of time, the counts;
- **L1**, dense one-liners chosen without a query (``wakeup.score``), under per-kind shares,
  hard caps and the budget (``wakeup.select``).

Admission is recall's: the same scope filters (viewer, sessions: ``recall.scope.Scope``), live
nodes only (no redacted, invalidated, retired or inactive ones), and every line's evidence
re-checked in the store (``recall.bundle.check_sources``): what recall would refuse, the wake-up
refuses too.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..config import WakeupConfig
from ..model import Node, NodeUsage, Session, Tier, Viewer
from ..providers.token_counter import TokenCounter, as_token_counter
from ..recall.assemble import node_to_item
from ..recall.bundle import check_sources, fact_sources
from ..recall.config import RecallConfig
from ..recall.items import ContextBundle, Layout, RecallItem
from ..recall.scope import OutOfScope, Scope
from ..store.filters import Eq, Filter, all_of
from .score import l1_score
from .select import Selection, WakeCandidate, kind_budgets, select

__all__ = [
    "IDENTITY_ID",
    "Selection",
    "WakeCandidate",
    "kind_budgets",
    "l1_score",
    "select",
    "wake_up",
    "with_wake_up",
]

#: The tier of each wake-up kind and what makes one of its nodes live.
KIND_TIERS: dict[str, tuple[Tier, Filter | None]] = {
    "fact": (Tier.FACT, Eq("valid_to", None)),
    "observation": (Tier.OBSERVATION, None),
    "topic": (Tier.TOPIC, Eq("retired_at", None)),
    "procedure": (Tier.PROCEDURE, Eq("status", "active")),
    "episode": (Tier.EPISODE, None),
}
#: Sessions the L0 line reads at most.
SESSION_SCAN = 100_000
#: The counts the L0 line gives, in this order.
L0_COUNTS = (("message", Tier.MESSAGE), ("fact", Tier.FACT), ("observation", Tier.OBSERVATION))
#: The node id of the L0 line's item (it is text about the memory, no stored node).
IDENTITY_ID = "wakeup:identity"


async def wake_up(
    kb: Any,
    *,
    agent: str,
    cfg: WakeupConfig | None = None,
    max_tokens: int | None = None,
    viewer: Viewer | None = None,
    sessions: Sequence[str] | None = None,
    reference_ts: datetime | None = None,
    layout: Layout = "grouped",
    token_counter: TokenCounter | None = None,
    usage: dict[str, NodeUsage] | None = None,
) -> ContextBundle:
    """The wake-up bundle of ``agent``'s memory in ``kb`` (see the module docstring).

    ``reference_ts`` is "now" for recency (default: the latest activity in scope, so an imported
    history is ranked relative to its own end). ``usage`` (node id -> ``NodeUsage``) feeds the
    access-count and last-read terms; by default the store's (``Store.usage``) where it has it.
    """
    cfg = cfg or kb.config.wakeup
    budget = max_tokens if max_tokens is not None else cfg.max_tokens
    if budget < 1:
        from ..errors import ValidationError

        raise ValidationError("max_tokens must be at least 1")
    counter = as_token_counter(token_counter if token_counter is not None else kb.token_counter)
    store = kb.store
    scope = Scope(
        agent, RecallConfig(viewer=viewer, sessions=list(sessions) if sessions is not None else None)
    )
    in_scope = await _sessions(store, agent, scope)
    identity = await _identity(store, agent, scope, in_scope) if cfg.identity_line else None
    now = reference_ts or max((s.last_activity_at for s in in_scope), default=None)
    from ..model.time import utcnow

    now = now or utcnow()
    nodes: list[tuple[str, Node]] = []
    kinds = dict.fromkeys([*cfg.kind_shares, *cfg.backfill_kinds])
    for kind in kinds:
        tier, live = KIND_TIERS[kind]
        flt = scope.combine(tier, live)
        if isinstance(flt, OutOfScope):
            continue
        found = await store.find(agent, tier, flt, limit=cfg.pool_per_kind, order_by="time", descending=True)
        nodes.extend((kind, n) for n in found if not n.redacted)
    if usage is None:
        usage = await _usage(store, agent, [n.id for _, n in nodes])
    cands: list[WakeCandidate] = []
    for kind, node in nodes:
        score = l1_score(node, usage.get(node.id), now, cfg)
        item = node_to_item(node, score, ["wakeup"])
        if item is not None:
            cands.append(WakeCandidate(item=item, kind=kind, score=score))
    items = [c.item for c in cands]
    await fact_sources(store, agent, items)
    refused = await check_sources(store, agent, viewer, items)
    cands = [c for c in cands if c.item.node_id not in refused]
    chosen = select(identity, cands, cfg, max_tokens=budget, counter=counter, layout=layout)
    return ContextBundle(
        items=chosen.items,
        total_tokens=chosen.total_tokens,
        token_budget=budget,
        token_counter=counter.name,
        layout=layout,
    )


def with_wake_up(wake: ContextBundle | None, bundle: ContextBundle) -> ContextBundle:
    """One bundle for a prompt at the start of a conversation: the wake-up's lines, then the
    recalled items it does not already hold, rendered under one framing (the integrations'
    ``wake_up`` switch). Its budget is the two budgets together; ``total_tokens`` is recounted
    by the caller's renderer, not here (0 when merged)."""
    if wake is None or not wake.items:
        return bundle
    shown = {i.node_id for i in wake.items}
    items = [*wake.items, *(i for i in bundle.items if i.node_id not in shown)]
    budget = (wake.token_budget or 0) + (bundle.token_budget or 0) or None
    return bundle.model_copy(update={"items": items, "total_tokens": 0, "token_budget": budget})


async def _usage(store: Any, agent: str, ids: list[str]) -> dict[str, NodeUsage]:
    read = getattr(store, "usage", None)
    if not callable(read) or not ids:
        return {}
    found: dict[str, NodeUsage] = await read(agent, ids)
    return found


async def _sessions(store: Any, agent: str, scope: Scope) -> list[Session]:
    flt = scope.filter_for(Tier.SESSION)
    if isinstance(flt, OutOfScope):
        return []
    found = await store.find(agent, Tier.SESSION, flt, limit=SESSION_SCAN)
    return [s for s in found if isinstance(s, Session)]


async def _identity(store: Any, agent: str, scope: Scope, in_scope: list[Session]) -> RecallItem | None:
    """L0: "Memory of A and B: 3 sessions, 7 May 2023 – 15 August 2023; 21 messages, 4 facts"."""
    if not in_scope:
        return None
    names: list[str] = []
    for s in sorted(in_scope, key=lambda s: (s.started_at, s.id)):
        names.extend(n for n in s.participant_names if n and n not in names)
    if scope.cfg.viewer is not None:
        names = await _seen_speaking(store, agent, scope, names)
    first = min(s.started_at for s in in_scope)
    last = max(s.last_activity_at for s in in_scope)
    counts = [f"{len(in_scope)} session{'s' if len(in_scope) != 1 else ''}"]
    for label, tier in L0_COUNTS:
        flt = scope.combine(tier, Eq("valid_to", None) if tier is Tier.FACT else None)
        if isinstance(flt, OutOfScope):
            continue
        n = await store.count(agent, tier, flt)
        if n:
            counts.append(f"{n} {label}{'s' if n != 1 else ''}")
    who = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
    span = _day(first) if first.date() == last.date() else f"{_day(first)} – {_day(last)}"
    text = f"Memory{' of ' + who if who else ''}: {counts[0]}, {span}; " + ", ".join(counts[1:])
    text = text.rstrip("; ")
    return RecallItem(node_id=IDENTITY_ID, kind="summary", score=1.0, content=text, rendered=text)


async def _seen_speaking(store: Any, agent: str, scope: Scope, names: list[str]) -> list[str]:
    """Of ``names``, those the scope's viewer has seen speak: the sender of at least one live turn
    in scope that the viewer may see.

    A session lists everyone who spoke in it or was spoken to, whatever the visibility of their
    turns; a viewer who may not see a participant's private turns must not learn from the L0
    line that they took part. A name only ever addressed is left out too (what the turn that
    names it says is recall's to show, under the same rule)."""
    flt = scope.filter_for(Tier.MESSAGE)
    if isinstance(flt, OutOfScope):
        return []
    seen = []
    for name in names:
        spoke = all_of(flt, Eq("sender_name", name), Eq("redacted", False))
        if await store.find(agent, Tier.MESSAGE, spoke, limit=1):
            seen.append(name)
    return seen


def _day(ts: datetime) -> str:
    return f"{ts.day} {ts:%B %Y}"
