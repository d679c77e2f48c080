"""How a long-running command (``uniko mcp``, ``uniko inspect``) runs and ends."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from .output import _err
from .store_access import engine_error


def run_server(command: str, main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` until it returns or the user stops it: Ctrl-C exits 130, an engine error
    (no store, locked, bad config) is one line on stderr and exit 2."""
    from ..errors import UnikoError

    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        return 130
    except UnikoError as exc:
        _err(engine_error(command, exc))
        return 2
