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
# # Production: uniko-memory on Weaviate
#
# The embedded store (SQLite in a file) suits one process. In production the same engine runs on
# Weaviate (>= 1.27, extra `uniko-memory[weaviate]`): one multi-tenant collection per memory
# tier, **one tenant per agent**, hybrid search done by Weaviate itself. The integrations
# (`langchain-uniko`, `llama-index-*-uniko`) do not change: they take the same `Agent` handle.
#
# The live cells run only when `WEAVIATE_URL` is set (e.g. `http://localhost:8080`, gRPC on
# 50051; `WEAVIATE_GRPC_URL` and `WEAVIATE_API_KEY` if needed). Without it the notebook shows
# the configuration and skips them. With `COHERE_API_KEY` (and the `cohere` extra) it embeds
# with Cohere, otherwise with the bundled offline MiniLM.

# %%
import importlib.util
import os

from uniko_memory import UnikoConfig

WEAVIATE_URL = os.environ.get("WEAVIATE_URL")
USE_COHERE = bool(os.environ.get("COHERE_API_KEY")) and importlib.util.find_spec("cohere") is not None
config = UnikoConfig.build(
    {
        "store": {"backend": "weaviate", "collection_prefix": "UnikoCookbook"},
        "models": {"embedder": "cohere" if USE_COHERE else "local"},
    }
)
print("store:", config.store.model_dump())
print("embedder:", config.models.embedder)
print("live cells:", "ON, " + WEAVIATE_URL if WEAVIATE_URL else "skipped (WEAVIATE_URL is not set)")

# %% [markdown]
# ## Connecting
# `Uniko.open_weaviate(url, ...)` is one call: it connects a `weaviate-client` v4 async client
# (gRPC on port 50051 of the same host unless `grpc_url=` says otherwise), creates the
# collections when missing, checks the schema version and vector size, and starts the engine;
# `close` closes the client. `Uniko.open_weaviate_sync` is the twin for synchronous code, and
# `Uniko.open(path, config, weaviate=client)` takes a client you built yourself (`connect_local`,
# `connect_custom`, `connect_cloud` in `uniko_memory.store.weaviate`).
#
# ```python
# uni = await Uniko.open_weaviate(os.environ["WEAVIATE_URL"], config, collection_prefix="UnikoCookbook")
# ```
#
# A `Uniko` built with `await` lives on the caller's event loop: use the async API (`await
# agent.recall(...)`, `retriever.ainvoke(...)`) from that loop.

# %%
uni = None
if WEAVIATE_URL:
    from uniko_memory.facade import Uniko

    uni = await Uniko.open_weaviate(
        WEAVIATE_URL,
        config,
        grpc_url=os.environ.get("WEAVIATE_GRPC_URL"),
        api_key=os.environ.get("WEAVIATE_API_KEY"),
        collection_prefix="UnikoCookbook",
    )
else:
    print("skipped: set WEAVIATE_URL to run against a server")

# %% [markdown]
# ## Ingest and recall (live)

# %%
if uni is not None:
    from datetime import datetime

    from uniko_memory.cli import load_sample
    from uniko_memory.ingest import Turn

    agent = uni.agent("cookbook-demo")  # the agent's Weaviate tenant
    by_session: dict[str, list[Turn]] = {}
    for t in load_sample():
        turn = Turn(
            sender=t["sender"], content=t["text"], at=datetime.fromisoformat(t["at"]), addressed_to=t["to"]
        )
        by_session.setdefault(t["session"], []).append(turn)
    for session, turns in by_session.items():
        await agent.session(session).commit_unit(turns)
    await agent.flush()
    bundle = await agent.recall("What is the name of Priya's cat?", limit=5)
    print(bundle.render())
else:
    print("skipped")

# %% [markdown]
# ## The same integrations on top (live)

# %%
if uni is not None:
    from langchain_uniko import UnikoRetriever

    retriever = UnikoRetriever(agent=agent, limit=3)
    for doc in await retriever.ainvoke("When did Tomas hurt his ankle?"):
        print(doc.metadata["kind"], "|", doc.page_content)
else:
    print("skipped")

# %% [markdown]
# ## Operations checklist
# * **Tenancy**: each agent is a tenant (`tenant_name(agent)`); tenants are created on first write.
# * **Schema**: `WeaviateStore.open` raises `SchemaMismatch` on another schema version or vector
#   size; pin the embedder per deployment (`models.embedder`).
# * **Retries**: transient errors are retried (`retries=`); a failed unit is compensated and
#   raises `StoreError`.
# * **Forgetting**: `agent.forget_participant(...)` / `agent.forget_turn(...)` redact (or, `hard`,
#   delete) across tiers; they work the same on Weaviate.
# * **Health**: `uni.health()` reports the pipeline state, the NLP pipeline and the embedder.

# %%
if uni is not None:
    print(uni.health()["pipeline"]["state"])
    await uni.close()
