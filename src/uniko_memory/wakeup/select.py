"""Choosing the wake-up's lines under the line count, the per-kind shares, the hard caps and the
token budget: a pure function of the scored candidates, so its contract is testable on its own.

Pass 1 walks the candidates best first and takes each while its kind is under its share; shares
are clamped to what the pool holds (a share is not a reservation). Pass 2 backfills the slots left
with the best remaining candidates of ``backfill_kinds``. The procedure and consolidation caps bind
in both passes. A candidate that does not fit the budget is skipped, never a reason to stop (one
long line must not end the wake-up); a line whose words mostly repeat a chosen one is dropped.
The budget is checked on the text ``render()`` returns, counted whole (framed and bare), so the
result holds ``max_tokens`` exactly for every counter.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ..config import WakeupConfig
from ..providers.token_counter import TokenCounter
from ..recall.assemble import Charges
from ..recall.items import Layout, RecallItem, render_text

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class WakeCandidate:
    item: RecallItem
    #: The kind of memory ("fact", "observation", ...; ``config.WAKEUP_KINDS``).
    kind: str
    score: float


@dataclass
class Selection:
    #: The bundle's items: the L0 line (when it fits) first, then the chosen lines best first.
    items: list[RecallItem]
    #: Tokens of the framed rendered text.
    total_tokens: int
    dropped: dict[str, str] = field(default_factory=dict)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def kind_budgets(cands: list[WakeCandidate], cfg: WakeupConfig) -> dict[str, int]:
    """Each kind's pass-1 slots: its share of ``max_lines``, clamped to what the pool holds."""
    held = Counter(c.kind for c in cands)
    return {k: min(math.ceil(share * cfg.max_lines), held[k]) for k, share in cfg.kind_shares.items()}


def select(
    identity: RecallItem | None,
    cands: list[WakeCandidate],
    cfg: WakeupConfig,
    *,
    max_tokens: int,
    counter: TokenCounter,
    layout: Layout = "grouped",
) -> Selection:
    charges = Charges.of(counter, layout)
    ranked = sorted(cands, key=lambda c: (-c.score, c.item.node_id))
    head: list[RecallItem] = []
    dropped: dict[str, str] = {}
    if identity is not None:
        if charges.rendered([identity]) <= max_tokens:
            head.append(identity)
        else:
            dropped[identity.node_id] = "token budget"
    chosen: list[WakeCandidate] = []
    chosen_words: list[frozenset[str]] = []
    taken: Counter[str] = Counter()
    capped = {"procedure": 0, "consolidation": 0}
    consolidation = set(cfg.consolidation_kinds)

    def over_cap(c: WakeCandidate) -> bool:
        if c.kind == "procedure" and capped["procedure"] >= cfg.procedure_cap:
            return True
        return c.kind in consolidation and capped["consolidation"] >= cfg.consolidation_cap

    def take(c: WakeCandidate) -> bool:
        """Take ``c`` if it fits, is not a near-duplicate and no cap binds; True when taken."""
        if over_cap(c):
            dropped[c.item.node_id] = f"{c.kind} cap"
            return False
        words = _words(c.item.content)
        if any(_jaccard(words, w) >= cfg.duplicate_threshold for w in chosen_words):
            dropped[c.item.node_id] = "near-duplicate"
            return False
        if charges.rendered([*head, *(x.item for x in chosen), c.item]) > max_tokens:
            dropped[c.item.node_id] = "token budget"  # skipped: a smaller line may still fit
            return False
        chosen.append(c)
        chosen_words.append(words)
        taken[c.kind] += 1
        capped["procedure"] += c.kind == "procedure"
        capped["consolidation"] += c.kind in consolidation
        dropped.pop(c.item.node_id, None)
        return True

    budgets = kind_budgets(ranked, cfg)
    seen: set[str] = set()
    for c in ranked:
        if len(chosen) >= cfg.max_lines:
            break
        if taken[c.kind] >= budgets.get(c.kind, 0):
            continue
        seen.add(c.item.node_id)
        take(c)
    backfill = set(cfg.backfill_kinds)
    for c in ranked:
        if len(chosen) >= cfg.max_lines:
            break
        if c.item.node_id in seen or c.kind not in backfill:
            continue
        seen.add(c.item.node_id)
        take(c)
    for c in ranked:
        if c.item.node_id not in seen:
            dropped.setdefault(c.item.node_id, "line count")
    items = [*head, *(c.item for c in chosen)]
    items = [i.model_copy(update={"tokens": t}) for i, t in zip(items, charges.shares(items), strict=True)]
    total = counter.count(render_text(items, layout)) if items else 0
    return Selection(items, total, dropped)
