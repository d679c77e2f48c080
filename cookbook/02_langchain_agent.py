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
# # A LangChain agent with long-term memory: `UnikoMiddleware` + `UnikoStore`
#
# * `UnikoMiddleware` recalls what the agent remembers about the latest user message and adds it
#   to the system message before every model call; after the run it stores the conversation.
# * `UnikoStore` is a LangGraph `BaseStore`: tools reach it as `runtime.store`; `put` ingests a
#   memory, `search(query=...)` goes through uniko's recall.
#
# With `OPENAI_API_KEY` set and `langchain-openai` installed the agent uses `gpt-4o-mini`;
# otherwise a scripted fake chat model plays the model's part (its tool calls and answers are
# canned), so the notebook runs offline.

# %%
import importlib.util
import os
from typing import Any

from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_uniko import UnikoMiddleware, UnikoStore

from uniko_memory.facade import Uniko

USE_OPENAI = (
    bool(os.environ.get("OPENAI_API_KEY")) and importlib.util.find_spec("langchain_openai") is not None
)


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model that replays scripted messages and accepts tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self


def make_model(script: list[AIMessage]) -> Any:
    if USE_OPENAI:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model="gpt-4o-mini", temperature=0)
    return ScriptedChatModel(messages=iter(script))


print("model:", "OpenAI gpt-4o-mini" if USE_OPENAI else "scripted fake chat model (offline)")

uni = Uniko.in_memory_sync()
memory_agent = uni.agent("assistant")
# One uniko agent for both: the store's namespaces name sessions of "assistant".
store = UnikoStore(uni, agent_id="assistant")
middleware = UnikoMiddleware(memory_agent, limit=6, token_budget=400)

# %% [markdown]
# ## Tools that use the store

# %%
USER = "priya"


@tool
def save_memory(content: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the user for future conversations."""
    key = f"m{len(runtime.store.search(('memories', USER), limit=1000))}"
    runtime.store.put(("memories", USER), key, {"content": content})
    return f"saved as {key}"


@tool
def search_memory(query: str, runtime: ToolRuntime) -> str:
    """Search what is remembered about the user."""
    hits = runtime.store.search(("memories", USER), query=query, limit=3)
    return "\n".join(str(h.value.get("rendered") or h.value.get("content")) for h in hits) or "nothing found"


# %% [markdown]
# ## Monday: the user shares something; the agent saves it

# %%
monday_script = [
    AIMessage(
        "",
        tool_calls=[
            {
                "name": "save_memory",
                "args": {"content": "Priya adopted a grey cat named Biscuit."},
                "id": "c1",
            }
        ],
    ),
    AIMessage("Congratulations on adopting Biscuit!"),
]
agent = create_agent(
    make_model(monday_script), tools=[save_memory, search_memory], middleware=[middleware], store=store
)
result = agent.invoke(
    {"messages": [{"role": "user", "content": "I just adopted a grey cat. Her name is Biscuit!"}]},
    config={"configurable": {"thread_id": "monday"}},
)
for message in result["messages"]:
    print(f"{message.type:>6}: {message.text or message.tool_calls}")

# %% [markdown]
# ## Friday: a new thread; memory comes back through the middleware and the store

# %%
memory_agent.flush_sync()  # let background extraction finish (it normally runs unattended)
friday_script = [
    AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "cat name"}, "id": "c2"}]),
    AIMessage("Your cat is called Biscuit."),
]
agent = create_agent(
    make_model(friday_script), tools=[save_memory, search_memory], middleware=[middleware], store=store
)
result = agent.invoke(
    {"messages": [{"role": "user", "content": "What is my cat called again?"}]},
    config={"configurable": {"thread_id": "friday"}},
)
for message in result["messages"]:
    print(f"{message.type:>6}: {message.text or message.tool_calls}")

# %% [markdown]
# What the middleware added to the system message for that model call:

# %%
assert middleware.last_bundle is not None
print(middleware.last_bundle.render())

# %% [markdown]
# ## Inspecting the store
# The store lists the namespaces that hold values (`("memories", "priya")`): each names one
# session of the agent, which the middleware's conversation threads (`monday`, `friday`) share.

# %%
print(store.list_namespaces())
print(store.get(("memories", USER), "m0"))
for hit in store.search(("memories", USER), query="Biscuit", limit=3):
    print(round(hit.score or 0.0, 4), hit.key, hit.value.get("content"))

# %%
uni.close_sync()
