"""Wire contract: the exact requests the adapter sends through the real weaviate-client.

The double records every request it receives (``engine.record``); these tests pin the protobuf and
JSON the adapter produces, so a change in how it talks to Weaviate shows up as a failing diff.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
from google.protobuf import json_format

from tests.conformance.corpus import AGENT, message, ses, ts
from tests.weaviate_double import WeaviateDouble
from uniko_memory.model import Edge, EdgeType, Tier, to_uuid
from uniko_memory.store.filters import Eq, In, Range
from uniko_memory.store.weaviate import WeaviateStore


def _requests(double: WeaviateDouble, method: str) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(r) for m, r in double.engine.requests if m == method]


def _floats(b64: str) -> np.ndarray:
    import base64

    raw = base64.b64decode(b64)
    return np.asarray(struct.unpack(f"<{len(raw) // 4}f", raw), dtype=np.float32)


def _eq(prop: str, **value: Any) -> dict[str, Any]:
    return {"operator": "OPERATOR_EQUAL", **value, "target": {"property": prop}}


async def test_hybrid_request_with_filters_and_tenant(store: WeaviateStore, double: WeaviateDouble) -> None:
    double.engine.record = True
    vec = np.arange(1, 9, dtype=np.float32)
    flt = Eq("session", ses(AGENT, 1)) & Range("time", gte=ts(2)) & ~Eq("category", "plans")
    await store.hybrid_search(AGENT, Tier.MESSAGE, "The Quokka, weekend!", vec, alpha=0.3, k=5, filter=flt)
    (req,) = _requests(double, "Search")
    hybrid = req.pop("hybridSearch")
    np.testing.assert_allclose(_floats(hybrid.pop("vectorBytes")), vec / np.linalg.norm(vec), atol=1e-6)
    assert hybrid == {
        "query": "quokka weekend",  # WORD tokens, lower-cased, stopwords dropped
        "properties": ["search_text"],
        "alpha": 0.3,
        "fusionType": "FUSION_TYPE_RELATIVE_SCORE",
        "targets": {"targetVectors": ["content"]},
    }
    filters = req.pop("filters")
    assert filters == {
        "operator": "OPERATOR_AND",
        "filters": [
            {
                "operator": "OPERATOR_AND",
                "filters": [
                    {
                        "operator": "OPERATOR_AND",
                        "filters": [
                            _eq("session", valueText=ses(AGENT, 1)),
                            {
                                "operator": "OPERATOR_GREATER_THAN_EQUAL",
                                "valueNumber": ts(2).timestamp(),
                                "target": {"property": "time"},
                            },
                        ],
                    },
                    {  # NOT (category = 'plans') under SQL NULL logic: not equal AND not null
                        "operator": "OPERATOR_AND",
                        "filters": [
                            {
                                "operator": "OPERATOR_NOT_EQUAL",
                                "valueText": "plans",
                                "target": {"property": "a_category"},
                            },
                            {
                                "operator": "OPERATOR_IS_NULL",
                                "valueBoolean": False,
                                "target": {"property": "a_category"},
                            },
                        ],
                    },
                ],
            },
            _eq("redacted", valueBoolean=False),  # every search leaves redacted nodes out
        ],
    }
    assert req == {
        "collection": f"{store.prefix}Message",
        "tenant": AGENT,
        "properties": {"nonRefProperties": ["data"]},
        "metadata": {"uuid": True, "score": True},
        "limit": 10,  # k plus a margin, so ties at the cut are broken by id
        "uses123Api": True,
        "uses125Api": True,
        "uses127Api": True,
    }


async def test_bm25_and_near_vector_requests(store: WeaviateStore, double: WeaviateDouble) -> None:
    double.engine.record = True
    await store.text_search(AGENT, Tier.FACT, "Where does ALICE live?", k=3)
    await store.vector_search(AGENT, Tier.ENTITY, np.ones(8, dtype=np.float32), k=2)
    bm25, near = _requests(double, "Search")
    assert bm25["collection"] == f"{store.prefix}Fact" and bm25["tenant"] == AGENT
    assert bm25["bm25Search"] == {"query": "alice live", "properties": ["search_text"]}
    assert bm25["metadata"] == {"uuid": True, "score": True}
    assert bm25["filters"] == _eq("redacted", valueBoolean=False)
    assert near["collection"] == f"{store.prefix}Entity" and near["tenant"] == AGENT
    assert near["nearVector"]["targets"] == {"targetVectors": ["content"]}
    assert near["metadata"] == {"uuid": True, "distance": True}


async def test_no_request_for_a_filter_that_cannot_match(
    store: WeaviateStore, double: WeaviateDouble
) -> None:
    double.engine.record = True
    assert await store.find(AGENT, Tier.MESSAGE, Eq("tier", "fact")) == []
    assert await store.text_search(AGENT, Tier.MESSAGE, "x", filter=Eq("no_such_attribute", 1)) == []
    assert _requests(double, "Search") == []


async def test_batch_objects_request_shape(store: WeaviateStore, double: WeaviateDouble) -> None:
    m = message(AGENT, "wire-1", "hello wire", visibility="", category="plans")
    vec = np.arange(1, 9, dtype=np.float32)
    double.engine.record = True
    async with store.unit(AGENT) as u:
        u.put(m, vector=vec)
        u.put_edge(Edge(type=EdgeType.NEXT, src=m.id, dst="msg_other", props={"gap_ms": 5}))
    # The nodes, the edges, the agent registry, then the agent's shared generation record.
    node_req, edge_req, agent_req, gen_req = _requests(double, "BatchObjects")
    (gen,) = gen_req["objects"]
    assert gen["collection"] == f"{store.prefix}_Meta" and "tenant" not in gen
    assert json.loads(gen["properties"]["nonRefProperties"]["value"])["c"] == 1
    (obj,) = node_req["objects"]
    assert obj["collection"] == f"{store.prefix}Message"
    assert obj["tenant"] == AGENT
    assert obj["uuid"] == str(to_uuid(m.id))
    (vector,) = obj["vectors"]
    assert vector["name"] == "content" and vector["type"] == "VECTOR_TYPE_SINGLE_FP32"
    np.testing.assert_allclose(_floats(vector["vectorBytes"]), vec / np.linalg.norm(vec), atol=1e-6)
    props = obj["properties"]["nonRefProperties"]
    assert json.loads(props.pop("data")) == json.loads(m.model_dump_json())
    assert props.pop("visibility") == '\ue000""'  # "" escaped: FIELD tokenisation would drop it
    assert props.pop("pkey") == float(int(str(to_uuid(m.id)).replace("-", "")[:13], 16))  # paging key
    assert props == {
        "node_id": m.id,
        "session": m.session_id,
        "participant": m.sender_id,
        "time": m.timestamp.timestamp(),
        "redacted": False,
        "search_text": "Alice: hello wire",
        "a_agent": AGENT,
        "a_created_at": "2024-03-01T09:00:00.000000+00:00",
        "a_external_id": "wire-1",
        "a_session_id": m.session_id,
        "a_sender_id": m.sender_id,
        "a_sender_name": "Alice",
        "a_content": "hello wire",
        "a_timestamp": "2024-03-01T09:00:00.000000+00:00",
        "a_seq": 0.0,
        "a_post_ingest_done": False,
        "a_content_type": "text",
        "a_category": "plans",
    }
    (edge,) = edge_req["objects"]
    assert edge["collection"] == f"{store.prefix}_Edges" and edge["tenant"] == AGENT
    eprops = edge["properties"]["nonRefProperties"]
    assert {k: eprops[k] for k in ("src", "type", "dst")} == {"src": m.id, "type": "NEXT", "dst": "msg_other"}
    assert json.loads(eprops["data"]) == {
        "type": "NEXT",
        "src": m.id,
        "dst": "msg_other",
        "props": '{"gap_ms": 5}',
    }
    assert agent_req["objects"][0]["collection"] == f"{store.prefix}_Meta"  # first write registers the agent


async def test_every_tenant_scoped_request_names_the_tenant(
    store: WeaviateStore, double: WeaviateDouble
) -> None:
    m = message(AGENT, "t-1", "tenant check")
    double.engine.record = True
    async with store.unit(AGENT) as u:
        u.put(m, vector=np.ones(8, dtype=np.float32))
    await store.get(AGENT, m.id)
    await store.find(AGENT, Tier.MESSAGE, In("id", (m.id, "a", "b", "c")))
    await store.count(AGENT)
    await store.neighbors(AGENT, [m.id])
    await store.delete(AGENT, [m.id])
    shared = {f"{store.prefix}_Meta", f"{store.prefix}_Blobs"}
    seen = 0
    for method, req in double.engine.requests:
        if method.startswith("REST"):
            continue
        if method == "BatchObjects":
            for o in req.objects:
                assert o.tenant == ("" if o.collection in shared else AGENT), o.collection
                seen += 1
        else:
            assert req.tenant == ("" if req.collection in shared else AGENT), (method, req.collection)
            seen += 1
    assert seen > 20


async def test_schema_json(store: WeaviateStore, double: WeaviateDouble) -> None:
    cls = double.engine.classes[f"{store.prefix}Message"]
    props = {p["name"]: p for p in cls["properties"]}
    for name in ("node_id", "session", "participant", "visibility", "a_content_type", "a_category"):
        assert props[name]["dataType"] == ["text"] and props[name]["tokenization"] == "field", name
        assert props[name]["indexFilterable"] and not props[name]["indexSearchable"], name
    assert props["search_text"]["tokenization"] == "word" and props["search_text"]["indexSearchable"]
    assert not props["data"]["indexFilterable"] and not props["data"]["indexSearchable"]
    assert props["time"]["dataType"] == ["number"] and props["time"]["indexRangeFilters"]
    assert props["redacted"]["dataType"] == ["boolean"]
    assert props["a_timestamp"]["dataType"] == ["date"] and props["a_seq"]["dataType"] == ["number"]
    assert "metadata" not in {p.removeprefix("a_") for p in props}  # dicts live only in `data`
    assert cls["multiTenancyConfig"] == {
        "enabled": True,
        "autoTenantCreation": True,
        "autoTenantActivation": True,
    }
    assert cls["invertedIndexConfig"]["indexNullState"] is True
    assert cls["invertedIndexConfig"]["stopwords"]["preset"] == "none"
    (name, vc), *_ = cls["vectorConfig"].items()
    assert name == "content" and list(vc["vectorizer"]) == ["none"]
    assert vc["vectorIndexType"] == "hnsw" and vc["vectorIndexConfig"]["distance"] == "cosine"
    edges = {p["name"]: p for p in double.engine.classes[f"{store.prefix}_Edges"]["properties"]}
    assert {n for n, p in edges.items() if p.get("tokenization") == "field"} == {"src", "type", "dst"}
    # The client parses the server's echo strictly; it must accept what the double returns.
    config = await store.client.collections.use(f"{store.prefix}Message").config.get()
    assert config.multi_tenancy_config.enabled
