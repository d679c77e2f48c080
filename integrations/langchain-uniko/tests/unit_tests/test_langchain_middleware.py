"""UnikoMiddleware in create_agent: memory injected before the model, turns recorded after."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_uniko import UnikoMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from uniko_memory.facade import Agent


class SpyModel(GenericFakeChatModel):
    """A fake chat model that keeps the prompts it was given."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _system(prompt: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in prompt if isinstance(m, SystemMessage))


def test_injects_recall_for_the_last_user_message(sample_agent: Agent) -> None:
    model = SpyModel(messages=iter([AIMessage("Biscuit.")]))
    middleware = UnikoMiddleware(sample_agent, limit=4, record=False)
    graph = create_agent(model, tools=[], system_prompt="You are helpful.", middleware=[middleware])
    out = graph.invoke({"messages": [{"role": "user", "content": "What is the name of Priya's cat?"}]})
    assert out["messages"][-1].text == "Biscuit."
    system = _system(model.prompts[0])
    assert system.startswith("You are helpful.") and "Memory (quoted data" in system and "Biscuit" in system
    assert middleware.last_bundle is not None and 1 <= len(middleware.last_bundle.items) <= 4
    assert all(m.type != "system" for m in out["messages"])  # the state is not changed


def test_records_turns_per_thread_without_duplicates(fresh_agent: Agent) -> None:
    model = SpyModel(messages=iter([AIMessage("Lovely!"), AIMessage("Your sister Anika plays the violin.")]))
    middleware = UnikoMiddleware(fresh_agent)
    graph = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [{"role": "user", "content": "My sister Anika plays the violin."}]}, config)
    fresh_agent.flush_sync()
    assert fresh_agent.stats_sync()["message"] == 2
    graph.invoke({"messages": [{"role": "user", "content": "Who plays the violin?"}]}, config)
    fresh_agent.flush_sync()
    assert fresh_agent.stats_sync()["message"] == 4  # the first exchange was not stored again
    assert "Anika" in _system(model.prompts[1])
    docs = fresh_agent.recall_sync("violin", sessions=["t1"])
    assert docs.items


async def test_async_agent(fresh_agent: Agent) -> None:
    model = SpyModel(messages=iter([AIMessage("Noted."), AIMessage("Porto.")]))
    middleware = UnikoMiddleware(fresh_agent, session_id="fixed")
    graph = create_agent(model, tools=[], middleware=[middleware])
    await graph.ainvoke({"messages": [{"role": "user", "content": "I moved to Porto last June."}]})
    await fresh_agent.flush()
    await graph.ainvoke({"messages": [{"role": "user", "content": "Where did I move?"}]})
    assert "Porto" in _system(model.prompts[1])
    assert (await fresh_agent.stats())["message"] == 4


def test_inject_off_and_no_user_message(fresh_agent: Agent) -> None:
    model = SpyModel(messages=iter([AIMessage("ok")]))
    graph = create_agent(
        model, tools=[], middleware=[UnikoMiddleware(fresh_agent, inject=False, record=False)]
    )
    graph.invoke({"messages": [{"role": "user", "content": "hello"}]})
    assert _system(model.prompts[0]) == ""


def test_records_a_query_episode(sample_agent: Agent) -> None:
    before = sample_agent.stats_sync().get("episode", 0)
    model = SpyModel(messages=iter([AIMessage("Biscuit.")]))
    middleware = UnikoMiddleware(sample_agent, session_id="episodes", record=False, record_episode=True)
    graph = create_agent(model, tools=[], middleware=[middleware])
    graph.invoke({"messages": [{"role": "user", "content": "What is the name of Priya's cat?"}]})
    assert sample_agent.stats_sync().get("episode", 0) == before + 1


def test_wake_up_at_the_start_of_a_conversation_only(sample_agent: Agent) -> None:
    model = SpyModel(messages=iter([AIMessage("Hi Priya."), AIMessage("Biscuit.")]))
    middleware = UnikoMiddleware(sample_agent, record=False, wake_up=True, wake_up_tokens=300)
    graph = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "w1"}}
    graph.invoke({"messages": [{"role": "user", "content": "Hello again"}]}, config)
    first = _system(model.prompts[0])
    assert middleware.last_wake_up is not None and middleware.last_wake_up.items
    assert "(summary) Memory of" in first and first.splitlines().count("<memory>") == 1
    graph.invoke({"messages": [{"role": "user", "content": "What is my cat called?"}]}, config)
    assert "(summary) Memory of" not in _system(model.prompts[1])  # not at every turn
    off = SpyModel(messages=iter([AIMessage("Hi.")]))
    create_agent(off, tools=[], middleware=[UnikoMiddleware(sample_agent, record=False)]).invoke(
        {"messages": [{"role": "user", "content": "Hello again"}]}
    )
    assert "(summary) Memory of" not in _system(off.prompts[0])  # off by default
