"""Shared helpers for the ingest, pipeline and facade tests.

The spaCy model and the ONNX embedder are cached per process, so a fresh in-memory ``Uniko`` per
test costs tens of milliseconds; only the first one in a run pays the model loads.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from uniko_memory.config import UnikoConfig
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Edge, EdgeType, Message, Node, Tier

#: The LoCoMo example: 8 May 2023, 1:56 pm.
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def turn(sender: str, content: str, i: int = 0, **kwargs: Any) -> Turn:
    kwargs.setdefault("at", at(30 * i))
    return Turn(sender=sender, content=content, **kwargs)


class FakeEmbedder:
    """Hashed bag of words, L2-normalised: texts sharing words are close. No model, microseconds.

    The real ONNX embedder is used where vectors matter (P7a, the demo); elsewhere this keeps the
    suite fast on a busy 2-core machine (one 256-token text costs ~0.3 s there).
    """

    model_id = "tests/fake-bag-of-words"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(word.encode()) % self.dim] += 1.0
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


async def open_uni(
    config: dict[str, Any] | None = None, *, real_embedder: bool = False, **kwargs: Any
) -> Uniko:
    """A fresh in-memory engine; the fake embedder unless ``real_embedder``."""
    if not real_embedder:
        kwargs.setdefault("embedder", FakeEmbedder())
    return await Uniko.in_memory(UnikoConfig.build(config or {}), **kwargs)


async def nodes(uni: Uniko, agent: str, tier: Tier, **kwargs: Any) -> list[Node]:
    kwargs.setdefault("limit", 10_000)
    return await uni.kb.store.find(agent, tier, **kwargs)


async def messages(uni: Uniko, agent: str, session_node_id: str | None = None) -> list[Message]:
    from uniko_memory.store.filters import Eq

    flt = Eq("session", session_node_id) if session_node_id else None
    found = await uni.kb.store.find(agent, Tier.MESSAGE, flt, limit=10_000, order_by="seq")
    return [m for m in found if isinstance(m, Message)]


async def edges(
    uni: Uniko, agent: str, ids: Sequence[str], *types: EdgeType, direction: str = "out"
) -> list[Edge]:
    from uniko_memory.model import Direction

    return await uni.kb.store.neighbors(agent, list(ids), list(types) or None, Direction(direction))


async def wait_until(pred: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0) -> None:
    """Poll ``pred`` until it holds (a spawned background task has had its turn)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = pred()
        if not isinstance(value, bool):
            value = await value
        if value:
            return
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


def sentence_text(n_sentences: int, seed: str = "river") -> str:
    """Varied English prose, about 13 tokens a sentence."""
    subjects = ["The old mill", "A quiet ferry", "The night market", "Our garden club", "The village choir"]
    verbs = ["opened", "closed", "moved", "painted", "rebuilt"]
    objects = ["its doors", "the bridge", "a new stage", "the north wall", "the harbour office"]
    out = []
    for i in range(n_sentences):
        out.append(
            f"{subjects[i % 5]} {verbs[(i // 5) % 5]} {objects[(i // 25) % 5]} near the {seed} in year {1900 + i}."
        )
    return " ".join(out)


class NlpSpy:
    """An NLP backend that records the length of every text it is asked to analyse: long-turn and
    document tests check that no step reads the whole turn.

    ``count_complete=False`` leaves out ``complete`` (the second pass over texts ``analyze_shallow``
    already read), for a test that sums the characters read."""

    def __init__(self, inner: Any, *, count_complete: bool = True) -> None:
        self.inner = inner
        self.count_complete = count_complete
        self.lengths: list[int] = []

    def analyze(self, texts: list[str]) -> list[Any]:
        self.lengths.extend(len(t) for t in texts)
        return self.inner.analyze(texts)

    def analyze_shallow(self, texts: list[str]) -> list[Any]:
        self.lengths.extend(len(t) for t in texts)
        return self.inner.analyze_shallow(texts)

    def complete(self, analyses: list[Any]) -> list[Any]:
        if self.count_complete:
            self.lengths.extend(len(a.text) for a in analyses)
        return self.inner.complete(analyses)
