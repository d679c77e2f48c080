"""Where an ANN graph comes from: a cache file beside the database, checked, or a build from SQLite.

A graph is a cache, never the truth. It lives in ``<db>.vidx/`` as ``<agent hash>.<tier>.usearch``
with a JSON sidecar naming what it was built from: the count, largest and sum of the node rowids
of the (agent, tier)'s vectors, the dimension and the format. It is used only when the sidecar
matches SQLite now and the graph holds that many keys; anything else (missing, stale, unreadable,
another shape) rebuilds it from the ``vectors`` table, streamed in batches (no full matrix in RAM).
An agent's files are removed before the first write that may change its vectors (``drop_agent``):
a saved graph can then only describe committed data, and a forgotten vector leaves the disk with it.
A graph that forgot a node (delete, redact) is not saved again: usearch keeps a removed vector's
bytes in the file, so the next open rebuilds it from SQLite (whose freed pages are zeroed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from pathlib import Path

from .ann_index import AnnIndex
from .vector_codec import decode_many
from .vector_options import EmbeddedVectorOptions

#: The sidecar's format: bump when what it records (or how the graph is keyed) changes.
FORMAT = 1
#: Rows per batch of a build from SQLite.
BUILD_BATCH = 4096

_ROWS = "FROM nodes n JOIN vectors v ON v.node = n.rowid WHERE n.agent=? AND n.tier=? AND n.redacted=0"


def cache_dir(db_path: Path) -> Path:
    real = db_path.resolve()
    return real.with_name(real.name + ".vidx")


def _stem(agent: str, tier: str) -> str:
    return f"{hashlib.sha256(agent.encode()).hexdigest()[:24]}.{tier}"


def _paths(directory: Path, agent: str, tier: str) -> tuple[Path, Path]:
    stem = _stem(agent, tier)
    return directory / f"{stem}.usearch", directory / f"{stem}.json"


def fingerprint(conn: sqlite3.Connection, agent: str, tier: str) -> list[int]:
    """(count, max rowid, sum of rowids) of the (agent, tier)'s stored vectors."""
    row = conn.execute(
        f"SELECT count(*), coalesce(max(n.rowid), 0), coalesce(sum(n.rowid), 0) {_ROWS}", (agent, tier)
    ).fetchone()
    return [int(row[0]), int(row[1]), int(row[2])]


def _sidecar(dim: int, options: EmbeddedVectorOptions, fp: list[int]) -> dict[str, object]:
    return {
        "format": FORMAT,
        "dim": dim,
        "storage": options.storage,
        "connectivity": options.ann_connectivity,
        "fingerprint": fp,
    }


def _key_fingerprint(idx: AnnIndex) -> list[int]:
    keys = idx.keys()
    if not keys.size:
        return [0, 0, 0]
    return [int(keys.size), int(keys.max()), int(keys.sum(dtype=object))]


def load(
    conn: sqlite3.Connection, directory: Path, agent: str, tier: str, dim: int, options: EmbeddedVectorOptions
) -> AnnIndex | None:
    """The cached graph when it matches SQLite now, else None (the caller rebuilds)."""
    graph_path, meta_path = _paths(directory, agent, tier)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    fp = fingerprint(conn, agent, tier)
    if meta != _sidecar(dim, options, fp):
        return None
    idx = AnnIndex.restore(graph_path, dim, options)
    if idx is None or _key_fingerprint(idx) != fp:
        return None
    return idx


def build(
    conn: sqlite3.Connection, agent: str, tier: str, dim: int, options: EmbeddedVectorOptions
) -> AnnIndex:
    """A fresh graph of the (agent, tier)'s vectors, read from SQLite in batches."""
    idx = AnnIndex(dim, options)
    cur = conn.execute(f"SELECT n.rowid, v.vec {_ROWS}", (agent, tier))
    while rows := cur.fetchmany(BUILD_BATCH):
        idx.add_many(
            (r[0] for r in rows), decode_many([r[1] for r in rows], dim), threads=options.ann_build_threads
        )
    return idx


def save(
    conn: sqlite3.Connection,
    directory: Path,
    agent: str,
    tier: str,
    idx: AnnIndex,
    options: EmbeddedVectorOptions,
) -> bool:
    """Write the graph, then its sidecar, each by rename (a torn write leaves no sidecar that
    matches); nothing when the graph's keys are not SQLite's now (a commit not yet applied)."""
    fp = fingerprint(conn, agent, tier)
    if _key_fingerprint(idx) != fp:
        return False
    directory.mkdir(parents=True, exist_ok=True)
    graph_path, meta_path = _paths(directory, agent, tier)
    tmp_graph = graph_path.with_suffix(".usearch.tmp")
    idx.save(tmp_graph)
    os.replace(tmp_graph, graph_path)
    tmp_meta = meta_path.with_suffix(".json.tmp")
    tmp_meta.write_text(json.dumps(_sidecar(idx.dim, options, fp)), encoding="utf-8")
    os.replace(tmp_meta, meta_path)
    return True


def exists(directory: Path, agent: str, tier: str) -> bool:
    return all(p.is_file() for p in _paths(directory, agent, tier))


def cached_tiers(directory: Path, agent: str) -> list[str]:
    """The tiers of ``agent`` with a graph file in the cache."""
    if not directory.is_dir():
        return []
    prefix = hashlib.sha256(agent.encode()).hexdigest()[:24] + "."
    return sorted(
        p.name[len(prefix) : -len(".usearch")]
        for p in directory.iterdir()
        if p.name.startswith(prefix) and p.name.endswith(".usearch")
    )


def drop_agent(directory: Path, agent: str) -> None:
    """Remove every cached graph of ``agent`` (all tiers)."""
    if not directory.is_dir():
        return
    prefix = hashlib.sha256(agent.encode()).hexdigest()[:24] + "."
    for path in directory.iterdir():
        if path.name.startswith(prefix):
            with contextlib.suppress(OSError):
                path.unlink()
