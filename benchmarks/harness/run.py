"""The benchmark runner: every system, fresh per conversation, over the same questions; metrics and reports.

A system implements ``MemorySystem``. Per conversation the runner builds a fresh instance, times ``setup`` (ingest of
every session), then asks each question with ``reference_ts`` = the question time, or the start of the
conversation's last session when the question has none (LoCoMo).

Retrieval calls. A system whose ``recall_per_budget`` is false (the baselines) is called **once** per question with
``limit=max(item_limits)`` and ``token_budget=max(token_budgets)`` and must return at least that many items and enough
items to pass that budget; the runner cuts every item limit and budget from that one ranked list. A system whose
``recall_per_budget`` is true is called once with ``limit=max(item_limits), token_budget=None`` (item-limit metrics)
and once more per token budget with ``limit=None, token_budget=B`` (budget metrics). Either way the runner applies the
budget walk (``metrics.within_budget``) to what comes back, so no system is credited with more than B tokens.

Which questions count (generic; gives LoCoMo's "categories 1-4" automatically because category 5 is abstention):
evidence metrics — not abstention, ≥ 1 gold turn; session metrics — not abstention, ≥ 1 gold session; answer
containment — not abstention, non-empty answer. ``categories`` restricts all three further. Token and latency figures
cover every question asked.
"""

from __future__ import annotations

import asyncio
import gc
import json
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .format import Conversation, EvalDataset, Question
from .metrics import (
    RetrievalResult,
    RetrievedItem,
    answer_contained,
    bundle_tokens,
    evidence_any,
    evidence_hit_rate,
    evidence_recall_all,
    first_k,
    mean_by_category,
    ndcg_at_k,
    recall_all_at_k,
    recall_any_at_k,
    summary_stats,
    within_budget,
)

REPORT_SCHEMA = "uniko-memory-bench/1"
BASELINE_PREFIX = "baseline-"
HYBRID = "baseline-hybrid"


@runtime_checkable
class MemorySystem(Protocol):
    """What the runner drives. ``recall_per_budget`` is optional (default False); see the module docstring."""

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
    item_limits: tuple[int, ...] = (5, 10, 15)
    token_budgets: tuple[int, ...] = (500, 1000, 2000)
    containment_budgets: tuple[int, ...] = (1000, 2000)
    hit_rate_k: int = 15
    categories: frozenset[str] | None = None
    max_conversations: int | None = None
    conversation_ids: frozenset[str] | None = None  # only these conversations (before max_conversations)
    max_questions: int | None = None  # only the first N questions of each conversation (quick runs)
    keep_bundle_budget: int | None = (
        None  # store the bundle text at this budget per question (for the LLM stage)
    )
    progress: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "item_limits": list(self.item_limits),
            "token_budgets": list(self.token_budgets),
            "containment_budgets": list(self.containment_budgets),
            "hit_rate_k": self.hit_rate_k,
            "categories": sorted(self.categories) if self.categories is not None else None,
            "max_conversations": self.max_conversations,
            "conversation_ids": sorted(self.conversation_ids) if self.conversation_ids is not None else None,
            "max_questions": self.max_questions,
        }


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


def reference_time(conversation: Conversation, question: Question) -> datetime:
    if question.question_time is not None:
        return question.question_time
    if not conversation.sessions:
        raise ValueError(f"conversation {conversation.id!r} has no sessions")
    return max(s.start for s in conversation.sessions)


def is_baseline(name: str) -> bool:
    return name.startswith(BASELINE_PREFIX)


# --------------------------------------------------------------------------------------------------------------------
# Per-question scoring
# --------------------------------------------------------------------------------------------------------------------


def score_question(
    config: BenchConfig,
    question: Question,
    turn_text: Mapping[str, str],
    items: Sequence[RetrievedItem],
    budget_items: Mapping[int, Sequence[RetrievedItem]],
) -> dict[str, float]:
    """All applicable metrics for one question. ``budget_items[B]`` is what to cut budget B from."""
    out: dict[str, float] = {}
    in_scope = config.categories is None or question.category in config.categories
    evaluable = in_scope and not question.abstention
    cuts_k = {k: first_k(items, k) for k in config.item_limits}
    cuts_b = {b: within_budget(budget_items[b], b) for b in config.token_budgets}

    for k, cut in cuts_k.items():
        out[f"bundle_tokens@{k}"] = float(bundle_tokens(cut))
    for b, cut in cuts_b.items():
        out[f"bundle_tokens@{b}tok"] = float(bundle_tokens(cut))
        out[f"bundle_items@{b}tok"] = float(len(cut))

    if evaluable and question.gold_turn_ids:
        gold = question.gold_turn_ids
        for k, cut in cuts_k.items():
            out[f"evidence_any@{k}"] = evidence_any(cut, gold)
            out[f"evidence_all@{k}"] = evidence_recall_all(cut, gold)
        for b, cut in cuts_b.items():
            out[f"evidence_any@{b}tok"] = evidence_any(cut, gold)
            out[f"evidence_all@{b}tok"] = evidence_recall_all(cut, gold)
        evidence_texts = [turn_text[t] for t in gold]
        recalled = [i.content for i in first_k(items, config.hit_rate_k)]
        out[f"evidence_hit@{config.hit_rate_k}"] = evidence_hit_rate(
            recalled, evidence_texts, question.answer
        )

    if evaluable and question.gold_session_ids:
        gold_s = question.gold_session_ids
        for k in config.item_limits:
            out[f"session_recall_any@{k}"] = recall_any_at_k(items, gold_s, k)
            out[f"session_recall_all@{k}"] = recall_all_at_k(items, gold_s, k)
            out[f"session_ndcg@{k}"] = ndcg_at_k(items, gold_s, k)

    if evaluable and question.answer and question.answer.strip():
        for b in config.containment_budgets:
            cut = cuts_b[b] if b in cuts_b else within_budget(budget_items[b], b)
            text = "\n".join(i.content for i in cut)
            out[f"answer_contains@{b}tok"] = 1.0 if answer_contained(text, question.answer) else 0.0
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


async def run_system(
    name: str, factory: SystemFactory, conversations: Sequence[Conversation], config: BenchConfig
) -> SystemRun:
    budgets = sorted(config.token_budgets)
    budgets_needed = sorted(set(budgets) | set(config.containment_budgets))
    max_k = max(config.item_limits)
    records: list[QuestionRecord] = []
    setup_times: list[float] = []
    t_start = time.perf_counter()
    for conv in _progress(conversations, enabled=config.progress, desc=name, unit="conv"):
        system = factory()
        per_budget = bool(getattr(system, "recall_per_budget", False))
        turn_text = {t.id: t.text for t in conv.turns()}
        t0 = time.perf_counter()
        await system.setup(conv)
        setup_times.append(time.perf_counter() - t0)
        try:
            questions = _progress(
                conv.questions, enabled=config.progress, desc=conv.id, unit="q", leave=False
            )
            for q in questions:
                ts = reference_time(conv, q)
                if per_budget:
                    main = await system.retrieve(q, ts, limit=max_k, token_budget=None)
                    by_budget = {
                        b: (await system.retrieve(q, ts, limit=None, token_budget=b)).items
                        for b in budgets_needed
                    }
                else:
                    main = await system.retrieve(q, ts, limit=max_k, token_budget=max(budgets_needed))
                    by_budget = dict.fromkeys(budgets_needed, main.items)
                rec = QuestionRecord(
                    system=name,
                    conversation_id=conv.id,
                    question_id=q.id,
                    category=q.category,
                    abstention=q.abstention,
                    metrics=score_question(config, q, turn_text, main.items, by_budget),
                    latency_s=main.latency_s,
                )
                if config.keep_bundle_budget is not None:
                    b = config.keep_bundle_budget
                    src = by_budget.get(b, main.items)
                    rec.bundle_text = "\n".join(i.content for i in within_budget(src, b))
                records.append(rec)
        finally:
            await system.close()
        del system
        gc.collect()
    return SystemRun(
        name=name,
        records=records,
        setup_s=setup_times,
        wall_s=time.perf_counter() - t_start,
        peak_rss_mb=_peak_rss_mb(),
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

LOWER_IS_BETTER_PREFIXES = ("bundle_tokens", "bundle_items", "latency", "setup", "wall", "peak_rss")


def metric_order(config: BenchConfig) -> list[str]:
    """Quality metrics in report order."""
    names: list[str] = []
    for k in config.item_limits:
        names += [f"evidence_any@{k}", f"evidence_all@{k}"]
    for b in config.token_budgets:
        names += [f"evidence_any@{b}tok", f"evidence_all@{b}tok"]
    names.append(f"evidence_hit@{config.hit_rate_k}")
    for k in config.item_limits:
        names += [f"session_recall_any@{k}", f"session_recall_all@{k}", f"session_ndcg@{k}"]
    names += [f"answer_contains@{b}tok" for b in config.containment_budgets]
    return names


def cost_order(config: BenchConfig) -> list[str]:
    names = [f"bundle_tokens@{k}" for k in config.item_limits]
    for b in config.token_budgets:
        names += [f"bundle_tokens@{b}tok", f"bundle_items@{b}tok"]
    return names


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
    cost: dict[str, Any] = {}
    for m in cost_order(config):
        vals = [r.metrics[m] for r in run.records if m in r.metrics]
        cost[m] = {k: _r(v, 3) for k, v in summary_stats(vals).items()}
    lat = summary_stats([r.latency_s for r in run.records])
    setup = summary_stats(run.setup_s)
    return {
        "quality": quality,
        "cost": cost,
        "runtime": {
            "questions": len(run.records),
            "latency_mean_s": _r(lat["mean"]),
            "latency_p50_s": _r(lat["p50"]),
            "latency_p95_s": _r(lat["p95"]),
            "setup_total_s": _r(sum(run.setup_s), 3),
            "setup_mean_s": _r(setup["mean"], 3),
            "wall_s": _r(run.wall_s, 3),
            "peak_rss_mb": _r(run.peak_rss_mb, 1),
        },
    }


def _flat_figures(summary: Mapping[str, Any], config: BenchConfig) -> dict[str, float | None]:
    out: dict[str, float | None] = {m: summary["quality"][m]["overall"] for m in metric_order(config)}
    for m in cost_order(config):
        out[f"{m} mean"] = summary["cost"][m]["mean"]
        if not m.startswith("bundle_items"):
            out[f"{m} p95"] = summary["cost"][m]["p95"]
    rt = summary["runtime"]
    out["latency p50 s"] = rt["latency_p50_s"]
    out["latency p95 s"] = rt["latency_p95_s"]
    out["setup total s"] = rt["setup_total_s"]
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


def render_markdown(report: Mapping[str, Any]) -> str:
    comp = report["comparison"]
    systems = list(report["systems"])
    ours = comp["ours"]
    has_hybrid = HYBRID in systems
    ds = report["dataset"]
    lines = [
        f"# Retrieval benchmark: {ds['name']}",
        "",
        f"{ds['conversations']} conversations, {ds['turns']} turns, {ds['questions']} questions "
        f"(evidence-eligible {ds['eligible']['evidence']}, session-eligible {ds['eligible']['session']}, "
        f"with answers {ds['eligible']['answer']}); total wall time {report['wall_s']:.1f} s.",
        "",
    ]
    header = ["metric", *systems]
    for o in ours:
        header.append(f"{o} / best baseline")
        if has_hybrid:
            header.append(f"{o} / hybrid")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for m, row in comp["rows"].items():
        cells = [m + (" ↓" if row["lower_is_better"] else "")]
        for s in systems:
            v = row["values"][s]
            cell = _fmt(v, m)
            if s == row["best_baseline"] and len(comp["baselines"]) > 1:
                cell = f"**{cell}**"
            cells.append(cell)
        for o in ours:
            cells.append(_fmt_ratio(row["ratios"][o]["vs_best"]))
            if has_hybrid:
                cells.append(_fmt_ratio(row["ratios"][o]["vs_hybrid"]))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "↓ = lower is better; **bold** = best baseline. Ratios are ours / baseline.", ""]

    # per-category breakdown of the headline metrics
    config = report["config"]
    k_max = max(config["item_limits"])
    heads = [f"evidence_all@{k_max}"] + [f"evidence_all@{b}tok" for b in config["token_budgets"]]
    heads += [f"answer_contains@{b}tok" for b in config["containment_budgets"]]
    cats: list[str] = sorted(
        {c for s in systems for m in heads for c in report["systems"][s]["quality"][m]["by_category"]}
    )
    if cats:
        lines.append("| metric | system | " + " | ".join(cats) + " |")
        lines.append("|" + "---|" * (len(cats) + 2))
        for m in heads:
            for s in systems:
                bc = report["systems"][s]["quality"][m]["by_category"]
                lines.append(f"| {m} | {s} | " + " | ".join(_fmt(bc.get(c), m) for c in cats) + " |")
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
