"""UnikoStore.batch enforces uniko's ingest limits before any operation runs."""

from __future__ import annotations

import itertools

import pytest
from langchain_uniko import UnikoStore
from langgraph.store.base import GetOp, PutOp

from uniko_memory.errors import ValidationError
from uniko_memory.facade import Uniko

_ids = itertools.count()


@pytest.fixture
def agent_name() -> str:
    return f"limits-{next(_ids)}"


def test_a_batch_puts_at_most_max_unit_turns(
    uni: Uniko, agent_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uni.config.ingest, "max_unit_turns", 2)
    store = UnikoStore(uni, agent_id=agent_name)
    ns = ("notes",)
    puts = [PutOp(ns, f"k{i}", {"content": f"Note {i} about the garden."}) for i in range(3)]
    with pytest.raises(ValidationError) as err:
        store.batch(puts)
    assert "3 values" in str(err.value) and "IngestConfig.max_unit_turns" in str(err.value)
    assert uni.agent(agent_name).stats_sync() == {}  # nothing was written
    assert store.batch([*puts[:2], GetOp(ns, "k0")])[2] is not None  # gets and deletes do not count


def test_value_size_is_checked_for_the_whole_batch_first(
    uni: Uniko, agent_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uni.config.ingest, "max_metadata_bytes", 400)
    store = UnikoStore(uni, agent_id=agent_name)
    ns = ("notes",)
    small = PutOp(ns, "small", {"content": "Priya has a cat."})
    big = PutOp(ns, "big", {"content": "Priya has a dog.", "notes": "x" * 500})
    with pytest.raises(ValidationError, match=r"IngestConfig\.max_metadata_bytes"):
        store.batch([small, big])
    assert uni.agent(agent_name).stats_sync() == {}  # the small put before it was not written either
    monkeypatch.setattr(uni.config.ingest, "max_turn_chars", 10)
    with pytest.raises(ValidationError, match=r"IngestConfig\.max_turn_chars"):
        store.put(ns, "long", {"content": "A sentence over ten characters."})
    assert uni.agent(agent_name).stats_sync() == {}
