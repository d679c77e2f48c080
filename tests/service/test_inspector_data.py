"""What the inspector page reads and does, in process (``InspectorData``): tier counts, turns, the
provenance graph, the recall trace, forget's confirmation, a read-only store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.ingest._support import FakeEmbedder, open_uni, turn
from uniko_memory.config import UnikoConfig
from uniko_memory.errors import NotFound, UnikoError, ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.service.inspector import InspectorData, label

pytest.importorskip("starlette", reason="the mcp extra is not installed")

CONFIG = {"pipeline": {"consolidation_threshold": 2}}


async def _fill(uni: Uniko) -> None:
    a = uni.agent("alice")
    for i, (who, text) in enumerate([("alice", "My cat is called Miso."), ("alice", "Miso loves tuna.")]):
        await a.session("s1").observe(turn(who, text, i, id=f"t{i}"))
    await a.flush()
    await a.consolidate()


@pytest.fixture
async def data() -> AsyncIterator[InspectorData]:
    uni = await open_uni(CONFIG)
    await _fill(uni)
    try:
        yield InspectorData(uni)
    finally:
        await uni.close()


async def test_overview_sessions_and_turns(data: InspectorData) -> None:
    ov = await data.overview()
    assert ov["read_only"] is False
    [alice] = ov["agents"]
    assert alice["agent"] == "alice" and alice["tiers"]["message"] == 2 and alice["sessions"] == 1
    assert [s["session"] for s in (await data.sessions("alice"))["sessions"]] == ["s1"]
    msgs = (await data.messages("alice", "s1"))["messages"]
    assert [m["turn_id"] for m in msgs] == ["t0", "t1"] and msgs[0]["content"] == "My cat is called Miso."
    with pytest.raises(ValidationError, match="unknown tier"):
        await data.nodes("alice", "nonsense")


async def test_the_provenance_graph_runs_message_observation_fact(data: InspectorData) -> None:
    [fact, *_] = (await data.nodes("alice", "fact"))["nodes"]
    g = await data.graph("alice", fact["id"])
    tiers = {n["tier"] for n in g["nodes"]}
    assert {"fact", "observation", "message"} <= tiers
    types = {e["type"] for e in g["edges"]}
    assert {"SUPPORTED_BY", "OBSERVED_IN"} <= types
    ids = {n["id"] for n in g["nodes"]}
    assert all(e["src"] in ids and e["dst"] in ids for e in g["edges"])
    with pytest.raises(NotFound):
        await data.graph("alice", "msg_nope")


async def test_recall_carries_the_trace_and_labels(data: InspectorData) -> None:
    r = await data.recall("alice", "What is the cat called?", 120)
    assert r["rendered"].startswith("Memory (quoted data") and r["total_tokens"] <= 120
    assert r["token_budget"] == 120 and r["items"]
    trace = r["trace"]
    assert trace["phases"] and trace["channels"]
    named = {e["id"] for entries in trace["channels"].values() for e in entries} | set(trace["dropped"])
    assert named <= set(r["labels"])
    for bad in ("", "   "):
        with pytest.raises(ValidationError):
            await data.recall("alice", bad, None)
    with pytest.raises(ValidationError, match="budget"):
        await data.recall("alice", "cat", 0)


async def test_forget_needs_confirmation(data: InspectorData) -> None:
    with pytest.raises(ValidationError, match="confirm"):
        await data.forget("alice", {"session": "s1", "turn_id": "t0"})
    assert len((await data.messages("alice", "s1"))["messages"]) == 2
    out = await data.forget("alice", {"session": "s1", "turn_id": "t0", "confirm": True, "agent": "bob"})
    assert out["reports"][0]["messages"] == 1
    assert [m["turn_id"] for m in (await data.messages("alice", "s1"))["messages"]] == ["t1"]


async def test_a_read_only_inspector_reads_and_refuses_forget(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    writer = await Uniko.open(db, UnikoConfig.build(CONFIG), embedder=FakeEmbedder())
    try:
        await _fill(writer)
        reader = await Uniko.open(
            db, UnikoConfig.build({"store": {"embedded_read_only": True}}), embedder=FakeEmbedder()
        )
        try:
            data = InspectorData(reader)
            assert (await data.overview())["read_only"] is True
            assert (await data.recall("alice", "What is the cat called?", None))["items"]
            with pytest.raises(UnikoError, match="read-only"):
                await data.forget("alice", {"session": "s1", "confirm": True})
        finally:
            await reader.close()
    finally:
        await writer.close()


async def test_labels_of_redacted_and_long_nodes(data: InspectorData) -> None:
    [msg, *_] = (await data.nodes("alice", "message"))["nodes"]
    node = (await data.store.get_many("alice", [msg["id"]]))[msg["id"]]
    assert label(node).startswith("alice: ")
    long = node.model_copy(update={"content": "word " * 200})
    assert len(label(long)) <= 160 and label(long).endswith("…")
    assert label(node.redacted_copy()) == "(redacted)"
