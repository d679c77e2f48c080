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
# # Quickstart: remember a conversation, recall it, see why
#
# uniko-memory stores conversations as a tiered memory graph (messages, observations, facts,
# episodes, ...) and recalls a token-budgeted, dated bundle for a query.
#
# Everything here runs offline: the embedded store lives in a temporary file and the default
# models (a bundled MiniLM embedder and spaCy) ship as Python packages. With `COHERE_API_KEY`
# set (and the `cohere` extra installed) the notebook embeds with Cohere instead.

# %%
import importlib.util
import os
import time
from datetime import datetime

from uniko_memory import UnikoConfig
from uniko_memory.cli import load_sample
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

USE_COHERE = bool(os.environ.get("COHERE_API_KEY")) and importlib.util.find_spec("cohere") is not None
config = UnikoConfig.build({"models": {"embedder": "cohere"}}) if USE_COHERE else UnikoConfig()
print("embedder:", "Cohere" if USE_COHERE else "bundled MiniLM (offline; no COHERE_API_KEY)")

# `in_memory_sync` runs the engine on its own thread: the blocking `*_sync` calls below work
# in a script or a notebook. `Uniko.open_sync("./memory")` keeps the memory on disk instead.
uni = Uniko.in_memory_sync(config)
agent = uni.agent("demo")

# %% [markdown]
# ## 1. Ingest a conversation
# The sample is a three-session chat between Priya and Tomas (March to May 2024).
# `session.observe_sync(turn)` stores one turn durably; `commit_unit_sync(turns)` stores several
# in one transaction (and embeds them in one batch). Extraction follows in the background;
# `finalize` builds the session's chunks and summary.

# %%
turns = load_sample()
t0 = time.perf_counter()
by_session: dict[str, list[Turn]] = {}
for t in turns:
    turn = Turn(
        sender=t["sender"], content=t["text"], at=datetime.fromisoformat(t["at"]), addressed_to=t["to"]
    )
    by_session.setdefault(t["session"], []).append(turn)
for session, session_turns in by_session.items():
    agent.session(session).commit_unit_sync(session_turns)
agent.flush_sync()
for session in by_session:
    agent.session(session).finalize_sync()
print(f"ingested {len(turns)} turns in {time.perf_counter() - t0:.1f} s")
print(agent.stats_sync())

# %% [markdown]
# ## 2. Recall
# `recall` returns a `ContextBundle`: items with their kind, score, date, session and sources,
# within a token budget. `render()` is the prompt text: memory quoted as data, with dates.

# %%
bundle = agent.recall_sync("What is the name of Priya's cat?", limit=6, token_budget=300)
print(f"{len(bundle.items)} items, {bundle.total_tokens} tokens, coverage {bundle.coverage:.2f}")
for item in bundle.items:
    print(f"{item.score:.4f}  {item.kind:<11}  {item.rendered}")

# %%
print(bundle.render())

# %% [markdown]
# Scope filters narrow the search: sessions, participants, a time window, or what one
# participant may see (`viewer=`). `reference_ts` anchors relative dates such as "last Sunday".

# %%
scoped = agent.recall_sync("How is Tomas's ankle?", sessions=["s3"], limit=4)
for item in scoped.items:
    print(item.kind, "|", item.rendered)

# %% [markdown]
# ## 3. Explain
# `explain=True` adds a trace: the detected intent, which phases ran and why, the channels
# that found each item, and what was dropped by the budget.

# %%
explained = agent.recall_sync("When did Tomas hurt his ankle?", limit=5, explain=True)
trace = explained.trace or {}
print("trace sections:", sorted(trace))
print("intent:", trace.get("intent"))
print("phases:", trace.get("phases"))
for item in explained.items:
    print(f"{item.kind:<11} channels={item.channels}  {item.rendered[:80]}")

# %%
uni.close_sync()
