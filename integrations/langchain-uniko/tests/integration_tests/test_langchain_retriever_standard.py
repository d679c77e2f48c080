"""langchain-tests' standard retriever suite against the embedded store (offline)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_uniko import UnikoRetriever

from uniko_memory.facade import Agent


class TestUnikoRetrieverStandard(RetrieversIntegrationTests):
    _agent: Agent

    @pytest.fixture(autouse=True)
    def _bind_agent(self, sample_agent: Agent) -> None:
        type(self)._agent = sample_agent

    @property
    def retriever_constructor(self) -> type[UnikoRetriever]:
        return UnikoRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"agent": self._agent}

    @property
    def num_results_arg_name(self) -> str:
        return "limit"  # uniko's one name for the item count (``k`` is a deprecated alias)

    @property
    def retriever_query_example(self) -> str:
        return "What is the name of Priya's cat?"
