"""The embedded store's searches: exact numpy cosine, FTS5 BM25, and their relative-score fusion.

A filtered vector search probes the best candidates against the filter in SQL and widens only
while too few pass; a filter that admits few rows is scored exactly over those rows instead.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from ...model import Tier
from ..filters import Filter
from ..fusion import relative_score
from ..protocol import Hit, hybrid_candidates
from .core import EmbeddedCore, chunks
from .fts_query import quoted_terms, selective_match
from .sql_filter import to_sql
from .vectors import VectorIndex, top_k

#: Vector candidates checked against a filter before falling back to an exact filtered scan.
_FILTER_OVERFETCH = 8
_FILTER_MIN_CANDIDATES = 200
#: The first probe of a filtered vector search: this many times k candidates (at least the min).
_FILTER_FIRST_FACTOR = 3
_FILTER_FIRST_MIN = 30


class EmbeddedSearch(EmbeddedCore):
    """``vector_search``, ``text_search`` and ``hybrid_search`` over SQLite and the RAM indexes."""

    def _index(self, conn: sqlite3.Connection, agent: str, tier: str) -> VectorIndex | None:
        key = (agent, tier)
        with self._idx_lock:
            idx = self._indexes.get(key)
            if idx is not None or self._dim is None:
                return idx
            rows = conn.execute(
                "SELECT id, vec FROM vectors WHERE agent=? AND tier=?", (agent, tier)
            ).fetchall()
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                len(rows), self._dim
            )
            idx = VectorIndex(self._dim, [r[0] for r in rows], matrix)
            self._indexes[key] = idx
            return idx

    def _vector_ids(
        self, conn: sqlite3.Connection, agent: str, tier: str, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[tuple[str, float]]:
        idx = self._index(conn, agent, tier)
        if idx is None or len(idx) == 0:
            return []
        scores, ids = idx.scores(query)
        if flt is None:
            rows = top_k(scores, k)
            return [(ids[r], float(scores[r])) for r in rows]
        where, params = to_sql(flt)
        n_cand = min(len(ids), max(k * _FILTER_OVERFETCH, _FILTER_MIN_CANDIDATES))
        rows = top_k(scores, n_cand)
        # Probe the best candidates first and widen only while too few pass: the filter (often a
        # JSON field) is evaluated for a few times k rows, not n_cand. Same hits: the admitted
        # rows of a prefix of ``rows`` are a prefix of the admitted rows of ``rows``.
        hits: list[tuple[str, float]] = []
        done, upto = 0, min(n_cand, max(k * _FILTER_FIRST_FACTOR, _FILTER_FIRST_MIN))
        while done < n_cand:
            part = rows[done:upto]
            allowed = self._allowed(conn, agent, tier, where, params, [ids[r] for r in part])
            hits += [(ids[r], float(scores[r])) for r in part if ids[r] in allowed]
            done, upto = upto, min(n_cand, upto * 4)
            if len(hits) >= k:
                return hits[:k]
        if n_cand == len(ids):
            return hits
        # Selective filter: score exactly over the rows it admits.
        q = f"SELECT n.id FROM nodes n WHERE n.agent=? AND n.tier=? AND n.redacted=0 AND {where}"
        admitted = {r[0] for r in conn.execute(q, (agent, tier, *params))}
        sub, sub_ids = idx.scores_within(query, admitted)
        return [(sub_ids[r], float(sub[r])) for r in top_k(sub, k)]

    @staticmethod
    def _allowed(
        conn: sqlite3.Connection, agent: str, tier: str, where: str, params: list[Any], cand: list[str]
    ) -> set[str]:
        out: set[str] = set()
        for part in chunks(cand):
            q = (
                # Probe the candidates by id (the filter's own indexes would scan far more rows).
                f"SELECT n.id FROM nodes n INDEXED BY nodes_id WHERE n.agent=? "
                f"AND n.id IN ({','.join('?' * len(part))}) AND n.tier=? AND n.redacted=0 AND {where}"
            )
            out.update(r[0] for r in conn.execute(q, (agent, *part, tier, *params)))
        return out

    @staticmethod
    def _text_ids(
        conn: sqlite3.Connection, agent: str, tier: str, terms: list[str], k: int, flt: Filter | None
    ) -> list[tuple[str, float]]:
        where, params = to_sql(flt)
        match = selective_match(conn, "fts", terms)
        # FTS drives the plan (CROSS JOIN pins the join order): see models-and-stores.md §7.3.
        q = (
            "SELECT n.id, -bm25(fts) AS s FROM fts CROSS JOIN nodes n ON n.rowid = fts.rowid "
            f"WHERE fts MATCH ? AND n.agent=? AND n.tier=? AND n.redacted=0 AND {where} "
            "ORDER BY bm25(fts), n.id LIMIT ?"
        )
        return [(r[0], float(r[1])) for r in conn.execute(q, (match, agent, tier, *params, k))]

    def _hits(self, conn: sqlite3.Connection, agent: str, scored: list[tuple[str, float]]) -> list[Hit]:
        if not scored:
            return []
        ids = [i for i, _ in scored]
        q = f"SELECT id, tier, data FROM nodes WHERE agent=? AND id IN ({','.join('?' * len(ids))})"
        nodes = {nid: self._decode(t, d) for nid, t, d in conn.execute(q, (agent, *ids))}
        return [Hit(nodes[i], s) for i, s in scored if i in nodes and not nodes[i].redacted]

    async def _vector_search(
        self, agent: str, tier: Tier, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[Hit]:
        t = tier.value

        def run(conn: sqlite3.Connection) -> list[Hit]:
            scored = [(i, min(1.0, max(0.0, s))) for i, s in self._vector_ids(conn, agent, t, query, k, flt)]
            return self._hits(conn, agent, scored)

        return await self._read(run)

    async def _text_search(self, agent: str, tier: Tier, text: str, k: int, flt: Filter | None) -> list[Hit]:
        t = tier.value
        terms = quoted_terms(text)
        if not terms:
            return []
        return await self._read(lambda c: self._hits(c, agent, self._text_ids(c, agent, t, terms, k, flt)))

    async def _hybrid_search(
        self,
        agent: str,
        tier: Tier,
        text: str,
        query: np.ndarray | None,
        alpha: float,
        k: int,
        flt: Filter | None,
    ) -> list[Hit]:
        t = tier.value
        terms = quoted_terms(text)
        n = hybrid_candidates(k)

        def run(conn: sqlite3.Connection) -> list[Hit]:
            vec = dict(self._vector_ids(conn, agent, t, query, n, flt)) if query is not None else {}
            kw = dict(self._text_ids(conn, agent, t, terms, n, flt)) if terms else {}
            a = alpha if (vec and kw) else (1.0 if vec else 0.0)
            return self._hits(conn, agent, relative_score(vec, kw, a)[:k])

        return await self._read(run)
