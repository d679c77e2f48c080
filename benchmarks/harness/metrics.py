"""Retrieval metrics: pure functions over ranked ``RetrievedItem`` lists.

Definitions (also in ``benchmarks/FORMAT.md``):

* **Rendered text.** A system answers each call with the exact prompt text (``RetrievalResult.text``) and the items
  in it, in the system's order. The runner counts the text with one tokenizer and scores the items and the text;
  nothing is cut or re-counted per item.
* **Evidence (turn level).** Items whose ``kind`` is ``"topic"`` or ``"summary"`` cover nothing, whatever their
  ``covered_turn_ids`` say. ``evidence_recall_all`` = |gold ∩ covered| / |gold|; ``evidence_any`` = 1 if any gold turn
  is covered, else 0.
* **Session level** (LongMemEval-style; every item kind counts here): ``recall_any_at_k`` = 1 if the sessions of the
  first k items meet the gold sessions; ``recall_all_at_k`` = |gold ∩ sessions(top k)| / |gold| (a fraction, as
  upstream uniko reports it; LongMemEval's own ``recall_all`` is the binary ``recall_all_at_k == 1``).
  ``ndcg_at_k``: the item at 0-based rank i has gain rel_i = 1 when its sessions contain a gold session that no earlier
  item already contained ("novel relevant"), else 0; DCG@k = Σ_{i<k} rel_i / log2(i + 2); the ideal DCG@k puts
  min(k, |gold|) relevant items at the top: IDCG@k = Σ_{i < min(k, |gold|)} 1 / log2(i + 2); nDCG = DCG / IDCG.
  The novelty rule keeps nDCG ≤ 1 when several items come from one gold session; for rankings with one item per
  session it equals plain binary relevance. (LongMemEval's reference script computes its ideal DCG from the retrieved
  list itself and weights the first two ranks equally; these figures are therefore not identical to its numbers.)
* ``answer_contained``: lower-case, delete every character that is neither a word character nor whitespace, collapse
  whitespace; then a plain substring test of the normalised answer in the normalised rendered text. Empty answers → False.
* ``evidence_hit_rate``: see its docstring.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

NON_EVIDENCE_KINDS: frozenset[str] = frozenset({"topic", "summary"})


@dataclass(frozen=True, slots=True)
class RetrievedItem:
    """One item of a rendered bundle (in the system's order) and the turns its provenance reaches."""

    content: str
    covered_turn_ids: frozenset[str] = frozenset()
    session_ids: frozenset[str] = frozenset()
    kind: str = "turn"


@dataclass(slots=True)
class RetrievalResult:
    """What one call returns: ``text`` is exactly what would go into the prompt; ``items`` are the items in it.

    ``reported_tokens`` is the system's own count of ``text`` (uniko: ``bundle.total_tokens``), None when it
    gives none; the runner compares it with its own count.
    """

    items: list[RetrievedItem]
    text: str
    latency_s: float = 0.0
    reported_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------------------------
# Evidence (turn level)
# --------------------------------------------------------------------------------------------------------------------


def covered_turns(items: Iterable[RetrievedItem]) -> set[str]:
    out: set[str] = set()
    for item in items:
        if item.kind not in NON_EVIDENCE_KINDS:
            out |= item.covered_turn_ids
    return out


def evidence_recall_all(items: Iterable[RetrievedItem], gold: Iterable[str]) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("evidence recall needs at least one gold turn")
    return len(gold_set & covered_turns(items)) / len(gold_set)


def evidence_any(items: Iterable[RetrievedItem], gold: Iterable[str]) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("evidence recall needs at least one gold turn")
    return 1.0 if gold_set & covered_turns(items) else 0.0


# --------------------------------------------------------------------------------------------------------------------
# Session level
# --------------------------------------------------------------------------------------------------------------------


def _gold_sessions(gold_sessions: Iterable[str]) -> set[str]:
    g = set(gold_sessions)
    if not g:
        raise ValueError("session metrics need at least one gold session")
    return g


def _sessions(items: Iterable[RetrievedItem]) -> set[str]:
    out: set[str] = set()
    for item in items:
        out |= item.session_ids
    return out


def recall_any_at_k(items: Sequence[RetrievedItem], gold_sessions: Iterable[str], k: int) -> float:
    gold = _gold_sessions(gold_sessions)
    return 1.0 if gold & _sessions(items[:k]) else 0.0


def recall_all_at_k(items: Sequence[RetrievedItem], gold_sessions: Iterable[str], k: int) -> float:
    gold = _gold_sessions(gold_sessions)
    return len(gold & _sessions(items[:k])) / len(gold)


def ndcg_at_k(items: Sequence[RetrievedItem], gold_sessions: Iterable[str], k: int) -> float:
    gold = _gold_sessions(gold_sessions)
    if k <= 0:
        return 0.0
    seen: set[str] = set()
    dcg = 0.0
    for i, item in enumerate(items[:k]):
        new = (item.session_ids & gold) - seen
        if new:
            dcg += 1.0 / math.log2(i + 2)
            seen |= new
    idcg = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / idcg


# --------------------------------------------------------------------------------------------------------------------
# Answer containment and the upstream evidence hit rate
# --------------------------------------------------------------------------------------------------------------------

_NON_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Lower-case, delete punctuation (anything not a word character or whitespace), collapse whitespace."""
    return _SPACES.sub(" ", _NON_WORD.sub("", text.lower())).strip()


def answer_contained(bundle_text: str, answer: str | int | float | None) -> bool:
    if answer is None:
        return False
    needle = normalise_text(str(answer))
    if not needle:
        return False
    return needle in normalise_text(bundle_text)


FINGERPRINT_CHARS = 50
MIN_ANSWER_FALLBACK_CHARS = 4


def evidence_fingerprints(text: str, width: int = FINGERPRINT_CHARS) -> list[str]:
    """The three fingerprints of an evidence text, lower-cased, empty ones dropped, duplicates removed.

    1. the first ``width`` characters of the stripped text;
    2. skip-first-word: the text after the first whitespace-delimited word (left-stripped), first ``width`` chars;
    3. the middle slice: ``width`` characters starting at ``max(0, len // 2 - width // 2)``.
    """
    t = text.strip().lower()
    parts = t.split(None, 1)
    skip_first = parts[1].lstrip() if len(parts) == 2 else ""
    mid_start = max(0, len(t) // 2 - width // 2)
    out: list[str] = []
    for fp in (t[:width], skip_first[:width], t[mid_start : mid_start + width]):
        if fp and fp not in out:
            out.append(fp)
    return out


def evidence_hit_rate(
    recalled_contents: Sequence[str], evidence_texts: Sequence[str], answer: str | int | float | None
) -> float:
    """Upstream-compatible "retrieval hit" (uniko-design.md §11.1): evidence turns found / total evidence turns.

    The recalled contents are joined with newlines and lower-cased. An evidence text is found when any of its
    fingerprints (``evidence_fingerprints``) is a substring of that haystack. If **no** evidence text was found and the
    gold answer, stripped, has at least 4 characters, the answer is searched case-insensitively as a whole phrase
    (not preceded or followed by a word character); a match counts **all** evidence as found (returns 1.0).
    """
    if not evidence_texts:
        raise ValueError("evidence hit rate needs at least one evidence text")
    haystack = "\n".join(recalled_contents).lower()
    found = sum(1 for ev in evidence_texts if any(fp in haystack for fp in evidence_fingerprints(ev)))
    if found == 0 and answer is not None:
        ans = str(answer).strip().lower()
        if len(ans) >= MIN_ANSWER_FALLBACK_CHARS and re.search(rf"(?<!\w){re.escape(ans)}(?!\w)", haystack):
            return 1.0
    return found / len(evidence_texts)


# --------------------------------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------------------------------


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mean_by_category(records: Iterable[tuple[str, float]]) -> dict[str, Any]:
    """``{"overall": mean, "n": count, "by_category": {category: mean}}`` (categories sorted; empty → None)."""
    groups: dict[str, list[float]] = defaultdict(list)
    allv: list[float] = []
    for cat, value in records:
        groups[cat].append(value)
        allv.append(value)
    return {
        "overall": mean(allv),
        "n": len(allv),
        "by_category": {c: mean(groups[c]) for c in sorted(groups)},
        "n_by_category": {c: len(groups[c]) for c in sorted(groups)},
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolation percentile (NumPy's default method); ``q`` in [0, 100]; empty → None."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be in [0, 100]")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary_stats(values: Sequence[float]) -> dict[str, float | None]:
    return {"mean": mean(values), "p50": percentile(values, 50), "p95": percentile(values, 95)}


def budget_stats(tokens: Sequence[float], budget: int) -> dict[str, Any]:
    """Rendered-token counts of the texts asked for at one budget: mean, p50, max, how many (and %) over it."""
    over = sum(1 for t in tokens if t > budget)
    return {
        "budget": budget,
        "n": len(tokens),
        "mean": mean(tokens),
        "p50": percentile(tokens, 50),
        "max": max(tokens) if tokens else None,
        "over_budget": over,
        "over_budget_pct": 100.0 * over / len(tokens) if tokens else None,
    }
