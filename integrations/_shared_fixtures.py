"""Fixtures shared by the three integration packages' tests (each ``tests/conftest.py`` imports them).

One embedded in-memory engine per package's test session (each conftest that imports the fixtures
gets its own), seeded with uniko's sample chat. The engine runs on its own loop thread
(``Uniko.in_memory_sync``), so sync and async tests can share it. A bag-of-words embedder keeps
the suites offline and fast; spaCy runs as in production.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Iterator, Sequence
from datetime import datetime

import numpy as np
import pytest

from uniko_memory.cli import load_sample
from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn

SAMPLE_AGENT = "sample"


class FakeEmbedder:
    """Hashed bag of words, L2-normalised: deterministic, no model, microseconds."""

    model_id = "tests/fake-bag-of-words"
    dim = 64

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(word.encode()) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v + 1.0 / np.sqrt(self.dim)

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vec(t) for t in texts])

    async def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.embed_documents(texts)


def seed_sample(agent: Agent) -> None:
    """uniko's bundled three-session chat between Priya and Tomas, finalised."""
    turns = load_sample()
    for t in turns:
        turn = Turn(
            sender=t["sender"], content=t["text"], at=datetime.fromisoformat(t["at"]), addressed_to=t["to"]
        )
        agent.session(t["session"]).observe_sync(turn)
    agent.flush_sync()
    for session in dict.fromkeys(t["session"] for t in turns):
        agent.session(session).finalize_sync()


@pytest.fixture(scope="session")
def uni() -> Iterator[Uniko]:
    engine = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:
        yield engine
    finally:
        engine.close_sync()


@pytest.fixture(scope="session")
def sample_agent(uni: Uniko) -> Agent:
    agent = uni.agent(SAMPLE_AGENT)
    seed_sample(agent)
    return agent


async def seed_a_move(agent: Agent, user: str = "user") -> None:
    """The user lived in Paris, then moved to Lyon; consolidated (the profile tests' memory)."""
    from datetime import UTC

    said = [
        ("I live in Paris.", datetime(2024, 5, 1, tzinfo=UTC)),
        ("We moved to Lyon.", datetime(2024, 6, 1, tzinfo=UTC)),
    ]
    for text, at in said:
        await agent.session("s1").observe(Turn(sender=user, content=text, at=at, addressed_to="assistant"))
    await agent.flush()
    await agent.consolidate()


_fresh = itertools.count()


@pytest.fixture
def fresh_agent(uni: Uniko) -> Agent:
    """An empty agent of the shared engine (tests that write use their own)."""
    return uni.agent(f"fresh-{next(_fresh)}")
