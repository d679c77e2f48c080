"""``Uniko.open(weaviate=client)``: the whole engine (ingest, finalize, recall) on the Weaviate store."""

from __future__ import annotations

from datetime import UTC, datetime

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
