"""Serving an ASGI app (the MCP server's streamable HTTP app, the inspector page) with uvicorn.

Loopback by default. ``bind_socket`` binds first (port 0 picks a free one), so the caller can say
where it listens before serving; ``check_exposure`` refuses to serve a memory beyond this machine
without bearer tokens, and ``loopback_hosts`` is what a loopback server accepts in ``Host`` (a
web page whose name an attacker rebinds to a loopback address sends its own name there).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, MissingDependency
from .auth import canonical_host, is_loopback

#: How a browser on this machine may name it in ``Host``, whichever loopback address is bound.
LOCALHOST_NAMES = ("localhost", "127.0.0.1", "::1")


def check_exposure(host: str, has_tokens: bool) -> None:
    """Bound to anything but loopback, every request must carry a bearer token."""
    if not is_loopback(host) and not has_tokens:
        raise ConfigError(
            f"refusing to serve memory on {host} without bearer tokens: anyone who can reach it could "
            "read and forget it; give --token (or UNIKO_MCP_TOKEN) or --tokens-file, or bind 127.0.0.1"
        )


def loopback_hosts(host: str, port: int) -> list[str]:
    """The ``Host`` header values a server bound to the loopback ``host:port`` answers.

    The bound address (in its canonical spelling) and the localhost names, each with the bound
    port (and bare on port 80, where browsers leave it out). Any other name (``evil.example``
    resolved to 127.0.0.2) is a DNS-rebinding page and must be refused.
    """
    if not is_loopback(host):
        raise ConfigError(f"{host} is not a loopback address")
    names = dict.fromkeys([canonical_host(host), *LOCALHOST_NAMES])
    shown = [f"[{n}]" if ":" in n else n for n in names]
    return [f"{n}:{port}" for n in shown] + (shown if port == 80 else [])


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: a free one)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, path: str = "") -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


#: Seconds requests still in flight get to finish after a stop signal (a tool call, an open event
#: stream, a client sending its body slowly); then they are cancelled.
SHUTDOWN_GRACE_S = 2
#: Seconds the app's own shutdown (the MCP SDK closing every open session) may take after that.
LIFESPAN_SHUTDOWN_S = 3.0


async def serve(app: Any, sock: socket.socket, *, on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``sock`` until cancelled or interrupted (SIGINT / SIGTERM).

    A stop signal ends the server within seconds whatever its clients do: requests in flight get
    ``SHUTDOWN_GRACE_S`` to finish, then are cancelled (without it, one client that never finished
    sending a request held the process forever); the app's shutdown gets ``LIFESPAN_SHUTDOWN_S``
    (closing thousands of MCP sessions one by one took longer), and what it has not finished by
    then is left to be cancelled with the event loop. The caller then closes the store.
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependency("uvicorn", "mcp", "serving over HTTP") from exc
    config = uvicorn.Config(
        _BoundedLifespan(app, LIFESPAN_SHUTDOWN_S),
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        startup = server.startup

        async def started(sockets: list[socket.socket] | None = None) -> None:
            await startup(sockets)
            if server.started:
                on_ready()

        server.startup = started  # type: ignore[method-assign]
    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then raises the signal again for the
    # handler in place before it; this one turns that into a return, so the caller still closes
    # the store (the default handler would end the process first).
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        await server.serve(sockets=[sock])
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _BoundedLifespan:
    """``app`` whose ASGI lifespan shutdown answers within ``limit`` seconds.

    The app's lifespan runs in a task of its own; once the server asks it to shut down, the
    server is told it has after at most ``limit`` seconds, and the rest of the app's shutdown
    (the SDK cancelling its session tasks) is cancelled with the loop instead of holding up the
    exit. Every other request goes to ``app`` unchanged.
    """

    def __init__(self, app: Any, limit: float) -> None:
        self.app = app
        self.limit = limit

    def __getattr__(self, name: str) -> Any:  # the app's own attributes (``router``, ``state``)
        if name == "app":
            raise AttributeError(name)
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "lifespan":
            await self.app(scope, receive, send)
            return
        stopping = asyncio.Event()
        answered = asyncio.Event()

        async def inner_receive() -> Any:
            message = await receive()
            if message.get("type") == "lifespan.shutdown":
                stopping.set()
            return message

        async def inner_send(message: Any) -> None:
            if answered.is_set():
                return
            if message.get("type", "").startswith("lifespan.shutdown."):
                answered.set()
            await send(message)

        task = asyncio.ensure_future(self.app(scope, inner_receive, inner_send))
        asked = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait([task, asked], return_when=asyncio.FIRST_COMPLETED)
        finally:
            asked.cancel()
        if not task.done():
            done, _ = await asyncio.wait([task], timeout=self.limit)
            if not done and not answered.is_set():
                answered.set()
                await send({"type": "lifespan.shutdown.complete"})
                _orphans.add(task)  # cancelled with the loop; kept referenced until then
                return
        await task


#: App shutdowns that ran past their limit (kept referenced so the loop can cancel them).
_orphans: set[Any] = set()


class _Stopped(Exception):
    """A stop signal, re-raised by uvicorn once it has shut down."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped(signum)
