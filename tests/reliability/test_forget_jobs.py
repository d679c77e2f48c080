"""Forgetting a participant on every store: statements about them, second forgets, interrupted jobs.

Issue 16: a hard forget kept what others said about the person (defect 4); a second hard forget
raised ``NotFound`` (10); a forget cut short left the words behind and its retry raised
``NotFound`` (3; the SIGKILL version is ``test_crash_forget.py``). Here the job is interrupted
by an injected store or rebuild failure, on the embedded store and on the Weaviate double.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.conftest import CONFIG, Backend
from tests.unit.ingest._support import FakeEmbedder
from uniko_memory.config import UnikoConfig
from uniko_memory.consolidation.forget import pending_jobs
from uniko_memory.errors import NotFound, StoreError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn
from uniko_memory.model import Message, Tier, message_id

AGENT = "forgets"
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = [  # (session, sender, text)
    ("s1", "Erin", "I adopted a parrot named Quetzalbird last spring."),
    ("s1", "Dave", "Erin lives at 42 Wallaby Lane and she has asthma."),
    ("s1", "Erin", "My favourite band is Marmaduke Spoons."),
    ("s1", "Dave", "I am going to Lisbon next week."),
    ("s2", "Erin", "I started a pottery class on Tuesdays with Quetzalbird watching."),
    ("s2", "Dave", "My dog is called Rex and he loves the beach."),
]
ABOUT = message_id(AGENT, "t1")  # Dave's statement about Erin
#: Her words, and what Dave said about her.
MARKS = ("quetzalbird", "marmaduke", "wallaby", "asthma")


async def build(uni: Uniko) -> None:
    agent = uni.agent(AGENT)
    for i, (session, who, text) in enumerate(TURNS):
        to = ["Dave"] if who == "Erin" else ["Erin"]
        await agent.session(session).observe(
            Turn(id=f"t{i}", sender=who, content=text, at=T0 + timedelta(minutes=i), addressed_to=to)
        )
    await agent.flush()
    for s in ("s1", "s2"):
        await agent.session(s).finalize()
    await agent.consolidate()


async def traces(uni: Uniko, marks: tuple[str, ...] = MARKS) -> list[str]:
    """Every node of every tier (redacted ones too), every text search, and a recall."""
    store, found = uni.kb.store, []
    for tier in Tier:
        for node in await store.find(AGENT, tier, limit=100_000, include_redacted=True):
            text = node.model_dump_json().lower()
            found += [f"{tier.value} {node.id}: {m}" for m in marks if m in text]
        for m in marks:
            found += [
                f"text_search {tier.value} {h.id}" for h in await store.text_search(AGENT, tier, m, k=20)
            ]
    bundle = await uni.agent(AGENT).recall("Where does Erin live? Wallaby Lane asthma parrot Quetzalbird")
    found += [
        f"recall {i.kind} {i.node_id}" for i in bundle.items if any(m in i.content.lower() for m in marks)
    ]
    return found


async def test_hard_forget_erases_what_others_said_about_the_person(backend: Backend) -> None:
    uni, close = await backend.open()
    try:
        await build(uni)
        before = await traces(uni)
        assert any("wallaby" in t and t.startswith("fact") for t in before)  # a Fact was drawn from it
        assert any(t.startswith("recall") for t in before)
        report = await uni.agent(AGENT).forget_participant("Erin", hard=True)
        assert report.about_messages == 1 and report.messages == 4 and report.participants == 1
        assert report.observations and report.facts_closed and len(report.sessions_rebuilt) == 2
        assert await uni.kb.store.get(AGENT, ABOUT) is None
        assert await traces(uni) == []
        # Dave's other words stay.
        rest = [m for m in await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=100) if isinstance(m, Message)]
        assert sorted(m.content for m in rest) == sorted(
            t for _, who, t in TURNS if who == "Dave" and "Erin" not in t
        )
        assert (await uni.agent(AGENT).recall("What is Dave's dog called?")).items
    finally:
        await close()


async def test_soft_forget_keeps_statements_by_others_unless_asked(backend: Backend) -> None:
    uni, close = await backend.open()
    try:
        await build(uni)
        agent = uni.agent(AGENT)
        report = await agent.forget_participant("Erin")
        assert report.messages == 3 and report.about_messages == 0
        kept = await uni.kb.store.get(AGENT, ABOUT)
        assert isinstance(kept, Message) and not kept.redacted and "Wallaby" in kept.content
        assert await traces(uni, ("quetzalbird", "marmaduke")) == []
        report = await agent.forget_participant("Erin", about=True)
        assert report.about_messages == 1 and report.messages == 1
        gone = await uni.kb.store.get(AGENT, ABOUT)
        assert isinstance(gone, Message) and gone.redacted and gone.content == ""
        assert await traces(uni) == []
    finally:
        await close()


async def test_a_second_forget_reports_nothing_to_do_and_an_unknown_name_raises(backend: Backend) -> None:
    uni, close = await backend.open()
    try:
        await build(uni)
        agent = uni.agent(AGENT)
        first = await agent.forget_participant("Dave")  # soft
        assert not first.nothing_to_do and first.messages == 3
        again = await agent.forget_participant("Dave")
        assert again.nothing_to_do and again.messages == 0
        first = await agent.forget_participant("Erin", hard=True)
        assert not first.nothing_to_do
        again = await agent.forget_participant("Erin", hard=True)
        assert again.nothing_to_do and again.messages == 0 and not again.sessions_rebuilt
        assert (await agent.forget_participant("erin", hard=True)).nothing_to_do  # ids fold case
        with pytest.raises(NotFound):
            await agent.forget_participant("Zed", hard=True)  # never stored: a typo is told apart
        with pytest.raises(NotFound):
            await agent.forget_participant("Zed")
    finally:
        await close()


# ------------------------------------------------------------------------------ interrupted jobs
def _fail_once(uni: Uniko, where: str) -> list[int]:
    """Make the forget's unit of work (``unit``) or its first session rebuild (``rebuild``) fail once."""
    calls = [0]
    if where == "unit":
        store = uni.kb.store
        real = store.unit

        @contextlib.asynccontextmanager
        async def unit(agent: str) -> AsyncIterator[Any]:
            calls[0] += 1
            if calls[0] == 1:
                raise StoreError("injected: the disk went away")
            async with real(agent) as u:
                yield u

        store.unit = unit  # type: ignore[method-assign]
    else:
        real_finalize = uni._finalizer.finalize

        async def finalize(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == 1:
                raise StoreError("injected: the embedder went away")
            return await real_finalize(*args, **kwargs)

        uni._finalizer.finalize = finalize  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("where", ["unit", "rebuild"])
async def test_a_forget_cut_short_is_finished_by_the_retry(backend: Backend, where: str) -> None:
    uni, close = await backend.open()
    try:
        await build(uni)
        calls = _fail_once(uni, where)
        agent = uni.agent(AGENT)
        with pytest.raises(StoreError, match="injected"):
            await agent.forget_participant("Erin", hard=True)
        assert calls[0] == 1
        assert len(await pending_jobs(uni.kb.store, AGENT)) == 1
        if where == "unit":  # nothing was deleted yet: the words are all there
            assert await traces(uni)
        report = await agent.forget_participant("Erin", hard=True)  # no NotFound: the job is finished
        assert report.resumed and report.messages == 4 and report.about_messages == 1
        assert len(report.sessions_rebuilt) == 2
        assert await pending_jobs(uni.kb.store, AGENT) == []
        assert await traces(uni) == []
        assert (await agent.forget_participant("Erin", hard=True)).nothing_to_do
    finally:
        await close()


async def test_a_turn_forget_cut_short_is_finished_by_the_retry(backend: Backend) -> None:
    uni, close = await backend.open()
    try:
        await build(uni)
        _fail_once(uni, "rebuild")  # the turn is deleted, the rebuild fails
        agent = uni.agent(AGENT)
        with pytest.raises(StoreError, match="injected"):
            await agent.delete_turn("s1", "t0")
        assert await uni.kb.store.get(AGENT, message_id(AGENT, "t0")) is None
        report = await agent.delete_turn("s1", "t0")  # the turn is gone, the job is not: no NotFound
        assert report.resumed and report.messages == 1 and report.sessions_rebuilt
        with pytest.raises(NotFound):
            await agent.delete_turn("s1", "t0")  # now it is both
    finally:
        await close()


# ------------------------------------------------------------------------------ resumed on open
Opener = Callable[[], Awaitable[Uniko]]


@contextlib.asynccontextmanager
async def _reopenable(name: str, tmp_path: Path) -> AsyncIterator[Opener]:
    """Open the same memory again and again: a file (embedded) or one collection prefix (double)."""
    cfg = UnikoConfig.build(CONFIG)
    if name == "embedded":

        async def open_file() -> Uniko:
            return await Uniko.open(tmp_path / "m.db", cfg, embedder=FakeEmbedder())

        yield open_file
        return
    from tests.weaviate_double import shared_double
    from tests.weaviate_double.harness import fresh_prefix

    prefix, double = fresh_prefix(), shared_double()
    clients: list[Any] = []

    async def open_double() -> Uniko:
        client = double.async_client()
        clients.append(client)
        wcfg = UnikoConfig.build({**CONFIG, "store": {"collection_prefix": prefix}})
        return await Uniko.open("unused.db", wcfg, weaviate=client, embedder=FakeEmbedder())

    try:
        yield open_double
    finally:
        for c in clients:
            await c.close()
        with double.engine.lock:
            for n in [n for n in double.engine.classes if n.startswith(prefix)]:
                double.engine.delete_class(n)


async def test_an_interrupted_forget_is_finished_when_the_memory_is_opened_again(
    backend: Backend, tmp_path: Path
) -> None:
    async with _reopenable(backend.name, tmp_path) as open_memory:
        uni = await open_memory()
        try:
            await build(uni)
            _fail_once(uni, "unit")
            with pytest.raises(StoreError, match="injected"):
                await uni.agent(AGENT).forget_participant("Erin", hard=True)
        finally:
            await uni.close()
        uni = await open_memory()  # recovery: the journal's job is finished here
        try:
            assert await pending_jobs(uni.kb.store, AGENT) == []
            assert await traces(uni) == []
            assert await uni.kb.store.get(AGENT, ABOUT) is None
            chunks = await uni.kb.store.find(AGENT, Tier.CHUNK, limit=100)
            assert {c.session_key() for c in chunks} >= {m.session_id for m in await _dave(uni)}  # rebuilt
            assert (await uni.agent(AGENT).forget_participant("Erin", hard=True)).nothing_to_do
        finally:
            await uni.close()


async def _dave(uni: Uniko) -> list[Message]:
    return [m for m in await uni.kb.store.find(AGENT, Tier.MESSAGE, limit=100) if isinstance(m, Message)]
