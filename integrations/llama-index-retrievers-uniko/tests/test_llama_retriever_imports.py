"""The public surface and the class-in-MRO check LlamaIndex packages use."""

from __future__ import annotations

import llama_index.retrievers.uniko
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.retrievers.uniko import UnikoRetriever

EXPECTED_ALL = ["UnikoRetriever"]


def test_all_imports() -> None:
    assert sorted(EXPECTED_ALL) == sorted(llama_index.retrievers.uniko.__all__)


def test_class() -> None:
    names_of_base_classes = [b.__name__ for b in UnikoRetriever.__mro__]
    assert BaseRetriever.__name__ in names_of_base_classes
