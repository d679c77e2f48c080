"""Person recall on the hand-labelled LoCoMo gold list (tests/data/locomo_person_gold.json)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from uniko_memory.nlp import NlpPipeline

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nlp_bench", ROOT / "benchmarks" / "nlp_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gold_list_shape() -> None:
    gold = _bench().load_gold()
    assert len(gold) >= 100
    for entry in gold:
        assert {"dia_id", "conv_id", "text_snippet", "name", "participants"} <= entry.keys()
        assert len(entry["text_snippet"]) <= 200 and entry["name"] in entry["text_snippet"]


def test_person_recall_with_gazetteer(spacy_pipeline: NlpPipeline) -> None:
    bench = _bench()
    recall, misses = bench.person_recall(bench.load_gold(), spacy_pipeline, use_gazetteer=True)
    assert recall >= 0.90, [m["name"] for m in misses]
