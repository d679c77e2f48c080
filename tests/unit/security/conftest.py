"""Helpers for the redaction tests: an embedder that records what it was asked to embed, leak scans."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tests.unit.ingest._support import FakeEmbedder
from tests.unit.providers.conftest import cohere_double  # noqa: F401 - the Cohere HTTP double fixture
from uniko_memory.facade import Uniko
from uniko_memory.model import Tier

CORPUS_PATH = Path(__file__).parents[2] / "data" / "secrets_corpus.json"
CORPUS: dict[str, Any] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
#: ``{"text", "kinds", "secrets"}``: each secret substring must be gone, each kind reported.
POSITIVE: list[dict[str, Any]] = CORPUS["positive"]
#: Texts that must come back unchanged.
NEGATIVE: list[str] = CORPUS["negative"]


def all_secrets() -> list[str]:
    """Every secret substring of the corpus, for the leak checks."""
    return sorted({s for case in POSITIVE for s in case["secrets"]})


class CapturingEmbedder(FakeEmbedder):
    """The bag-of-words fake, keeping every text it embedded (documents and queries)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return await super().embed_documents(texts)

    async def embed_query(self, text: str) -> np.ndarray:
        self.seen.append(text)
        return await super().embed_query(text)


async def stored_text(uni: Uniko, agent: str) -> str:
    """Every node of every tier of ``agent``, serialised: what recall and exports could ever show."""
    parts = []
    for tier in Tier:
        for node in await uni.kb.store.find(agent, tier, limit=100_000):
            parts.append(node.model_dump_json())
    return "\n".join(parts)


def files_bytes(folder: Path) -> bytes:
    """The raw bytes of every file under ``folder`` (database, WAL, indexes)."""
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())
