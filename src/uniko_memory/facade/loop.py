"""The engine's event loop: a private one in a thread for the synchronous API, and the rule that
every verb runs on the loop that owns the store, whichever loop awaits it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..errors import ClosedError

T = TypeVar("T")

STOPPED = "this Uniko handle is closed (its engine loop has stopped)"


class EngineLoop:
    """A private event loop in a daemon thread (``Uniko.open_sync`` and friends run on it)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="uniko-engine", daemon=True)
        self._lock = threading.Lock()
        self._stopped = False
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop thread and wait for it. A stopped loop would never run it and
        the caller would wait forever, so that is refused at once with ``ClosedError``."""
        with self._lock:  # no submission can slip in between the check and ``stop``
            if self._stopped:
                coro.close()  # never scheduled: closing it spares a "never awaited" warning
                raise ClosedError(STOPPED)
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future.result()

    def stop(self) -> None:
        """Stop the loop; a call another thread was still waiting on gets ``ClosedError``
        instead of waiting forever on a loop that will not run again."""
        with self._lock:
            self._stopped = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if self.thread.is_alive():  # still finishing a callback: its futures may yet resolve
            return
        for future in list(self._pending):
            if not future.done():
                future.set_exception(ClosedError(STOPPED))


async def on_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on ``loop``: directly when already there, else forwarded to it."""
    try:
        current = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover - always inside a loop here
        current = None
    if current is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def engine_verb(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., Coroutine[Any, Any, T]]:
    """Run the coroutine on the owning ``Uniko``'s loop (``self._uni``), whichever loop awaits it;
    a closed handle raises ``ClosedError`` first."""

    @functools.wraps(fn)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        uni = self._uni
        uni._check_open()
        return await on_loop(uni.loop, fn(self, *args, **kwargs))

    return wrapper
