"""Shared by the fault tests and their child processes: a fast embedder, the corpus, store checks.

Child scripts import this module by file name (their own folder is on ``sys.path``); the tests
import it as ``tests.reliability._faults_support``. Nothing here starts a process or a loop.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from uniko_memory.model import (
    Chunk,
    ConsolidationCycle,
    Direction,
    EdgeType,
    Fact,
    Message,
    Observation,
    Session,
    Summary,
    Tier,
)

AGENT = "faults"
T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)

#: Background triggers off (cycles run when a test says so), small batches so one consolidation is
#: several cycles, small chunks so one session is several chunks.
CONFIG: dict[str, Any] = {
    "pipeline": {
        "consolidation_threshold": 1_000_000,
        "consolidation_interval_secs": 3600,
        "dead_letter_check_interval_secs": 3600,
        "consolidation_batch_size": 6,
        "cortex_cycle_every_n_consolidations": 1_000_000,
    },
    "chunking": {"max_chunk_tokens": 40, "min_chunk_tokens": 8},
}

LINES = [
    ("Caroline", "I work at Google now."),
    ("Melanie", "I adopted a cat named Oliver."),
    ("Caroline", "I live in Paris with my sister."),
    ("Melanie", "I work at the Riverside library."),
    ("Caroline", "I still work at Google, it is great."),
    ("Melanie", "My husband Mark built a treehouse for the kids."),
    ("Caroline", "I moved to Lisbon last month."),
    ("Melanie", "I started a pottery class."),
    ("Caroline", "I work at Northwind now."),
    ("Melanie", "I love my cat Oliver."),
    ("Caroline", "I live in Lisbon now."),
    ("Melanie", "I work at the Riverside library still."),
]


class HashEmbedder:
    """Hashed bag of words, L2-normalised: no model, microseconds, deterministic across processes."""

    model_id = "tests/faults-bag-of-words"
    dim = 32

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v + 1.0 / np.sqrt(self.dim)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vec(t) for t in texts])

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed_documents(texts)


def turns(start: int, count: int, session: str) -> list[dict[str, Any]]:
    """``count`` turns from the corpus, numbered from ``start`` (turn ids ``t<n>``), one a minute."""
    out = []
    for k in range(start, start + count):
        who, text = LINES[k % len(LINES)]
        out.append(
            {
                "sender": who,
                "content": text,
                "at": T0 + timedelta(days=k // len(LINES), minutes=k),
                "id": f"t{k}",
                "addressed_to": "Melanie" if who == "Caroline" else "Caroline",
                "session": session,
            }
        )
    return out


# ---------------------------------------------------------------------------------- files
def copy_store(src: Path, dst: Path) -> Path:
    """Copy a closed store (its WAL, if any, too) to ``dst``."""
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` plus FTS5's own index check on a separate connection ("ok")."""
    conn = sqlite3.connect(path, timeout=10)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
        conn.execute("INSERT INTO fts(fts, rank) VALUES('integrity-check', 1)")  # raises on a mismatch
    except sqlite3.Error as exc:
        return f"integrity check failed: {exc}"
    finally:
        conn.close()
    return "ok" if rows == [("ok",)] else str(rows)


def run_child(
    script: Path, *args: str, timeout: float = 90, prefix: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Run a child script to its end (``prefix``: e.g. a ``setpriv`` command line to run it under)."""
    return subprocess.run(
        [*prefix, sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
    )


def start_child(script: Path, *args: str) -> subprocess.Popen[str]:
    """Start a child script with pipes on stdin and stdout (line buffered)."""
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def acks(stdout: str, kind: str) -> list[str]:
    """The ids a child acknowledged with ``ACK <kind> <id>`` lines."""
    return [ln.split()[2] for ln in stdout.splitlines() if ln.startswith(f"ACK {kind} ")]


# ---------------------------------------------------------------------------------- checks
async def _all(store: Any, tier: Tier) -> list[Any]:
    return await store.find(AGENT, tier, limit=1_000_000, include_redacted=True)


async def check_units(store: Any, acked_turns: Sequence[str] = ()) -> dict[str, int]:
    """Every all-or-nothing unit is whole; returns node counts per tier. Raises AssertionError."""
    messages = {m.id: m for m in await _all(store, Tier.MESSAGE) if isinstance(m, Message)}
    missing = set(acked_turns) - {m.external_id for m in messages.values()}
    assert not missing, f"acknowledged turns lost: {sorted(missing)}"

    observations = [o for o in await _all(store, Tier.OBSERVATION) if isinstance(o, Observation)]
    seen_in = await store.neighbors(AGENT, [o.id for o in observations], [EdgeType.OBSERVED_IN])
    per_obs = Counter(e.src for e in seen_in)
    for o in observations:
        assert per_obs[o.id] == 1, f"observation {o.id} has {per_obs[o.id]} OBSERVED_IN edges"
    assert all(e.dst in messages for e in seen_in), "OBSERVED_IN points at a missing message"

    cycles = [c for c in await _all(store, Tier.CONSOLIDATION_CYCLE) if isinstance(c, ConsolidationCycle)]
    audit = await store.neighbors(AGENT, [c.id for c in cycles])
    by_cycle: dict[tuple[str, EdgeType], set[str]] = defaultdict(set)
    for e in audit:
        by_cycle[(e.src, e.type)].add(e.dst)
    processed: set[str] = set()
    created: set[str] = set()
    for c in cycles:
        assert len(by_cycle[(c.id, EdgeType.PROCESSED)]) == c.observations_processed, c.id
        assert len(by_cycle[(c.id, EdgeType.CREATED)]) == c.facts_created, c.id
        processed |= by_cycle[(c.id, EdgeType.PROCESSED)]
        created |= by_cycle[(c.id, EdgeType.CREATED)]

    facts = [f for f in await _all(store, Tier.FACT) if isinstance(f, Fact)]
    support = await store.neighbors(AGENT, [f.id for f in facts], [EdgeType.SUPPORTED_BY])
    per_fact = Counter(e.src for e in support)
    vectors = await store.get_vectors(AGENT, [f.id for f in facts])
    for f in facts:
        assert per_fact[f.id] >= 1, f"fact {f.id} has no SUPPORTED_BY edge"
        assert per_fact[f.id] == f.observation_count, (f.id, per_fact[f.id], f.observation_count)
        assert f.id in created, f"fact {f.id} has no CREATED edge from a cycle"
        assert f.id in vectors, f"fact {f.id} has no vector"
    assert {e.dst for e in support} <= processed, "a supporting observation is not marked PROCESSED"
    assert created == {f.id for f in facts}, "a cycle CREATED a fact that is not there"

    sessions = {s.id: s for s in await _all(store, Tier.SESSION) if isinstance(s, Session)}
    chunks = [c for c in await _all(store, Tier.CHUNK) if isinstance(c, Chunk)]
    has_chunk = await store.neighbors(AGENT, list(sessions), [EdgeType.HAS_CHUNK])
    chunk_vecs = await store.get_vectors(AGENT, [c.id for c in chunks])
    linked = {(e.src, e.dst) for e in has_chunk}
    indexes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for c in chunks:
        assert (c.parent_id, c.id) in linked, f"chunk {c.id} has no HAS_CHUNK edge"
        assert c.id in chunk_vecs, f"chunk {c.id} has no vector"
        assert all(m in messages or m.startswith("obs_") for m in c.covered_ids), c.id
        indexes[(c.parent_id, c.chunk_type)].append(c.index)
    for key, idx in indexes.items():
        assert sorted(idx) == list(range(len(idx))), f"chunk indexes of {key} have a gap: {sorted(idx)}"
    assert {e.dst for e in has_chunk} == {c.id for c in chunks}, "HAS_CHUNK points at a missing chunk"
    for s in sessions.values():
        mine = {m.id for m in messages.values() if m.session_id == s.id}
        covered = {
            m for c in chunks if c.parent_id == s.id and c.chunk_type == "session" for m in c.covered_ids
        }
        # The transcript chunks are exactly the turns the last finalisation saw: the first
        # ``finalized_message_count`` of the session (a half-written rebuild would mix two states).
        first = sorted((m for m in messages.values() if m.session_id == s.id), key=lambda m: m.seq)
        want = {m.id for m in first[: s.finalized_message_count]}
        assert covered == want, (s.external_id, s.finalized_message_count, len(covered), len(mine))
    summaries = [x for x in await _all(store, Tier.SUMMARY) if isinstance(x, Summary)]
    summarizes = await store.neighbors(AGENT, [x.id for x in summaries], [EdgeType.SUMMARIZES])
    assert {e.src for e in summarizes} == {x.id for x in summaries}, "a summary without SUMMARIZES"
    return {
        "messages": len(messages),
        "observations": len(observations),
        "facts": len(facts),
        "cycles": len(cycles),
        "chunks": len(chunks),
        "summaries": len(summaries),
    }


#: Fields that record *when* something was computed, not *what*: they differ between two runs.
VOLATILE = {
    "created_at",
    "invalidated_at",
    "finalized_at",
    "started_at",
    "finished_at",
    "last_invalidation_at",
}
DERIVED = [Tier.FACT, Tier.CHUNK, Tier.SUMMARY, Tier.CONSOLIDATION_CYCLE, Tier.ENTITY, Tier.SESSION]


async def snapshot(store: Any) -> dict[str, Any]:
    """What consolidation and finalisation produced: node ids and contents, edges, vectors."""
    nodes: dict[str, dict[str, Any]] = {}
    for tier in DERIVED:
        for n in await _all(store, tier):
            nodes[n.id] = n.model_dump(mode="json", exclude=VOLATILE)
    edges = set()
    for e in await store.neighbors(AGENT, sorted(nodes), None, Direction.BOTH):
        props = {k: v for k, v in e.props.items() if k not in VOLATILE}
        edges.add((e.src, e.type.value, e.dst, tuple(sorted(props.items()))))
    vec_ids = [i for i in nodes if i.startswith(("fct_", "chk_"))]
    vectors = await store.get_vectors(AGENT, vec_ids)
    return {
        "nodes": nodes,
        "edges": edges,
        "vectors": {k: np.round(v, 5).tolist() for k, v in vectors.items()},
    }


def assert_same(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(got["nodes"]) == set(want["nodes"]), (
        f"node ids differ: extra {sorted(set(got['nodes']) - set(want['nodes']))[:5]}, "
        f"missing {sorted(set(want['nodes']) - set(got['nodes']))[:5]}"
    )
    for nid, data in want["nodes"].items():
        assert got["nodes"][nid] == data, f"node {nid} differs from the clean run"
    assert got["edges"] == want["edges"], (
        f"edges differ: extra {sorted(got['edges'] - want['edges'])[:3]}, "
        f"missing {sorted(want['edges'] - got['edges'])[:3]}"
    )
    assert got["vectors"] == want["vectors"]
