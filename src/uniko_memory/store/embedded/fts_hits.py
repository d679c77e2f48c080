"""One BM25 pass per query text, shared by the keyword channels of a recall.

A recall asks the same words of several tiers and filters (messages, observations, chunks of
three kinds): run as one SQL statement each, FTS5 scored every row the words match once per
channel, and joined each to ``nodes`` to test the tier and filter (at 20,000 turns ~11 ms a
channel, six a recall). Here the matches are scored once, kept per reader connection until the
content changes (the store's ``_memo_version``: usage counts and meta do not count), and each
channel walks them best first, testing rows in batches until it holds its k: the same rows in the
same order as the single statement (``ORDER BY bm25, id``), for a fraction of the work. A tier
with fewer rows than the matches is read whole once (its admitted rows, kept until a write) and
the matches are walked best first until the k-th can no longer be beaten.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from .fts_query import term_rows

#: Rowids tested against the tier and filter per statement.
BATCH = 400
#: Query texts kept per connection (a recall's variants of the question).
KEEP = 4
#: Terms whose row counts are kept per connection.
TERMS_KEPT = 4096
#: Per connection: tier sizes and the admitted rows of small tiers, which every query shares, kept
#: apart from the per-query entries so that a recall's dozen query texts cannot push them out (a
#: recall asks ~5 tier/filter pairs; each read ~0.3-0.6 ms at 400-700 rows).
TIERS_KEPT = 16
#: The key under which ``term_rows`` keeps ``max(rowid)`` (never a quoted term).
_MAX_ROWID = "\x00max(rowid)"


def _data_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


class FtsHits:
    """Scored FTS matches per (connection, query), valid while ``version(conn)`` is unchanged
    (default: ``PRAGMA data_version``, any commit of another connection)."""

    def __init__(
        self,
        version: Callable[[sqlite3.Connection], Hashable] | None = None,
        scorer: Callable[[sqlite3.Connection, str], list[tuple[float, int]] | None] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._version = version or _data_version
        #: FTS5's scores from elsewhere (the store's ``keyword_index`` copy); None from it: SQL.
        self._scorer = scorer
        self._by_conn: dict[int, tuple[Hashable, OrderedDict[str, Any]]] = {}
        self._terms: dict[int, tuple[Hashable, dict[str, int]]] = {}
        self._tiers: dict[int, tuple[Hashable, OrderedDict[str, Any]]] = {}

    def _held(self, table: dict[int, tuple[Hashable, Any]], conn: sqlite3.Connection, fresh: Any) -> Any:
        """``conn``'s entry in ``table``, replaced by ``fresh()`` once the version moved on."""
        version = self._version(conn)
        with self._lock:
            held = table.get(id(conn))
            if held is None or held[0] != version:
                held = (version, fresh())
                table[id(conn)] = held
            return held[1]

    def _cache(self, conn: sqlite3.Connection) -> OrderedDict[str, Any]:
        cache: OrderedDict[str, Any] = self._held(self._by_conn, conn, OrderedDict)
        return cache

    def forget(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._by_conn.pop(id(conn), None)
            self._terms.pop(id(conn), None)
            self._tiers.pop(id(conn), None)

    def memo(self, conn: sqlite3.Connection, key: str, compute: Any) -> Any:
        """``compute()`` once per key while the database is unchanged (this connection's view)."""
        return _kept(self._cache(conn), key, compute, KEEP * 4)

    def _tier_memo(self, conn: sqlite3.Connection, key: str, compute: Any) -> Any:
        """``memo`` for what does not depend on the query (``TIERS_KEPT`` a connection)."""
        return _kept(self._held(self._tiers, conn, OrderedDict), key, compute, TIERS_KEPT)

    def _held_rows(self, conn: sqlite3.Connection, key: str) -> dict[int, str] | None:
        """A tier's admitted rows if they are kept (no read on a miss)."""
        cache: OrderedDict[str, Any] = self._held(self._tiers, conn, OrderedDict)
        if key not in cache:
            return None
        cache.move_to_end(key)
        rows: dict[int, str] = cache[key]
        return rows

    def term_rows(self, conn: sqlite3.Connection, terms: list[str]) -> tuple[int, list[int]]:
        """``fts_query.term_rows`` with each term's count kept (``TERMS_KEPT`` a connection) while
        the content is unchanged: a conversation's questions share most of their words (names,
        topics), and counting them was a statement a question."""
        known: dict[str, int] = self._held(self._terms, conn, dict)
        if len(known) > TERMS_KEPT:
            known.clear()
        missing = [t for t in dict.fromkeys(terms) if t not in known]
        if missing or _MAX_ROWID not in known:
            rows, counts = term_rows(conn, "fts", missing)
            known[_MAX_ROWID] = rows
            known.update(zip(missing, counts, strict=True))
        return known[_MAX_ROWID], [known[t] for t in terms]

    def ranked(self, conn: sqlite3.Connection, match: str) -> list[tuple[float, int]]:
        """(bm25, rowid) of every row ``match`` finds, best (lowest bm25) first."""

        def score() -> list[tuple[float, int]]:
            if self._scorer is not None and (found := self._scorer(conn, match)) is not None:
                return found
            rows = conn.execute("SELECT bm25(fts), rowid FROM fts WHERE fts MATCH ?", (match,)).fetchall()
            return sorted((float(s), int(r)) for s, r in rows)

        result: list[tuple[float, int]] = self.memo(conn, "match:" + match, score)
        return result

    def top(
        self,
        conn: sqlite3.Connection,
        match: str,
        agent: str,
        tier: str,
        where: str,
        params: list[Any],
        k: int,
    ) -> list[tuple[str, float]]:
        """The k best (id, -bm25) of one agent's tier among the rows ``where`` (a ``nodes n``
        predicate) admits, ordered by bm25 then id, as ``ORDER BY bm25(fts), n.id LIMIT k`` does.

        A tier with fewer rows than the matches (chunks, facts) is read whole, through its index,
        and intersected with the matches; a bigger one (messages) is walked best match first, a
        batch of rowids at a time, until no later match can enter the k."""
        if k <= 0:
            return []
        ranked = self.ranked(conn, match)
        admit = f"n.agent=? AND n.tier=? AND n.redacted=0 AND {where}"
        args = [agent, tier, *params]
        rows_key = f"rows:{admit}\x1f{args!r}"
        ids = self._held_rows(conn, rows_key)
        if ids is None:
            size = self._tier_memo(
                conn,
                f"count:{agent}\x1f{tier}",
                lambda: int(
                    conn.execute(
                        "SELECT count(*) FROM nodes WHERE agent=? AND tier=?", (agent, tier)
                    ).fetchone()[0]
                ),
            )
            if size < len(ranked):
                # The admitted rows of a small tier are the same for every query until a write.
                ids = self._tier_memo(
                    conn,
                    rows_key,
                    lambda: dict(
                        conn.execute(f"SELECT n.rowid, n.id FROM nodes n WHERE {admit}", args).fetchall()
                    ),
                )
        if ids is not None:
            return _best(((s, ids[r]) for s, r in ranked if r in ids), k)
        found: list[tuple[float, str]] = []
        for start in range(0, len(ranked), BATCH):
            part = ranked[start : start + BATCH]
            score_of = {r: s for s, r in part}
            # NOT INDEXED: look the rows up by rowid; SQLite would rather walk the (agent, tier)
            # index over every row of the tier (~3.5 ms at 20,000 turns, against 0.05 ms).
            q = (
                f"SELECT n.rowid, n.id FROM nodes n NOT INDEXED WHERE n.rowid IN "
                f"({','.join('?' * len(part))}) AND {admit}"
            )
            found += [(score_of[r], i) for r, i in conn.execute(q, (*(r for _, r in part), *args))]
            nxt = start + BATCH
            if len(found) >= k:
                found.sort()
                # Done once no later row can tie or beat the k-th (ties are ordered by id).
                if nxt >= len(ranked) or ranked[nxt][0] > found[k - 1][0]:
                    break
        found.sort()
        return [(i, -s) for s, i in found[:k]]


def _kept(cache: OrderedDict[str, Any], key: str, compute: Any, keep: int) -> Any:
    """``cache[key]``, computed on a miss; the least recently used beyond ``keep`` are dropped."""
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = compute()
    cache[key] = value
    while len(cache) > keep:
        cache.popitem(last=False)
    return value


def _best(admitted: Iterator[tuple[float, str]], k: int) -> list[tuple[str, float]]:
    """The k best (id, -bm25) of (bm25, id) pairs that arrive best bm25 first, ties ordered by id:
    reading stops after the k-th once the score gets worse (a tie may still sort in front)."""
    found: list[tuple[float, str]] = []
    for pair in admitted:
        if len(found) >= k and pair[0] > found[k - 1][0]:
            break
        found.append(pair)
    found.sort()
    return [(i, -s) for s, i in found[:k]]
