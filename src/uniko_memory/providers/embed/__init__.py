"""Embedders: the :class:`Embedder` protocol and its backends (optional deps load lazily)."""

from uniko_memory.providers.embed.base import Embedder, l2_normalize
from uniko_memory.providers.embed.cohere import CohereEmbedder
from uniko_memory.providers.embed.langchain import LangChainEmbedder
from uniko_memory.providers.embed.local import LocalOnnxEmbedder

__all__ = ["CohereEmbedder", "Embedder", "LangChainEmbedder", "LocalOnnxEmbedder", "l2_normalize"]
