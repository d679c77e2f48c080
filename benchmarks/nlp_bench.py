"""NLP layer benchmark: person recall on the LoCoMo gold list, spaCy throughput and load time.

Usage: .venv/bin/python benchmarks/nlp_bench.py --data /work/shared/data/locomo/locomo_dev.json

Recall: a gold mention counts when an admitted ``person`` mention in its snippet has the gold
name as its surface or canonical name (case-insensitive). Throughput: docs/s over the first N
LoCoMo turn texts, for raw ``nlp.pipe`` and for ``NlpPipeline.analyze`` (which adds conversion).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uniko_memory.nlp import NlpPipeline, canonical_key, extract_entities

GOLD = Path(__file__).resolve().parents[1] / "tests" / "data" / "locomo_person_gold.json"


def load_gold(path: Path = GOLD) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


def person_recall(
    gold: Sequence[dict[str, Any]], pipeline: NlpPipeline, *, use_gazetteer: bool
) -> tuple[float, list[dict[str, Any]]]:
    """Recall of gold person mentions and the missed entries."""
    analyses = pipeline.analyze([g["text_snippet"] for g in gold])
    misses: list[dict[str, Any]] = []
    for entry, analysis in zip(gold, analyses, strict=True):
        participants = entry.get("participants", []) if use_gazetteer else []
        found: set[str] = set()
        for m in extract_entities(analysis, participants):
            if m.entity_type == "person":
                found.update((canonical_key(m.name), canonical_key(m.normalized)))
        if canonical_key(entry["name"]) not in found:
            misses.append(entry)
    return 1 - len(misses) / max(len(gold), 1), misses


def locomo_texts(path: Path, limit: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    texts: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(t["text"] for t in turns)
    return texts[:limit]


def throughput(
    pipeline: NlpPipeline, texts: list[str], *, raw: bool, repeats: int = 3, shallow: bool = False
) -> tuple[float, float]:
    """Best-of-``repeats`` docs/s by wall clock, and docs per CPU-second of this process.

    The CPU figure is less sensitive to other load on a shared machine (meaningless for
    ``n_process`` > 1, whose work happens in child processes).
    """
    pipeline.analyze(texts[:32])  # warm-up
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        if raw:
            for _doc in pipeline.nlp.pipe(
                texts, batch_size=pipeline.batch_size, n_process=pipeline.n_process
            ):
                pass
        elif shallow:
            pipeline.analyze_shallow(texts)
        else:
            pipeline.analyze(texts)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return len(texts) / best_wall, len(texts) / max(best_cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (list of samples)")
    parser.add_argument("--gold", type=Path, default=GOLD)
    parser.add_argument("-n", type=int, default=1000, help="turn texts for throughput")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    full = NlpPipeline(batch_size=args.batch_size)
    health = full.health()  # imports spaCy and loads the model
    load_s = time.perf_counter() - start
    gold = load_gold(args.gold)
    rules = NlpPipeline(mode="rules")
    rows: list[tuple[str, str]] = [
        ("mode / model", f"{health['mode']} / {health.get('model')}"),
        ("model load incl. `import spacy` (s)", f"{load_s:.2f}"),
        ("model load, `spacy.load` only (s)", f"{health.get('load_seconds', 0.0):.2f}"),
    ]
    for name, pipe in (("spaCy", full), ("rules", rules)):
        for gaz in (True, False):
            recall, misses = person_recall(gold, pipe, use_gazetteer=gaz)
            label = f"person recall, {name}, {'with' if gaz else 'without'} gazetteer (n={len(gold)})"
            rows.append((label, f"{recall:.3f}"))
            if args.show_misses and name == "spaCy":
                for miss in misses:
                    print(f"  miss ({'gaz' if gaz else 'no gaz'}): {miss['name']!r} in {miss['dia_id']}")

    texts = locomo_texts(args.data, args.n)
    slow = NlpPipeline(batch_size=args.batch_size, fast_attribute_ruler=False)
    same = sum(a.tokens == b.tokens for a, b in zip(full.analyze(texts), slow.analyze(texts), strict=True))
    rows.append(("fast attribute ruler: docs identical to spaCy's ruler", f"{same}/{len(texts)}"))
    variants = [
        ("full pipeline, nlp.pipe", full, True),
        ("full pipeline, analyze()", full, False),
        ("full pipeline with spaCy's attribute_ruler, analyze()", slow, False),
        ("no lemmatizer, analyze()", NlpPipeline(batch_size=args.batch_size, disable=("lemmatizer",)), False),
        (
            "full pipeline, n_process=2, analyze()",
            NlpPipeline(batch_size=args.batch_size, n_process=2),
            False,
        ),
        ("rule mode, analyze()", rules, False),
    ]
    load_before = os.getloadavg()[0]
    for label, pipe, raw in variants:
        wall, cpu = throughput(pipe, texts, raw=raw)
        cpu_text = "n/a" if pipe.n_process > 1 else f"{cpu:.0f}"
        rows.append(
            (
                f"docs/s on {len(texts)} LoCoMo turns, wall / per CPU-second: {label}",
                f"{wall:.0f} / {cpu_text}",
            )
        )
    # The ingest hot path (P2): NER without the parse, which P3 completes later in batches.
    wall, cpu = throughput(full, texts, raw=False, shallow=True)
    rows.append(
        (
            f"docs/s on {len(texts)} LoCoMo turns, wall / per CPU-second: P2 hot path, analyze_shallow()",
            f"{wall:.0f} / {cpu:.0f}",
        )
    )
    rows.append(
        ("machine", f"{os.cpu_count()} CPUs, 1-min load avg {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    )

    print("| metric | value |\n|---|---|")
    for metric, value in rows:
        print(f"| {metric} | {value} |")


if __name__ == "__main__":
    main()
