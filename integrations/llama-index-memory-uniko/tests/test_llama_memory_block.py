"""UnikoMemoryBlock inside LlamaIndex's Memory: flushed messages ingested, recall injected."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.memory.uniko import UnikoMemoryBlock
from llama_index.memory.uniko._render import is_date_heading, split_entries

from uniko_memory.facade import Agent, Uniko


def _user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


async def test_aget_recalls_for_the_latest_user_message(sample_agent: Agent) -> None:
    block = UnikoMemoryBlock(agent=sample_agent, scope="agent", similarity_top_k=4, token_budget=300)
    text = await block.aget([_user("hi"), _user("What is the name of Priya's cat?")])
    assert text.startswith("Memory (quoted data") and "Biscuit" in text
    assert await block.aget([ChatMessage(role=MessageRole.ASSISTANT, content="hello")]) == ""


async def test_aput_ingests_user_and_assistant_turns(fresh_agent: Agent) -> None:
    block = UnikoMemoryBlock(agent=fresh_agent)
    await block.aput(
        [
            ChatMessage(role=MessageRole.SYSTEM, content="be nice"),
            _user("I moved to Porto in June."),
            ChatMessage(role=MessageRole.ASSISTANT, content="Porto is lovely."),
        ],
        session_id="chat-7",
    )
    await fresh_agent.flush()
    assert (await fresh_agent.stats())["message"] == 2
    bundle = await fresh_agent.recall("Porto", sessions=["chat-7"])
    assert bundle.items


async def test_atruncate_drops_last_items_then_everything(sample_agent: Agent) -> None:
    block = UnikoMemoryBlock(agent=sample_agent, scope="agent", similarity_top_k=5)
    text = await block.aget([_user("What is the name of Priya's cat?")])
    head, entries = split_entries(text)
    assert len(head) == 1 and len(entries) >= 2
    shorter = await block.atruncate(text, 1)
    kept = entries[:-1]
    while kept and is_date_heading(kept[-1]):  # a date heading left with no entries goes too
        kept.pop()
    assert shorter == "\n".join([*head, *kept])  # whole entries go, the header stays
    assert await block.atruncate(text, 10_000) is None


def test_uni_agent_id_and_viewer_strings(uni: Uniko) -> None:
    block = UnikoMemoryBlock(uni=uni, agent_id="someone", viewer="bob")
    assert block.agent.agent_id == "someone" and block.viewer is not None
    assert block.viewer.participant_id == "bob"
    with pytest.raises(ValueError, match="either"):
        UnikoMemoryBlock(uni=uni)


def test_memory_flush_reaches_uniko_and_chat_gets_recall(fresh_agent: Agent) -> None:
    block = UnikoMemoryBlock(agent=fresh_agent, priority=0, similarity_top_k=4)
    memory = Memory.from_defaults(
        session_id="llama-chat",
        token_limit=1000,
        chat_history_token_ratio=0.04,
        token_flush_size=20,
        memory_blocks=[block],
    )
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=4), memory=memory)
    chat.chat("My sister Anika plays the violin in the city orchestra.")
    chat.chat("I also adopted a grey cat named Biscuit last spring.")
    chat.chat("The weather in Lisbon has been sunny all week long.")
    fresh_agent.flush_sync()
    assert fresh_agent.stats_sync().get("message", 0) >= 2  # the short-term buffer overflowed into uniko
    messages = memory.get(input="Who plays the violin?")
    assert messages[0].role == MessageRole.SYSTEM
    assert "<uniko_memory>" in (messages[0].content or "") and "Anika" in (messages[0].content or "")


def test_a_read_right_after_the_flush_into_uniko_sees_it_without_agent_flush(fresh_agent: Agent) -> None:
    """Issue 40.4: ``Memory.get()`` right after the buffer overflowed into uniko showed no uniko
    block until ``agent.flush_sync()``; recall now waits (bounded) for the turns' background work."""
    block = UnikoMemoryBlock(agent=fresh_agent, priority=0, similarity_top_k=4)
    memory = Memory.from_defaults(
        session_id="llama-rw",
        token_limit=1000,
        chat_history_token_ratio=0.04,
        token_flush_size=20,
        memory_blocks=[block],
    )
    memory.put_messages(
        [
            _user("My sister Anika plays the violin in the city orchestra."),
            ChatMessage(role=MessageRole.ASSISTANT, content="That sounds lovely."),
            _user("I also adopted a grey cat named Biscuit last spring."),
            ChatMessage(role=MessageRole.ASSISTANT, content="Biscuit is a great name."),
            _user("The weather in Lisbon has been sunny all week long."),
        ]
    )
    messages = memory.get(input="Who plays the violin?")
    assert messages[0].role == MessageRole.SYSTEM
    assert "<uniko_memory>" in (messages[0].content or "") and "Anika" in (messages[0].content or "")


async def test_wake_up_at_the_start_of_a_conversation(sample_agent: Agent) -> None:
    block = UnikoMemoryBlock(
        agent=sample_agent, scope="agent", token_budget=300, wake_up=True, wake_up_tokens=300
    )
    first = await block.aget([_user("hello")])
    assert "(summary) Memory of" in first
    assert sum(line.startswith("Memory (quoted data") for line in first.splitlines()) <= 1  # one framing
    later = await block.aget(
        [
            _user("hello"),
            ChatMessage(role=MessageRole.ASSISTANT, content="hi"),
            _user("What is Priya's cat called?"),
        ]
    )
    assert "(summary) Memory of" not in later
    plain = UnikoMemoryBlock(agent=sample_agent, scope="agent")
    assert "(summary) Memory of" not in await plain.aget([_user("hello")])


async def test_profile_leads_the_block_with_what_is_true_now(fresh_agent: Agent) -> None:
    from _shared_fixtures import seed_a_move

    await seed_a_move(fresh_agent)
    block = UnikoMemoryBlock(agent=fresh_agent, scope="agent", profile="user", profile_tokens=120)
    text = await block.aget([_user("what's new?")])
    assert "residence: The user moved to Lyon" in text and "lives in Paris" not in text
    assert sum(line.startswith("Memory (quoted data") for line in text.splitlines()) <= 1
