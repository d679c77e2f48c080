"""LangChain and LangGraph integration for uniko-memory.

``UnikoRetriever`` and ``UnikoChatMessageHistory`` need only ``langchain-core``; the others import their framework on first use:
``UnikoMiddleware`` (``langchain``, extra ``agents``), ``UnikoStore`` (``langgraph-checkpoint``,
extra ``store``) and the legacy ``UnikoMemory`` (``langchain-classic``, extra ``legacy``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from langchain_uniko.chat_history import UnikoChatMessageHistory
from langchain_uniko.retrievers import UnikoRetriever

if TYPE_CHECKING:
    from langchain_uniko.memory import UnikoMemory
    from langchain_uniko.middleware import UnikoMiddleware
    from langchain_uniko.store import UnikoStore

__version__ = "0.1.0"

__all__ = [
    "UnikoChatMessageHistory",
    "UnikoMemory",
    "UnikoMiddleware",
    "UnikoRetriever",
    "UnikoStore",
    "__version__",
]

_LAZY = {
    "UnikoMemory": "langchain_uniko.memory",
    "UnikoMiddleware": "langchain_uniko.middleware",
    "UnikoStore": "langchain_uniko.store",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
