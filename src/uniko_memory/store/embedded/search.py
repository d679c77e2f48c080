"""The embedded store's searches: cosine (exact numpy, or an HNSW graph past a size), FTS5 BM25,
and their relative-score fusion.

An (agent, tier) with fewer than ``EmbeddedVectorOptions.exact_below`` vectors is searched exactly
over a RAM matrix (int8 codes with per-row scales for int8 storage, see ``vectors``); a bigger one
through an ANN graph (``ann_index``, loaded from its checked cache file or rebuilt from SQLite,
``ann_cache``). ANN hits are node rowids resolved through ``nodes`` (agent, tier, not redacted), so
a deleted node never comes back. A filtered vector search probes the best candidates against the
filter in SQL and widens only while too few pass; a filter that admits few rows is scored exactly
over those rows instead.
"""

from __future__ import annotations

import math
import sqlite3
from typing import Any

import numpy as np

from ...model import Tier
from ..filters import Filter
from ..fusion import relative_score
from ..protocol import Hit, hybrid_candidates
from .core import NODE_FIELDS, AnyIndex, EmbeddedCore, chunks
from .fts_query import quoted_terms, selective_match
from .sql_filter import to_sql
from .vectors import Scored, VectorIndex, top_k


class EmbeddedSearch(EmbeddedCore):
    """``vector_search``, ``text_search`` and ``hybrid_search`` over SQLite and the RAM indexes."""

    def _ranked(
        self, conn: sqlite3.Connection, agent: str, tier: str, idx: AnyIndex, query: np.ndarray, n: int
    ) -> Scored:
        """The n best (id, cosine) of the index, best first; ANN rowids resolved through ``nodes``."""
        if isinstance(idx, VectorIndex):
            return idx.search(query, n)
        found = idx.search(query, n)
        ids: dict[int, str] = {}
        for part in chunks([k for k, _ in found]):
            q = (
                # NOT INDEXED: by rowid, not through an (agent, ...) index the planner would scan.
                f"SELECT rowid, id FROM nodes NOT INDEXED WHERE rowid IN ({','.join('?' * len(part))}) "
                "AND agent=? AND tier=? AND redacted=0"
            )
            ids.update(conn.execute(q, (*part, agent, tier)).fetchall())
        return [(ids[k], s) for k, s in found if k in ids]

    def _vector_ids(
        self, conn: sqlite3.Connection, agent: str, tier: str, query: np.ndarray, k: int, flt: Filter | None
    ) -> Scored:
        idx = self._index(conn, agent, tier)
        if idx is None or len(idx) == 0:
            return []
        if flt is None:
            return self._ranked(conn, agent, tier, idx, query, k)
        o = self._vopts
        where, params = to_sql(flt)
        size = len(idx)
        n_cand = min(size, max(k * o.filter_overfetch, o.filter_min_candidates))
        cands = self._ranked(conn, agent, tier, idx, query, n_cand)
        # Probe the best candidates first and widen only while too few pass: the filter (often a
        # JSON field) is evaluated for a few times k rows, not n_cand. Same hits: the admitted
        # rows of a prefix of ``cands`` are a prefix of the admitted rows of ``cands``.
        hits: Scored = []
        done, upto = 0, min(len(cands), max(k * o.filter_first_factor, o.filter_first_min))
        while done < len(cands):
            part = cands[done:upto]
            allowed = self._allowed(conn, agent, tier, where, params, [i for i, _ in part])
            hits += [(i, s) for i, s in part if i in allowed]
            done, upto = upto, min(len(cands), upto * 4)
            if len(hits) >= k:
                return hits[:k]
        if isinstance(idx, VectorIndex):
            if n_cand == size:
                return hits  # every row was a candidate
        elif hits:
            wider = self._widened(conn, agent, tier, idx, query, k, len(cands), len(hits), where, params)
            if len(wider) >= k:
                return wider[:k]
        # Selective filter: score exactly over the rows it admits.
        return self._exact_within(conn, agent, tier, idx, query, k, where, params)

    def _widened(
        self,
        conn: sqlite3.Connection,
        agent: str,
        tier: str,
        idx: AnyIndex,
        query: np.ndarray,
        k: int,
        seen: int,
        passed: int,
        where: str,
        params: list[Any],
    ) -> Scored:
        """An ANN tier's second filtered try: a graph search as wide as the share of candidates
        that passed says k needs (capped), probed again; [] when that is no wider than the first."""
        o = self._vopts
        want = min(
            len(idx), o.filter_ann_max_candidates, math.ceil(seen * k / passed * o.filter_ann_widen_margin)
        )
        if want <= seen:
            return []
        cands = self._ranked(conn, agent, tier, idx, query, want)
        allowed = self._allowed(conn, agent, tier, where, params, [i for i, _ in cands])
        return [(i, s) for i, s in cands if i in allowed]

    def _exact_within(
        self,
        conn: sqlite3.Connection,
        agent: str,
        tier: str,
        idx: AnyIndex,
        query: np.ndarray,
        k: int,
        where: str,
        params: list[Any],
    ) -> Scored:
        """Exact cosine over the rows a filter admits: from the RAM matrix when exact, else from the
        graph's own copies of their vectors (float16; no SQLite blob read)."""
        q = f"SELECT n.rowid, n.id FROM nodes n WHERE n.agent=? AND n.tier=? AND n.redacted=0 AND {where}"
        admitted = dict(conn.execute(q, (agent, tier, *params)).fetchall())
        if isinstance(idx, VectorIndex):
            sub, sub_ids = idx.scores_within(query, set(admitted.values()))
        else:
            keys, vecs = idx.vectors(sorted(admitted))
            sub, sub_ids = vecs @ query, [admitted[key] for key in keys]
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

    def _text_ids(
        self, conn: sqlite3.Connection, agent: str, tier: str, terms: list[str], k: int, flt: Filter | None
    ) -> list[tuple[str, float]]:
        where, params = to_sql(flt)
        hits = self._fts_hits
        match = hits.memo(
            conn,
            "terms:" + "\x1f".join(terms),
            lambda: selective_match(conn, "fts", terms, lambda ts: hits.term_rows(conn, ts)),
        )
        return hits.top(conn, match, agent, tier, where, params, k)

    def _hits(self, conn: sqlite3.Connection, agent: str, scored: list[tuple[str, float]]) -> list[Hit]:
        if not scored:
            return []
        ids = [i for i, _ in scored]
        q = f"SELECT {NODE_FIELDS} FROM nodes WHERE agent=? AND id IN ({','.join('?' * len(ids))})"
        nodes = {row[2]: self._decode(agent, row) for row in conn.execute(q, (agent, *ids))}
        return [Hit(nodes[i], s) for i, s in scored if i in nodes and not nodes[i].redacted]

    async def _vector_search(
        self, agent: str, tier: Tier, query: np.ndarray, k: int, flt: Filter | None
    ) -> list[Hit]:
        t = tier.value

        def run(conn: sqlite3.Connection) -> list[Hit]:
            scored = [(i, min(1.0, max(0.0, s))) for i, s in self._vector_ids(conn, agent, t, query, k, flt)]
            return self._hits(conn, agent, scored)

        return await self._read(run, inline=(agent, t) in self._indexes)

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

        return await self._read(run, inline=query is None or (agent, t) in self._indexes)
