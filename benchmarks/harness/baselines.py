"""Reference retrievers over raw turns: BM25, dense and hybrid RRF (as in ``data/locomo/BASELINES.md``).

Ranking: every turn is one document ``"(session date) Speaker: text"``, as in the reference runs.

Prompt text: the ranked turns are what a plain vector store would put into the prompt, in the **same format** as
uniko's bundle, so framing and date headings cost everyone the same. Each turn is a ``RecallItem`` of kind
``"message"`` (``[date] Speaker: text``, rendered by the library, relative dates resolved as for uniko's Messages),
packed greedily in rank order (``pack_in_rank_order``): the library packer's charges (``uniko_memory.recall.assemble``:
the framing once, each entry as it renders under its date heading, a heading for each new date, the line breaks),
the same counter, an item that would overflow skipped and later smaller ones still taken, then the whole text
counted and trimmed from the end until every render mode fits. That is what ``pack`` itself does with no MMR and
no de-duplication (``mmr_lambda=1``, equal scores; a unit test checks the two agree), without re-rendering every
turn of the conversation on each call. ``render_text`` of the packed items is the text; each returned
``RetrievedItem(kind="message")`` covers exactly its turn. These are the "plain vector store" numbers the memory
engine has to beat at the same token budget.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

import numpy as np

from uniko_memory.providers.token_counter import TokenCounter, as_token_counter
from uniko_memory.recall import RecallItem, RecallSource
from uniko_memory.recall.assemble import Charges, finish_render
from uniko_memory.recall.items import date_label, item_label, render_item, render_text
from uniko_memory.store.fusion import rrf

from .convert import format_session_date
from .format import Conversation, Question
from .metrics import RetrievalResult, RetrievedItem
from .run import DEFAULT_TOKEN_BUDGET

# The English stopword list of bm25s / Lucene / Elasticsearch (33 words).
# fmt: off
ENGLISH_STOPWORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
))
# fmt: on
_TOKEN = re.compile(r"\b\w\w+\b")
RRF_K = 60
#: Each ranked list is cut to its top 100 before fusion, as the reference run in BASELINES.md did (fusing the full
#: lists reproduces its top-5 figures but scores higher deeper down: all@15 0.658 vs 0.634 on the LoCoMo dev split).
RRF_DEPTH = 100


class Embedder(Protocol):
    async def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    async def embed_query(self, text: str) -> np.ndarray: ...


def default_embedder() -> Embedder:
    from uniko_memory.providers.embed.local import LocalOnnxEmbedder

    return LocalOnnxEmbedder()


def tokenize(text: str, stopwords: frozenset[str] = ENGLISH_STOPWORDS) -> list[str]:
    """Lower-case, words of ≥ 2 word characters (bm25s' default pattern), stopwords removed, no stemming."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in stopwords]


def turn_document(session_start: datetime, speaker: str, text: str) -> str:
    return f"({format_session_date(session_start)}) {speaker}: {text}"


class BM25Index:
    """Okapi BM25 (k1 = 1.5, b = 0.75) with Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``.

    Term score = idf · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl)); a repeated query term counts once per
    occurrence. ``rank`` returns every document: by score descending, ties (including all zero scores) by index.
    """

    def __init__(
        self,
        documents: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: frozenset[str] = ENGLISH_STOPWORDS,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.stopwords = stopwords
        self.n_docs = len(documents)
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths: list[int] = []
        for i, doc in enumerate(documents):
            toks = tokenize(doc, stopwords)
            lengths.append(len(toks))
            for term, tf in sorted(Counter(toks).items()):
                self.postings[term].append((i, tf))
        self.lengths = lengths
        self.avgdl = (sum(lengths) / len(lengths)) if lengths else 0.0
        self.idf = {
            term: math.log(1.0 + (self.n_docs - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in self.postings.items()
        }

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n_docs, dtype=np.float64)
        if not self.n_docs or self.avgdl == 0:
            return out
        k1, b, avgdl = self.k1, self.b, self.avgdl
        for term in tokenize(query, self.stopwords):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf[term]
            for doc, tf in postings:
                norm = k1 * (1.0 - b + b * self.lengths[doc] / avgdl)
                out[doc] += idf * tf * (k1 + 1.0) / (tf + norm)
        return out

    def rank(self, query: str) -> list[int]:
        return rank_by_score(self.scores(query))


def rank_by_score(scores: np.ndarray) -> list[int]:
    """Indices by score descending, ties by index ascending (deterministic)."""
    idx = np.arange(len(scores))
    return [int(i) for i in np.lexsort((idx, -scores))]


def turn_item(turn_id: str, at: datetime, speaker: str, text: str) -> RecallItem:
    """A turn as the library renders a Message: ``[7 May 2023] Speaker: text`` (one source, that turn)."""
    return RecallItem(
        node_id=turn_id,
        kind="message",
        score=1.0,
        content=text,
        rendered=date_label(at) + f"{speaker}: {text}",
        timestamp=at,
        sources=[RecallSource(message_id=turn_id)],
    )


@dataclass(frozen=True, slots=True)
class PackEntry:
    """A rendered turn and what the grouped layout charges for it: its entry under its date heading with the
    line break (``entry``) and, when it opens that date, the heading line with its line break (``heading``)."""

    item: RecallItem
    label: str
    entry: int
    heading: int


def pack_entry(item: RecallItem, charges: Charges) -> PackEntry:
    """``item`` (already through ``finish_render``) as ``pack`` charges it in the grouped layout."""
    count = charges.counter.count
    label = item_label(item)
    entry = count(render_item(item, dated=False)) if label else item.tokens
    heading = count(label.strip()) + charges.newline if label else 0
    return PackEntry(item, label, entry + charges.newline, heading)


def pack_in_rank_order(
    entries: Sequence[PackEntry], *, limit: int | None, token_budget: int, charges: Charges
) -> list[RecallItem]:
    """Greedy in the given order under ``token_budget`` (and at most ``limit`` items), charged as ``pack``
    charges: framing once, entry, a heading for a new date; an overflowing item is skipped. Then the rendered
    text is counted whole and trimmed from the end until both render modes fit (``Charges.rendered``)."""
    chosen: list[RecallItem] = []
    dated: set[str] = set()
    total = charges.frame
    cheapest = min((e.entry for e in entries), default=0)
    for e in entries:
        if limit is not None and len(chosen) >= limit:
            break
        if token_budget - total < cheapest:
            break  # nothing fits any more
        cost = e.entry + (e.heading if e.label and e.label not in dated else 0)
        if total + cost > token_budget:
            continue
        chosen.append(e.item)
        total += cost
        dated.add(e.label)
    while chosen and charges.rendered(chosen) > token_budget:
        chosen.pop()
    return chosen


class TurnBaseline:
    """Shared ingest / packing logic; subclasses implement ``_prepare`` and ``_rank``.

    ``retrieve`` ranks every turn (once per question: the ranking is kept for the next budget of the same
    question) and packs the best into ``token_budget`` (default: the library's), at most ``limit`` of them.
    """

    name = "baseline"
    call_path = (
        "top-ranked turns as message items ([date] Speaker: text), packed greedily in rank order into the "
        "budget with the library packer's charges (grouped layout, same counter); text = render_text(items)"
    )

    def __init__(self, token_counter: TokenCounter | Callable[[str], int] | None = None) -> None:
        self.counter = as_token_counter(token_counter)  # MiniLM unless another is given (as for uniko)
        self.charges = Charges.of(self.counter, "grouped")
        self.entries: list[PackEntry] = []
        self.documents: list[str] = []
        self.turn_items: list[RecallItem] = []
        self.session_of: dict[str, str] = {}  # turn id → session id
        self._ranked: tuple[str, list[int], float] | None = None  # (question, ranking, seconds it took)

    async def setup(self, conversation: Conversation) -> None:
        docs: list[str] = []
        items: list[RecallItem] = []
        session_of: dict[str, str] = {}
        for session in conversation.sessions:
            for turn in session.turns:
                docs.append(turn_document(session.start, turn.speaker, turn.text))
                item = turn_item(turn.id, turn.timestamp or session.start, turn.speaker, turn.text)
                finish_render(item, self.counter)  # dates resolved, standalone tokens counted: once
                items.append(item)
                session_of[turn.id] = session.id
        self.documents = docs
        self.turn_items = items
        self.entries = [pack_entry(item, self.charges) for item in items]
        self.session_of = session_of
        self._ranked = None
        await self._prepare(docs)

    async def _prepare(self, documents: list[str]) -> None:
        raise NotImplementedError

    async def _rank(self, query: str) -> list[int]:
        raise NotImplementedError

    async def ranking(self, query: str) -> tuple[list[int], float]:
        """Every turn index, best first, and the seconds the ranking took (kept for the same query)."""
        if self._ranked is None or self._ranked[0] != query:
            t0 = time.perf_counter()
            order = await self._rank(query)
            self._ranked = (query, order, time.perf_counter() - t0)
        return self._ranked[1], self._ranked[2]

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        order, rank_s = await self.ranking(question.text)
        t0 = time.perf_counter()
        chosen = pack_in_rank_order(
            [self.entries[i] for i in order],
            limit=limit,
            token_budget=DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget,
            charges=self.charges,
        )
        text = render_text(chosen, "grouped")
        out = [
            RetrievedItem(
                content=it.rendered,
                covered_turn_ids=frozenset({it.node_id}),
                session_ids=frozenset({self.session_of[it.node_id]}),
                kind="message",
            )
            for it in chosen
        ]
        latency = rank_s + time.perf_counter() - t0
        return RetrievalResult(items=out, text=text, latency_s=latency)

    async def close(self) -> None:
        self.documents = []
        self.turn_items = []
        self.entries = []
        self.session_of = {}
        self._ranked = None


class BM25Baseline(TurnBaseline):
    name = "baseline-bm25"

    def __init__(
        self, token_counter: TokenCounter | Callable[[str], int] | None = None, **bm25_kwargs: Any
    ) -> None:
        super().__init__(token_counter)
        self._bm25_kwargs = bm25_kwargs
        self.index: BM25Index | None = None

    async def _prepare(self, documents: list[str]) -> None:
        self.index = BM25Index(documents, **self._bm25_kwargs)

    async def _rank(self, query: str) -> list[int]:
        assert self.index is not None, "setup() first"
        return self.index.rank(query)


class DenseBaseline(TurnBaseline):
    name = "baseline-dense"

    def __init__(
        self,
        embedder: Embedder | Callable[[], Embedder] | None = None,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        batch_size: int = 256,
    ) -> None:
        super().__init__(token_counter)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        self.batch_size = batch_size
        self.matrix: np.ndarray | None = None

    def _get_embedder(self) -> Embedder:
        if self._embedder is None:
            spec = self._embedder_spec
            if spec is None:
                embedder = default_embedder()
            elif hasattr(spec, "embed_query") and not isinstance(spec, type):
                embedder = cast(Embedder, spec)
            else:
                embedder = cast(Callable[[], Embedder], spec)()
            self._embedder = embedder
        return self._embedder

    async def _prepare(self, documents: list[str]) -> None:
        emb = self._get_embedder()
        parts = [
            np.asarray(await emb.embed_documents(documents[i : i + self.batch_size]), dtype=np.float32)
            for i in range(0, len(documents), self.batch_size)
        ]
        self.matrix = np.vstack(parts) if parts else np.zeros((0, 1), dtype=np.float32)

    async def _rank(self, query: str) -> list[int]:
        assert self.matrix is not None, "setup() first"
        if not len(self.matrix):
            return []
        q = np.asarray(await self._get_embedder().embed_query(query), dtype=np.float32)
        return rank_by_score((self.matrix @ q).astype(np.float64))


class HybridBaseline(TurnBaseline):
    """RRF (k = 60) of the BM25 and dense rankings, each cut to its top ``rrf_depth`` (None = all turns).

    Turns outside both cut lists follow the fused ones in dense order, so every turn is ranked.
    """

    name = "baseline-hybrid"

    def __init__(
        self,
        embedder: Embedder | Callable[[], Embedder] | None = None,
        token_counter: TokenCounter | Callable[[str], int] | None = None,
        rrf_k: int = RRF_K,
        rrf_depth: int | None = RRF_DEPTH,
    ) -> None:
        super().__init__(token_counter)
        self.bm25 = BM25Baseline(token_counter)
        self.dense = DenseBaseline(embedder, token_counter)
        self.rrf_k = rrf_k
        self.rrf_depth = rrf_depth

    async def _prepare(self, documents: list[str]) -> None:
        await self.bm25._prepare(documents)
        await self.dense._prepare(documents)

    async def _rank(self, query: str) -> list[int]:
        dense = await self.dense._rank(query)
        fused = [d for d, _ in rrf([await self.bm25._rank(query), dense], k=self.rrf_k, depth=self.rrf_depth)]
        if len(fused) < len(
            dense
        ):  # a cut fusion: the rest follow in dense order, so the ranking stays complete
            taken = set(fused)
            fused += [i for i in dense if i not in taken]
        return fused

    async def close(self) -> None:
        await self.bm25.close()
        await self.dense.close()
        await super().close()
