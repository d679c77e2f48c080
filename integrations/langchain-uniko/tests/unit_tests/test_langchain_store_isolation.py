"""UnikoStore regressions (issue 16): namespaces are encoded injectively, search returns only the
current value of a key, and a store reads and writes exactly one agent."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_uniko import UnikoStore
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko
from uniko_memory.ingest import Turn

_ids = itertools.count()


@pytest.fixture
def agent_name() -> str:
    return f"store-iso-{next(_ids)}"


def _texts(items: list[Any]) -> str:
    return " ".join(str(item.value) for item in items)


# --------------------------------------------------------------------------- 1. namespaces


async def test_namespaces_with_slashes_are_distinct(uni: Uniko, agent_name: str) -> None:
    """The issue's reproduction: ("memories", "alice/home") and ("memories", "alice", "home")
    were one session, so one overwrote the other and a search over ("memories", "alice") saw both."""
    st = UnikoStore(uni, agent_id=agent_name)
    await st.aput(("memories", "alice/home"), "profile", {"content": "my PIN is 4821"})
    await st.aput(("memories", "alice", "home"), "profile", {"content": "someone else"})
    got = await st.aget(("memories", "alice/home"), "profile")
    assert got is not None and got.value == {"content": "my PIN is 4821"}
    assert got.namespace == ("memories", "alice/home")
    other = await st.aget(("memories", "alice", "home"), "profile")
    assert other is not None and other.value == {"content": "someone else"}
    await uni.agent(agent_name).flush()

    hits = await st.asearch(("memories", "alice"), query="PIN")
    assert "4821" not in _texts(hits)
    assert all(h.namespace[:2] == ("memories", "alice") for h in hits)
    listed = await st.asearch(("memories", "alice"))
    assert [(h.namespace, h.value) for h in listed] == [
        (("memories", "alice", "home"), {"content": "someone else"})
    ]
    assert "4821" in _texts(await st.asearch(("memories", "alice/home"), query="PIN"))
    assert await st.alist_namespaces() == [("memories", "alice", "home"), ("memories", "alice/home")]
    assert await st.alist_namespaces(prefix=("memories", "alice")) == [("memories", "alice", "home")]


async def test_escape_like_labels_and_keys_do_not_collide(uni: Uniko, agent_name: str) -> None:
    """Labels and keys holding the encoding's own characters ("%", "/", ":", "#", "\\") round-trip."""
    st = UnikoStore(uni, agent_id=agent_name)
    cells = [
        (("a/b",), "k"),
        (("a", "b"), "k"),
        (("a%2Fb",), "k"),
        (("a%b",), "k"),
        (("a\\b",), "k"),
        (("x:a",), "b"),
        (("x",), "a:b"),
        (("x",), "k"),
        (("x",), "k#2"),
        (("x",), "%"),
        ((" ",), "k"),
        (("é", "中文"), "ключ"),
    ]
    for i, (ns, key) in enumerate(cells):
        await st.aput(ns, key, {"content": f"cell number {i}", "i": i})
    await st.aput(("x",), "k", {"content": "cell number 7, second version", "i": 7})  # "k#2" stays
    for i, (ns, key) in enumerate(cells):
        item = await st.aget(ns, key)
        assert item is not None, (ns, key)
        assert (item.namespace, item.key, item.value["i"]) == (ns, key, i)
    assert await st.alist_namespaces() == sorted({ns for ns, _ in cells})
    await st.adelete(("x",), "k")
    assert await st.aget(("x",), "k") is None
    kept = await st.aget(("x",), "k#2")
    assert kept is not None and kept.value["i"] == 8


async def test_long_namespaces_and_keys_are_stored(uni: Uniko, agent_name: str) -> None:
    """Keys that make a turn id over its 256 characters still make distinct turns."""
    st = UnikoStore(uni, agent_id=agent_name)
    ns = ("n" * 100, "m/" * 20)
    await st.aput(ns, "k" * 300, {"content": "a long key"})
    await st.aput(ns, "k" * 299, {"content": "a slightly shorter key"})
    await st.aput(ns, "k" * 300, {"content": "a long key, updated"})
    first = await st.aget(ns, "k" * 300)
    second = await st.aget(ns, "k" * 299)
    assert first is not None and first.value == {"content": "a long key, updated"}
    assert second is not None and second.value == {"content": "a slightly shorter key"}


async def test_batch_ops_are_validated_like_langgraph(uni: Uniko, agent_name: str) -> None:
    """Ops handed to ``abatch`` directly get LangGraph's namespace checks too."""
    st = UnikoStore(uni, agent_id=agent_name)
    for bad in [
        PutOp((), "k", {"content": "x"}),
        PutOp(("a.b",), "k", {"content": "x"}),
        PutOp(("langgraph",), "k", {"content": "x"}),
    ]:
        with pytest.raises(InvalidNamespaceError):
            await st.abatch([bad])
    with pytest.raises(InvalidNamespaceError):
        await st.abatch([GetOp(("a", ""), "k")])
    with pytest.raises(InvalidNamespaceError):
        await st.abatch([SearchOp(("a\x00",))])
    assert await st.aget((), "k") is None
    await st.adelete((), "k")  # as InMemoryStore: deleting what cannot exist is a no-op
    await st.adelete(("langgraph",), "k")


async def test_flat_keys_of_earlier_versions_stay_readable(uni: Uniko, agent_name: str) -> None:
    """A value stored before namespaces were escaped (session "memories/u1", turn "lg:memories/u1:k")
    is read, updated and deleted as before; an old value whose namespace label held "/" is not
    read into the namespace its flat session name now decodes to (and is not migrated)."""
    session = uni.agent(agent_name).session("memories/u1")

    def legacy(ns: list[str], key: str, text: str) -> Turn:
        value = {"content": text}
        meta = {"langgraph": {"namespace": ns, "key": key, "value": value, "version": 1}}
        return Turn(
            sender="user", content=text, at=datetime.now(UTC), id=f"lg:{'/'.join(ns)}:{key}", metadata=meta
        )

    await session.observe(legacy(["memories", "u1"], "k", "User u1 prefers green tea."))
    await session.observe(legacy(["memories/u1"], "j", "Collided value from a slash label."))
    st = UnikoStore(uni, agent_id=agent_name)
    old = await st.aget(("memories", "u1"), "k")
    assert old is not None and old.value == {"content": "User u1 prefers green tea."}
    assert await st.aget(("memories", "u1"), "j") is None
    assert await st.aget(("memories/u1",), "j") is None  # not migrated
    assert [h.key for h in await st.asearch(("memories",))] == ["k"]
    assert await st.alist_namespaces() == [("memories", "u1")]

    await st.aput(("memories", "u1"), "k", {"content": "User u1 now prefers black coffee."})
    new = await st.aget(("memories", "u1"), "k")
    assert new is not None and new.value == {"content": "User u1 now prefers black coffee."}
    assert new.created_at == old.created_at
    await uni.agent(agent_name).flush()
    assert "green tea" not in _texts(await st.asearch(("memories",), query="green tea"))
    await st.adelete(("memories", "u1"), "k")
    assert await st.aget(("memories", "u1"), "k") is None
    assert await st.asearch(("memories",)) == []


# --------------------------------------------------------------------------- 2. updates


async def test_search_returns_only_the_current_value_after_an_update(uni: Uniko, agent_name: str) -> None:
    """LangMem's manage_memory / search_memory flow: "vegetarian" updated to "vegan"."""
    st = UnikoStore(uni, agent_id=agent_name)
    ns = ("memories", "u1")
    await st.aput(ns, "diet", {"content": "The user is vegetarian and loves Lisbon."})
    await uni.agent(agent_name).flush()  # the first version is fully processed (observations, vectors)
    await st.aput(ns, "diet", {"content": "The user is vegan and loves Lisbon."})
    await uni.agent(agent_name).flush()
    got = await st.aget(ns, "diet")
    assert got is not None and got.value == {"content": "The user is vegan and loves Lisbon."}
    for query in ("vegetarian", "Is the user vegetarian?", "What does the user eat?", "Lisbon"):
        hits = await st.asearch(ns, query=query)
        assert "vegetarian" not in _texts(hits), query
        assert [h.value for h in hits if h.key == "diet"] in ([], [got.value]), query
    hits = await st.asearch((), query="Is the user vegan?")
    assert [h.value for h in hits if h.key == "diet"] == [got.value]
    assert [h.value for h in await st.asearch(ns)] == [got.value]

    await st.adelete(ns, "diet")
    await uni.agent(agent_name).flush()
    for query in ("vegan", "vegetarian", "Lisbon"):
        assert not any(h.key == "diet" for h in await st.asearch((), query=query))
        assert "vegan" not in _texts(await st.asearch(ns, query=query))
    assert await st.alist_namespaces() == []


# --------------------------------------------------------------------------- 3. one agent


def test_store_requires_an_agent(uni: Uniko) -> None:
    with pytest.raises(TypeError, match="agent_id"):
        UnikoStore(uni)  # type: ignore[call-arg]
    for bad in (None, "", "   ", 3):
        with pytest.raises(ValidationError, match="agent_id"):
            UnikoStore(uni, agent_id=bad)  # type: ignore[arg-type]


def test_store_reads_only_its_agent(uni: Uniko, agent_name: str) -> None:
    """Nothing of another agent comes back: not its stored values, its conversations or its sessions,
    and a namespace's first label is a label, not an agent."""
    other = f"{agent_name}-other"
    theirs = UnikoStore(uni, agent_id=other)
    theirs.put(("notes",), "k", {"content": "The zebra enclosure code is 7731."})
    uni.agent(other).session("chat").observe_sync(
        Turn(sender="Ana", content="Zebras at the zoo love the 7731 enclosure.", at=datetime.now(UTC))
    )
    uni.agent(other).flush_sync()
    mine = UnikoStore(uni, agent_id=agent_name)
    mine.put((other, "notes"), "k", {"content": "A note about giraffes."})
    assert mine.get(("notes",), "k") is None
    assert "7731" not in _texts(mine.search((), query="zebra enclosure code"))
    assert [(h.namespace, h.key) for h in mine.search(())] == [((other, "notes"), "k")]
    assert mine.list_namespaces() == [(other, "notes")]
    assert theirs.list_namespaces() == [("notes",)]
    assert uni.agent(other).stats_sync()["message"] == 2  # the put under (other, ...) stayed mine
