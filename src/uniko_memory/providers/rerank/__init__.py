"""Rerankers: the :class:`Reranker` protocol, backends, and the never-raise fallback helper."""

from uniko_memory.providers.rerank.base import Reranker, RerankResult, rerank_with_fallback
from uniko_memory.providers.rerank.cohere import CohereReranker
from uniko_memory.providers.rerank.local import LocalCrossEncoderReranker

__all__ = ["CohereReranker", "LocalCrossEncoderReranker", "RerankResult", "Reranker", "rerank_with_fallback"]
