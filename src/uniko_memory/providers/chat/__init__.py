"""Chat models: the :class:`ChatModel` protocol, the LangChain adapter and a circuit breaker."""

from uniko_memory.providers.chat.base import ChatModel, ChatResult
from uniko_memory.providers.chat.breaker import CircuitBreaker
from uniko_memory.providers.chat.langchain import LangChainChat

__all__ = ["ChatModel", "ChatResult", "CircuitBreaker", "LangChainChat"]
