"""The double itself, driven by the real client: cross-references (write, return, filter through),
tenants, and the server-side strictness the adapter relies on being told about."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from weaviate.classes.config import Configure, DataType, Property, ReferenceProperty
from weaviate.classes.data import DataObject, DataReference
from weaviate.classes.query import Filter, QueryReference
from weaviate.classes.tenants import Tenant
from weaviate.exceptions import WeaviateQueryError

from tests.weaviate_double import WeaviateDouble
from tests.weaviate_double.harness import fresh_prefix

U = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(8)]


@pytest.fixture
async def client(double: WeaviateDouble) -> AsyncIterator[Any]:
    c = double.async_client()
    await c.connect()
    yield c
    await c.close()


async def test_references_write_return_and_filter(client: Any, double: WeaviateDouble) -> None:
    p = fresh_prefix()
    mt = Configure.multi_tenancy(enabled=True, auto_tenant_creation=True)
    await client.collections.create(
        f"{p}Ent", properties=[Property(name="name", data_type=DataType.TEXT)], multi_tenancy_config=mt
    )
    await client.collections.create(
        f"{p}Msg",
        properties=[
            Property(name="text", data_type=DataType.TEXT),
            Property(name="n", data_type=DataType.NUMBER),
        ],
        references=[ReferenceProperty(name="mentions", target_collection=f"{p}Ent")],
        multi_tenancy_config=mt,
    )
    ent = client.collections.use(f"{p}Ent").with_tenant("t1")
    msg = client.collections.use(f"{p}Msg").with_tenant("t1")
    await ent.data.insert_many(
        [DataObject(properties={"name": n}, uuid=U[i]) for i, n in enumerate(["Alice", "Bob"])]
    )
    await msg.data.insert_many(
        [DataObject(properties={"text": f"message {i}", "n": float(i)}, uuid=U[2 + i]) for i in range(3)]
    )
    res = await msg.data.reference_add_many(
        [
            DataReference(from_property="mentions", from_uuid=U[2], to_uuid=U[0]),
            DataReference(from_property="mentions", from_uuid=U[3], to_uuid=U[1]),
            DataReference(from_property="mentions", from_uuid=U[4], to_uuid=U[0]),
        ]
    )
    assert not res.has_errors
    alice = await msg.query.fetch_objects(
        filters=Filter.by_ref("mentions").by_property("name").equal("Alice")
    )
    assert sorted(str(o.uuid) for o in alice.objects) == [U[2], U[4]]
    into_bob = await msg.query.fetch_objects(filters=Filter.by_ref("mentions").by_id().equal(U[1]))
    assert [str(o.uuid) for o in into_bob.objects] == [U[3]]
    out = await msg.query.fetch_object_by_id(
        U[3], return_references=QueryReference(link_on="mentions", return_properties=["name"])
    )
    assert out is not None and [o.properties["name"] for o in out.references["mentions"].objects] == ["Bob"]
    # Strictness the adapter depends on: typed filter values, tenants named, limits enforced.
    with pytest.raises(WeaviateQueryError, match="valueNumber"):
        await msg.query.fetch_objects(filters=Filter.by_property("n").equal(1))
    with pytest.raises(WeaviateQueryError, match="tenant not found"):
        await client.collections.use(f"{p}Msg").with_tenant("nobody").query.fetch_objects()
    with pytest.raises(WeaviateQueryError, match="without tenant"):
        await client.collections.use(f"{p}Msg").query.fetch_objects()
    with pytest.raises(WeaviateQueryError, match="maximum results"):
        await msg.query.fetch_objects(limit=10_001)
    tenants = await client.collections.use(f"{p}Msg").tenants.get()
    assert list(tenants) == ["t1"]
    await client.collections.use(f"{p}Ent").tenants.create([Tenant(name="t2")])
    assert set(await client.collections.use(f"{p}Ent").tenants.get()) == {"t1", "t2"}
    dry = await msg.data.delete_many(where=Filter.by_property("n").greater_or_equal(1.0), dry_run=True)
    assert dry.matches == 2 and len((await msg.query.fetch_objects()).objects) == 3
    for name in (f"{p}Msg", f"{p}Ent"):
        await client.collections.delete(name)
