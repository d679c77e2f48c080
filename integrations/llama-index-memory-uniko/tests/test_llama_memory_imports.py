"""The public surface and the class-in-MRO check LlamaIndex packages use."""

from __future__ import annotations

import llama_index.memory.uniko
from llama_index.core.memory import BaseMemoryBlock
from llama_index.memory.uniko import UnikoMemoryBlock

EXPECTED_ALL = ["FLUSH_TOKENS", "SHORT_TERM_TOKENS", "UnikoMemoryBlock", "memory_from_defaults"]


def test_all_imports() -> None:
    assert sorted(EXPECTED_ALL) == sorted(llama_index.memory.uniko.__all__)


def test_class() -> None:
    names_of_base_classes = [b.__name__ for b in UnikoMemoryBlock.__mro__]
    assert BaseMemoryBlock.__name__ in names_of_base_classes
