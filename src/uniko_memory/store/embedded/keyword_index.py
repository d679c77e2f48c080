"""FTS5's BM25, computed over a RAM copy of the keyword index, for the process that writes a store.

FTS5's ``bm25()`` looks up every matched row's size in ``fts_docsize`` and walks its phrase
instances: at 200,000 turns a question's words match ~35,000 rows, and that scoring was most of a
recall (118 ms of ~200). Here each term's postings (rowids, counts) and each row's token count are
numpy arrays, and a query is scored by FTS5's formula in FTS5's order of operations (k1 1.2, b
0.75, IDF floored at 1e-6, phrases summed in query order), so the (score, rowid) list is FTS5's
bit for bit (``tests/unit/core/test_keyword_index.py`` compares them after random writes).

The copy is read from the FTS5 index itself (``fts5vocab``) in a background thread, from a
snapshot taken when the first keyword search asks for it (seconds on a large store: until it is
ready FTS5 scores every query, so no search and no commit waits for it). Commits that land while
it is read are queued and applied once it is in. From then on it is kept in step by this
process's commits: their new texts are tokenised by FTS5 too (an in-memory table with the same
tokenizer), so no tokenizer is re-implemented. Rows written since the copy sit in a small overlay
(and their old postings are masked) until it is merged. A query holding a term FTS5 splits into
several tokens (a phrase) returns None: the caller asks SQL. A reader process beside the writer
has no copy (it cannot see which rows the other process changed).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import groupby

import numpy as np

#: FTS5's bm25 constants (``fts5_aux.c``).
K1 = 1.2
B = 0.75
#: The IDF of a term in half the rows or more.
IDF_FLOOR = 1e-6
#: The overlay (Python dicts, ~100 bytes a posting) is merged into the arrays once it holds this
#: many rows, or ``1 / MERGE_SHARE`` of the rows (a merge reads every posting: ~1 s at 200,000 turns).
MERGE_MIN_ROWS = 4096
MERGE_SHARE = 32
#: Query terms whose tokens are kept.
TERMS_KEPT = 65_536
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_NO_ROWS = np.empty(0, dtype=np.int64)
_NO_COUNTS = np.empty(0, dtype=np.int32)
#: Term groups read between two looks at the stop flag while a copy is read.
_STOP_EVERY = 256
_log = logging.getLogger(__name__)


def parse_match(match: str) -> list[str] | None:
    """The terms of an ``"a" OR "b"`` match (``fts_query``), or None for any other query."""
    terms = _QUOTED.findall(match)
    if not terms or " OR ".join(f'"{t}"' for t in terms) != match:
        return None
    return [t.replace('""', '"') for t in terms]


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (a one-column ``fts_docsize`` entry)."""
    value = 0
    for i, byte in enumerate(blob):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


@dataclass
class _Snapshot:
    """The whole index as one read transaction saw it."""

    base: dict[str, tuple[np.ndarray, np.ndarray]]
    size: np.ndarray
    present: np.ndarray
    rows: int
    tokens: int


class _Stopped(Exception):
    """The store closed while its copy was read."""


class KeywordIndex:
    """Postings of every term of one FTS5 table, kept equal to it by ``apply`` after each commit."""

    def __init__(self, tokenize: str, table: str = "fts") -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._tokenize = tokenize
        self._table = table
        self._vocab = f"temp.{table}_uniko_terms"
        self._probe_conn: sqlite3.Connection | None = None
        self._tokens_of: dict[str, tuple[str, ...]] = {}
        self.ready = False
        #: Commits that landed while a snapshot is read (None: no build in flight).
        self._pending: list[tuple[int, str | None]] | None = None
        #: Moves at every reset: a build begun before it is thrown away.
        self._epoch = 0
        self._thread: threading.Thread | None = None
        self._snap_conn: sqlite3.Connection | None = None
        self._stop = False
        #: A build failed (out of memory, say): FTS5 scores from then on, with no retry per query.
        self.failed = False
        self._clear()

    @property
    def building(self) -> bool:
        return self._pending is not None

    def _clear(self) -> None:
        self._base: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._size = np.zeros(0, dtype=np.float64)  # tokens of each row, by rowid
        self._present = np.zeros(0, dtype=bool)
        self._in_base = np.zeros(0, dtype=bool)
        self._stale = np.zeros(0, dtype=bool)  # a base row rewritten or deleted since the merge
        self._n_stale = 0
        self._extra: dict[str, dict[int, int]] = {}  # rows written since: term -> rowid -> count
        self._extra_terms: dict[int, list[str]] = {}
        self._rows = 0
        self._tokens = 0

    @property
    def _probe(self) -> sqlite3.Connection:
        """An in-memory FTS5 table with the store's tokenizer and its vocabulary (made on first use)."""
        if self._probe_conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.execute(f"CREATE VIRTUAL TABLE p USING fts5(text, tokenize = '{self._tokenize}')")
            conn.execute("CREATE VIRTUAL TABLE pv USING fts5vocab(p, instance)")
            self._probe_conn = conn
        return self._probe_conn

    def close(self) -> None:
        """Stop a build in flight (its query is interrupted) and drop the copy."""
        self._stop = True
        thread, snap = self._thread, self._snap_conn
        if thread is not None and thread.is_alive():
            if snap is not None:
                with contextlib.suppress(sqlite3.Error):
                    snap.interrupt()
            thread.join()
        with self._lock:
            self.reset()
            if self._probe_conn is not None:
                self._probe_conn.close()
                self._probe_conn = None

    def reset(self) -> None:
        """Forget the copy (built again on demand): after a write whose outcome is unknown. A build
        in flight is thrown away when it ends."""
        with self._lock:
            self.ready = False
            self._pending = None
            self._epoch += 1
            self._clear()
            self._changed.notify_all()

    # ------------------------------------------------------------------ building and upkeep
    def start(
        self, connect: Callable[[], sqlite3.Connection], commits: threading.Lock, *, wait_s: float
    ) -> bool:
        """Begin reading the copy in a background thread, from a snapshot taken while ``commits``
        (the store's write lock, held through every commit and its ``apply``) is held, so each
        commit is either in the snapshot or queued for it. False when nothing was begun: built,
        building, failed, stopped, or the lock not had within ``wait_s`` seconds."""
        with self._lock:
            if self.ready or self.building or self.failed or self._stop:
                return False
            if self._thread is not None and self._thread.is_alive():
                return False  # a build thrown away by a reset is still ending
        try:
            snap = connect()
        except Exception as exc:
            _log.warning("the keyword index copy could not be begun (%s)", type(exc).__name__)
            return False
        try:
            self._vocabulary(snap)
            snap.execute("PRAGMA query_only=ON")
            if not commits.acquire(timeout=wait_s):
                snap.close()
                return False
            try:
                snap.execute("BEGIN")
                snap.execute(f"SELECT 1 FROM {self._table}_docsize LIMIT 1").fetchall()  # the snapshot
                with self._lock:
                    self.ready = False
                    self._clear()
                    self._pending = []
                    self._epoch += 1
                    epoch = self._epoch
            finally:
                commits.release()
        except sqlite3.Error as exc:
            snap.close()
            _log.warning("the keyword index copy could not be begun (%s)", type(exc).__name__)
            return False
        self._snap_conn = snap
        self._thread = threading.Thread(
            target=self._load, args=(snap, epoch), name="uniko-keyword-index", daemon=True
        )
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a build in flight; True when the copy is ready."""
        with self._changed:
            self._changed.wait_for(lambda: not self.building, timeout)
            return self.ready

    def _load(self, snap: sqlite3.Connection, epoch: int) -> None:
        try:
            self._install(self._read(snap), epoch)
        except (_Stopped, sqlite3.OperationalError) as exc:
            if not self._stop:
                self._failed(exc, epoch)
        except Exception as exc:  # MemoryError and the like: the store goes on with FTS5's scores
            self._failed(exc, epoch)
        finally:
            self._snap_conn = None
            with contextlib.suppress(sqlite3.Error):
                snap.close()
            with self._lock:
                if epoch == self._epoch and self._pending is not None:
                    self._pending = None  # stopped: nothing to install
                self._changed.notify_all()

    def _failed(self, exc: BaseException, epoch: int) -> None:
        with self._lock:
            if epoch != self._epoch:
                return  # reset meanwhile: a new build may be begun
            self.failed = True
            self._pending = None
        _log.warning(
            "the keyword index copy could not be built (%s); FTS5 scores every query", type(exc).__name__
        )

    def _vocabulary(self, conn: sqlite3.Connection) -> None:
        """The table's per-instance vocabulary on ``conn`` (a temp table: before ``query_only``)."""
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab} USING fts5vocab(main, {self._table}, instance)"
        )

    def _read(self, conn: sqlite3.Connection) -> _Snapshot:
        """Every row's size and every term's postings, as ``conn``'s read transaction sees them."""
        sizes = conn.execute(f"SELECT id, sz FROM {self._table}_docsize").fetchall()
        top = max((r for r, _ in sizes), default=0)
        n = max(top + 1, 1024)
        size = np.zeros(n, dtype=np.float64)
        present = np.zeros(n, dtype=bool)
        tokens = 0
        for rowid, blob in sizes:
            k = _varint(blob)
            size[rowid] = k
            present[rowid] = True
            tokens += k
        rows = len(sizes)
        del sizes
        kind = np.int32 if top < 2**31 else np.int64  # 8 bytes a posting, not 12
        base: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for i, (term, group) in enumerate(
            groupby(conn.execute(f"SELECT term, doc FROM {self._vocab}"), key=lambda x: x[0])
        ):
            if i % _STOP_EVERY == 0 and self._stop:
                raise _Stopped
            docs = np.fromiter((d for _, d in group), dtype=kind)
            ids, counts = np.unique(docs, return_counts=True)
            base[term] = (ids, counts.astype(np.int32))
        return _Snapshot(base, size, present, rows, tokens)

    def _install(self, snap: _Snapshot, epoch: int) -> None:
        """The snapshot in, then the commits queued while it was read."""
        with self._lock:
            if epoch != self._epoch or self._pending is None:
                return  # reset meanwhile: what was read may no longer be the file's
            pending, self._pending = self._pending, None
            self._clear()
            self._base, self._size, self._present = snap.base, snap.size, snap.present
            self._in_base = snap.present.copy()
            self._stale = np.zeros(len(snap.present), dtype=bool)
            self._rows, self._tokens = snap.rows, snap.tokens
            self.ready = True
            try:
                if pending:
                    self.apply(pending)
            except BaseException:
                self.ready = False  # never a copy that missed a commit
                self._clear()
                raise
            finally:
                self._changed.notify_all()

    def _grow(self, rowid: int) -> None:
        if rowid < len(self._present):
            return
        n = max(rowid + 1, len(self._present) * 2, 1024)
        for name in ("_size", "_present", "_in_base", "_stale"):
            old = getattr(self, name)
            new = np.zeros(n, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def apply(self, changes: Iterable[tuple[int, str | None]]) -> None:
        """One commit's keyword rows, in order: (rowid, its new text) or (rowid, None) = deleted."""
        with self._lock:
            if self._pending is not None:  # a snapshot is being read: these come after it
                self._pending.extend(changes)
                return
            final: dict[int, str | None] = {}
            for rowid, text in changes:
                final[rowid] = text
            if not final or not self.ready:
                return
            for rowid in final:
                self._remove(rowid)
            added = {r: t for r, t in final.items() if t is not None}
            if added:
                self._add(added)
            if len(self._extra_terms) + self._n_stale > max(MERGE_MIN_ROWS, self._rows // MERGE_SHARE):
                self._merge()

    def _remove(self, rowid: int) -> None:
        if rowid >= len(self._present) or not self._present[rowid]:
            return
        self._rows -= 1
        self._tokens -= int(self._size[rowid])
        self._present[rowid] = False
        self._size[rowid] = 0
        for term in self._extra_terms.pop(rowid, ()):
            held = self._extra[term]
            del held[rowid]
            if not held:
                del self._extra[term]
        if self._in_base[rowid] and not self._stale[rowid]:
            self._stale[rowid] = True
            self._n_stale += 1

    def _add(self, texts: dict[int, str]) -> None:
        """Tokenised by FTS5 itself: the rows go through the probe table and its vocabulary."""
        probe = self._probe
        probe.execute("DELETE FROM p")
        probe.executemany("INSERT INTO p(rowid, text) VALUES(?, ?)", texts.items())
        counts = probe.execute("SELECT doc, term, count(*) FROM pv GROUP BY doc, term").fetchall()
        probe.execute("DELETE FROM p")
        self._grow(max(texts))
        for rowid in texts:
            self._present[rowid] = True
            self._rows += 1
        for rowid, group in groupby(counts, key=lambda x: x[0]):
            terms = self._extra_terms.setdefault(rowid, [])
            for _, term, n in group:
                self._extra.setdefault(term, {})[rowid] = n
                terms.append(term)
                self._size[rowid] += n
                self._tokens += n

    def _merge(self) -> None:
        """Fold the overlay into the arrays and drop the masked postings."""
        for term in {*self._base, *self._extra}:
            rows, counts = self._postings(term)
            if len(rows):
                order = np.argsort(rows, kind="stable")
                self._base[term] = (rows[order], counts[order])
            else:
                self._base.pop(term, None)
        self._extra.clear()
        self._extra_terms.clear()
        self._in_base[:] = self._present
        self._stale[:] = False
        self._n_stale = 0

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        rows, counts = self._base.get(term, (_NO_ROWS, _NO_COUNTS))
        if self._n_stale and len(rows):
            keep = ~self._stale[rows]
            rows, counts = rows[keep], counts[keep]
        extra = self._extra.get(term)
        if extra:
            rows = np.concatenate([rows, np.fromiter(extra.keys(), dtype=np.int64, count=len(extra))])
            counts = np.concatenate([counts, np.fromiter(extra.values(), dtype=np.int32, count=len(extra))])
        return rows, counts

    # ------------------------------------------------------------------ queries
    def _tokenised(self, term: str) -> tuple[str, ...]:
        held = self._tokens_of.get(term)
        if held is None:
            probe = self._probe
            probe.execute("DELETE FROM p")
            probe.execute("INSERT INTO p(rowid, text) VALUES(1, ?)", (term,))
            held = tuple(t for (t,) in probe.execute("SELECT term FROM pv ORDER BY offset"))
            probe.execute("DELETE FROM p")
            if len(self._tokens_of) >= TERMS_KEPT:
                self._tokens_of.clear()
            self._tokens_of[term] = held
        return held

    def ranked(self, match: str) -> list[tuple[float, int]] | None:
        """(bm25, rowid) of every row ``match`` finds, best first, as FTS5 scores them; None when
        the copy is not built or the query is not an OR of single-token terms."""
        terms = parse_match(match)
        if terms is None or not self.ready:
            return None
        with self._lock:
            if not self.ready:
                return None
            tokens = [self._tokenised(t) for t in terms]
            if any(len(t) != 1 for t in tokens):
                return None
            return self._score([t[0] for t in tokens])

    def _score(self, tokens: list[str]) -> list[tuple[float, int]]:
        n_rows = self._rows
        phrases = [self._postings(t) for t in tokens]
        if n_rows == 0 or not any(len(rows) for rows, _ in phrases):
            return []
        avgdl = float(self._tokens) / float(n_rows)
        union = np.unique(np.concatenate([rows for rows, _ in phrases]))
        score = np.zeros(len(union), dtype=np.float64)
        for rows, counts in phrases:  # FTS5 sums the phrases in query order
            hits = len(rows)
            idf = math.log((n_rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            if not hits:
                continue
            freq = counts.astype(np.float64)
            size = self._size[rows]
            score[np.searchsorted(union, rows)] += idf * (
                (freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl))
            )
        score = -1.0 * score
        order = np.lexsort((union, score))
        return list(zip(score[order].tolist(), union[order].tolist(), strict=True))
