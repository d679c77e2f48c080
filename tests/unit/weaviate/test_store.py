"""Store lifecycle and plumbing: schema version and dimension checks, sync clients, connect helpers,
tenant names, paging past Weaviate's per-query maximum, retry classification, the knowledge base."""

from __future__ import annotations

import sys

import grpc
import httpx
import numpy as np
import pytest

from tests.conformance.corpus import AGENT, OTHER, entity, load_corpus, message, unit
from tests.weaviate_double import WeaviateDouble
from tests.weaviate_double.harness import fresh_prefix
from uniko_memory.errors import MissingDependency, SchemaMismatch
from uniko_memory.knowledge_base import KnowledgeBase
from uniko_memory.model import Direction, Edge, EdgeType, Tier
from uniko_memory.store.weaviate import (
    WeaviateStore,
    connect_custom,
    connect_local,
    connect_url,
    is_transient,
    tenant_name,
)
from uniko_memory.store.weaviate import core as core_mod
from uniko_memory.store.weaviate import reads as reads_mod


async def test_schema_version_mismatch_is_a_clear_error(store: WeaviateStore, double: WeaviateDouble) -> None:
    await store._meta_put("internal", "schema_version", "0")
    with pytest.raises(SchemaMismatch, match=r"schema version 0.*expects 1"):
        await WeaviateStore.open(double.async_client(), prefix=store.prefix, owns_client=True)


async def test_dimension_mismatch_and_reopen(store: WeaviateStore, double: WeaviateDouble) -> None:
    with pytest.raises(SchemaMismatch, match="8-dimensional"):
        await WeaviateStore.open(double.async_client(), prefix=store.prefix, dim=16, owns_client=True)
    again = await WeaviateStore.open(double.async_client(), prefix=store.prefix, owns_client=True)
    assert again.dim == 8
    await again.close()


async def test_dimension_learned_from_first_vector(double: WeaviateDouble) -> None:
    prefix = fresh_prefix()
    s = await WeaviateStore.open(double.async_client(), prefix=prefix, owns_client=True)
    assert s.dim is None
    async with s.unit(AGENT) as u:
        u.put(message(AGENT, "d", "dimension"), vector=np.ones(5, dtype=np.float32))
    assert s.dim == 5
    await s.close()
    s = await WeaviateStore.open(double.async_client(), prefix=prefix, owns_client=True)
    assert s.dim == 5
    await s.close()


async def test_sync_client_is_supported(double: WeaviateDouble) -> None:
    s = await WeaviateStore.open(double.sync_client(), prefix=fresh_prefix(), dim=8, owns_client=True)
    try:
        msgs, vecs = await load_corpus(s)
        assert await s.get(AGENT, msgs[0].id) == msgs[0]
        assert (await s.vector_search(AGENT, Tier.MESSAGE, vecs[2], k=1))[0].id == msgs[2].id
        assert (await s.hybrid_search(AGENT, Tier.MESSAGE, "quokka", vecs[5], k=1))[0].id == msgs[5].id
        assert await s.count(AGENT, Tier.MESSAGE) == len(msgs)
    finally:
        await s.close()


async def test_connect_helpers(double: WeaviateDouble) -> None:
    clients = [
        await connect_local("127.0.0.1", double.http_port, double.grpc_port, skip_init_checks=True),
        await connect_custom(
            "127.0.0.1", double.http_port, "127.0.0.1", double.grpc_port, api_key=None, skip_init_checks=True
        ),
        await connect_url(double.url, grpc_url=f"127.0.0.1:{double.grpc_port}", skip_init_checks=True),
    ]
    for client in clients:
        s = await WeaviateStore.open(client, prefix=fresh_prefix(), dim=8, owns_client=True)
        assert s.client.is_connected()
        await s.close()
        assert not client.is_connected()


async def test_odd_agent_names_get_hashed_tenants(store: WeaviateStore) -> None:
    odd = "team alpha/ü"
    assert tenant_name(AGENT) == AGENT
    assert tenant_name(odd).startswith("h--") and tenant_name(odd) != tenant_name("team alpha")
    assert tenant_name("h--lookalike") != "h--lookalike"  # the hashed namespace can't be entered
    m = message(odd, "x", "an odd agent writes")
    async with store.unit(odd) as u:
        u.put(m)
    async with store.unit(AGENT) as u:
        u.put(message(AGENT, "x", "a plain agent writes"))
    assert await store.get(odd, m.id) == m
    assert await store.get(AGENT, m.id) is None
    assert await store.agents() == sorted([AGENT, odd])


async def test_reads_of_an_agent_that_never_wrote_are_empty(store: WeaviateStore) -> None:
    assert await store.get(OTHER, "msg_x") is None
    assert await store.find(OTHER, Tier.MESSAGE) == []
    assert await store.count(OTHER) == 0
    assert await store.neighbors(OTHER, ["msg_x"], direction=Direction.BOTH) == []
    assert await store.text_search(OTHER, Tier.MESSAGE, "anything") == []
    assert await store.delete(OTHER, ["msg_x"]) == 0
    assert await store.agents() == []


async def test_paging_past_the_query_maximum(store: WeaviateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    msgs, _ = await load_corpus(store)
    hub = entity(AGENT, "Hub")
    edges = [Edge(type=EdgeType.MENTIONS, src=m.id, dst=hub.id, props={"i": i}) for i, m in enumerate(msgs)]
    async with store.unit(AGENT) as u:
        u.put(hub)
        for e in edges:
            u.put_edge(e)
    expected = {
        (order, desc): [n.id for n in await store.find(AGENT, Tier.MESSAGE, order_by=order, descending=desc)]
        for order in ("time", "seq", "id")
        for desc in (False, True)
    }
    monkeypatch.setattr(core_mod, "_PAGE", 5)
    monkeypatch.setattr(reads_mod, "MAX_RESULTS", 4)
    assert await store.neighbors(AGENT, [hub.id], direction=Direction.IN) == sorted(
        edges, key=lambda e: e.key()
    )
    for (order, desc), want in expected.items():
        got = await store.find(AGENT, Tier.MESSAGE, order_by=order, descending=desc, limit=1_000_000)
        assert [n.id for n in got] == want, (order, desc)
    assert len(await store.find(AGENT, Tier.MESSAGE, limit=7)) == 7


async def test_blobs_are_shared_and_content_addressed(store: WeaviateStore) -> None:
    from uniko_memory.model import content_hash

    data = bytes(range(256)) * 8
    async with store.unit(AGENT) as u:
        u.put_blob(content_hash(data), data)
    assert await store.get_blob(content_hash(data)) == data
    assert await store.get_blob(content_hash(b"nope")) is None


async def test_knowledge_base_from_store(store: WeaviateStore) -> None:
    class Emb:
        model_id, dim = "test-model", 8

    kb = await KnowledgeBase.from_store(store, embedder=Emb())
    assert kb.store is store
    assert await store.get_meta("embedding_model") == "test-model"
    async with kb.store.unit(AGENT) as u:
        u.put(message(AGENT, "kb", "through the knowledge base"), vector=unit([1, 2, 3, 4, 5, 6, 7, 8]))
    assert await store.count(AGENT) == 1


def test_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "weaviate", None)
    with pytest.raises(MissingDependency, match=r"uniko-memory\[weaviate\]"):
        WeaviateStore(object())


class _Rpc(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code


def _wrapped(cause: BaseException) -> BaseException:
    from weaviate.exceptions import WeaviateQueryError

    try:
        try:
            raise cause
        except BaseException:
            raise WeaviateQueryError("details only", "GRPC search") from None
    except WeaviateQueryError as exc:
        exc.__context__ = cause
        return exc


def test_transient_errors_are_classified() -> None:
    from weaviate.exceptions import UnexpectedStatusCodeError, WeaviateConnectionError

    assert is_transient(_wrapped(_Rpc(grpc.StatusCode.UNAVAILABLE)))
    assert is_transient(_wrapped(_Rpc(grpc.StatusCode.DEADLINE_EXCEEDED)))
    assert not is_transient(_wrapped(_Rpc(grpc.StatusCode.INVALID_ARGUMENT)))
    assert not is_transient(_wrapped(_Rpc(grpc.StatusCode.INTERNAL)))
    assert is_transient(WeaviateConnectionError("down"))
    assert is_transient(httpx.ConnectError("refused"))
    req = httpx.Request("GET", "http://x/v1/schema")
    assert is_transient(UnexpectedStatusCodeError("x", httpx.Response(503, request=req)))
    assert not is_transient(UnexpectedStatusCodeError("x", httpx.Response(422, request=req)))
    assert not is_transient(ValueError("bad input"))
    # The client's own retries are exhausted: retrying again would only keep the caller waiting.
    from weaviate.exceptions import WeaviateRetryError

    gave_up = WeaviateRetryError("unavailable", 4)
    gave_up.__cause__ = _wrapped(_Rpc(grpc.StatusCode.UNAVAILABLE))
    assert not is_transient(gave_up)


async def test_new_model_attributes_are_added_on_open(store: WeaviateStore, double: WeaviateDouble) -> None:
    """A node model that gained an attribute: reopening adds its property; a retyped one is refused."""
    from uniko_memory.store.filters import Eq

    cls = double.engine.classes[f"{store.prefix}Message"]
    cls["properties"] = [p for p in cls["properties"] if p["name"] != "a_category"]  # "an older schema"
    await store._meta_put("internal", "fingerprint", "older")
    again = await WeaviateStore.open(double.async_client(), prefix=store.prefix, owns_client=True)
    assert "a_category" in {p["name"] for p in cls["properties"]}
    async with again.unit(AGENT) as u:
        u.put(message(AGENT, "evolved", "has a category", category="plans"))
    assert [n.external_id for n in await again.find(AGENT, Tier.MESSAGE, Eq("category", "plans"))] == [
        "evolved"
    ]
    await again.close()
    next(p for p in cls["properties"] if p["name"] == "a_seq")["dataType"] = ["int"]
    await store._meta_put("internal", "fingerprint", "older")
    with pytest.raises(SchemaMismatch, match="a_seq is stored as int"):
        await WeaviateStore.open(double.async_client(), prefix=store.prefix, owns_client=True)
