"""``KnowledgeBase``: a store plus the config and models that give its vectors meaning.

This is the one place a backend is chosen. It also pins the embedding model: the model id and
dimension are recorded when the store is created, and opening it with another model is an error
(vectors from two models in one index are silent garbage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from .config import UnikoConfig
from .errors import ConfigError, SchemaMismatch
from .providers.token_counter import TokenCounter, as_token_counter
from .store.embedded import EmbeddedStore
from .store.protocol import Store


class _EmbedderLike(Protocol):
    model_id: str
    dim: int


class KnowledgeBase:
    """A store, its config and (optionally) its embedder; the handle every engine function takes.

    ``token_counter`` counts bundle budgets (``providers.token_counter``; MiniLM WordPiece by default).
    """

    def __init__(
        self, store: Store, config: UnikoConfig, embedder: Any = None, token_counter: Any = None
    ) -> None:
        self.store = store
        self.config = config
        self.embedder = embedder
        self.token_counter: TokenCounter = as_token_counter(token_counter)

    @classmethod
    async def open(
        cls,
        path: str | Path,
        config: UnikoConfig | None = None,
        *,
        embedder: _EmbedderLike | None = None,
    ) -> KnowledgeBase:
        """Open (or create) an embedded knowledge base at ``path``."""
        cfg = config or UnikoConfig()
        if cfg.store.backend != "embedded":
            raise ConfigError("KnowledgeBase.open(path) is the embedded store; use from_store() for others")
        store = await EmbeddedStore.open(path, dim=embedder.dim if embedder is not None else None)
        return await cls.from_store(store, cfg, embedder=embedder)

    @classmethod
    async def in_memory(
        cls, config: UnikoConfig | None = None, *, embedder: _EmbedderLike | None = None
    ) -> KnowledgeBase:
        """A throw-away embedded knowledge base (a temporary file removed on close)."""
        store = await EmbeddedStore.in_memory(dim=embedder.dim if embedder is not None else None)
        return await cls.from_store(store, config or UnikoConfig(), embedder=embedder)

    @classmethod
    async def from_store(
        cls, store: Store, config: UnikoConfig | None = None, *, embedder: _EmbedderLike | None = None
    ) -> KnowledgeBase:
        if embedder is not None:
            try:
                await pin_embedding_model(store, embedder.model_id, embedder.dim)
            except BaseException:
                await store.close()
                raise
        return cls(store, config or UnikoConfig(), embedder)

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> KnowledgeBase:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def pin_embedding_model(store: Store, model_id: str, dim: int) -> None:
    """Record the model on first use; refuse a different one afterwards."""
    stored_model = await store.get_meta("embedding_model")
    stored_dim = await store.get_meta("embedding_dim")
    if stored_model is None:
        await store.set_meta("embedding_model", model_id)
        await store.set_meta("embedding_dim", str(dim))
        return
    if stored_model != model_id or (stored_dim is not None and int(stored_dim) != dim):
        raise SchemaMismatch(
            f"this store was created with embedding model {stored_model!r} ({stored_dim} dims); "
            f"it cannot be opened with {model_id!r} ({dim} dims). Re-embed into a new store, or "
            "open it with the original model."
        )
