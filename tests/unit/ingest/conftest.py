from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from uniko_memory.facade import Uniko

from ._support import open_uni


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    u = await open_uni()
    try:
        yield u
    finally:
        await u.close()
