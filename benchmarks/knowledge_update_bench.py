"""Knowledge updates: does the rendered memory serve what is true *now*?

.venv/bin/python benchmarks/knowledge_update_bench.py                         # part A, uniko + baselines
.venv/bin/python benchmarks/knowledge_update_bench.py --part b --per-question q.jsonl
.venv/bin/python benchmarks/knowledge_update_bench.py --systems uniko --budgets 200,500 --show 5

The fixture (``benchmarks/data/knowledge_updates/part_<x>.json``) holds multi-session conversations
written for this benchmark, in which a value changes (a diet, a city, a job, a moved date, a
correction, a cancellation, an implicit change), plus questions whose value never changed and
questions about the value before a change. Part A was written before the supersession rules and
built on; parts B, C and D were each written by someone who saw no rule, after the rules of their
session froze: the newest unseen part is the honest figure (report every part separately; a part
that rules were tuned on after its first run is seen).

Every system is asked through the harness (uniko: the default call path, ``agent.recall(question,
token_budget=N)``, each session committed and flushed, finalised, one consolidation and sweep) and
scored on the text it renders:

- changed: *current-correct* when an answer string is in the text and no unmarked stale string
  comes before it (a stale value that is absent, marked "no longer true", or comes after the
  current one is fine); *old first* when an unmarked stale string comes before every answer string
  (or the answer is absent while a stale string is present, unmarked);
- changed, *by entry* (a second view, printed after the main table): the same, except that a stale
  string inside the entry (line) that first carries an answer does not count. A quoted correction
  ("I told you noon, scratch that, after 8") names the old value first in its own words; the strict
  score counts it as old first, this view does not;
- unchanged and past: correct when an answer string is in the text.

Strings match case-insensitively on word boundaries, with ordinal suffixes ("19th") and curly
apostrophes normalised.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from benchmarks.harness.format import Conversation, Question, Session, Turn

DATA_DIR = Path(__file__).resolve().parent / "data" / "knowledge_updates"
DEFAULT_BUDGETS = (200, 500, 1000)
DEFAULT_SYSTEMS = ("uniko", "baseline-bm25", "baseline-hybrid")
#: How a renderer marks a superseded statement; a stale value on such a line does not count against.
MARKED = re.compile(r"no longer true", re.IGNORECASE)
Kind = Literal[
    "diet",
    "residence",
    "job",
    "relationship",
    "pets",
    "count",
    "best_time",
    "planned_date",
    "booking",
    "preference",
    "other",
]
Wording = Literal["explicit", "correction", "negation", "cancellation", "implicit", "none"]
Status = Literal["changed", "unchanged", "past"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KUTurn(_Model):
    id: str = Field(min_length=1)
    speaker: str
    text: str


class KUSession(_Model):
    id: str = Field(min_length=1)
    start: AwareDatetime
    turns: list[KUTurn]


class KUQuestion(_Model):
    id: str = Field(min_length=1)
    text: str
    kind: Kind
    wording: Wording
    status: Status
    subject: str
    third_person: bool = False
    answer: list[str] = Field(min_length=1)
    answer_turns: list[str] = Field(min_length=1)
    stale: list[str] = Field(default_factory=list)
    stale_turns: list[str] = Field(default_factory=list)
    question_time: AwareDatetime | None = None

    @model_validator(mode="after")
    def _stale_only_when_changed(self) -> KUQuestion:
        if (self.status == "changed") != bool(self.stale):
            raise ValueError(f"{self.id}: stale values are given exactly for changed questions")
        return self


class KUConversation(_Model):
    id: str = Field(min_length=1)
    speakers: list[str]
    sessions: list[KUSession]
    questions: list[KUQuestion]

    @model_validator(mode="after")
    def _turns_exist(self) -> KUConversation:
        ids = {t.id for s in self.sessions for t in s.turns}
        for q in self.questions:
            missing = [t for t in [*q.answer_turns, *q.stale_turns] if t not in ids]
            if missing:
                raise ValueError(f"{self.id}/{q.id}: unknown turns {missing}")
        return self

    def question_time(self, q: KUQuestion) -> datetime:
        """When a question is asked: as given, else a day after the last session started."""
        return q.question_time or self.sessions[-1].start + timedelta(days=1)

    def to_harness(self) -> Conversation:
        """The harness's conversation (turns 30 s apart from their session's start)."""
        sessions = [
            Session(
                id=s.id,
                start=s.start,
                turns=[
                    Turn(
                        id=t.id, speaker=t.speaker, text=t.text, timestamp=s.start + timedelta(seconds=30 * i)
                    )
                    for i, t in enumerate(s.turns)
                ],
            )
            for s in self.sessions
        ]
        questions = [
            Question(
                id=q.id,
                text=q.text,
                question_time=self.question_time(q),
                answer=q.answer[0],
                gold_turn_ids=q.answer_turns,
                category=q.kind,
            )
            for q in self.questions
        ]
        return Conversation(id=self.id, speakers=self.speakers, sessions=sessions, questions=questions)


class KUDataset(_Model):
    name: str
    part: str
    conversations: list[KUConversation]


def load(part: str) -> KUDataset:
    path = DATA_DIR / f"part_{part}.json"
    return KUDataset.model_validate_json(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------- scoring
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)


def normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return _ORDINAL.sub(r"\1", text).casefold()


def _positions(text: str, needles: Sequence[str]) -> list[int]:
    found = []
    for needle in needles:
        pattern = r"(?<!\w)" + re.escape(normalise(needle)) + r"(?!\w)"
        found += [m.start() for m in re.finditer(pattern, text)]
    return sorted(found)


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)]


def score(text: str, q: KUQuestion) -> dict[str, Any]:
    """The question's outcome on one rendered text (see the module docstring)."""
    norm = normalise(text)
    answers = _positions(norm, q.answer)
    stale = [p for p in _positions(norm, q.stale) if not MARKED.search(_line_at(norm, p))]
    first_answer = answers[0] if answers else None
    if q.status != "changed":
        return {"correct": first_answer is not None, "old_first": False, "answer_in": bool(answers)}
    stale_before = [p for p in stale if first_answer is None or p < first_answer]
    entry_start = norm.rfind("\n", 0, first_answer) + 1 if first_answer is not None else 0
    before_entry = [p for p in stale if first_answer is None or p < entry_start]
    return {
        "correct": first_answer is not None and not stale_before,
        "old_first": bool(stale_before),
        "answer_in": bool(answers),
        "correct_by_entry": first_answer is not None and not before_entry,
        "old_first_by_entry": bool(before_entry),
    }


# ---------------------------------------------------------------------------------- running
async def run_system(
    name: str, factory: Any, data: KUDataset, budgets: Sequence[int]
) -> tuple[list[dict[str, Any]], float]:
    records: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for conv in data.conversations:
        system = factory()
        harness_conv = conv.to_harness()
        await system.setup(harness_conv)
        try:
            for q, hq in zip(conv.questions, harness_conv.questions, strict=True):
                for budget in budgets:
                    result = await system.retrieve(hq, conv.question_time(q), token_budget=budget)
                    outcome = score(result.text, q)
                    records.append(
                        {
                            "system": name,
                            "conversation": conv.id,
                            "question": q.id,
                            "text_q": q.text,
                            "status": q.status,
                            "kind": q.kind,
                            "wording": q.wording,
                            "third_person": q.third_person,
                            "budget": budget,
                            **outcome,
                            "text": result.text,
                        }
                    )
        finally:
            await system.close()
    return records, time.perf_counter() - t0


def _rate(rows: Sequence[dict[str, Any]], key: str) -> str:
    if not rows:
        return "–"
    return f"{sum(1 for r in rows if r[key]) / len(rows):.3f}"


def summarise(records: Sequence[dict[str, Any]], budgets: Sequence[int]) -> str:
    """A markdown table per system and budget: changed (current-correct, old first), unchanged,
    past; then current-correct by wording and kind at each budget."""
    systems = list(dict.fromkeys(r["system"] for r in records))
    lines = [
        "| system | budget | changed: current-correct | changed: old first | unchanged correct | past correct | n (changed/unchanged/past) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in systems:
        for b in budgets:
            rows = [r for r in records if r["system"] == s and r["budget"] == b]
            by = defaultdict(list)
            for r in rows:
                by[r["status"]].append(r)
            lines.append(
                f"| {s} | {b} | {_rate(by['changed'], 'correct')} | {_rate(by['changed'], 'old_first')} | "
                f"{_rate(by['unchanged'], 'correct')} | {_rate(by['past'], 'correct')} | "
                f"{len(by['changed'])}/{len(by['unchanged'])}/{len(by['past'])} |"
            )
    lines += [
        "",
        "Changed questions by entry (a stale value inside the entry that first carries the new one"
        " does not count):",
        "",
        "| system | budget | current-correct by entry | old first by entry |",
        "|---|---|---|---|",
    ]
    for s in systems:
        for b in budgets:
            rows = [r for r in records if r["system"] == s and r["budget"] == b and r["status"] == "changed"]
            lines.append(
                f"| {s} | {b} | {_rate(rows, 'correct_by_entry')} | {_rate(rows, 'old_first_by_entry')} |"
            )
    for facet in ("wording", "kind"):
        values = sorted({r[facet] for r in records if r["status"] == "changed"})
        lines += ["", f"Changed questions, current-correct by {facet}:", ""]
        lines.append("| system | budget | " + " | ".join(values) + " |")
        lines.append("|---|---|" + "---|" * len(values))
        for s in systems:
            for b in budgets:
                rows = [
                    r for r in records if r["system"] == s and r["budget"] == b and r["status"] == "changed"
                ]
                cells = [_rate([r for r in rows if r[facet] == v], "correct") for v in values]
                lines.append(f"| {s} | {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.harness.systems import resolve_available

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--part",
        default="a",
        help="fixture part: a (built on), b ... f (each held out until its first run; f is unread)",
    )
    ap.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS))
    ap.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)))
    ap.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    ap.add_argument(
        "--per-question", type=Path, default=None, help="write every outcome (with the text) here"
    )
    ap.add_argument(
        "--show", type=int, default=0, help="print the text of the first N failed changed questions"
    )
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    data = load(args.part)
    if args.conversations:
        data = data.model_copy(update={"conversations": data.conversations[: args.conversations]})
    systems, skipped = resolve_available(args.systems)
    for line in skipped:
        print(line, file=sys.stderr)
    records: list[dict[str, Any]] = []
    for name, factory in systems.items():
        rows, secs = asyncio.run(run_system(name, factory, data, budgets))
        print(f"{name}: {len(rows)} outcomes in {secs:.1f} s", file=sys.stderr)
        records += rows
    n_q = sum(len(c.questions) for c in data.conversations)
    print(f"# {data.name}: {len(data.conversations)} conversations, {n_q} questions\n")
    print(summarise(records, budgets))
    if args.per_question:
        with args.per_question.open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")
    if args.show:
        first = next(iter(systems), None)
        failed = [
            r for r in records if r["system"] == first and r["status"] == "changed" and not r["correct"]
        ]
        for r in failed[: args.show]:
            print(f"\n--- {r['conversation']}/{r['question']} @{r['budget']}: {r['text_q']}\n{r['text']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
