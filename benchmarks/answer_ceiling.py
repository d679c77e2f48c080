"""How much answer containment any retrieval of the conversation's own text can reach.

Answer containment (``harness.metrics.answer_contained``) asks whether the normalised gold answer is a
substring of the normalised prompt text. Many gold answers are not words of the conversation at all
("The week before 13 August 2023", "Fantasy stories with plot twists", lists gathered from several
turns), so no bundle of the conversation's turns can contain them. This script measures two ceilings
per category, on the same questions the harness scores:

* **gold turns**: the text of every gold evidence turn, rendered as the library renders a Message
  (its date label, relative dates resolved: "yesterday (7 May 2023)"), which is also how the
  baselines render a turn;
* **whole conversation**: every turn of the conversation rendered the same way — a prompt of
  unlimited size holding all that was said.

A system's containment above the whole-conversation ceiling can only come from text the memory
wrote itself (statements, Facts' validity); below it, from what retrieval missed.

Usage::

    python benchmarks/answer_ceiling.py [--data ../shared/data/locomo/locomo_dev.json] [--format locomo]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness.convert import load_any, sniff_format  # noqa: E402
from benchmarks.harness.metrics import answer_contained  # noqa: E402
from uniko_memory.recall.assemble import with_absolute_dates  # noqa: E402
from uniko_memory.recall.items import date_label  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def ceilings(path: Path, fmt: str) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """(questions, contained in the gold turns, contained in the whole conversation) per category."""
    ds = load_any(path, sniff_format(path) if fmt == "auto" else fmt)
    total: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    whole: Counter[str] = Counter()
    for conv in ds.conversations:
        lines: dict[str, str] = {}
        for session in conv.sessions:
            for t in session.turns:
                at = t.timestamp or session.start
                lines[t.id] = f"{date_label(at)}{t.speaker}: {with_absolute_dates(t.text, at)}"
        everything = "\n".join(lines.values())
        for q in conv.questions:
            if q.answer is None or q.abstention or not q.gold_turn_ids:
                continue
            total[q.category] += 1
            evidence = "\n".join(lines[i] for i in q.gold_turn_ids if i in lines)
            gold[q.category] += answer_contained(evidence, q.answer)
            whole[q.category] += answer_contained(everything, q.answer)
    return total, gold, whole


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--format", default="auto")
    args = p.parse_args(argv)
    if not args.data.exists():
        print(f"no dataset at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    total, gold, whole = ceilings(args.data, args.format)
    n = sum(total.values())
    print(f"answer containment ceilings, {args.data.name}: {n} questions with an answer and gold turns")
    print(f"| {'category':<12} | {'n':>4} | gold turns | whole conversation |")
    print(f"|{'-' * 14}|{'-' * 6}|{'-' * 12}|{'-' * 20}|")
    for c in sorted(total):
        print(f"| {c:<12} | {total[c]:>4} | {gold[c] / total[c]:>10.3f} | {whole[c] / total[c]:>18.3f} |")
    print(f"| {'all':<12} | {n:>4} | {sum(gold.values()) / n:>10.3f} | {sum(whole.values()) / n:>18.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
