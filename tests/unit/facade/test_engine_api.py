"""The engine's public API for integrations: the factory, the handles, the loop, exclusive cycles,
session-level forgetting and listing (issue 18.1, 18.5)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tests.unit.ingest._support import FakeEmbedder, turn
from uniko_memory import KnowledgeBase, UnikoConfig
from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.model import Message
from uniko_memory.store.embedded import EmbeddedStore


# ---------------------------------------------------------------------------------- the factory
async def test_the_factory_opens_the_embedded_store_at_a_path(tmp_path: Path) -> None:
    kb = await KnowledgeBase.from_config(path=tmp_path / "m.db", embedder=FakeEmbedder(), token_counter=len)
    try:
        assert isinstance(kb.store, EmbeddedStore) and kb.embedder.dim == FakeEmbedder.dim
        assert kb.token_counter.count("abcd") == 4
        assert await kb.store.get_meta("embedding_model") == FakeEmbedder.model_id
    finally:
        await kb.close()
    assert (tmp_path / "m.db").exists()


async def test_the_factory_without_default_models_loads_no_embedder(tmp_path: Path) -> None:
    kb = await KnowledgeBase.from_config(path=tmp_path / "m.db", default_models=False)
    try:
        assert kb.embedder is None and await kb.store.get_meta("embedding_model") is None
    finally:
        await kb.close()


async def test_the_factory_checks_the_token_counter_before_opening(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="token"):
        await KnowledgeBase.from_config(path=tmp_path / "m.db", embedder=FakeEmbedder(), token_counter=3.5)
    assert not (tmp_path / "m.db").exists()


async def test_the_factory_needs_a_path_or_in_memory() -> None:
    with pytest.raises(ConfigError, match="needs a path"):
        await KnowledgeBase.from_config(embedder=FakeEmbedder())


async def test_weaviate_without_a_client_or_url_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEAVIATE_URL", raising=False)
    cfg = UnikoConfig.build({"store": {"backend": "weaviate"}})
    with pytest.raises(ConfigError, match="pass weaviate=<client> or set WEAVIATE_URL"):
        await Uniko.open("ignored.db", cfg, embedder=FakeEmbedder())


async def test_in_memory_is_embedded_whatever_the_backend() -> None:
    cfg = UnikoConfig.build({"store": {"backend": "weaviate"}})
    uni = await Uniko.in_memory(cfg, embedder=FakeEmbedder())
    try:
        assert isinstance(uni.kb.store, EmbeddedStore)
    finally:
        await uni.close()


async def test_the_default_embedder_comes_from_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[UnikoConfig] = []

    def fake(cfg: UnikoConfig) -> FakeEmbedder:
        made.append(cfg)
        return FakeEmbedder()

    monkeypatch.setattr("uniko_memory.providers.defaults.default_embedder", fake)
    uni = await Uniko.in_memory()
    try:
        assert len(made) == 1 and isinstance(uni.kb.embedder, FakeEmbedder)
    finally:
        await uni.close()


def test_an_unknown_embedder_needs_one_passed() -> None:
    from uniko_memory.providers import default_embedder

    with pytest.raises(ConfigError, match="needs an embedder passed explicitly"):
        default_embedder(UnikoConfig.build({"models": {"embedder": "custom"}}))


# ---------------------------------------------------------------------------------- handles and loop
async def test_handles_name_their_engine_and_config(uni: Uniko) -> None:
    agent = uni.agent("a")
    assert agent.uniko is uni and agent.session("s").uniko is uni
    assert agent.config is uni.config and uni.pipeline is uni._pipeline
    assert uni.loop is asyncio.get_running_loop()


def test_run_async_forwards_from_another_loop() -> None:
    uni = Uniko.in_memory_sync(embedder=FakeEmbedder())
    try:

        async def where() -> threading.Thread:
            return threading.current_thread()

        async def elsewhere() -> threading.Thread:
            return await uni.run_async(where())

        assert asyncio.run(elsewhere()).name == "uniko-engine"
        assert uni.run_sync(where()).name == "uniko-engine"
    finally:
        uni.close_sync()


async def test_an_exclusive_cycle_holds_back_consolidation(uni: Uniko) -> None:
    agent = uni.agent("a")
    await agent.session("s").observe(turn("Ann", "Ann moved to Lisbon in May."))
    await agent.flush()
    async with uni.pipeline.exclusive_cycle("a"):
        task = asyncio.create_task(agent.consolidate())
        await asyncio.sleep(0.05)
        assert not task.done()
    assert await task is not None


# ---------------------------------------------------------------------------------- sessions
async def test_sessions_and_their_messages_are_listed(uni: Uniko) -> None:
    agent = uni.agent("a")
    s = agent.session("s1")
    for i, text in enumerate(["Ann likes tea.", "Bob likes coffee.", "Ann moved to Lisbon."]):
        await s.observe(turn("Ann" if i != 1 else "Bob", text, i, id=f"t{i}"))
    await agent.session("s2").observe(turn("Cy", "Cy is here.", 0, id="u0"))
    assert sorted(n.external_id for n in await agent.sessions()) == ["s1", "s2"]
    listed = await s.messages()
    assert [m.external_id for m in listed] == ["t0", "t1", "t2"] and all(
        isinstance(m, Message) for m in listed
    )
    got = await agent.get_nodes([listed[0].id, "nope"])
    assert list(got) == [listed[0].id]
    assert await uni.agent("other").get_nodes([listed[0].id]) == {}
    assert s.messages_sync is not None and agent.sessions_sync is not None


async def test_forget_session_forgets_every_turn_of_it(uni: Uniko) -> None:
    agent = uni.agent("a")
    for i in range(3):
        await agent.session("gone").observe(turn("Ann", f"Ann visited place number {i}.", i, id=f"g{i}"))
    await agent.session("kept").observe(turn("Ann", "Ann stays in Porto.", 0, id="k0"))
    reports = await agent.forget_session("gone")
    assert len(reports) == 3
    assert await agent.session("gone").messages() == []
    assert len(await agent.session("gone").messages(include_redacted=True)) == 3
    assert [m.external_id for m in await agent.session("kept").messages()] == ["k0"]
    assert await agent.forget_session("gone") == []


async def test_forget_session_refuses_an_id_no_session_could_carry(uni: Uniko) -> None:
    from uniko_memory.errors import ValidationError

    with pytest.raises(ValidationError):
        await uni.agent("a").forget_session("")
