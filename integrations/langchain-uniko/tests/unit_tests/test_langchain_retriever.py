"""UnikoRetriever: documents, metadata, per-call overrides, scope, viewer, sync and async."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_uniko import UnikoRetriever

from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Viewer

QUERY = "What is the name of Priya's cat?"


def test_documents_carry_text_and_metadata(sample_agent: Agent) -> None:
    docs = UnikoRetriever(agent=sample_agent, limit=5).invoke(QUERY)
    assert 1 <= len(docs) <= 5
    assert all(isinstance(d, Document) for d in docs)
    assert any("Biscuit" in d.page_content for d in docs)
    first = docs[0]
    assert first.id == first.metadata["node_id"]
    for d in docs:  # rendered text carries its date: a label for turns, the validity for facts
        if d.metadata["kind"] in ("message", "observation", "chunk"):
            assert d.page_content.startswith("["), d.page_content
        elif d.metadata["kind"] == "fact":
            # dated: "as of" the day it was said, or the event's day the turn named
            assert d.page_content.endswith(")") or "202" in d.page_content, d.page_content
    for key in (
        "kind",
        "score",
        "sources",
        "timestamp",
        "session_id",
        "coverage",
        "phase1_only",
        "phase2_only",
    ):
        assert key in first.metadata
    assert [d.metadata["rank"] for d in docs] == list(range(len(docs)))
    assert all(isinstance(s, dict) for d in docs for s in d.metadata["sources"])


def test_page_content_can_be_bare_content(sample_agent: Agent) -> None:
    docs = UnikoRetriever(agent=sample_agent, limit=2, page_content="content").invoke(QUERY)
    assert all(d.page_content == d.metadata["content"] for d in docs)


def test_per_call_kwargs_override_fields(sample_agent: Agent) -> None:
    retriever = UnikoRetriever(agent=sample_agent, limit=5)
    assert len(retriever.invoke(QUERY, limit=2)) == 2
    scoped = retriever.invoke("Tomas ankle", sessions=["s3"])
    sid = sample_agent.session("s3").node_id
    assert scoped and all(d.metadata["session_id"] == sid for d in scoped)


async def test_async_path_matches_sync(sample_agent: Agent) -> None:
    retriever = UnikoRetriever(agent=sample_agent, limit=3)
    docs = await retriever.ainvoke(QUERY)
    assert [d.id for d in docs] == [d.id for d in retriever.invoke(QUERY)]


def test_uni_and_agent_id_construction(uni: Uniko, sample_agent: Agent) -> None:
    retriever = UnikoRetriever(uni=uni, agent_id=sample_agent.agent_id, limit=1)
    assert retriever.agent.agent_id == sample_agent.agent_id
    assert len(retriever.invoke(QUERY)) == 1
    with pytest.raises(ValueError, match="either"):
        UnikoRetriever(agent=sample_agent, uni=uni, agent_id="x")


def test_viewer_sees_only_what_it_may(fresh_agent: Agent) -> None:
    at = datetime(2024, 5, 1, tzinfo=UTC)
    session = fresh_agent.session("dm")
    session.observe_sync(
        Turn(sender="ana", content="My locker code is 4417.", at=at, visibility="private:ana")
    )
    session.observe_sync(Turn(sender="ana", content="The locker room opens at 9.", at=at))
    fresh_agent.flush_sync()
    retriever = UnikoRetriever(agent=fresh_agent, limit=5)
    assert any("4417" in d.page_content for d in retriever.invoke("locker code"))
    for viewer in ("bob", Viewer(participant_id="bob")):
        docs = retriever.invoke("locker code", viewer=viewer)
        assert docs and not any("4417" in d.page_content for d in docs)


def test_rag_chain(sample_agent: Agent) -> None:
    retriever = UnikoRetriever(agent=sample_agent, limit=4)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the memory:\n{context}"), ("human", "{question}")]
    )
    llm = FakeListChatModel(responses=["Biscuit."])

    def fmt(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = {"context": retriever | fmt, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()
    assert chain.invoke(QUERY) == "Biscuit."
    rendered = prompt.invoke({"context": fmt(retriever.invoke(QUERY)), "question": QUERY}).to_string()
    assert "Biscuit" in rendered


def test_k_is_a_deprecated_alias_of_limit(sample_agent: Agent) -> None:
    with pytest.warns(DeprecationWarning, match="use limit=|k= is deprecated") as caught:
        retriever = UnikoRetriever(agent=sample_agent, k=2)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert retriever.limit == 2 and len(retriever.invoke(QUERY)) == 2
    with pytest.warns(DeprecationWarning, match="use limit=|k= is deprecated"):
        assert len(retriever.invoke(QUERY, k=1)) == 1
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="not both"):
        UnikoRetriever(agent=sample_agent, limit=3, k=2)


def test_middleware_and_legacy_memory_take_limit(sample_agent: Agent) -> None:
    from langchain_uniko import UnikoMemory, UnikoMiddleware

    assert UnikoMiddleware(sample_agent, limit=3).limit == 3
    with pytest.warns(DeprecationWarning, match="use limit=|k= is deprecated"):
        assert UnikoMiddleware(sample_agent, k=2).limit == 2
    with pytest.warns(DeprecationWarning, match="use limit=|k= is deprecated"):
        assert UnikoMemory(agent=sample_agent, k=2).limit == 2
