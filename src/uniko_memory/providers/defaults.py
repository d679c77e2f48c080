"""The default providers a config names (``models.embedder``), built on first need.

``KnowledgeBase.from_config`` is the one caller: the facade and the CLI get their embedder from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import UnikoConfig


def default_embedder(config: UnikoConfig) -> Any:
    """The embedder the config names; "local" is the bundled ONNX MiniLM."""
    name = config.models.embedder
    if name == "local":
        from .embed.local import LocalOnnxEmbedder

        return LocalOnnxEmbedder(
            batch_size=config.models.embedding_batch_size,
            threads=config.models.embedding_threads,
            cache_size=config.models.query_cache_size,
            compute=config.models.embedding_compute,
        )
    if name == "cohere":
        from .embed.cohere import CohereEmbedder

        return CohereEmbedder()
    from ..errors import ConfigError

    raise ConfigError(f"models.embedder={name!r} needs an embedder passed explicitly (embedder=...)")
