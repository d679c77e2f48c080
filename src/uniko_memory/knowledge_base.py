"""``KnowledgeBase``: a store plus the config and models that give its vectors meaning.

This is the one place a backend is chosen: ``KnowledgeBase.from_config`` picks the embedded store
or Weaviate (``store.backend``, ``WEAVIATE_URL``) and the default providers the config names
(``providers.defaults``); ``Uniko.open`` and the ``uniko`` command both open through it. It also
pins the embedding model: the model id and dimension are recorded when the store is created, and
opening it with another model is an error (vectors from two models in one index are silent garbage).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from .config import UnikoConfig
from .errors import ConfigError, SchemaMismatch
from .providers import defaults
from .providers.token_counter import TokenCounter, as_token_counter
from .store.embedded import EmbeddedStore
from .store.protocol import Store


class _EmbedderLike(Protocol):
    model_id: str
    dim: int


class KnowledgeBase:
    """A store, its config and (optionally) its embedder; the handle every engine function takes.

    ``token_counter`` counts bundle budgets (``providers.token_counter``; MiniLM WordPiece by default).
    ``reranker`` (a ``Reranker``, e.g. ``CohereReranker``; None by default) reorders the head of
    every recall when ``recall.rerank.enabled`` is on.
    """

    def __init__(
        self, store: Store, config: UnikoConfig, embedder: Any = None, token_counter: Any = None
    ) -> None:
        self.store = store
        self.config = config
        self.embedder = embedder
        self.token_counter: TokenCounter = as_token_counter(token_counter)
        self.reranker: Any = None

    @classmethod
    async def from_config(
        cls,
        config: UnikoConfig | None = None,
        *,
        path: str | Path | None = None,
        in_memory: bool = False,
        embedder: Any = None,
        token_counter: Any = None,
        weaviate: Any = None,
        owns_weaviate: bool = False,
        default_models: bool = True,
    ) -> KnowledgeBase:
        """Open the knowledge base ``config`` describes, with its default providers.

        The backend: Weaviate when ``weaviate=`` (a connected weaviate-client v4 client) is given
        or ``config.store.backend == "weaviate"`` (then it connects to ``WEAVIATE_URL``, with
        ``WEAVIATE_GRPC_URL`` / ``WEAVIATE_API_KEY`` if set, and ``path`` is ignored); else the
        embedded store at ``path``, or a throw-away one with ``in_memory=True`` (whatever the
        configured backend). ``owns_weaviate``: closing the knowledge base closes the ``weaviate=``
        client too (as it does a client it connected itself). ``embedder`` defaults to the one ``config.models.embedder`` names
        (``default_models=False``: none, for tools that only count nodes); ``token_counter`` (a
        ``TokenCounter``, an encoding name or a ``str -> int`` callable) is checked before
        anything opens.
        """
        cfg = config or UnikoConfig()
        counter = as_token_counter(token_counter)  # a bad counter fails before anything opens
        emb = embedder
        if emb is None and default_models:
            emb = defaults.default_embedder(cfg)
        if in_memory:
            kb = await cls.in_memory(cfg, embedder=emb)
        elif weaviate is not None or cfg.store.backend == "weaviate":
            kb = await _weaviate_kb(weaviate, cfg, emb, owns=owns_weaviate)
        elif path is None:
            raise ConfigError("the embedded store needs a path (or in_memory=True)")
        else:
            kb = await cls.open(path, cfg, embedder=emb)
        kb.token_counter = counter
        return kb

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
        dim = embedder.dim if embedder is not None else None
        store = await EmbeddedStore.open(
            path,
            dim=dim,
            vectors=cfg.store.embedded_vectors,
            inline_reads=cfg.store.embedded_inline_reads,
            read_only=cfg.store.embedded_read_only,
            keyword_index=cfg.store.embedded_keyword_index,
        )
        return await cls.from_store(store, cfg, embedder=embedder)

    @classmethod
    async def in_memory(
        cls, config: UnikoConfig | None = None, *, embedder: _EmbedderLike | None = None
    ) -> KnowledgeBase:
        """A throw-away embedded knowledge base (a temporary file removed on close)."""
        cfg = config or UnikoConfig()
        dim = embedder.dim if embedder is not None else None
        store = await EmbeddedStore.in_memory(
            dim=dim,
            vectors=cfg.store.embedded_vectors,
            inline_reads=cfg.store.embedded_inline_reads,
            keyword_index=cfg.store.embedded_keyword_index,
        )
        return await cls.from_store(store, cfg, embedder=embedder)

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


async def _weaviate_kb(client: Any, cfg: UnikoConfig, embedder: Any, *, owns: bool = False) -> KnowledgeBase:
    from .store.weaviate.client import connect_url
    from .store.weaviate.store import WeaviateStore

    owns = owns or client is None
    if client is None:
        url = os.environ.get("WEAVIATE_URL")
        if not url:
            raise ConfigError("store.backend is 'weaviate': pass weaviate=<client> or set WEAVIATE_URL")
        client = await connect_url(
            url, grpc_url=os.environ.get("WEAVIATE_GRPC_URL"), api_key=os.environ.get("WEAVIATE_API_KEY")
        )
    store = await WeaviateStore.open(
        client, prefix=cfg.store.collection_prefix, dim=embedder.dim, owns_client=owns
    )
    return await KnowledgeBase.from_store(store, cfg, embedder=embedder)


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
