"""The public surface: ``__all__`` and the base classes each adapter extends."""

from __future__ import annotations

import langchain_uniko
from langchain_uniko import UnikoChatMessageHistory, UnikoMemory, UnikoMiddleware, UnikoRetriever, UnikoStore

EXPECTED_ALL = [
    "UnikoChatMessageHistory",
    "UnikoMemory",
    "UnikoMiddleware",
    "UnikoRetriever",
    "UnikoStore",
    "__version__",
]


def test_all_imports() -> None:
    assert sorted(EXPECTED_ALL) == sorted(langchain_uniko.__all__)
    for name in langchain_uniko.__all__:
        assert getattr(langchain_uniko, name) is not None


def test_classes_extend_the_framework_bases() -> None:
    expected = {
        UnikoRetriever: "BaseRetriever",
        UnikoMemory: "BaseMemory",
        UnikoStore: "BaseStore",
        UnikoMiddleware: "AgentMiddleware",
        UnikoChatMessageHistory: "BaseChatMessageHistory",
    }
    for cls, base in expected.items():
        assert base in [b.__name__ for b in cls.__mro__], cls
