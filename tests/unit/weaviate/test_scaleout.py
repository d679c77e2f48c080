"""Scale-out on Weaviate, in one process: several ``WeaviateStore`` instances on one prefix (each its
own client, as separate processes would have) share cycle leases, generations and replay order.
The same properties across OS processes: ``tests/reliability/test_scaleout.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import json_format

from tests.weaviate_double import Fault, WeaviateDouble
from tests.weaviate_double.harness import fresh_prefix
from uniko_memory import Turn, Uniko, UnikoConfig
from uniko_memory.config import LeaseConfig
from uniko_memory.errors import StoreError
from uniko_memory.model import Entity, Message, Session, Tier, message_id
from uniko_memory.recall.cache import shared_generation
from uniko_memory.store.lease import CYCLE_LEASE, LeaseLost
from uniko_memory.store.weaviate import WeaviateStore
from uniko_memory.store.weaviate.leases import as_int, next_record

from .conftest import DIM

AGENT = "scale"
FAST = LeaseConfig(
    ttl_secs=30, renew_every_secs=5, safety_margin_secs=5, clock_skew_secs=1, settle_ms=250, poll_secs=0.01
)


class Clock:
    def __init__(self) -> None:
        self.t = 2_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def stores(double: WeaviateDouble) -> AsyncIterator[list[WeaviateStore]]:
    """Three stores on one fresh prefix, each with its own client."""
    prefix = fresh_prefix()
    out = [
        await WeaviateStore.open(double.async_client(), prefix=prefix, dim=DIM, owns_client=True)
        for _ in range(3)
    ]
    yield out
    for s in out:
        await s.close()
    with double.engine.lock:
        double.engine.record = False
        double.engine.requests.clear()
        for name in [n for n in double.engine.classes if n.startswith(prefix)]:
            double.engine.delete_class(name)


def message(i: int, text: str = "hello") -> Message:
    return Message(
        id=f"msg_scale_{i}",
        agent=AGENT,
        external_id=f"t{i}",
        session_id="ses_scale",
        sender_id="par_scale",
        sender_name="Ana",
        content=text,
        timestamp=datetime(2024, 3, 1, 9, i, tzinfo=UTC),
        seq=i,
    )


async def test_concurrent_claims_elect_at_most_one_holder(stores: list[WeaviateStore]) -> None:
    cfg = FAST.model_copy(
        update={"settle_ms": 250.0}
    )  # a loaded machine: claims slower than settle are dropped
    leases = [s.lease_store(cfg) for s in stores]
    wins = 0
    for _attempt in range(12):
        won = await asyncio.gather(
            *(ls.acquire(AGENT, CYCLE_LEASE, f"p{i}", cfg.ttl_secs) for i, ls in enumerate(leases))
        )
        holders = [w for w in won if w is not None]
        assert len(holders) <= 1, won  # never two
        if holders:
            (lease,) = holders
            assert await leases[0].current(AGENT, CYCLE_LEASE) == lease
            await leases[int(lease.holder[1:])].release(lease)
            wins += 1
            if wins == 3:
                break
    assert wins == 3  # and someone does win
    record = await leases[0].current(AGENT, CYCLE_LEASE)
    assert record is not None and record.token >= 3 and record.holder == ""  # tokens never go back


async def test_an_expired_lease_is_taken_over_with_a_higher_token(stores: list[WeaviateStore]) -> None:
    clock = Clock()
    a, b = stores[0].lease_store(FAST, clock), stores[1].lease_store(FAST, clock)
    first = await a.acquire(AGENT, CYCLE_LEASE, "A", 30)
    assert first is not None and first.token == 1
    assert await b.acquire(AGENT, CYCLE_LEASE, "B", 30) is None
    renewed = await a.renew(first, 30)
    assert renewed.token == 1 and renewed.expires_at == first.expires_at
    clock.t += 30 + FAST.clock_skew_secs + 0.1
    second = await b.acquire(AGENT, CYCLE_LEASE, "B", 30)
    assert second is not None and second.token == 2
    with pytest.raises(LeaseLost, match="taken over"):
        await a.renew(first, 30)
    await a.release(first)  # a stale release leaves B's lease alone
    assert await b.current(AGENT, CYCLE_LEASE) == second


async def test_a_slow_claim_is_abandoned(stores: list[WeaviateStore], monkeypatch: Any) -> None:
    leases = stores[0].lease_store(FAST)
    real = leases._write

    async def slow(lease: Any) -> None:
        await asyncio.sleep(FAST.settle_ms / 1000 * 2)
        await real(lease)

    monkeypatch.setattr(leases, "_write", slow)
    assert await leases.acquire(AGENT, CYCLE_LEASE, "slow", 30) is None
    record = await leases.current(AGENT, CYCLE_LEASE)
    assert record is not None and record.holder == "" and record.token == 1  # cleared, token kept


async def test_a_cycle_that_lost_its_weaviate_lease_writes_nothing(double: WeaviateDouble) -> None:
    prefix = fresh_prefix()
    cfg = UnikoConfig.build({"store": {"collection_prefix": prefix}, "lease": FAST.model_dump()})
    uni = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    other = await WeaviateStore.open(double.async_client(), prefix=prefix, owns_client=True)
    try:
        store = uni.kb.store
        async with store.unit(AGENT) as u:
            u.put(message(0))
        async with uni.pipeline.exclusive_cycle(AGENT):
            lease = await other.lease_store(FAST).current(AGENT, CYCLE_LEASE)
            assert lease is not None and lease.holder == uni.pipeline.holder
            # Another process takes the record over (as after our pause past the expiry).
            await other.lease_store(FAST)._write(
                lease.model_copy(update={"holder": "B", "token": lease.token + 1})
            )
            double.engine.record = True
            with pytest.raises(LeaseLost, match="'B' with token"):
                async with store.unit(AGENT) as u:
                    u.put(message(0, "stale write"))
            writes = [r for r in double.engine.requests if r[0] == "BatchObjects"]
            assert writes == []  # refused before anything went out
        assert (await other.get(AGENT, "msg_scale_0")).content == "hello"  # type: ignore[union-attr]
    finally:
        double.engine.record = False
        await other.close()
        await uni.close()


async def test_every_committed_write_of_any_store_changes_the_shared_generation(
    stores: list[WeaviateStore],
) -> None:
    a, b, _ = stores
    assert await b.current_generation(AGENT) == 0
    m = message(0)
    async with a.unit(AGENT) as u:
        u.put(m)
    g1 = await b.current_generation(AGENT)
    assert g1 != 0 and await a.current_generation(AGENT) == g1
    async with a.unit(AGENT) as u:  # rewriting the same node changes nothing: no bump
        u.put(m)
    assert await b.current_generation(AGENT) == g1
    async with b.unit(AGENT) as u:
        u.put(message(1))
    g2 = await a.current_generation(AGENT)
    assert g2 >> 32 == (g1 >> 32) + 1  # the counter grows across writers
    await a.redact(AGENT, ["msg_scale_1"])
    g3 = await b.current_generation(AGENT)
    await b.delete(AGENT, ["msg_scale_0"])
    g4 = await a.current_generation(AGENT)
    assert len({g1, g2, g3, g4}) == 4
    assert await a.current_generation("someone-else") == 0  # per agent


def test_a_lost_update_between_two_writers_still_changes_the_record() -> None:
    base = json.dumps({"c": 7, "w": "x"})
    # Both read counter 7 and write 8: the records differ by writer, so a reader that saw one
    # sees a change when the other lands.
    c1, r1 = next_record(base, 0, "writer-1")
    c2, r2 = next_record(base, 0, "writer-2")
    assert c1 == c2 == 8 and as_int(r1) != as_int(r2)
    assert as_int(r1) >> 32 == 8
    assert next_record(base, 12, "writer-1")[0] == 13  # a writer never reuses its own counter
    assert as_int(None) == 0


async def test_another_process_write_invalidates_this_process_cached_recall(double: WeaviateDouble) -> None:
    cfg = UnikoConfig.build({"store": {"collection_prefix": fresh_prefix()}})
    writer = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    reader = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    try:
        at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
        s = writer.agent("w1").session("s1")
        await s.observe(Turn(sender="Priya", content="I adopted a grey cat named Biscuit.", at=at))
        await writer.agent("w1").flush()
        question = "What pets does Priya have?"
        first = await reader.agent("w1").recall(question, token_budget=300)
        again = await reader.agent("w1").recall(question, token_budget=300)
        assert reader.recall_cache.hits == 1 and again.render() == first.render()
        await s.observe(Turn(sender="Priya", content="I also adopted a parrot called Mango.", at=at))
        await writer.agent("w1").flush()
        after = await reader.agent("w1").recall(question, token_budget=300)
        assert reader.recall_cache.hits == 1  # a miss: the writer's commit changed the generation
        assert any("Mango" in i.rendered for i in after.items)
        assert not any("Mango" in i.rendered for i in first.items)
    finally:
        await reader.close()
        await writer.close()


async def test_a_cached_recall_costs_one_small_read(double: WeaviateDouble) -> None:
    cfg = UnikoConfig.build({"store": {"collection_prefix": fresh_prefix()}})
    uni = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    try:
        at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
        await uni.agent("w1").session("s1").observe(Turn(sender="Priya", content="I adopted a cat.", at=at))
        await uni.agent("w1").flush()
        await uni.agent("w1").recall("What pets does Priya have?", token_budget=300)
        double.engine.requests.clear()
        double.engine.record = True
        await uni.agent("w1").recall("What pets does Priya have?", token_budget=300)
        double.engine.record = False
        assert uni.recall_cache.hits == 1
        (only,) = _requests(double, "Search")  # the generation record, by id
        assert only["collection"] == f"{cfg.store.collection_prefix}_Meta"
        assert len(double.engine.requests) == 1
        assert await shared_generation(uni.kb.store, "w1") == await uni.kb.store.current_generation("w1")
    finally:
        double.engine.record = False
        await uni.close()


async def test_replay_markers_are_written_first_and_read_last(
    stores: list[WeaviateStore], double: WeaviateDouble
) -> None:
    a, b, _ = stores
    entity = Entity(
        id="ent_scale_ana",
        agent=AGENT,
        name="Ana",
        entity_type="PERSON",
        first_seen=datetime(2024, 3, 1, tzinfo=UTC),
        last_seen=datetime(2024, 3, 1, tzinfo=UTC),
    )
    double.engine.record = True
    async with a.unit(AGENT) as u:
        u.put(entity)  # buffered before the message, written after it
        u.put(message(0))
    batches = _requests(double, "BatchObjects")
    collections = [obj["collection"] for req in batches for obj in req["objects"]]
    assert collections.index(f"{a.prefix}Message") < collections.index(f"{a.prefix}Entity")
    marker = f"{a.prefix}Message"
    for reader in (b, a):  # b knows no id prefixes yet; a learned them from its own writes
        double.engine.requests.clear()
        found = await reader.get_many(AGENT, ["ent_scale_ana", "msg_scale_0", "msg_scale_new"])
        assert set(found) == {"ent_scale_ana", "msg_scale_0"}
        searched = [str(r.get("collection")) for r in _requests(double, "Search")]
        first = searched.index(marker)
        assert first > 0 and marker not in searched[:first], searched  # other tiers before
        after = searched[first + 1 :]
        if reader is b:
            assert after == [], searched
        else:  # the message id found nowhere is looked for in the other tiers (none holds one)
            assert marker not in after and len(after) == len(searched) - 2, searched


def _requests(double: WeaviateDouble, method: str) -> list[dict[str, Any]]:
    return [json_format.MessageToDict(r) for m, r in double.engine.requests if m == method]


async def test_sessions_are_written_after_every_other_put_of_a_unit(double: WeaviateDouble) -> None:
    """The Session is a unit's completion marker: a process that sees it count a turn sees all of
    that turn's unit (ingest waits for it on a replay, ``ingest/replay_settle.py``)."""
    prefix = fresh_prefix()
    cfg = UnikoConfig.build({"store": {"collection_prefix": prefix}})
    uni = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    steps: list[str] = []
    uni.kb.store.before_write_step = steps.append  # type: ignore[attr-defined]
    double.engine.record = True
    try:
        at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
        await (
            uni.agent(AGENT).session("s1").observe(Turn(sender="Priya", content="Ana moved to Oslo.", at=at))
        )
    finally:
        double.engine.record = False
        uni.kb.store.before_write_step = None  # type: ignore[attr-defined]
        await uni.close()
    assert steps[:3] == ["nodes", "edges", "completion"]
    written = [obj["collection"] for req in _requests(double, "BatchObjects") for obj in req["objects"]]
    unit_writes = written[: written.index(f"{prefix}Session") + 1]
    assert unit_writes[0] == f"{prefix}Message"
    assert f"{prefix}_Edges" in unit_writes and f"{prefix}Participant" in unit_writes
    assert unit_writes[-1] == f"{prefix}Session" and unit_writes.count(f"{prefix}Session") == 1


async def _assert_t0_t1_stored_once(uni: Uniko, session_node_id: str) -> Session:
    """Turns t0 and t1 stored once each, with sequence numbers 0 and 1, and the Session counting 2."""
    found = await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=10)
    assert sorted((m.external_id, m.seq) for m in found if isinstance(m, Message)) == [("t0", 0), ("t1", 1)]
    session = await uni.kb.store.get(AGENT, session_node_id)
    assert isinstance(session, Session) and session.message_count == 2
    return session


async def test_a_replay_of_a_unit_still_being_written_returns_once_it_is_finished(
    double: WeaviateDouble,
) -> None:
    """Process A's unit has written its Message but not yet its Session (slowed); process B ingests
    the same turn, then the next one. B's replay waits for A's Session, so B's next turn extends the
    finished Session (one sequence number each, every turn counted)."""
    prefix = fresh_prefix()
    cfg = UnikoConfig.build({"store": {"collection_prefix": prefix}})
    a = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    b = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
    first = Turn(id="t0", sender="Priya", content="I adopted a grey cat named Biscuit.", at=at)
    second = Turn(id="t1", sender="Priya", content="Biscuit sleeps all day.", at=at)
    double.engine.delays[("BatchObjects", f"{prefix}Session")] = 0.8
    try:
        writing = asyncio.create_task(a.agent(AGENT).session("s1").observe(first))
        first_id = message_id(AGENT, "t0")
        for _ in range(200):  # until A's Message is stored (its Session is 0.8 s away)
            if await b.kb.store.get(AGENT, first_id) is not None:
                break
            await asyncio.sleep(0.01)
        assert not writing.done()
        replay = await b.agent(AGENT).session("s1").observe(first)
        assert replay.was_replay and replay.message_node_id == first_id
        counted = await b.kb.store.get(AGENT, replay.session_node_id)  # A's Session, waited for
        assert isinstance(counted, Session) and counted.message_count == 1
        await writing
        await b.agent(AGENT).session("s1").observe(second)
        await _assert_t0_t1_stored_once(b, replay.session_node_id)
    finally:
        double.engine.delays.clear()
        await b.close()
        await a.close()


async def test_an_ingest_left_partly_written_is_repaired_by_running_it_again(double: WeaviateDouble) -> None:
    """A unit whose Session write failed and whose rollback failed too leaves its Message behind:
    observing the turn again finds it unfinished (after ``replay_settle_secs``) and completes it."""
    prefix = fresh_prefix()
    cfg = UnikoConfig.build({"store": {"collection_prefix": prefix}, "ingest": {"replay_settle_secs": 0.05}})
    uni = await Uniko.open("ignored.db", cfg, weaviate=double.async_client())
    at = datetime(2024, 3, 2, 18, 0, tzinfo=UTC)
    session = uni.agent(AGENT).session("s1")
    try:
        await session.observe(Turn(id="t0", sender="Priya", content="I adopted a grey cat.", at=at))
        double.engine.faults += [
            Fault("BatchObjects", collection=f"{prefix}Session", message="disk full"),
            Fault("BatchDelete", collection=f"{prefix}Message", message="still down"),
        ]
        second = Turn(id="t1", sender="Priya", content="Her name is Biscuit.", at=at)
        with pytest.raises(StoreError, match="partially rolled back"):
            await session.observe(second)
        double.engine.faults.clear()
        assert await uni.kb.store.get(AGENT, message_id(AGENT, "t1")) is not None  # left behind
        result = await session.observe(second)
        assert not result.was_replay
        stored = await _assert_t0_t1_stored_once(uni, result.session_node_id)
        assert stored.last_message_id == result.message_node_id
    finally:
        double.engine.faults.clear()
        await uni.close()
