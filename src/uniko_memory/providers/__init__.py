"""Model providers behind small protocols: embedders, rerankers, chat models, token counters.

Importing this package is cheap: onnxruntime, tokenizers, cohere and langchain-core are
imported only when a backend that needs them is constructed or first used.
"""

from uniko_memory.providers.chat import ChatModel, ChatResult, CircuitBreaker, LangChainChat
from uniko_memory.providers.defaults import default_embedder
from uniko_memory.providers.embed import (
    CohereEmbedder,
    Embedder,
    LangChainEmbedder,
    LocalOnnxEmbedder,
    l2_normalize,
)
from uniko_memory.providers.rerank import (
    CohereReranker,
    LocalCrossEncoderReranker,
    Reranker,
    RerankResult,
    rerank_with_fallback,
)
from uniko_memory.providers.retry import ProviderHTTPError, RetryPolicy, is_transient, retrying
from uniko_memory.providers.token_counter import (
    CallableTokenCounter,
    MiniLMTokenCounter,
    TiktokenCounter,
    TokenCounter,
    as_token_counter,
)

__all__ = [
    "CallableTokenCounter",
    "ChatModel",
    "ChatResult",
    "CircuitBreaker",
    "CohereEmbedder",
    "CohereReranker",
    "Embedder",
    "LangChainChat",
    "LangChainEmbedder",
    "LocalCrossEncoderReranker",
    "LocalOnnxEmbedder",
    "MiniLMTokenCounter",
    "ProviderHTTPError",
    "RerankResult",
    "Reranker",
    "RetryPolicy",
    "TiktokenCounter",
    "TokenCounter",
    "as_token_counter",
    "default_embedder",
    "is_transient",
    "l2_normalize",
    "rerank_with_fallback",
    "retrying",
]
