"""One agent, many users: the block is scoped to the Memory's session, or to its user, by default;
and ``memory_from_defaults`` hands messages to uniko within a conversation."""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.memory.uniko import FLUSH_TOKENS, SHORT_TERM_TOKENS, UnikoMemoryBlock, memory_from_defaults

from uniko_memory.facade import Agent

SECRET = "My bank PIN is 4417 and my sister Anika lives in Porto."
QUESTION = "What is my bank PIN and where does my sister live?"


def _flushing(block: UnikoMemoryBlock, session_id: str) -> Memory:
    """A Memory that flushes every exchange to the block (a tiny short-term buffer)."""
    return Memory.from_defaults(
        session_id=session_id,
        token_limit=1000,
        chat_history_token_ratio=0.02,
        token_flush_size=10,
        memory_blocks=[block],
    )


def _chat(memory: Memory, *texts: str, reply_tokens: int = 4) -> None:
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=reply_tokens), memory=memory)
    for text in texts:
        chat.chat(text)


def _system(memory: Memory, question: str) -> str:
    messages = memory.get(input=question)
    return (messages[0].content or "") if messages and messages[0].role == MessageRole.SYSTEM else ""


def test_one_users_chat_does_not_reach_another_users_chat(fresh_agent: Agent) -> None:
    """The same block settings in two users' Memories of one agent (a shared assistant)."""
    alice = _flushing(UnikoMemoryBlock(agent=fresh_agent, similarity_top_k=6), "chat-alice")
    bob = _flushing(UnikoMemoryBlock(agent=fresh_agent, similarity_top_k=6), "chat-bob")
    _chat(alice, SECRET, "Thanks, that is all for today.", "Bye for now.")
    _chat(bob, "Hello, I need help planning a trip.", "Something by the sea.")
    fresh_agent.flush_sync()
    assert "4417" in _system(alice, QUESTION)  # alice's own chat recalls it
    assert "4417" not in _system(bob, QUESTION) and "Anika" not in _system(bob, QUESTION)


def test_a_users_memories_follow_them_across_sessions_and_no_one_else(fresh_agent: Agent) -> None:
    def block(user: str) -> UnikoMemoryBlock:
        return UnikoMemoryBlock(agent=fresh_agent, user_id=user, similarity_top_k=6)

    assert block("alice").resolved_scope == "user"
    _chat(_flushing(block("alice"), "alice-monday"), SECRET, "Thanks, that is all for today.", "Bye.")
    fresh_agent.flush_sync()
    assert "4417" in _system(_flushing(block("alice"), "alice-friday"), QUESTION)  # a new chat of hers
    assert "4417" not in _system(_flushing(block("bob"), "bob-friday"), QUESTION)


def test_scope_choices_are_checked(fresh_agent: Agent) -> None:
    with pytest.raises(ValueError, match="needs user_id"):
        UnikoMemoryBlock(agent=fresh_agent, scope="user")
    assert UnikoMemoryBlock(agent=fresh_agent).resolved_scope == "session"
    with pytest.warns(DeprecationWarning, match="use similarity_top_k="):
        assert UnikoMemoryBlock(agent=fresh_agent, k=3).similarity_top_k == 3


async def test_session_scope_without_a_session_is_refused(fresh_agent: Agent) -> None:
    block = UnikoMemoryBlock(agent=fresh_agent)
    with pytest.raises(ValueError, match="session"):
        await block.aget([ChatMessage(role=MessageRole.USER, content="hi")])


LINES = [
    "I started a new job at the harbour office on Monday and the commute takes forty minutes by tram.",
    "My manager Ilse wants the quarterly shipping report by the end of the month, with charts.",
    "On weekends I have been restoring an old wooden sailing boat with my neighbour Joaquim.",
    "We replaced two planks last Saturday and the varnish needs three more coats before spring.",
    "My daughter Maren starts piano lessons next week; her teacher lives near the botanical garden.",
    "I am trying to cook more at home, mostly lentil soups and a fish stew my grandmother made.",
]


def test_memory_from_defaults_reaches_uniko_within_a_conversation(fresh_agent: Agent) -> None:
    """A chat of 18 exchanges (~1,500 tokens, replies of 60) reaches uniko before it ends; with
    LlamaIndex's own Memory defaults the same chat leaves uniko empty (it flushes at 21,000 tokens)."""
    stock_agent = fresh_agent.uniko.agent(fresh_agent.agent_id + "-stock")
    stock = Memory.from_defaults(
        session_id="stock", memory_blocks=[UnikoMemoryBlock(agent=stock_agent, scope="agent")]
    )
    ours = memory_from_defaults(fresh_agent, session_id="ours", user_id="dana")
    assert (ours.token_limit * ours.chat_history_token_ratio, ours.token_flush_size) == pytest.approx(
        (SHORT_TERM_TOKENS, FLUSH_TOKENS)
    )
    for memory in (stock, ours):
        _chat(memory, *LINES, *LINES, *LINES, reply_tokens=60)
    fresh_agent.flush_sync()
    stock_agent.flush_sync()
    assert stock_agent.stats_sync().get("message", 0) == 0
    stored = fresh_agent.stats_sync().get("message", 0)
    assert stored >= 6  # the older half of the chat went to long-term memory
    assert "Joaquim" in _system(ours, "Who helps me restore the sailing boat?")


def test_memory_from_defaults_checks_its_numbers(fresh_agent: Agent) -> None:
    with pytest.raises(ValueError, match="short_term_tokens"):
        memory_from_defaults(fresh_agent, short_term_tokens=40_000)
    with pytest.raises(ValueError, match="token_flush_size"):
        memory_from_defaults(fresh_agent, short_term_tokens=100, token_flush_size=200)
    with pytest.raises(ValueError, match="either"):
        memory_from_defaults()
