"""``Uniko.open(weaviate=client)``: the whole engine (ingest, finalize, recall) on the Weaviate store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.weaviate_double.harness import fresh_prefix
from uniko_memory import Turn, Uniko, UnikoConfig


async def test_uniko_runs_end_to_end_on_weaviate(double) -> None:  # type: ignore[no-untyped-def]
    cfg = UnikoConfig.build({"store": {"collection_prefix": fresh_prefix()}})
    uni = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    try:
        agent = uni.agent("w1")
        s = agent.session("s1")
        at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
        await s.observe(
            Turn(sender="Priya", content="I adopted a grey cat named Biscuit.", at=at, addressed_to="Tomas")
        )
        await s.observe(
            Turn(
                sender="Tomas",
                content="I am training for the Lisbon half marathon.",
                at=at,
                addressed_to="Priya",
            )
        )
        await agent.flush()
        report = await s.finalize()
        assert report.transcript_chunks == 1
        bundle = await agent.recall("What is the name of Priya's cat?", token_budget=300)
        assert any("Biscuit" in i.rendered for i in bundle.items)
        assert type(uni.kb.store).__name__ == "WeaviateStore"
    finally:
        await uni.close()


async def test_open_weaviate_is_one_call_and_closes_its_client(double) -> None:  # type: ignore[no-untyped-def]
    prefix = fresh_prefix()
    uni = await Uniko.open_weaviate(
        double.url, grpc_url=f"127.0.0.1:{double.grpc_port}", collection_prefix=prefix, skip_init_checks=True
    )
    client = uni.kb.store.client  # type: ignore[attr-defined]
    try:
        assert type(uni.kb.store).__name__ == "WeaviateStore" and uni.config.store.collection_prefix == prefix
        agent = uni.agent("w2")
        at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
        await agent.session("s1").observe(Turn(sender="Priya", content="My cat is called Biscuit.", at=at))
        await agent.flush()
        bundle = await agent.recall("What is Priya's cat called?", token_budget=300)
        assert any("Biscuit" in i.rendered for i in bundle.items)
        assert any(name.startswith(prefix) for name in double.engine.classes)
    finally:
        await uni.close()
    assert not client.is_connected()  # the client it connected is closed with it


def test_open_weaviate_sync_is_one_call(double) -> None:  # type: ignore[no-untyped-def]
    cfg = UnikoConfig.build({"store": {"collection_prefix": fresh_prefix()}})
    with Uniko.open_weaviate_sync(
        double.url, cfg, grpc_url=f"127.0.0.1:{double.grpc_port}", skip_init_checks=True
    ) as uni:
        agent = uni.agent("w3")
        agent.session("s1").observe_sync(
            Turn(sender="Tomas", content="I run the Lisbon half marathon in May.", at=datetime.now(UTC))
        )
        agent.flush_sync()
        assert any("Lisbon" in i.rendered for i in agent.recall_sync("Lisbon marathon").items)
    assert uni.config.store.collection_prefix == cfg.store.collection_prefix


async def test_open_weaviate_unreachable_fails_clearly() -> None:
    with pytest.raises(Exception, match=r"(?i)connect|refused|unavailable"):
        await Uniko.open_weaviate("http://127.0.0.1:9", grpc_url="127.0.0.1:9", timeout=(0.5, 1.0, 1.0))
