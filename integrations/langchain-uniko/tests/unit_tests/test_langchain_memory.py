"""UnikoMemory (legacy BaseMemory): recall on load, ingest on save, inside a classic chain."""

from __future__ import annotations

import warnings

import pytest
from langchain_core.language_models import FakeListLLM
from langchain_core.messages import SystemMessage
from langchain_uniko import UnikoMemory

from uniko_memory.facade import Agent


def test_load_renders_recall_with_dates(sample_agent: Agent) -> None:
    memory = UnikoMemory(agent=sample_agent, session_id="s9", limit=4, token_budget=200)
    assert memory.memory_variables == ["history"]
    text = memory.load_memory_variables({"input": "What is the name of Priya's cat?"})["history"]
    assert text.startswith("Memory (quoted data")
    assert "Biscuit" in text and "2024]" in text
    bundle = sample_agent.recall_sync("What is the name of Priya's cat?", limit=4, token_budget=200)
    assert bundle.total_tokens <= 200


def test_messages_mode(sample_agent: Agent) -> None:
    memory = UnikoMemory(agent=sample_agent, return_messages=True, memory_key="memory")
    [message] = memory.load_memory_variables({"question": "Priya's cat"})["memory"]
    assert isinstance(message, SystemMessage) and "Biscuit" in message.text


def test_save_context_ingests_the_pair(fresh_agent: Agent) -> None:
    memory = UnikoMemory(agent=fresh_agent, session_id="chat")
    assert memory.load_memory_variables({"input": "violin"}) == {"history": ""}
    memory.save_context({"input": "My sister Anika plays the violin."}, {"response": "How lovely!"})
    fresh_agent.flush_sync()
    assert fresh_agent.stats_sync()["message"] == 2
    assert "Anika" in memory.load_memory_variables({"input": "Who plays the violin?"})["history"]


async def test_async_twins(fresh_agent: Agent) -> None:
    memory = UnikoMemory(agent=fresh_agent, session_id="chat")
    await memory.asave_context({"input": "I moved to Porto in June."}, {"output": "Nice city."})
    await fresh_agent.flush()
    assert "Porto" in (await memory.aload_memory_variables({"input": "Where did I move?"}))["history"]


def test_ambiguous_keys_need_explicit_names(fresh_agent: Agent) -> None:
    memory = UnikoMemory(agent=fresh_agent)
    with pytest.raises(ValueError, match="input_key"):
        memory.load_memory_variables({"a": "x", "b": "y"})


def test_in_a_conversation_chain(fresh_agent: Agent) -> None:
    from langchain_classic.chains import ConversationChain

    memory = UnikoMemory(agent=fresh_agent, session_id="legacy")
    llm = FakeListLLM(responses=["Noted: Biscuit the cat.", "Your cat is called Biscuit."])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chain = ConversationChain(llm=llm, memory=memory)
    chain.invoke({"input": "I adopted a grey cat named Biscuit."})
    fresh_agent.flush_sync()
    result = chain.invoke({"input": "What is my cat called?"})
    assert result["response"] == "Your cat is called Biscuit."
    assert "Biscuit" in result["history"]  # the second prompt carried the recalled memory
    assert fresh_agent.stats_sync()["message"] == 4


def test_clear_forgets_the_session(fresh_agent: Agent) -> None:
    memory = UnikoMemory(agent=fresh_agent, session_id="gone")
    memory.save_context({"input": "My passport number is X123."}, {"output": "Stored your passport."})
    UnikoMemory(agent=fresh_agent, session_id="kept").save_context(
        {"input": "My passport expires in 2031."}, {"output": "Noted."}
    )
    fresh_agent.flush_sync()
    assert "X123" in memory.load_memory_variables({"input": "passport number"})["history"]
    assert memory.supports_clear
    memory.clear()
    history = memory.load_memory_variables({"input": "passport number"})["history"]
    assert "X123" not in history and "2031" in history  # only that session was forgotten


async def test_aclear(fresh_agent: Agent) -> None:
    memory = UnikoMemory(agent=fresh_agent, session_id="gone")
    await memory.asave_context({"input": "My locker code is 5521."}, {"output": "Ok."})
    await fresh_agent.flush()
    await memory.aclear()
    assert "5521" not in (await memory.aload_memory_variables({"input": "locker code"}))["history"]


async def test_wake_up_on_the_first_load_only(sample_agent: Agent) -> None:
    memory = UnikoMemory(agent=sample_agent, wake_up=True, wake_up_tokens=300)
    first = (await memory.aload_memory_variables({"input": "hello"}))["history"]
    assert "(summary) Memory of" in first and first.splitlines().count("<memory>") == 1
    second = (await memory.aload_memory_variables({"input": "hello"}))["history"]
    assert "(summary) Memory of" not in second
    plain = UnikoMemory(agent=sample_agent)
    assert "(summary) Memory of" not in (await plain.aload_memory_variables({"input": "hello"}))["history"]


async def test_profile_leads_the_memory_with_what_is_true_now(fresh_agent: Agent) -> None:
    from _shared_fixtures import seed_a_move

    await seed_a_move(fresh_agent)
    memory = UnikoMemory(agent=fresh_agent, profile="user", profile_tokens=120, token_budget=300)
    text = (await memory.aload_memory_variables({"input": "what's new?"}))["history"]
    assert "residence: The user moved to Lyon" in text and text.splitlines().count("<memory>") == 1
    assert "residence: The user lives in Paris" not in text
    plain = (await UnikoMemory(agent=fresh_agent).aload_memory_variables({"input": "what's new?"}))["history"]
    assert "residence:" not in plain
