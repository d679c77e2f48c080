"""Long-turn benchmark: what one very long turn costs (issue 16, item 7).

For each size a fresh process opens an embedded store with the default offline models, loads
them with a short warm-up turn (its RSS is the baseline), then observes one turn of that many
characters (prose in paragraphs, with names, places and dates, like a pasted document) and
flushes its background work (P3 observations, P7a embeddings). Reported per size:

- ``observe_s``: the wall time of ``session.observe`` (P1 + P2: validation, NER, the commit);
- ``total_s``: observe + ``flush()`` (everything the turn causes, background work included);
- ``p3_s`` / ``p7a_s``: the background steps;
- ``cpu_s``: the process's CPU seconds over the same span (all threads; steadier than wall time
  on a shared machine);
- ``rss_mb``: peak RSS of the process, and ``base_mb`` its RSS after the warm-up;
- ``chunks`` / ``observations``: what the turn became (the warm-up turn's not counted);
- ``artifact_s`` / ``artifact_cpu_s`` / ``artifact_chunks``: ``agent.ingest_artifact`` of the same
  text (as ``text/plain`` bytes, chunks embedded in the call), in the same process after the turn:
  the cost a turn past ``IngestConfig.document_turn_chars`` (a document turn) is held to.

Usage::

    python benchmarks/long_turn_bench.py [--sizes 10000,50000,200000,400000] [--json out.json]
        [--document-turn-chars N] [--no-artifact]

``--document-turn-chars 1000000`` reads every turn whole, as before document turns (issue 40.7).

A size over ``IngestConfig.max_turn_chars`` is reported as refused. Linear means ``total_s`` and
the RSS growth (``rss_mb - base_mb``) scale with the size (per-100k-char figures are printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = (10_000, 50_000, 199_999, 400_000)

_NAMES = ("Caroline", "Melanie", "Priya Natarajan", "Tomas", "Dr. Okafor", "Erin", "Jon Bellamy")
_PLACES = ("Lisbon", "Paris", "the Boston office", "Nairobi", "Kyoto", "the lake house")
_THINGS = ("the quarterly report", "a pottery class", "the migration plan", "her new bike", "the budget")
_WHEN = ("yesterday", "last Tuesday", "on 8 May 2023", "next week", "two years ago", "in March")
_VERBS = ("talked about", "finished", "moved to", "visited", "started", "wrote up", "argued over")


def long_text(chars: int, seed: int = 7) -> str:
    """Deterministic prose of exactly ``chars`` characters: sentences of 10-30 words in
    paragraphs of 3-8 sentences, mentioning people, places, things and times."""
    rnd = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        para = []
        for _ in range(rnd.randint(3, 8)):
            words = [
                rnd.choice(_NAMES),
                rnd.choice(_VERBS),
                rnd.choice(_THINGS),
                "in",
                rnd.choice(_PLACES),
                rnd.choice(_WHEN),
            ]
            filler = " ".join(
                rnd.choice(("and", "then", "because", "the", "team", "said", "it", "was", "fine"))
                for _ in range(rnd.randint(4, 22))
            )
            para.append(" ".join(words) + " " + filler + ".")
        text = " ".join(para)
        parts.append(text)
        size += len(text) + 2
    return "\n\n".join(parts)[: chars - 1].rstrip() + "."


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _current_rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def one(chars: int, document_turn_chars: int | None = None, artifact: bool = True) -> dict[str, Any]:
    """One size in this process (a fresh process per size keeps the peak RSS per size)."""
    from uniko_memory import Turn, UnikoConfig
    from uniko_memory.errors import ValidationError
    from uniko_memory.facade import Uniko
    from uniko_memory.model import Tier

    text = long_text(chars)
    with tempfile.TemporaryDirectory(prefix="uniko-long-turn-") as tmp:
        overrides = {"ingest": {"document_turn_chars": document_turn_chars}} if document_turn_chars else {}
        uni = await Uniko.open(Path(tmp) / "bench.db", UnikoConfig.build(overrides))
        uni._pipeline.consolidate_fn = None  # P4 is its own benchmark
        totals: dict[str, float] = defaultdict(float)
        for name, key in (("observe", "p3"), ("embed", "p7a")):
            real = getattr(uni._post, name)

            async def timed(*args: Any, _real: Any = real, _key: str = key, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await _real(*args, **kwargs)
                finally:
                    totals[_key] += time.perf_counter() - t0

            setattr(uni._post, name, timed)
        session = uni.agent("bench").session("s1")
        await session.observe(Turn(sender="caroline", content="Warm-up: Caroline went to Paris in May."))
        await session.flush()
        # A full batch of model-length texts: the embedder's buffers are part of the baseline.
        await uni.kb.embedder.embed_documents([long_text(1_500, seed=i) for i in range(32)])
        totals.clear()
        warm_observations = await uni.kb.store.count("bench", Tier.OBSERVATION)
        base = _current_rss_mb()
        cpu0 = _cpu_s()
        t0 = time.perf_counter()
        try:
            await session.observe(Turn(sender="melanie", content=text))
        except ValidationError as exc:
            await uni.close()
            return {"chars": chars, "refused": str(exc), "base_mb": base, "rss_mb": _rss_mb()}
        observe_s = time.perf_counter() - t0
        await session.flush()
        total_s = time.perf_counter() - t0
        cpu_s = _cpu_s() - cpu0
        chunks = await uni.kb.store.count("bench", Tier.CHUNK)
        observations = await uni.kb.store.count("bench", Tier.OBSERVATION) - warm_observations
        doc: dict[str, Any] = {}
        if artifact:
            cpu1 = _cpu_s()
            t1 = time.perf_counter()
            report = await uni.agent("bench-doc").ingest_artifact(text.encode(), mime_type="text/plain")
            doc = {
                "artifact_s": time.perf_counter() - t1,
                "artifact_cpu_s": _cpu_s() - cpu1,
                "artifact_chunks": report.chunks,
            }
        await uni.close()
    return {
        "chars": chars,
        "observe_s": observe_s,
        "total_s": total_s,
        "cpu_s": cpu_s,
        "p3_s": totals["p3"],
        "p7a_s": totals["p7a"],
        "base_mb": base,
        "rss_mb": _rss_mb(),
        "chunks": chunks,
        "observations": observations,
        **doc,
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| chars | observe s | total s (with P3/P7a) | CPU s | P3 s | P7a s | CPU s per 100k | base MB "
        "| peak RSS MB | growth MB | chunks | observations | artifact s | artifact CPU s |"
    )
    lines = [head, "|---" * 14 + "|"]
    for r in rows:
        if "refused" in r:
            lines.append(f"| {r['chars']:,} | refused: {r['refused'][:80]} |" + " |" * 12)
            continue
        per = r["cpu_s"] / r["chars"] * 100_000
        art = f" {r['artifact_s']:.2f} | {r['artifact_cpu_s']:.1f} |" if "artifact_s" in r else " - | - |"
        lines.append(
            f"| {r['chars']:,} | {r['observe_s']:.2f} | {r['total_s']:.2f} | {r['cpu_s']:.1f} "
            f"| {r['p3_s']:.2f} | {r['p7a_s']:.2f} "
            f"| {per:.2f} | {r['base_mb']:.0f} | {r['rss_mb']:.0f} | {r['rss_mb'] - r['base_mb']:.0f} "
            f"| {r['chunks']} | {r['observations']} |{art}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument(
        "--document-turn-chars",
        type=int,
        default=None,
        help="IngestConfig.document_turn_chars (default: the config's); 1000000 reads every turn whole",
    )
    parser.add_argument("--no-artifact", action="store_true", help="skip the ingest_artifact comparison")
    args = parser.parse_args(argv)
    if args.one is not None:
        row = asyncio.run(one(args.one, args.document_turn_chars, not args.no_artifact))
        sys.stdout.write(json.dumps(row) + "\n")
        return 0
    passed = []
    if args.document_turn_chars is not None:
        passed += ["--document-turn-chars", str(args.document_turn_chars)]
    if args.no_artifact:
        passed.append("--no-artifact")
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(size), *passed], capture_output=True, text=True, cwd=REPO
        )
        if out.returncode != 0:
            sys.stderr.write(out.stderr)
            return out.returncode
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        sys.stdout.write(json.dumps(rows[-1]) + "\n")
        sys.stdout.flush()
    sys.stdout.write(table(rows) + "\n")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
