"""UnikoChatMessageHistory: a BaseChatMessageHistory stored in uniko, inside RunnableWithMessageHistory."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_uniko import UnikoChatMessageHistory

from uniko_memory.facade import Agent


def _texts(messages: list[BaseMessage]) -> list[tuple[str, str]]:
    return [(m.type, str(m.text)) for m in messages]


def test_add_messages_round_trips_in_order(fresh_agent: Agent) -> None:
    history = UnikoChatMessageHistory(fresh_agent, session_id="chat-1")
    assert history.messages == []
    history.add_user_message("My sister Anika plays the violin.")
    history.add_ai_message("How lovely! Does she play in an orchestra?")
    history.add_messages(
        [
            HumanMessage("Yes, the city orchestra.", id="h-3"),
            AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "t1"}]),  # no words
            ToolMessage("orchestra: founded 1921", tool_call_id="t1"),
            SystemMessage("be brief"),
            AIMessage("Then you must go to her concerts.", id="a-4"),
        ]
    )
    assert _texts(history.messages) == [
        ("human", "My sister Anika plays the violin."),
        ("ai", "How lovely! Does she play in an orchestra?"),
        ("human", "Yes, the city orchestra."),
        ("ai", "Then you must go to her concerts."),
    ]
    assert [m.id for m in history.messages][2:] == ["h-3", "a-4"]
    history.add_messages([HumanMessage("Yes, the city orchestra.", id="h-3")])  # same id: stored once
    assert len(history.messages) == 4
    # The turns are uniko memory: another session's recall finds them.
    fresh_agent.flush_sync()
    bundle = fresh_agent.recall_sync("Who plays the violin?", sessions=["chat-1"])
    assert any("Anika" in item.content for item in bundle.items)
    assert len(UnikoChatMessageHistory(fresh_agent, session_id="chat-1", max_messages=2).messages) == 2


async def test_async_twins_and_clear(fresh_agent: Agent) -> None:
    history = UnikoChatMessageHistory(fresh_agent, session_id="chat-a")
    await history.aadd_messages([HumanMessage("I moved to Porto in June."), AIMessage("Porto is lovely.")])
    assert _texts(await history.aget_messages()) == [
        ("human", "I moved to Porto in June."),
        ("ai", "Porto is lovely."),
    ]
    await history.aclear()
    assert await history.aget_messages() == []
    await history.aadd_messages([HumanMessage("A new start.")])  # the session is usable after clear
    assert _texts(await history.aget_messages()) == [("human", "A new start.")]
    history.clear()
    assert history.messages == []


def test_prime_starts_with_what_uniko_recalls(sample_agent: Agent, fresh_agent: Agent) -> None:
    empty = UnikoChatMessageHistory(sample_agent, session_id="new-chat", prime=True)
    assert empty.messages == []  # nothing asked yet: nothing to recall for
    primed = UnikoChatMessageHistory(sample_agent, session_id="new-chat", prime="Priya's cat", limit=4)
    [memory] = primed.messages
    assert isinstance(memory, SystemMessage) and "Biscuit" in memory.text
    assert memory.text.startswith("Memory (quoted data")
    with pytest.raises(ValueError, match="max_messages"):
        UnikoChatMessageHistory(fresh_agent, session_id="x", max_messages=0)
    with pytest.warns(DeprecationWarning, match="k= is deprecated"):
        assert UnikoChatMessageHistory(fresh_agent, session_id="x", k=2).limit == 2


def _chain(
    agent: Agent, replies: list[str], **history_options: object
) -> tuple[RunnableWithMessageHistory, list[list[BaseMessage]]]:
    """The chain, and the prompts the model was given (one list of messages per call)."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are helpful."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))
    seen: list[list[BaseMessage]] = []

    def record(value: object) -> object:
        seen.append(list(value.to_messages()))  # type: ignore[attr-defined]
        return value

    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # RunnableWithMessageHistory is deprecated upstream
        chain = RunnableWithMessageHistory(
            prompt | record | model,
            lambda session_id: UnikoChatMessageHistory(agent, session_id=session_id, **history_options),
            input_messages_key="question",
            history_messages_key="history",
        )
    return chain, seen


def test_runnable_with_message_history_keeps_each_session(fresh_agent: Agent) -> None:
    chain, seen = _chain(fresh_agent, ["Nice to meet you, Lena.", "You are Lena.", "Hello Omar."])
    one = {"configurable": {"session_id": "lena"}}
    assert chain.invoke({"question": "Hi, I am Lena."}, config=one).text == "Nice to meet you, Lena."
    chain.invoke({"question": "What is my name?"}, config=one)
    chain.invoke({"question": "I am Omar."}, config={"configurable": {"session_id": "omar"}})
    second_prompt = seen[1]
    assert _texts(second_prompt)[1:] == [
        ("human", "Hi, I am Lena."),
        ("ai", "Nice to meet you, Lena."),
        ("human", "What is my name?"),
    ]
    assert _texts(seen[2])[1:] == [("human", "I am Omar.")]
    stored = UnikoChatMessageHistory(fresh_agent, session_id="lena").messages
    assert len(stored) == 4 and stored[-1].text == "You are Lena."


async def test_runnable_with_message_history_async_and_primed(fresh_agent: Agent) -> None:
    old = UnikoChatMessageHistory(fresh_agent, session_id="monday")
    await old.aadd_messages([HumanMessage("My locker code is 4417."), AIMessage("Noted.")])
    await fresh_agent.flush()
    chain, seen = _chain(fresh_agent, ["It is 4417."], prime="locker code", recall_sessions=["monday"])
    reply = await chain.ainvoke(
        {"question": "What is my code?"}, config={"configurable": {"session_id": "friday"}}
    )
    assert reply.text == "It is 4417."
    prompt = seen[0]
    assert isinstance(prompt[1], SystemMessage) and "4417" in prompt[1].text  # the primed memory
