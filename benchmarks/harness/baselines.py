"""Reference retrievers over raw turns: BM25, dense and hybrid RRF (as in ``data/locomo/BASELINES.md``).

Every turn is one document ``"(session date) Speaker: text"``; the ranked documents are returned as
``RetrievedItem(kind="turn")`` covering exactly that turn. These are the "plain vector store" numbers the memory
engine has to beat at the same token budget.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, cast

import numpy as np

from .convert import format_session_date
from .format import Conversation, Question
from .metrics import RetrievalResult, RetrievedItem

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


TokenCounter = Callable[[list[str]], list[int]]


def default_token_counter() -> TokenCounter:
    """``uniko_memory.tokens.count_tokens_batch`` (MiniLM tokenizer tokens, no special tokens)."""
    from uniko_memory.tokens import count_tokens_batch

    return count_tokens_batch


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


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K, depth: int | None = None) -> list[int]:
    """Reciprocal-rank fusion: score(d) = Σ_lists 1 / (k + rank), rank 1-based; ties by index.

    With ``depth``, only the first ``depth`` entries of each list take part; documents outside every cut list are
    not returned.
    """
    fused: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for r, doc in enumerate(ranking[:depth] if depth is not None else ranking, start=1):
            fused[doc] += 1.0 / (k + r)
    return sorted(fused, key=lambda d: (-fused[d], d))


class TurnBaseline:
    """Shared ingest/cut logic; subclasses implement ``_prepare`` and ``_rank``."""

    name = "baseline"
    recall_per_budget = False

    def __init__(self, token_counter: TokenCounter | None = None) -> None:
        self._token_counter = token_counter
        self.documents: list[str] = []
        self.items: list[RetrievedItem] = []

    async def setup(self, conversation: Conversation) -> None:
        counter = self._token_counter or default_token_counter()
        docs: list[str] = []
        meta: list[tuple[str, str]] = []
        for session in conversation.sessions:
            for turn in session.turns:
                docs.append(turn_document(session.start, turn.speaker, turn.text))
                meta.append((turn.id, session.id))
        tokens = counter(docs) if docs else []
        self.documents = docs
        self.items = [
            RetrievedItem(
                content=doc,
                covered_turn_ids=frozenset({tid}),
                session_ids=frozenset({sid}),
                kind="turn",
                tokens=int(n),
            )
            for doc, (tid, sid), n in zip(docs, meta, tokens, strict=True)
        ]
        await self._prepare(docs)

    async def _prepare(self, documents: list[str]) -> None:
        raise NotImplementedError

    async def _rank(self, query: str) -> list[int]:
        raise NotImplementedError

    async def retrieve(
        self,
        question: Question,
        reference_ts: datetime,
        *,
        limit: int | None = None,
        token_budget: int | None = None,
    ) -> RetrievalResult:
        t0 = time.perf_counter()
        order = await self._rank(question.text)
        ranked = [self.items[i] for i in order]
        out = _enough(ranked, limit, token_budget)
        return RetrievalResult(items=out, latency_s=time.perf_counter() - t0, extra={})

    async def close(self) -> None:
        self.documents = []
        self.items = []


def _enough(ranked: list[RetrievedItem], limit: int | None, token_budget: int | None) -> list[RetrievedItem]:
    """The shortest prefix with ≥ ``limit`` items that also reaches past ``token_budget`` tokens (or everything)."""
    if limit is None and token_budget is None:
        return ranked
    total = 0
    for n, item in enumerate(ranked, start=1):
        total += item.tokens
        if (limit is None or n >= limit) and (token_budget is None or total > token_budget):
            return ranked[:n]
    return ranked


class BM25Baseline(TurnBaseline):
    name = "baseline-bm25"

    def __init__(self, token_counter: TokenCounter | None = None, **bm25_kwargs: Any) -> None:
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
        token_counter: TokenCounter | None = None,
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
        token_counter: TokenCounter | None = None,
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
        fused = rrf([await self.bm25._rank(query), dense], k=self.rrf_k, depth=self.rrf_depth)
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
