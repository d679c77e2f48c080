"""UnikoRetriever for LlamaIndex: nodes, metadata, async, query engine and chat engine (MockLLM)."""

from __future__ import annotations

import pytest
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.retrievers.uniko import UnikoRetriever

from uniko_memory.facade import Agent, Uniko

QUERY = "What is the name of Priya's cat?"


def test_nodes_with_scores_and_metadata(sample_agent: Agent) -> None:
    nodes = UnikoRetriever(sample_agent, similarity_top_k=3).retrieve(QUERY)
    assert len(nodes) == 3
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert any("Biscuit" in n.node.get_content() for n in nodes)
    first = nodes[0]
    assert first.score == first.node.metadata["score"]
    assert first.node.node_id == first.node.metadata["node_id"]
    for key in ("kind", "sources", "timestamp", "session_id", "coverage", "phase1_only", "phase2_only"):
        assert key in first.node.metadata
    # Metadata stays out of the LLM prompt: the rendered text already carries the date.
    assert first.node.get_content(metadata_mode=MetadataMode.LLM) == first.node.get_content()


async def test_real_async_retrieve(sample_agent: Agent) -> None:
    retriever = UnikoRetriever(sample_agent, similarity_top_k=2)
    nodes = await retriever.aretrieve(QUERY)
    assert [n.node.node_id for n in nodes] == [n.node.node_id for n in retriever.retrieve(QUERY)]


def test_scope_and_construction(uni: Uniko, sample_agent: Agent) -> None:
    sid = sample_agent.session("s3").node_id
    nodes = UnikoRetriever(
        uni=uni, agent_id=sample_agent.agent_id, sessions=["s3"], similarity_top_k=5
    ).retrieve("Tomas ankle")
    assert nodes and all(n.node.metadata["session_id"] == sid for n in nodes)
    bare = UnikoRetriever(sample_agent, similarity_top_k=1, text="content").retrieve(QUERY)
    assert not bare[0].node.get_content().startswith("[")
    with pytest.raises(ValueError, match="either"):
        UnikoRetriever(sample_agent, uni=uni, agent_id="x")
    with pytest.raises(ValueError, match="uni="):
        UnikoRetriever()


def test_query_engine(sample_agent: Agent) -> None:
    engine = RetrieverQueryEngine.from_args(UnikoRetriever(sample_agent, similarity_top_k=4), llm=MockLLM())
    response = engine.query(QUERY)
    assert len(response.source_nodes) == 4
    assert any("Biscuit" in n.node.get_content() for n in response.source_nodes)


async def test_query_engine_async(sample_agent: Agent) -> None:
    engine = RetrieverQueryEngine.from_args(UnikoRetriever(sample_agent, similarity_top_k=2), llm=MockLLM())
    response = await engine.aquery(QUERY)
    assert len(response.source_nodes) == 2


def test_condense_plus_context_chat_engine(sample_agent: Agent) -> None:
    chat = CondensePlusContextChatEngine.from_defaults(
        UnikoRetriever(sample_agent, similarity_top_k=3), llm=MockLLM()
    )
    first = chat.chat("What is the name of Priya's cat?")
    assert first.source_nodes and any("Biscuit" in n.node.get_content() for n in first.source_nodes)
    second = chat.chat("And when did Tomas hurt his ankle?")
    assert second.source_nodes
    assert len(chat.chat_history) == 4


def test_k_is_a_deprecated_alias_of_similarity_top_k(sample_agent: Agent) -> None:
    with pytest.warns(DeprecationWarning, match="use similarity_top_k=") as caught:
        retriever = UnikoRetriever(sample_agent, k=2)
    assert caught[0].filename == __file__
    assert retriever.similarity_top_k == 2 and len(retriever.retrieve(QUERY)) == 2
    assert UnikoRetriever(sample_agent).similarity_top_k == 4
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="not both"):
        UnikoRetriever(sample_agent, similarity_top_k=3, k=2)
