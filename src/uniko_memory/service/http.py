"""Serving an ASGI app (the MCP server's streamable HTTP app, the inspector page) with uvicorn.

Loopback by default. ``bind_socket`` binds first (port 0 picks a free one), so the caller can say
where it listens before serving; ``check_exposure`` refuses to serve a memory beyond this machine
without bearer tokens, and ``loopback_hosts`` is what a loopback server accepts in ``Host`` (a
web page whose name an attacker rebinds to a loopback address sends its own name there).
"""

from __future__ import annotations

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


async def serve(app: Any, sock: socket.socket, *, on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on ``sock`` until cancelled or interrupted (SIGINT / SIGTERM)."""
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependency("uvicorn", "mcp", "serving over HTTP") from exc
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
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


class _Stopped(Exception):
    """A stop signal, re-raised by uvicorn once it has shut down."""


def _stop(signum: int, frame: Any) -> None:
    raise _Stopped(signum)
