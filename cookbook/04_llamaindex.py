# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # LlamaIndex: a query engine and a chat engine with long-term memory
#
# * `llama_index.retrievers.uniko.UnikoRetriever` returns `NodeWithScore`s (a `TextNode` per
#   recalled item, with kind, score, sources and dates in its metadata) for
#   `RetrieverQueryEngine` and `CondensePlusContextChatEngine`.
# * `llama_index.memory.uniko.UnikoMemoryBlock` plugs uniko into LlamaIndex's `Memory`: messages
#   flushed out of the short-term buffer are ingested, and every turn gets the recall for the
#   latest user message.
#
# With `OPENAI_API_KEY` set and `llama-index-llms-openai` installed the engines use
# `gpt-4o-mini`; otherwise LlamaIndex's `MockLLM` stands in: for the query engine it echoes its
# prompt (which shows exactly what a model would see), for the chat it answers with placeholder
# words. Retrieval and memory are real either way.

# %%
import importlib.util
import os
from datetime import datetime
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.memory.uniko import UnikoMemoryBlock
from llama_index.retrievers.uniko import UnikoRetriever

from uniko_memory.cli import load_sample
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

USE_OPENAI = (
    bool(os.environ.get("OPENAI_API_KEY")) and importlib.util.find_spec("llama_index.llms.openai") is not None
)
llm: Any
chat_llm: Any
if USE_OPENAI:
    from llama_index.llms.openai import OpenAI

    llm = chat_llm = OpenAI(model="gpt-4o-mini", temperature=0)
else:
    llm = MockLLM()  # echoes the prompt
    chat_llm = MockLLM(max_tokens=8)  # short placeholder replies
print("llm:", "OpenAI gpt-4o-mini" if USE_OPENAI else "MockLLM (offline)")

uni = Uniko.in_memory_sync()
memory_agent = uni.agent("demo")
by_session: dict[str, list[Turn]] = {}
for t in load_sample():
    turn = Turn(
        sender=t["sender"], content=t["text"], at=datetime.fromisoformat(t["at"]), addressed_to=t["to"]
    )
    by_session.setdefault(t["session"], []).append(turn)
for session, turns in by_session.items():
    memory_agent.session(session).commit_unit_sync(turns)
memory_agent.flush_sync()

# %% [markdown]
# ## Retriever and query engine

# %%
retriever = UnikoRetriever(memory_agent, similarity_top_k=4)
for node in retriever.retrieve("Where does Priya work now?"):
    print(f"{node.score:.4f} {node.node.metadata['kind']:<11} {node.node.get_content()}")

# %%
query_engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
response = query_engine.query("What is the name of Priya's cat?")
print("answer (MockLLM echoes the prompt):" if not USE_OPENAI else "answer:", str(response)[:700])
print("sources:", [n.node.get_content()[:60] for n in response.source_nodes])

# %% [markdown]
# The async path (`aretrieve`, `aquery`) awaits uniko's async core directly:

# %%
response = await query_engine.aquery("When did Tomas hurt his ankle?")
print([n.node.get_content()[:80] for n in response.source_nodes])

# %% [markdown]
# ## Chat engine with long-term memory
# The retriever grounds each answer in the stored chat; `UnikoMemoryBlock` gives the chat itself
# a long-term memory. A tiny short-term budget makes `Memory` flush old messages into uniko
# after a couple of turns (the default flushes at ~21,000 tokens).

# %%
# `sessions=` scopes the block's recall to this chat's own history (None: every session).
block = UnikoMemoryBlock(
    agent=memory_agent,
    session_id="llama-chat",
    sessions=["llama-chat"],
    priority=0,
    similarity_top_k=4,
    token_budget=300,
)
chat_memory = Memory.from_defaults(
    session_id="llama-chat",
    token_limit=1000,
    chat_history_token_ratio=0.03,  # flush once the short-term buffer passes ~30 tokens
    token_flush_size=20,
    memory_blocks=[block],
)
chat = CondensePlusContextChatEngine.from_defaults(
    retriever, llm=chat_llm, memory=chat_memory, skip_condense=not USE_OPENAI
)
for message in [
    "I'm planning a surprise for Priya's birthday: a pottery wheel.",
    "Tomas says he will bring running shoes as a present.",
    "What did we plan for Priya's birthday?",
]:
    reply = chat.chat(message)
    print(f"user: {message}\n  sources: {[n.node.get_content()[:50] for n in reply.source_nodes[:2]]}")

# %% [markdown]
# What the memory block recalls for the last question (this text goes into the system message):

# %%
memory_agent.flush_sync()
print(
    "turns stored by the block:",
    memory_agent.session("llama-chat").node_id and memory_agent.stats_sync()["message"] - 26,
)
question = ChatMessage(role="user", content="What did we plan for Priya's birthday?")
print(await block.aget([question]))

# %%
uni.close_sync()
