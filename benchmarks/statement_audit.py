"""Audit every Observation and Fact text a store holds after ingesting LoCoMo-format conversations (issue 19).

Per conversation (``--conversations N`` limits how many, from the start of the file): a fresh
in-memory store, ingested exactly as the harness does (``benchmarks/harness/uniko_system.py``
``UnikoSystem.setup``: sessions committed as units, post-ingest flushed per session, sessions
finalised, one consolidation run and one cortex sweep; shipped defaults, local embedder, spaCy).
Then every Observation (``content``) and every Fact (``Fact.statement()``, valid or invalidated) is
read back from the store (``store.find(agent, Tier.X)``) and checked:

* **shape** - the grammar kinds of ``benchmarks/statement_checks.py`` (bare-lemma verbs, "X be",
  dangling possessives, doubled subjects, bad starts, caption garbage, repeated words, unresolved
  first person, too short; plus ``name_case`` against the source turn);
* **support** - every content word of the text appears (by crude stem) in its source turn, or in
  one of the 4 turns before it in the same session (a resolved pronoun's antecedent), or is a word
  of a participant's name. Dates, auxiliaries and template words ("says", "shares", "photo") are
  not content words. An Observation's source is its ``message_id``; a Fact's sources are the
  messages of the Observations it is ``SUPPORTED_BY``. ``strict`` support allows the source turn(s)
  and names only.

A text passes when it has no shape issue and full support. The issue's target is >= 97% passing.
Filler (``by the way``, ``lol`` ...) is reported apart (a style kind, not a failure).

Usage::

    .venv/bin/python benchmarks/statement_audit.py --conversations 1 [--examples 15] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.convert import convert_locomo_conversation
from benchmarks.harness.format import Conversation
from benchmarks.harness.uniko_system import AGENT, UnikoSystem
from benchmarks.statement_checks import GRAMMAR_KINDS, STYLE_KINDS, case_issues, issues, unsupported_words

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
CONTEXT_TURNS = 4
TARGET = 0.97


async def audit_conversation(conv: Conversation) -> list[dict[str, Any]]:
    """One record per Observation / Fact of ``conv``'s store: text, kind, issues, unsupported words."""
    from uniko_memory.model import Direction, EdgeType, Tier

    system = UnikoSystem()
    await system.setup(conv)
    assert system.uni is not None
    store = system.uni.kb.store
    try:
        messages = await store.find(AGENT, Tier.MESSAGE, limit=1_000_000)
        observations = await store.find(AGENT, Tier.OBSERVATION, limit=1_000_000)
        facts = await store.find(AGENT, Tier.FACT, limit=1_000_000)
        by_id = {m.id: m for m in messages}
        session_turns: dict[str, list[Any]] = {}
        for m in sorted(
            messages,
            key=lambda m: (getattr(m, "session_id", ""), getattr(m, "timestamp", None), getattr(m, "seq", 0)),
        ):
            session_turns.setdefault(m.session_id, []).append(m)  # type: ignore[attr-defined]
        position = {m.id: (sid, i) for sid, ms in session_turns.items() for i, m in enumerate(ms)}
        names = list(conv.speakers)

        def sources(message_ids: list[str]) -> tuple[list[str], list[str]]:
            own: list[str] = []
            context: list[str] = []
            for mid in message_ids:
                m = by_id.get(mid)
                if m is None:
                    continue
                own.append(m.content)  # type: ignore[attr-defined]
                sid, i = position[mid]
                context.extend(x.content for x in session_turns[sid][max(0, i - CONTEXT_TURNS) : i])
            return own, context

        support: dict[str, list[str]] = {}
        if facts:
            edges = await store.neighbors(
                AGENT, [f.id for f in facts], [EdgeType.SUPPORTED_BY], Direction.OUT
            )
            for e in edges:
                support.setdefault(e.src, []).append(e.dst)
        obs_by_id = {o.id: o for o in observations}
        records: list[dict[str, Any]] = []
        for o in observations:
            mid = getattr(o, "message_id", None)
            records.append(_check("observation", o.content, [mid] if mid else [], sources, names))  # type: ignore[attr-defined]
        for f in facts:
            mids = [
                getattr(obs_by_id[oid], "message_id", None)
                for oid in support.get(f.id, [])
                if oid in obs_by_id
            ]
            rec = _check("fact", f.statement(), [m for m in mids if m], sources, names)  # type: ignore[attr-defined]
            rec["valid"] = getattr(f, "valid_to", None) is None
            records.append(rec)
        for r in records:
            r["conversation"] = conv.id
        return records
    finally:
        await system.uni.close()


def _check(kind: str, text: str, message_ids: list[str], sources: Any, names: list[str]) -> dict[str, Any]:
    own, context = sources(message_ids)
    found = issues(text) + [i for src in own[:1] for i in case_issues(text, src)]
    shape = sorted({f"{i.kind}: {i.span}" for i in found if i.kind in GRAMMAR_KINDS})
    style = sorted({f"{i.kind}: {i.span}" for i in found if i.kind in STYLE_KINDS})
    strict = unsupported_words(text, own, names) if own else ["<no source turn>"]
    loose = unsupported_words(text, own + context, names) if own else ["<no source turn>"]
    return {
        "kind": kind,
        "text": text,
        "source": own[0] if own else None,
        "shape": shape,
        "style": style,
        "unsupported": loose,
        "unsupported_strict": strict,
        "passes": not shape and not loose,
    }


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("observation", "fact", "all"):
        rs = [r for r in records if kind == "all" or r["kind"] == kind]
        n = len(rs)
        if not n:
            out[kind] = {"count": 0}
            continue
        shape_kinds = Counter(s.split(":")[0] for r in rs for s in {x.split(":")[0] for x in r["shape"]})
        out[kind] = {
            "count": n,
            "distinct_texts": len({r["text"] for r in rs}),
            "pass_share": sum(r["passes"] for r in rs) / n,
            "shape_ok_share": sum(not r["shape"] for r in rs) / n,
            "support_ok_share": sum(not r["unsupported"] for r in rs) / n,
            "strict_support_ok_share": sum(not r["unsupported_strict"] for r in rs) / n,
            "filler_share": sum(bool(r["style"]) for r in rs) / n,
            "lemma_form_share": sum(
                any(x.split(":")[0] in ("lemma_verb", "bare_be", "dangling_possessive") for x in r["shape"])
                for r in rs
            )
            / n,
            "shape_kinds": dict(shape_kinds.most_common()),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument("--conversations", type=int, default=None, help="audit the first N conversations")
    parser.add_argument("--examples", type=int, default=12, help="failing examples to print per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the summary and every record as JSON")
    args = parser.parse_args(argv)
    raw = json.loads(args.data.read_text())
    if args.conversations is not None:
        raw = raw[: args.conversations]
    records: list[dict[str, Any]] = []
    for i, sample in enumerate(raw):
        records.extend(asyncio.run(audit_conversation(convert_locomo_conversation(sample, i))))
    summary = summarise(records)
    print(
        f"{'tier':12s} {'count':>6s} {'distinct':>8s} {'pass':>7s} {'shape ok':>9s} {'support':>8s} {'strict':>7s} {'lemma':>7s} {'filler':>7s}"
    )
    for kind, s in summary.items():
        if not s.get("count"):
            print(f"{kind:12s} {0:6d}")
            continue
        print(
            f"{kind:12s} {s['count']:6d} {s['distinct_texts']:8d} {s['pass_share']:7.1%} {s['shape_ok_share']:9.1%} "
            f"{s['support_ok_share']:8.1%} {s['strict_support_ok_share']:7.1%} {s['lemma_form_share']:7.1%} {s['filler_share']:7.1%}"
        )
    print(f"target: pass share >= {TARGET:.0%}")
    for kind, s in summary.items():
        if s.get("shape_kinds"):
            print(f"{kind} shape issues: " + ", ".join(f"{k} {v}" for k, v in s["shape_kinds"].items()))
    rng = random.Random(args.seed)
    for kind in ("observation", "fact"):
        failing = [r for r in records if r["kind"] == kind and not r["passes"]]
        if not failing:
            continue
        print(f"\n== failing {kind}s ({len(failing)}), {min(args.examples, len(failing))} examples")
        for r in rng.sample(failing, min(args.examples, len(failing))):
            why = r["shape"] + ([f"unsupported: {', '.join(r['unsupported'])}"] if r["unsupported"] else [])
            print(f"  {r['text']!r}\n      {'; '.join(why)}\n      source: {(r['source'] or '')[:140]!r}")
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "records": records}, indent=2, ensure_ascii=False)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
