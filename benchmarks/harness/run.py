"""The benchmark runner: every system, fresh per conversation, over the same questions; metrics and reports.

A system implements ``MemorySystem``. Per conversation the runner builds a fresh instance, times ``setup`` (ingest of
every session), then asks each question with ``reference_ts`` = the question time, or the start of the
conversation's last session when the question has none (LoCoMo).

Retrieval calls. Every system is asked the same way, once per call, and answers with the **exact prompt text** it
would hand a model (``RetrievalResult.text``) and the items in that text (their provenance):

* once per token budget N (``token_budgets``, plus ``keep_bundle_budget``): ``retrieve(q, ts, token_budget=N)``;
* once per item limit k (``item_limits``, plus ``hit_rate_k``; diagnostics): ``retrieve(q, ts, limit=k)``, at the
  system's default budget, which must be the library's (``DEFAULT_TOKEN_BUDGET``).

The runner counts every text with **one tokenizer** (``TOKEN_COUNTER``, MiniLM WordPiece, the library's default)
and records it per question (``rendered_tokens@…``) and whether it is over its budget (``over_budget@…``; a report
with any is flagged, and ``run_bench.py`` exits 1). Evidence recall @N tok is computed from the items in the text at
budget N, answer containment on the text itself; nothing is cut or re-counted per item.

Which questions count (generic; gives LoCoMo's "categories 1-4" automatically because category 5 is abstention):
evidence metrics — not abstention, ≥ 1 gold turn; session metrics — not abstention, ≥ 1 gold session; answer
containment — not abstention, non-empty answer. ``categories`` restricts all three further. Token and latency figures
cover every question asked; a question's latency is that of its call at the largest token budget.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from uniko_memory.providers.token_counter import TokenCounter, default_token_counter
from uniko_memory.recall import RecallConfig

from .format import Conversation, EvalDataset, Question
from .metrics import (
    RetrievalResult,
    answer_contained,
    budget_stats,
    evidence_any,
    evidence_hit_rate,
    evidence_recall_all,
    mean_by_category,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    summary_stats,
)

REPORT_SCHEMA = "uniko-memory-bench/2"
BASELINE_PREFIX = "baseline-"
HYBRID = "baseline-hybrid"
#: The peer memory system (``mem0_system``): when it runs, every other system gets a ratio column against it.
PEER = "baseline-mem0"
#: The one tokenizer every system's text is counted with (the library's default counter).
TOKEN_COUNTER: TokenCounter = default_token_counter()
#: The budget of a call that names none (the item-limit calls): the library's default.
DEFAULT_TOKEN_BUDGET: int = RecallConfig().token_budget


@runtime_checkable
class MemorySystem(Protocol):
    """What the runner drives (see the module docstring). ``call_path`` (optional) says in words how the system
    is asked and what its text is; the report quotes it."""

    async def setup(self, conversation: Conversation) -> None: ...

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult: ...

    async def close(self) -> None: ...


SystemFactory = Callable[[], MemorySystem]


@dataclass(frozen=True)
class BenchConfig:
    #: Diagnostics: one call per k with ``limit=k`` at the default budget (empty: none, and no session metrics).
    item_limits: tuple[int, ...] = (5, 10, 15)
    #: The headline: one call per budget N with ``token_budget=N``.
    token_budgets: tuple[int, ...] = (500, 1000, 2000, 4000, 8000)
    #: The upstream evidence hit rate on the text of the ``limit=hit_rate_k`` call (None: not computed).
    hit_rate_k: int | None = 15
    categories: frozenset[str] | None = None
    max_conversations: int | None = None
    conversation_ids: frozenset[str] | None = None  # only these conversations (before max_conversations)
    max_questions: int | None = None  # only the first N questions of each conversation (quick runs)
    keep_bundle_budget: int | None = (
        None  # store the rendered text at this budget per question (for the LLM stage)
    )
    progress: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "item_limits": list(self.item_limits),
            "token_budgets": list(self.token_budgets),
            "hit_rate_k": self.hit_rate_k,
            "default_token_budget": DEFAULT_TOKEN_BUDGET,
            "token_counter": TOKEN_COUNTER.name,
            "categories": sorted(self.categories) if self.categories is not None else None,
            "max_conversations": self.max_conversations,
            "conversation_ids": sorted(self.conversation_ids) if self.conversation_ids is not None else None,
            "max_questions": self.max_questions,
        }

    def budget_calls(self) -> list[int]:
        extra = {self.keep_bundle_budget} if self.keep_bundle_budget is not None else set()
        return sorted(set(self.token_budgets) | extra)

    def limit_calls(self) -> list[int]:
        extra = {self.hit_rate_k} if self.hit_rate_k is not None else set()
        return sorted(set(self.item_limits) | extra)


@dataclass
class QuestionRecord:
    system: str
    conversation_id: str
    question_id: str
    category: str
    abstention: bool
    metrics: dict[str, float] = field(default_factory=dict)
    latency_s: float = 0.0
    bundle_text: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "system": self.system,
            "conversation_id": self.conversation_id,
            "question_id": self.question_id,
            "category": self.category,
            "abstention": self.abstention,
            "latency_s": round(self.latency_s, 6),
            "metrics": {k: round(v, 6) for k, v in sorted(self.metrics.items())},
        }
        if self.bundle_text is not None:
            out["bundle_text"] = self.bundle_text
        return out


@dataclass(frozen=True)
class Rendered:
    """One call's answer as the runner measured it: the result, the budget it had, its text's tokens."""

    result: RetrievalResult
    budget: int
    tokens: int

    @property
    def over_budget(self) -> bool:
        return self.tokens > self.budget


def reference_time(conversation: Conversation, question: Question) -> datetime:
    if question.question_time is not None:
        return question.question_time
    if not conversation.sessions:
        raise ValueError(f"conversation {conversation.id!r} has no sessions")
    return max(s.start for s in conversation.sessions)


def is_baseline(name: str) -> bool:
    return name.startswith(BASELINE_PREFIX)


def budget_key(budget: int) -> str:
    return f"{budget}tok"


# --------------------------------------------------------------------------------------------------------------------
# Per-question scoring
# --------------------------------------------------------------------------------------------------------------------


def _cost(out: dict[str, float], suffix: str, r: Rendered) -> None:
    out[f"rendered_tokens@{suffix}"] = float(r.tokens)
    out[f"bundle_items@{suffix}"] = float(len(r.result.items))
    out[f"over_budget@{suffix}"] = 1.0 if r.over_budget else 0.0
    if r.result.reported_tokens is not None:
        out[f"token_count_mismatch@{suffix}"] = 1.0 if r.result.reported_tokens != r.tokens else 0.0


def score_question(
    config: BenchConfig,
    question: Question,
    turn_text: Mapping[str, str],
    by_budget: Mapping[int, Rendered],
    by_limit: Mapping[int, Rendered],
) -> dict[str, float]:
    """All applicable metrics for one question, from the calls at every budget (``by_budget``) and item limit."""
    out: dict[str, float] = {}
    in_scope = config.categories is None or question.category in config.categories
    evaluable = in_scope and not question.abstention
    for (
        b
    ) in config.budget_calls():  # the kept text's budget too: every text that leaves the harness is checked
        _cost(out, budget_key(b), by_budget[b])
    for k in config.item_limits:
        _cost(out, str(k), by_limit[k])

    if evaluable and question.gold_turn_ids:
        gold = question.gold_turn_ids
        for b in config.token_budgets:
            items = by_budget[b].result.items
            out[f"evidence_any@{budget_key(b)}"] = evidence_any(items, gold)
            out[f"evidence_all@{budget_key(b)}"] = evidence_recall_all(items, gold)
        for k in config.item_limits:
            items = by_limit[k].result.items
            out[f"evidence_any@{k}"] = evidence_any(items, gold)
            out[f"evidence_all@{k}"] = evidence_recall_all(items, gold)
        if config.hit_rate_k is not None:
            evidence_texts = [turn_text[t] for t in gold]
            text = by_limit[config.hit_rate_k].result.text
            out[f"evidence_hit@{config.hit_rate_k}"] = evidence_hit_rate(
                [text], evidence_texts, question.answer
            )

    if evaluable and question.gold_session_ids:
        gold_s = question.gold_session_ids
        for k in config.item_limits:
            items = by_limit[k].result.items
            out[f"session_recall_any@{k}"] = recall_any_at_k(items, gold_s, k)
            out[f"session_recall_all@{k}"] = recall_all_at_k(items, gold_s, k)
            out[f"session_ndcg@{k}"] = ndcg_at_k(items, gold_s, k)

    if evaluable and question.answer and question.answer.strip():
        for b in config.token_budgets:
            contained = answer_contained(by_budget[b].result.text, question.answer)
            out[f"answer_contains@{budget_key(b)}"] = 1.0 if contained else 0.0
    return out


# --------------------------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------------------------


def _peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _progress(iterable: Any, *, enabled: bool, **kwargs: Any) -> Any:
    if not enabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, file=sys.stderr, dynamic_ncols=True, **kwargs)


@dataclass
class SystemRun:
    name: str
    records: list[QuestionRecord]
    setup_s: list[float]
    wall_s: float
    peak_rss_mb: float
    call_path: str | None = None
    turns: int = 0  # turns ingested over every conversation (setup time per turn)
    #: A system's own timings (``MemorySystem.timings``, optional: name → seconds per event), all conversations.
    timings: dict[str, list[float]] = field(default_factory=dict)


async def ask(
    system: MemorySystem,
    question: Question,
    reference_ts: datetime,
    *,
    limit: int | None = None,
    token_budget: int | None = None,
) -> Rendered:
    """One call, its text counted with ``TOKEN_COUNTER`` against its budget (the default one if it names none)."""
    result = await system.retrieve(question, reference_ts, limit=limit, token_budget=token_budget)
    if not isinstance(result.text, str):
        raise TypeError(
            f"{type(system).__name__}.retrieve must return the prompt text (RetrievalResult.text)"
        )
    budget = DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget
    return Rendered(result, budget, TOKEN_COUNTER.count(result.text))


async def run_system(
    name: str, factory: SystemFactory, conversations: Sequence[Conversation], config: BenchConfig
) -> SystemRun:
    budget_calls = config.budget_calls()
    limit_calls = config.limit_calls()
    latency_budget = max(config.token_budgets)
    records: list[QuestionRecord] = []
    setup_times: list[float] = []
    call_path: str | None = None
    turns = 0
    timings: dict[str, list[float]] = {}
    t_start = time.perf_counter()
    for conv in _progress(conversations, enabled=config.progress, desc=name, unit="conv"):
        system = factory()
        call_path = getattr(system, "call_path", None)
        turn_text = {t.id: t.text for t in conv.turns()}
        t0 = time.perf_counter()
        await system.setup(conv)
        setup_times.append(time.perf_counter() - t0)
        turns += len(turn_text)
        try:
            questions = _progress(
                conv.questions, enabled=config.progress, desc=conv.id, unit="q", leave=False
            )
            for q in questions:
                ts = reference_time(conv, q)
                by_budget = {b: await ask(system, q, ts, token_budget=b) for b in budget_calls}
                by_limit = {k: await ask(system, q, ts, limit=k) for k in limit_calls}
                rec = QuestionRecord(
                    system=name,
                    conversation_id=conv.id,
                    question_id=q.id,
                    category=q.category,
                    abstention=q.abstention,
                    metrics=score_question(config, q, turn_text, by_budget, by_limit),
                    latency_s=by_budget[latency_budget].result.latency_s,
                )
                if config.keep_bundle_budget is not None:
                    rec.bundle_text = by_budget[config.keep_bundle_budget].result.text
                records.append(rec)
        finally:
            call_path = getattr(system, "call_path", call_path)  # may name what setup loaded
            for key, values in (getattr(system, "timings", None) or {}).items():
                timings.setdefault(key, []).extend(values)
            await system.close()
        del system
        gc.collect()
    return SystemRun(
        name=name,
        records=records,
        setup_s=setup_times,
        wall_s=time.perf_counter() - t_start,
        peak_rss_mb=_peak_rss_mb(),
        call_path=call_path,
        turns=turns,
        timings=timings,
    )


def select_conversations(dataset: EvalDataset, config: BenchConfig) -> list[Conversation]:
    """The conversations to run, by id: ``conversation_ids``, then the first ``max_conversations``;
    each cut to its first ``max_questions`` questions. Unknown ids raise ``KeyError``."""
    convs = sorted(dataset.conversations, key=lambda c: c.id)
    if config.conversation_ids is not None:
        missing = sorted(config.conversation_ids - {c.id for c in convs})
        if missing:
            raise KeyError(f"unknown conversation id(s) {missing}; known: {[c.id for c in convs]}")
        convs = [c for c in convs if c.id in config.conversation_ids]
    if config.max_conversations is not None:
        convs = convs[: config.max_conversations]
    if config.max_questions is not None:
        convs = [c.model_copy(update={"questions": c.questions[: config.max_questions]}) for c in convs]
    return convs


async def run_benchmark(
    dataset: EvalDataset,
    systems: Mapping[str, SystemFactory],
    config: BenchConfig | None = None,
    *,
    source: str | None = None,
) -> tuple[dict[str, Any], list[QuestionRecord]]:
    """Run every system; returns (report dict, per-question records)."""
    config = config or BenchConfig()
    convs = select_conversations(dataset, config)
    t0 = time.perf_counter()
    runs = [await run_system(name, systems[name], convs, config) for name in systems]
    wall = time.perf_counter() - t0
    report = build_report(dataset, convs, runs, config, wall_s=wall, source=source)
    records = [r for run in runs for r in run.records]
    return report, records


def run_benchmark_sync(
    dataset: EvalDataset, systems: Mapping[str, SystemFactory], config: BenchConfig | None = None, **kw: Any
) -> tuple[dict[str, Any], list[QuestionRecord]]:
    return asyncio.run(run_benchmark(dataset, systems, config, **kw))


# --------------------------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------------------------

LOWER_IS_BETTER_PREFIXES = ("latency", "setup", "wall", "peak_rss")


def headline_metrics(token_budgets: Sequence[int]) -> list[str]:
    """The headline: evidence recall and answer containment in the rendered text, per token budget."""
    names: list[str] = []
    for b in token_budgets:
        key = budget_key(b)
        names += [f"evidence_all@{key}", f"evidence_any@{key}", f"answer_contains@{key}"]
    return names


def metric_order(config: BenchConfig) -> list[str]:
    """Quality metrics in report order: the headline, then the item-limit diagnostics."""
    names = headline_metrics(config.token_budgets)
    for k in config.item_limits:
        names += [f"evidence_all@{k}", f"evidence_any@{k}"]
    if config.hit_rate_k is not None:
        names.append(f"evidence_hit@{config.hit_rate_k}")
    for k in config.item_limits:
        names += [f"session_recall_any@{k}", f"session_recall_all@{k}", f"session_ndcg@{k}"]
    return names


def call_order(config: BenchConfig) -> list[tuple[str, int]]:
    """Every checked call as (metric suffix, budget): the token budgets (and the kept text's), then the item
    limits (default budget)."""
    return [(budget_key(b), b) for b in config.budget_calls()] + [
        (str(k), DEFAULT_TOKEN_BUDGET) for k in config.item_limits
    ]


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


def _system_summary(run: SystemRun, config: BenchConfig) -> dict[str, Any]:
    quality: dict[str, Any] = {}
    for m in metric_order(config):
        agg = mean_by_category((r.category, r.metrics[m]) for r in run.records if m in r.metrics)
        quality[m] = {
            "overall": _r(agg["overall"]),
            "n": agg["n"],
            "by_category": {c: _r(v) for c, v in agg["by_category"].items()},
        }
    rendered: dict[str, Any] = {}
    for suffix, budget in call_order(config):
        tokens = [r.metrics[f"rendered_tokens@{suffix}"] for r in run.records]
        items = [r.metrics[f"bundle_items@{suffix}"] for r in run.records]
        mismatch = [
            r.metrics[f"token_count_mismatch@{suffix}"]
            for r in run.records
            if f"token_count_mismatch@{suffix}" in r.metrics
        ]
        stats = {k: _r(v, 3) if isinstance(v, float) else v for k, v in budget_stats(tokens, budget).items()}
        stats["items_mean"] = _r(sum(items) / len(items), 3) if items else None
        stats["own_count_differs"] = int(sum(mismatch)) if mismatch else None
        rendered[suffix] = stats
    lat = summary_stats([r.latency_s for r in run.records])
    setup = summary_stats(run.setup_s)
    return {
        "call_path": run.call_path,
        "quality": quality,
        "rendered": rendered,
        "over_budget": sum(s["over_budget"] for s in rendered.values()),
        "runtime": {
            "questions": len(run.records),
            "latency_mean_s": _r(lat["mean"]),
            "latency_p50_s": _r(lat["p50"]),
            "latency_p95_s": _r(lat["p95"]),
            "setup_total_s": _r(sum(run.setup_s), 3),
            "setup_mean_s": _r(setup["mean"], 3),
            "setup_per_turn_ms": _r(1000 * sum(run.setup_s) / run.turns, 3) if run.turns else None,
            "wall_s": _r(run.wall_s, 3),
            "peak_rss_mb": _r(run.peak_rss_mb, 1),
            "timings": {
                key: {"n": len(v), **{k: _r(x) for k, x in summary_stats(v).items()}}
                for key, v in sorted(run.timings.items())
            },
        },
    }


def _flat_figures(summary: Mapping[str, Any], config: BenchConfig) -> dict[str, float | None]:
    """Quality and runtime figures, one per metric (the rendered tokens have their own table)."""
    out: dict[str, float | None] = {m: summary["quality"][m]["overall"] for m in metric_order(config)}
    rt = summary["runtime"]
    out["latency p50 s"] = rt["latency_p50_s"]
    out["latency p95 s"] = rt["latency_p95_s"]
    out["setup total s"] = rt["setup_total_s"]
    out["setup per turn ms"] = rt.get("setup_per_turn_ms")
    out["wall s"] = rt["wall_s"]
    out["peak_rss mb (process)"] = rt["peak_rss_mb"]
    return out


def _lower_is_better(metric: str) -> bool:
    return metric.startswith(LOWER_IS_BETTER_PREFIXES)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 4)


def build_comparison(figures: Mapping[str, Mapping[str, float | None]]) -> dict[str, Any]:
    """Per metric: every system's figure, the best baseline, and each non-baseline system's ratios."""
    names = list(figures)
    baselines = [n for n in names if is_baseline(n)]
    ours = [n for n in names if not is_baseline(n)]
    metrics = list(next(iter(figures.values()))) if figures else []
    rows: dict[str, Any] = {}
    for m in metrics:
        values = {n: figures[n].get(m) for n in names}
        present = [(v, b) for b in baselines if (v := values[b]) is not None]
        best: str | None = None
        if present:
            sign = 1.0 if _lower_is_better(m) else -1.0
            best = min(present, key=lambda vb: (sign * vb[0], vb[1]))[1]  # ties → first name
        ratios = {
            o: {
                "vs_best": _ratio(values[o], values[best]) if best else None,
                "vs_hybrid": _ratio(values[o], values.get(HYBRID)) if HYBRID in values else None,
                "vs_peer": _ratio(values[o], values.get(PEER)) if PEER in values else None,
            }
            for o in ours
        }
        rows[m] = {
            "values": values,
            "best_baseline": best,
            "lower_is_better": _lower_is_better(m),
            "ratios": ratios,
        }
    return {"ours": ours, "baselines": baselines, "rows": rows}


def tokens_to_reach(target: float, curve: Sequence[tuple[int, float]]) -> float | None:
    """The budget at which a system whose evidence at the measured budgets is ``curve`` reaches
    ``target``, linearly interpolated between the measured budgets; None when it never does."""
    points = sorted(curve)
    if not points:
        return None
    if target <= points[0][1]:
        return float(points[0][0])  # already at the smallest measured budget (no extrapolation)
    for (b0, e0), (b1, e1) in itertools.pairwise(points):
        if e0 < target <= e1:
            return b0 + (b1 - b0) * (target - e0) / (e1 - e0)
    return None


def token_efficiency(
    summaries: Mapping[str, Any], budgets: Sequence[int], metric: str = "evidence_all"
) -> dict[str, dict[str, Any]]:
    """For every system that is not a baseline, per budget B: the budget the hybrid baseline needs
    to reach that system's ``metric`` at B, and how many times B that is (issue 41: "how many times
    fewer tokens"). None where the baseline never reaches it within the measured budgets."""
    if HYBRID not in summaries:
        return {}
    curve = [
        (b, v)
        for b in budgets
        if (v := summaries[HYBRID]["quality"].get(f"{metric}@{budget_key(b)}", {}).get("overall")) is not None
    ]
    out: dict[str, dict[str, Any]] = {}
    for name, summary in summaries.items():
        if is_baseline(name):
            continue
        rows = {}
        for b in budgets:
            ours = summary["quality"].get(f"{metric}@{budget_key(b)}", {}).get("overall")
            if ours is None:
                continue
            need = tokens_to_reach(ours, curve)
            rows[str(b)] = {
                "ours": _r(ours),
                "hybrid_tokens": None if need is None else round(need),
                "times": None if need is None else round(need / b, 2),
            }
        out[name] = {"metric": metric, "baseline": HYBRID, "max_measured": max(budgets), "rows": rows}
    return out


def build_report(
    dataset: EvalDataset,
    conversations: Sequence[Conversation],
    runs: Sequence[SystemRun],
    config: BenchConfig,
    *,
    wall_s: float,
    source: str | None = None,
) -> dict[str, Any]:
    questions = [q for c in conversations for q in c.questions]
    in_scope = [
        q
        for q in questions
        if not q.abstention and (config.categories is None or q.category in config.categories)
    ]
    summaries = {run.name: _system_summary(run, config) for run in runs}
    figures = {name: _flat_figures(s, config) for name, s in summaries.items()}
    return {
        "schema": REPORT_SCHEMA,
        "dataset": {
            "name": dataset.name,
            "source": source,
            "conversations": len(conversations),
            "turns": sum(len(c.turns()) for c in conversations),
            "questions": len(questions),
            "eligible": {
                "evidence": sum(1 for q in in_scope if q.gold_turn_ids),
                "session": sum(1 for q in in_scope if q.gold_session_ids),
                "answer": sum(1 for q in in_scope if q.answer and q.answer.strip()),
            },
        },
        "config": config.to_json(),
        "systems": summaries,
        "comparison": build_comparison(figures),
        "token_efficiency": token_efficiency(summaries, config.token_budgets),
        "budget_violations": {name: s["over_budget"] for name, s in summaries.items() if s["over_budget"]},
        "wall_s": round(wall_s, 3),
    }


def _fmt(v: float | None, metric: str = "") -> str:
    if v is None:
        return "–"
    if metric.startswith(("evidence", "session", "answer")):
        return f"{v:.3f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.4f}"


def _fmt_ratio(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _fmt_tokens(v: float | None, decimals: int = 0) -> str:
    return "–" if v is None else f"{v:,.{decimals}f}"


def _comparison_table(report: Mapping[str, Any], metrics: Sequence[str]) -> list[str]:
    comp = report["comparison"]
    systems = list(report["systems"])
    ours = comp["ours"]
    has_hybrid = HYBRID in systems
    has_peer = PEER in systems
    header = ["metric", *systems]
    for o in ours:
        header.append(f"{o} / best baseline")
        if has_hybrid:
            header.append(f"{o} / hybrid")
        if has_peer:
            header.append(f"{o} / {PEER.removeprefix(BASELINE_PREFIX)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in metrics:
        row = comp["rows"][m]
        cells = [m + (" ↓" if row["lower_is_better"] else "")]
        for s in systems:
            cell = _fmt(row["values"][s], m)
            if s == row["best_baseline"] and len(comp["baselines"]) > 1:
                cell = f"**{cell}**"
            cells.append(cell)
        for o in ours:
            cells.append(_fmt_ratio(row["ratios"][o]["vs_best"]))
            if has_hybrid:
                cells.append(_fmt_ratio(row["ratios"][o]["vs_hybrid"]))
            if has_peer:
                cells.append(_fmt_ratio(row["ratios"][o]["vs_peer"]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_markdown(report: Mapping[str, Any]) -> str:
    comp = report["comparison"]
    systems = list(report["systems"])
    config = report["config"]
    ds = report["dataset"]
    budgets = ", ".join(f"{b:,}" for b in config["token_budgets"])
    lines = [
        f"# Retrieval benchmark: {ds['name']}",
        "",
        f"{ds['conversations']} conversations, {ds['turns']} turns, {ds['questions']} questions "
        f"(evidence-eligible {ds['eligible']['evidence']}, session-eligible {ds['eligible']['session']}, "
        f"with answers {ds['eligible']['answer']}); total wall time {report['wall_s']:.1f} s.",
        "",
        f"Every figure is measured on the exact prompt text each system returns, counted with one tokenizer "
        f"(`{config['token_counter']}`): evidence recall from the items in that text, answer containment on the "
        f"text itself. How each system was asked, per question and budget N ({budgets} tokens):",
        "",
    ]
    lines += [f"- `{s}`: {report['systems'][s].get('call_path') or '(not stated)'}" for s in systems]
    lines.append("")
    violations = report.get("budget_violations") or {}
    if violations:
        lines += [
            "**BUDGET EXCEEDED**: "
            + ", ".join(f"`{s}` {n} text(s) over their budget" for s, n in violations.items())
            + ". These figures do not hold for the budgets they name.",
            "",
        ]

    # the headline: evidence recall and answer containment at each budget
    heads_cat = headline_metrics(config["token_budgets"])
    heads = [m for m in comp["rows"] if m in set(heads_cat)]
    lines += [f"## At {budgets} tokens of rendered text", ""]
    lines += _comparison_table(report, heads)
    lines += ["", "**bold** = best baseline. Ratios are ours / baseline.", ""]

    # how many times fewer tokens: the budget the hybrid baseline needs for our evidence at B
    efficiency = report.get("token_efficiency") or {}
    if efficiency:
        lines += [
            "## Token efficiency",
            "",
            f"The budget at which `{HYBRID}` reaches each system's evidence (all) at B, interpolated "
            "linearly between the measured budgets, and how many times B that is; `>` where it never "
            "reaches it within the largest measured budget.",
            "",
            "| system | " + " | ".join(f"B = {int(b):,}" for b in config["token_budgets"]) + " |",
            "|---|" + "---|" * len(config["token_budgets"]),
        ]
        for name, eff in efficiency.items():
            cells = []
            for b in config["token_budgets"]:
                row = eff["rows"].get(str(b))
                if row is None:
                    cells.append("–")
                elif row["hybrid_tokens"] is None:
                    cells.append(f"> {eff['max_measured']:,} (> {eff['max_measured'] / b:.2f}×)")
                else:
                    cells.append(f"{row['hybrid_tokens']:,} ({row['times']:.2f}×)")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")

    # the rendered tokens: every text within its budget
    lines += [
        f"## Rendered tokens per text (`{config['token_counter']}`)",
        "",
        "| system | call | budget | mean | p50 | max | over budget | items (mean) | own count differs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in systems:
        for suffix, stats in report["systems"][s]["rendered"].items():
            call = (
                f"token_budget={suffix.removesuffix('tok')}" if suffix.endswith("tok") else f"limit={suffix}"
            )
            pct = stats["over_budget_pct"]
            over = "–" if pct is None else f"{stats['over_budget']} ({pct:.1f}%)"
            differs = stats["own_count_differs"]
            lines.append(
                f"| {s} | {call} | {stats['budget']:,} | {_fmt_tokens(stats['mean'], 1)} | "
                f"{_fmt_tokens(stats['p50'])} | {_fmt_tokens(stats['max'])} | {over} | "
                f"{_fmt_tokens(stats['items_mean'], 1)} | "
                f"{'–' if differs is None else differs} |"
            )
    lines += [
        "",
        "own count differs = questions where the system's own token count of its text (uniko: "
        "`bundle.total_tokens`) is not the harness's.",
        "",
    ]

    # per category, with the ratio to the hybrid baseline
    cats: list[str] = sorted(
        {c for s in systems for m in heads_cat for c in report["systems"][s]["quality"][m]["by_category"]}
    )
    if cats:
        lines += ["## Per category", ""]
        lines.append("| metric | system | " + " | ".join(cats) + " |")
        lines.append("|" + "---|" * (len(cats) + 2))
        for m in heads_cat:
            by = {s: report["systems"][s]["quality"][m]["by_category"] for s in systems}
            for s in systems:
                lines.append(f"| {m} | {s} | " + " | ".join(_fmt(by[s].get(c), m) for c in cats) + " |")
            if HYBRID in systems:
                for o in comp["ours"]:
                    ratios = [_fmt_ratio(_ratio(by[o].get(c), by[HYBRID].get(c))) for c in cats]
                    lines.append(f"| {m} | {o} / hybrid | " + " | ".join(ratios) + " |")
        lines.append("")

    # diagnostics: the item-limit calls, session metrics, costs, runtime
    rest = [m for m in comp["rows"] if m not in set(heads)]
    if rest:
        limits = ", ".join(str(k) for k in config["item_limits"]) or "none"
        lines += [
            "## Diagnostics",
            "",
            f"`@k` rows: one call per question with `limit=k` (k = {limits}) at the default budget "
            f"({config['default_token_budget']:,} tokens), scored on its rendered text like the headline. "
            "↓ = lower is better.",
            "",
        ]
        lines += _comparison_table(report, rest)
        lines.append("")
    timed = [
        (s, k, v) for s in systems for k, v in report["systems"][s]["runtime"].get("timings", {}).items()
    ]
    if timed:
        lines += [
            "## System timings",
            "",
            "A system's own timings of its steps (e.g. mem0's `add` per turn and each `search`), seconds.",
            "",
            "| system | step | n | mean | p50 | p95 |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {s} | {k} | {v['n']} | {_fmt(v['mean'])} | {_fmt(v['p50'])} | {_fmt(v['p95'])} |"
            for s, k, v in timed
        ]
        lines.append("")
    if report.get("llm"):
        lines += render_llm_markdown(report["llm"])
    return "\n".join(lines)


def render_llm_markdown(llm: Mapping[str, Any]) -> list[str]:
    """The LLM stage (``report["llm"]``): accuracy per system and category, tokens per question."""
    systems: Mapping[str, Any] = llm["systems"]
    cats = sorted({c for s in systems.values() for c in s["accuracy_by_category"]})
    lines = [
        f"LLM stage: answers by `{llm['answer_model']}`, graded by `{llm['judge_model']}`, "
        f"from each question's bundle at {llm['bundle_budget']} tokens.",
        "",
        "| system | accuracy | "
        + " | ".join(cats)
        + (" | " if cats else "")
        + "n | answer tok/q | judge tok/q |",
        "|" + "---|" * (len(cats) + 5),
    ]
    for name, s in systems.items():
        est = "~" if s["tokens_estimated"] else ""
        by = [_fmt(s["accuracy_by_category"].get(c), "answer") for c in cats]
        lines.append(
            f"| {name} | {_fmt(s['accuracy'], 'answer')} | "
            + "".join(f"{b} | " for b in by)
            + f"{s['n']} | {est}{_fmt(s['answer_tokens_per_question'])} | {est}{_fmt(s['judge_tokens_per_question'])} |"
        )
    lines += ["", "~ = estimated token counts (the model reported no usage).", ""]
    return lines


def write_outputs(
    report: Mapping[str, Any],
    records: Sequence[QuestionRecord],
    *,
    out: str | Path | None = None,
    md: str | Path | None = None,
    per_question: str | Path | None = None,
) -> str:
    text = render_markdown(report)
    for target in (out, md, per_question):
        if target is not None:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
    if out is not None:
        Path(out).write_text(
            json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    if md is not None:
        Path(md).write_text(text + "\n", encoding="utf-8")
    if per_question is not None:
        with Path(per_question).open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n")
    return text
