"""Optional LLM stage: answer each question from its recall bundle, then grade the answer CORRECT / WRONG.

Works with any LangChain chat model (``BaseChatModel``); nothing here opens a network connection by itself.
Abstention questions are skipped (as upstream uniko does for LoCoMo's adversarial category).

Label parsing (``parse_judge_label``): the ``label`` field of the last JSON object in the reply that has one with
value CORRECT or WRONG; otherwise the last upper-case ``CORRECT`` / ``WRONG`` word in the reply; otherwise (ambiguous
or empty) WRONG.

Token accounting: a reply's ``usage_metadata`` (input + output tokens) when the model reports it; otherwise the
prompt and reply are counted with ``token_counter`` (default ``uniko_memory.tokens.count_tokens``) and the report
marks the figures as estimated.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .format import EvalDataset
from .metrics import mean_by_category
from .run import QuestionRecord

ANSWER_SYSTEM_PROMPT = """\
You answer questions about earlier conversations using only the memory excerpts you are given.
Excerpts may begin with the date of their conversation session in parentheses; use those dates to turn relative
expressions such as "yesterday" or "last week" into absolute dates. When the excerpts make an answer likely, give it
rather than declining. Reply with the answer only, in at most two short sentences."""

ANSWER_USER_TEMPLATE = """\
Memory excerpts:
{bundle}

Current date: {question_date}
Question: {question}
Answer:"""

JUDGE_SYSTEM_PROMPT = """\
You grade a candidate answer to a question about a past conversation against a reference answer.
Grade CORRECT when the candidate states the same essential fact as the reference: wording, length and extra detail
do not matter as long as nothing contradicts the reference. For dates and times, accept any format or relative
phrasing that points to the same day, month or period as the reference. Grade WRONG when the key fact is missing
or different, when the candidate contradicts the reference, or when it declines to answer.
Reply with a single JSON object and nothing else, for example {"reason": "<one sentence>", "label": "CORRECT"}
(or "WRONG")."""

JUDGE_USER_TEMPLATE = """\
Question: {question}
Reference answer: {gold}
Candidate answer: {answer}"""

_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")


@dataclass(frozen=True)
class JudgeCase:
    question_id: str
    category: str
    question: str
    gold_answer: str
    bundle_text: str
    question_date: str | None = None


@dataclass(frozen=True)
class JudgedAnswer:
    question_id: str
    category: str
    answer: str
    label: str  # CORRECT, WRONG or AMBIGUOUS (counted as wrong)
    answer_tokens: int
    judge_tokens: int
    estimated_tokens: bool

    @property
    def correct(self) -> bool:
        return self.label == "CORRECT"


def parse_judge_label(text: str) -> str:
    """``CORRECT`` / ``WRONG`` / ``AMBIGUOUS`` (see the module docstring)."""
    json_label: str | None = None
    for m in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            for key, value in obj.items():
                if str(key).lower() == "label" and isinstance(value, str):
                    v = value.strip().upper()
                    if v in ("CORRECT", "WRONG"):
                        json_label = v
    if json_label is not None:
        return json_label
    words = _LABEL_WORD.findall(text)
    return words[-1] if words else "AMBIGUOUS"


def _message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def _default_counter() -> Callable[[str], int]:
    from uniko_memory.tokens import count_tokens

    return count_tokens


async def _call(
    model: Any, system: str, user: str, counter: Callable[[str], int] | None
) -> tuple[str, int, bool]:
    from langchain_core.messages import HumanMessage, SystemMessage

    reply = await model.ainvoke([SystemMessage(content=system), HumanMessage(content=user)])
    text = _message_text(reply)
    usage = getattr(reply, "usage_metadata", None)
    if usage:
        return text, int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)), False
    count = counter or _default_counter()
    return text, count(system) + count(user) + count(text), True


async def answer_and_judge(
    case: JudgeCase,
    answer_model: Any,
    judge_model: Any | None = None,
    *,
    token_counter: Callable[[str], int] | None = None,
) -> JudgedAnswer:
    user = ANSWER_USER_TEMPLATE.format(
        bundle=case.bundle_text or "(none)",
        question_date=case.question_date or "unknown",
        question=case.question,
    )
    answer, a_tokens, a_est = await _call(answer_model, ANSWER_SYSTEM_PROMPT, user, token_counter)
    answer = answer.strip()
    verdict, j_tokens, j_est = await _call(
        judge_model or answer_model,
        JUDGE_SYSTEM_PROMPT,
        JUDGE_USER_TEMPLATE.format(question=case.question, gold=case.gold_answer, answer=answer),
        token_counter,
    )
    return JudgedAnswer(
        question_id=case.question_id,
        category=case.category,
        answer=answer,
        label=parse_judge_label(verdict),
        answer_tokens=a_tokens,
        judge_tokens=j_tokens,
        estimated_tokens=a_est or j_est,
    )


async def run_llm_stage(
    cases: Sequence[JudgeCase],
    answer_model: Any,
    judge_model: Any | None = None,
    *,
    concurrency: int = 1,
    token_counter: Callable[[str], int] | None = None,
) -> tuple[dict[str, Any], list[JudgedAnswer]]:
    """Answer and grade every case; returns (summary, per-case results in input order)."""
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(case: JudgeCase) -> JudgedAnswer:
        async with sem:
            return await answer_and_judge(case, answer_model, judge_model, token_counter=token_counter)

    results = list(await asyncio.gather(*(one(c) for c in cases)))
    acc = mean_by_category((r.category, 1.0 if r.correct else 0.0) for r in results)
    n = len(results)
    summary = {
        "accuracy": acc["overall"],
        "accuracy_by_category": acc["by_category"],
        "n": n,
        "ambiguous": sum(1 for r in results if r.label == "AMBIGUOUS"),
        "answer_tokens_per_question": (sum(r.answer_tokens for r in results) / n) if n else None,
        "judge_tokens_per_question": (sum(r.judge_tokens for r in results) / n) if n else None,
        "tokens_estimated": any(r.estimated_tokens for r in results),
    }
    return summary, results


def cases_from_records(
    dataset: EvalDataset, records: Iterable[QuestionRecord], *, system: str | None = None
) -> list[JudgeCase]:
    """Judge cases from runner records that kept their bundle text (``BenchConfig.keep_bundle_budget``).

    Abstention questions and questions without a gold answer are skipped.
    """
    by_id = {(c.id, q.id): (c, q) for c in dataset.conversations for q in c.questions}
    out: list[JudgeCase] = []
    for r in records:
        if system is not None and r.system != system:
            continue
        conv, q = by_id[(r.conversation_id, r.question_id)]
        if q.abstention or not q.answer or r.bundle_text is None:
            continue
        when = q.question_time or max(s.start for s in conv.sessions)
        out.append(
            JudgeCase(
                question_id=q.id,
                category=q.category,
                question=q.text,
                gold_answer=q.answer,
                bundle_text=r.bundle_text,
                question_date=when.strftime("%d %B %Y"),
            )
        )
    return out
