"""UnikoStore: LangGraph BaseStore semantics over uniko, and create_agent(store=...)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from _shared_fixtures import FakeEmbedder
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_uniko import UnikoStore
from langgraph.store.base import Item, SearchItem

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Agent, Uniko
from uniko_memory.ingest import Turn

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


def test_search_filters_before_the_limit(store: UnikoStore) -> None:
    """Issue 40.3: five of Alice's values and one of Bob's; a filter picks its matches first, then
    ``limit`` and ``offset`` apply, with or without a query."""
    alice, bob = ("users", "alice"), ("users", "bob")
    rows = [
        ("home", "Alice lives in Lisbon near the river.", "place"),
        ("job", "Alice works at Northwind Analytics.", "work"),
        ("cat", "Alice has a grey cat named Biscuit.", "pet"),
        ("violin", "Alice plays the violin on Sundays.", "hobby"),
        ("pottery", "Alice likes pottery and kayaking.", "hobby"),
    ]
    for key, content, kind in rows:
        store.put(alice, key, {"content": content, "kind": kind})
    store.put(bob, "home", {"content": "Bob lives in Porto by the sea.", "kind": "place"})
    query = "Where does Alice live?"
    assert [h.key for h in store.search(alice, query=query, filter={"kind": "pet"}, limit=1)] == ["cat"]
    place = store.search(alice, query=query, filter={"kind": "place"}, limit=1)
    assert [(h.namespace, h.key) for h in place] == [(alice, "home")]
    both = store.search(("users",), query=query, filter={"kind": "place"}, limit=5)
    assert {(h.namespace, h.key) for h in both} == {(alice, "home"), (bob, "home")}
    hobbies = store.search(alice, query=query, filter={"kind": "hobby"}, limit=1, offset=1)
    assert len(hobbies) == 1 and hobbies[0].key in {"violin", "pottery"}
    assert store.search(alice, query=query, filter={"kind": "fish"}) == []
    assert [h.key for h in store.search(alice, filter={"kind": "hobby"}, limit=1, offset=1)] == ["pottery"]
    # every value matches without a filter: the recalled ones first (best first), then the rest unranked
    hits = store.search(alice, query="Biscuit the cat", limit=5)
    assert sorted(h.key for h in hits) == sorted(key for key, _, _ in rows)
    assert hits[0].key == "cat" and hits[0].score
    scored = [h.score for h in hits if h.score is not None]
    assert [h.score for h in hits[: len(scored)]] == sorted(scored, reverse=True)


def test_filter_operators_follow_inmemorystore(store: UnikoStore) -> None:
    from langgraph.store.memory import InMemoryStore

    ref = InMemoryStore()
    ns = ("f",)
    values = [
        {"n": 1, "tags": ["a", "b"], "meta": {"lang": "pt", "level": 2}, "flag": True},
        {"n": 2.5, "tags": ("a",), "meta": {"lang": "en"}, "flag": False},
        {"n": "3", "tags": [], "meta": "none"},
        {"n": True, "tags": ["a", "b", "c"]},  # every n converts to a number: InMemoryStore raises otherwise
    ]
    for i, value in enumerate(values):
        store.put(ns, f"k{i}", {"content": f"value number {i}", **value})
        ref.put(ns, f"k{i}", {"content": f"value number {i}", **value})
    filters: list[dict[str, Any]] = [
        {"n": {"$gt": 1}},
        {"n": {"$gte": 1, "$lt": 3}},
        {"n": {"$lte": 2.5}},
        {"n": {"$eq": 1}},
        {"n": {"$ne": 1}},
        {"tags": ["a", "b"]},
        {"tags": ("a",)},
        {"tags": []},
        {"meta": {"lang": "pt"}},
        {"meta": {}},
        {"flag": True},
        {"flag": {"$ne": True}},
    ]
    for flt in filters:
        want = [h.key for h in ref.search(ns, filter=flt, limit=10)]
        assert [h.key for h in store.search(ns, filter=flt, limit=10)] == want, flt
        assert sorted(h.key for h in store.search(ns, query="value number", filter=flt, limit=10)) == sorted(
            want
        )
    # where InMemoryStore raises (float() of a missing field or a word): no match, or two strings
    assert [h.key for h in store.search(ns, filter={"missing": {"$gt": 0}})] == []
    store.put(ns, "d", {"content": "dated", "n": 0, "on": "2024-06-10"})
    assert [h.key for h in store.search(ns, filter={"on": {"$gte": "2024-06-01", "$lt": "2024-07"}})] == ["d"]
    assert [h.key for h in store.search(ns, filter={"on": {"$gt": 5}})] == []
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search(ns, filter={"n": {"$in": [1]}})


def test_derived_memory_is_opt_in(uni: Uniko, agent_name: str) -> None:
    """Issue 40.3: by default a search returns stored values only (LangGraph code reads
    ``item.value`` in the schema it put); ``include_derived=True`` adds recall's derived items."""
    agent = uni.agent(agent_name)
    agent.session("chat").observe_sync(
        Turn(sender="user", content="My sister Maya works at Northwind Analytics.")
    )
    store = UnikoStore(uni, agent_id=agent_name)
    store.put(("memories",), "job", {"content": "Maya is a data scientist at Northwind.", "topic": "work"})
    agent.flush_sync()
    query = "Where does Maya work at Northwind?"
    plain = store.search((), query=query, limit=10)
    assert [(h.namespace, h.key) for h in plain] == [(("memories",), "job")]
    wide = UnikoStore(uni, agent_id=agent_name, include_derived=True)
    derived = [h for h in wide.search((), query=query, limit=10) if h.key != "job"]
    assert derived and all(
        set(h.value) == {"content", "rendered", "kind", "sources", "timestamp"} for h in derived
    )
    assert any("sister" in h.value["content"] for h in derived)
    assert all(h.key not in {"job"} and h.namespace in {(), ("chat",), ("memories",)} for h in derived)
    kind = derived[0].value["kind"]  # a filter applies to derived items' values too
    only = wide.search((), query=query, filter={"kind": kind}, limit=10)
    assert only and all(h.value["kind"] == kind for h in only)
    assert [h.key for h in wide.search((), query=query, filter={"topic": "work"})] == ["job"]


class _SlowDocuments(FakeEmbedder):
    """Queries at once, stored texts after a pause: a put's vector lands well after its search."""

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        await asyncio.sleep(0.5)
        return await super().embed_documents(texts)

    async def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await super().embed_documents(texts)


def test_search_right_after_put_ranks_as_after_a_flush() -> None:
    """Issue 40.4: a search right after ``put`` waits (bounded) for the puts' vectors, so it scores
    and orders them as after ``Agent.flush``, not with 0.0 for the values still being embedded."""
    engine = Uniko.in_memory_sync(embedder=_SlowDocuments())
    try:
        store = UnikoStore(engine, agent_id="fresh-writes")
        ns = ("users", "alice")
        store.put(ns, "home", {"content": "Alice lives in Lisbon near the river."})
        store.put(ns, "job", {"content": "Alice works at Northwind Analytics in Lisbon."})
        store.put(ns, "cat", {"content": "Alice has a cat named Biscuit."})
        query = "Where does Alice live in Lisbon?"
        first = [(h.key, h.score) for h in store.search(ns, query=query, limit=5)]
        assert all(score for _, score in first), f"a value scored 0.0 right after its put: {first}"
        engine.agent("fresh-writes").flush_sync()
        assert [(h.key, h.score) for h in store.search(ns, query=query, limit=5)] == first
        with pytest.raises(ValidationError, match="search_wait"):
            UnikoStore(engine, agent_id="x", search_wait=-1)
    finally:
        engine.close_sync()


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
