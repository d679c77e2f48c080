"""UnikoStore: LangGraph BaseStore semantics over uniko, and create_agent(store=...)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_uniko import UnikoStore
from langgraph.store.base import Item, SearchItem

from uniko_memory.facade import Agent, Uniko

_ids = itertools.count()


@pytest.fixture
def agent_name() -> str:
    return f"store-{next(_ids)}"


@pytest.fixture
def store(uni: Uniko, agent_name: str) -> UnikoStore:
    return UnikoStore(uni, agent_id=agent_name)


def test_put_get_versions_and_delete(store: UnikoStore, agent_name: str, uni: Uniko) -> None:
    ns = ("memories",)
    assert store.get(ns, "pet") is None
    store.put(ns, "pet", {"content": "Priya has a grey cat named Biscuit.", "topic": "pets"})
    item = store.get(ns, "pet")
    assert isinstance(item, Item)
    assert item.value == {"content": "Priya has a grey cat named Biscuit.", "topic": "pets"}
    assert item.namespace == ns and item.key == "pet"
    store.put(ns, "pet", {"content": "Priya has a grey cat named Biscuit.", "topic": "pets"})  # no-op
    assert uni.agent(agent_name).stats_sync()["message"] == 1
    store.put(ns, "pet", {"content": "Priya also adopted a dog named Pepper.", "topic": "pets"})
    latest = store.get(ns, "pet")
    assert latest is not None and "Pepper" in latest.value["content"]
    assert latest.updated_at > latest.created_at == item.created_at  # created_at: the key's first put
    store.delete(ns, "pet")
    assert store.get(ns, "pet") is None
    store.put(ns, "pet", {"content": "Priya's cat Biscuit is back."})
    assert store.get(ns, "pet") is not None


def test_search_with_query_goes_through_recall(store: UnikoStore, agent_name: str) -> None:
    ns = ("memories",)
    store.put(ns, "cat", {"content": "Priya adopted a grey cat named Biscuit.", "topic": "pets"})
    store.put(ns, "job", {"content": "Priya works at Northwind on weather forecasting.", "topic": "work"})
    store.put(("other",), "x", {"content": "Tomas runs the Lisbon half marathon."})
    uni_agent: Agent = store.uni.agent(agent_name)
    uni_agent.flush_sync()
    hits = store.search(ns, query="What is the name of Priya's cat?", limit=3)
    assert hits and all(isinstance(h, SearchItem) and h.score is not None for h in hits)
    assert all(h.namespace == ns for h in hits)
    assert any("Biscuit" in str(h.value) for h in hits)
    stored = [h for h in hits if h.key == "cat"]
    assert stored and stored[0].value["topic"] == "pets"
    assert [h.score for h in hits] == sorted((h.score or 0.0 for h in hits), reverse=True)
    only_work = store.search(ns, query="Priya", filter={"topic": "work"})
    assert [h.key for h in only_work] == ["job"]
    everywhere = store.search((), query="Lisbon half marathon", limit=5)
    assert any(h.namespace == ("other",) for h in everywhere)


def test_search_without_query_lists_values(store: UnikoStore, agent_name: str) -> None:
    ns = ("notes",)
    for i in range(4):
        store.put(ns, f"n{i}", {"content": f"Note number {i} about gardening.", "i": i})
    listed = store.search(ns)
    assert [h.key for h in listed] == ["n0", "n1", "n2", "n3"]
    assert [h.key for h in store.search(ns, filter={"i": {"$gte": 2}})] == ["n2", "n3"]
    assert [h.key for h in store.search(ns, limit=2, offset=1)] == ["n1", "n2"]


def test_list_namespaces(store: UnikoStore) -> None:
    store.put(("a", "x"), "k", {"content": "alpha note"})
    store.put(("b",), "k", {"content": "beta note"})
    store.put(("c",), "k", {"content": "gamma note"})
    store.delete(("c",), "k")  # a namespace without values is not listed
    assert store.list_namespaces() == [("a", "x"), ("b",)]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert store.list_namespaces(suffix=("x",)) == [("a", "x")]
    assert store.list_namespaces(limit=1, offset=1) == [("b",)]


def test_the_whole_namespace_names_a_session_of_the_agent(uni: Uniko, agent_name: str) -> None:
    store = UnikoStore(uni, agent_id=agent_name)
    store.put(("memories", "u1"), "k", {"text": "User u1 prefers tea."})
    store.put(("memories", "u/1"), "k", {"text": "User u/1 prefers coffee."})
    assert store.session_of(("memories", "u1")) == "memories/u1"
    assert store.session_of(("memories", "u/1")) == "memories/u%2F1"
    assert store.namespace_of("memories/u%2F1") == ("memories", "u/1")
    assert store.namespace_of("50%") is None  # no namespace names this session
    bundle = uni.agent(agent_name).recall_sync("What does the user prefer?", sessions=["memories/u%2F1"])
    assert bundle.items and all("coffee" in i.content or "u/1" in i.content for i in bundle.items)
    assert store.list_namespaces() == [("memories", "u/1"), ("memories", "u1")]
    assert store.get(("memories", "u1"), "k") is not None


async def test_async_batch(store: UnikoStore, agent_name: str) -> None:
    ns = ("async",)
    await store.aput(ns, "k", {"content": "Async memories about Porto."})
    item = await store.aget(ns, "k")
    assert item is not None and item.value["content"].startswith("Async")
    assert [h.key for h in await store.asearch(ns)] == ["k"]


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (it ignores them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self


def test_create_agent_with_store(uni: Uniko, agent_name: str) -> None:
    from langchain.agents import create_agent

    @tool
    def remember(fact: str, runtime: ToolRuntime) -> str:
        """Store a fact about the user."""
        assert runtime.store is not None
        runtime.store.put(("facts",), "f1", {"content": fact})
        return "stored"

    @tool
    def lookup(query: str, runtime: ToolRuntime) -> str:
        """Search what is known about the user."""
        assert runtime.store is not None
        return "\n".join(str(h.value.get("content")) for h in runtime.store.search((), query=query))

    store = UnikoStore(uni, agent_id=agent_name)
    model = ToolCallingFake(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "remember", "args": {"fact": "The user's dog is Pepper."}, "id": "1"}
                    ],
                ),
                AIMessage("", tool_calls=[{"name": "lookup", "args": {"query": "dog name"}, "id": "2"}]),
                AIMessage("Your dog is Pepper."),
            ]
        )
    )
    graph = create_agent(model, tools=[remember, lookup], store=store)
    result = graph.invoke(
        {"messages": [{"role": "user", "content": "My dog is Pepper. What is my dog called?"}]}
    )
    assert result["messages"][-1].text == "Your dog is Pepper."
    tool_outputs = [m.text for m in result["messages"] if m.type == "tool"]
    assert tool_outputs[0] == "stored" and "Pepper" in tool_outputs[1]
    assert store.get(("facts",), "f1") is not None
