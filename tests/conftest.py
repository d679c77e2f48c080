"""The fixture most engine tests share: a fresh in-memory engine with the fake embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.ingest._support import open_uni
from uniko_memory.facade import Uniko


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    """A directory's own ``uni`` fixture (another store, another config) overrides this one."""
    u = await open_uni()
    try:
        yield u
    finally:
        await u.close()
