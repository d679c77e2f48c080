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
# # Answers, query Episodes and procedure promotion
#
# `agent.answer(question, llm=...)` recalls a bundle, asks a chat model with the memory quoted
# (dated) as data, and returns the answer with its grounding. With `record=True` the exchange is
# stored as a query **Episode**; consecutive successful Episodes teach the engine
# **Procedures** ("after a question of kind A, a question of kind B went well with these recall
# settings"), which `use_procedures=True` applies to later questions of that kind.
#
# With `OPENAI_API_KEY` set and `langchain-openai` installed the answers come from `gpt-4o-mini`;
# otherwise from a fake chat model with canned replies (recall, Episodes and Procedures are real).

# %%
import importlib.util
import os
from datetime import datetime
from typing import Any

from langchain_core.language_models import FakeListChatModel

from uniko_memory import UnikoConfig
from uniko_memory.cli import load_sample
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

USE_OPENAI = (
    bool(os.environ.get("OPENAI_API_KEY")) and importlib.util.find_spec("langchain_openai") is not None
)
CANNED = {
    "What is the name of Priya's cat?": "Biscuit.",
    "When did Tomas hurt his ankle?": "On 19 March 2024, during a trail run.",
}


def model_for(question: str) -> Any:
    """The chat model that answers ``question``: OpenAI, or a fake with the canned reply."""
    if USE_OPENAI:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model="gpt-4o-mini", temperature=0)
    return FakeListChatModel(responses=[CANNED[question]])


print("model:", "OpenAI gpt-4o-mini" if USE_OPENAI else "fake chat model (offline, canned answers)")

# Sweep after every consolidation and promote a pattern seen twice, so the demo is short
# (production defaults: every 4 consolidations, at most every 10 minutes, 3 sightings).
config = UnikoConfig.build(
    {
        "pipeline": {"cortex_cycle_every_n_consolidations": 1, "cortex_min_interval_secs": 0},
        "cortex": {"promote_threshold": 2},
    }
)
uni = Uniko.in_memory_sync(config)
agent = uni.agent("demo")
by_session: dict[str, list[Turn]] = {}
for t in load_sample():
    turn = Turn(
        sender=t["sender"], content=t["text"], at=datetime.fromisoformat(t["at"]), addressed_to=t["to"]
    )
    by_session.setdefault(t["session"], []).append(turn)
for session, turns in by_session.items():
    agent.session(session).commit_unit_sync(turns)
agent.flush_sync()

# %% [markdown]
# ## Answer a question, with its grounding

# %%
question = "What is the name of Priya's cat?"
answer = agent.answer_sync(question, llm=model_for(question))
print("answer:", answer.text)
print("grounded in", len(answer.context.items), "memory items; first sources:", answer.citations()[:2])
print(answer.context.render().splitlines()[2])

# %% [markdown]
# ## Record query Episodes
# `record=True` stores each exchange as an Episode (question, answer, the recall settings used,
# the kind of question as `action_type`). The outcome can be given up front or reported later
# with `report_outcome` once the answer has been judged.

# %%
questions = ["What is the name of Priya's cat?", "When did Tomas hurt his ankle?"] * 2
episodes, kinds = [], []
for question in questions:
    a = agent.answer_sync(question, llm=model_for(question), record=True)
    episodes.append(a.recorded_episode)
    kinds.append(a.action_type)
    print(f"{a.action_type:<30} {a.recorded_episode}  {a.text}")
for episode_id in episodes:
    if episode_id is not None:
        agent.report_outcome_sync(episode_id, "success")
print(agent.stats_sync().get("episode"), "episodes")

# %% [markdown]
# ## Procedure promotion
# Consolidation runs the cortex sweep, which counts successful Episode pairs: the
# "cat question, then date question" pattern was seen twice, so it becomes an active Procedure.

# %%
agent.consolidate_sync()
sweep = uni.last_sweep.get("demo")
print(sweep.procedures if sweep else "no sweep ran")
for kind in dict.fromkeys(kinds):
    for procedure in agent.match_procedures_sync({"last_action_type": kind}):
        print(procedure.status, "|", procedure.description)

# %% [markdown]
# `use_procedures=True` lets the recall settings that worked for this kind of question steer
# the next answer:

# %%
question = "When did Tomas hurt his ankle?"
a = agent.answer_sync(question, llm=model_for(question), use_procedures=True)
print(a.action_type, "->", a.text)

# %%
uni.close_sync()
