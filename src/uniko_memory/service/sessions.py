"""MCP sessions over HTTP, per bearer token: a quota, and a quick end to all of them at shutdown.

The MCP SDK caps the sessions of a whole server (``max_sessions``, 10,000 by default) and shares
that cap among every client: one token that opened sessions without closing them filled it, and
every other tenant got ``503`` until the SDK's idle timeout (30 minutes) freed some. ``SessionQuota``
wraps the SDK's streamable HTTP app and gives each bearer token (each client of a server without
tokens: one pool) at most ``per_token`` open sessions:

- a request that would open one more session of a token at its quota first closes that token's
  least recently used *idle* session (no request in flight, no open event stream), as the client's
  own ``DELETE`` would: that client's next request on it gets ``404`` and, as the protocol says,
  it opens a new session. A token only ever closes its own sessions, never another tenant's;
- when every session of the token is busy, the new one is refused with ``429 Too Many Requests``
  (a JSON-RPC error naming the quota, and ``Retry-After``), and the open sessions keep working.

The SDK's own cap is set to the tokens' quotas together (``sdk_session_cap``), so no tenant's
quota can be taken by another. At shutdown every tracked session is closed at once (in parallel,
through the same ``DELETE`` a client sends), before the SDK's own shutdown, which closed them one
cancellation at a time (seconds per thousand sessions).

The wrapper speaks only the public protocol to the SDK's app: it reads ``Authorization`` and
``Mcp-Session-Id``, watches each response's status and session header, and closes a session with
a ``DELETE`` request carrying that session's own token.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .auth import TokenMap

#: Open sessions one bearer token may hold by default (``uniko mcp --max-sessions-per-token``).
DEFAULT_SESSIONS_PER_TOKEN = 64
#: Seconds a client is told to wait (``Retry-After``) when its token's sessions are all busy.
RETRY_AFTER_S = 5
#: Seconds closing every session at shutdown may take before the server's shutdown goes on.
CLOSE_ALL_S = 2.0
#: The MCP session header (lower case, as ASGI gives headers).
SESSION_HEADER = b"mcp-session-id"
PROTOCOL_HEADER = b"mcp-protocol-version"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def check_quota(per_token: object) -> int:
    """``per_token`` as a session quota: a whole number of at least 1."""
    if isinstance(per_token, bool) or not isinstance(per_token, int) or per_token < 1:
        raise ConfigError(f"the sessions per token must be a whole number of at least 1, got {per_token!r}")
    return per_token


def sdk_session_cap(per_token: int, tokens: TokenMap | None) -> int:
    """The SDK's server-wide session cap: every token's quota together (one pool without tokens)."""
    return check_quota(per_token) * (tokens.count if tokens is not None else 1)


@dataclass
class _Session:
    owner: str
    #: the headers a ``DELETE`` for this session carries (its token, the ``Host`` it was opened on)
    headers: list[tuple[bytes, bytes]]
    #: requests of this session in flight (an open event stream counts while it is open)
    in_flight: int = 0
    #: when its last request ended (``time.monotonic``)
    last_used: float = field(default_factory=time.monotonic)


class SessionQuota:
    """ASGI app: ``app`` (the SDK's streamable HTTP app) with a session quota per bearer token.

    ``tokens`` names the valid tokens (a request with an unknown token passes through to the
    SDK's ``401``); without them every client shares one quota. ``idle_timeout`` is the SDK's
    (a session idle that long has been closed by the SDK and no longer counts).
    """

    def __init__(
        self,
        app: Any,
        *,
        per_token: int = DEFAULT_SESSIONS_PER_TOKEN,
        tokens: TokenMap | None = None,
        idle_timeout: float | None = None,
        path: str = "/mcp",
    ) -> None:
        self.app = app
        self.per_token = check_quota(per_token)
        self.tokens = tokens
        self.idle_timeout = idle_timeout
        self.path = path
        self._sessions: dict[str, _Session] = {}
        #: sessions being opened (the request sent, no answer yet), per owner
        self._opening: dict[str, int] = {}

    # ------------------------------------------------------------------ what the page can read
    def open_sessions(self, owner_token: str | None = None) -> int:
        """Sessions open now: all, or those of ``owner_token``."""
        self._prune()
        if owner_token is None:
            return len(self._sessions)
        key = _owner(owner_token)
        return sum(1 for s in self._sessions.values() if s.owner == key)

    # ------------------------------------------------------------------ ASGI
    def __getattr__(self, name: str) -> Any:  # Starlette's ``router``, ``state`` stay reachable
        return getattr(self.app, name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope.get("type") != "http" or scope.get("path", "").rstrip("/") != self.path.rstrip("/"):
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers") or [])
        owner = self._owner_of(headers)
        if owner is None:  # no token the server knows: the SDK answers 401
            await self.app(scope, receive, send)
            return
        sid = _header(headers, SESSION_HEADER)
        if sid is not None:
            await self._existing(sid, owner, scope, receive, send)
        elif scope.get("method") == "POST" and _may_open(headers):
            await self._opening_request(owner, headers, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    # ------------------------------------------------------------------ requests
    async def _existing(self, sid: str, owner: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._sessions.get(sid)
        if session is None or session.owner != owner:  # unknown here: the SDK answers (404)
            await self.app(scope, receive, send)
            return
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message.get("type") == "http.response.start":
                status = int(message["status"])
            await send(message)

        session.in_flight += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.last_used = time.monotonic()
            ended = scope.get("method") == "DELETE" and status is not None and status < 300
            if ended or status == 404:  # closed by its client, or gone in the SDK
                self._sessions.pop(sid, None)

    async def _opening_request(
        self, owner: str, headers: list[tuple[bytes, bytes]], scope: Scope, receive: Receive, send: Send
    ) -> None:
        self._prune()
        held = sum(1 for s in self._sessions.values() if s.owner == owner) + self._opening.get(owner, 0)
        victim = None
        if held >= self.per_token:
            victim = self._least_recently_used_idle(owner)
            if victim is None:
                await _too_many(self.per_token, scope, receive, send)
                return
            del self._sessions[victim[0]]  # counted out now, closed below
        self._opening[owner] = self._opening.get(owner, 0) + 1
        opened: str | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message.get("type") == "http.response.start" and int(message["status"]) < 400:
                opened = _header(list(message.get("headers") or []), SESSION_HEADER)
                if opened is not None:  # counted from the moment the client learns its id
                    self._sessions[opened] = _Session(owner, _delete_headers(headers), in_flight=1)
            await send(message)

        try:
            if victim is not None:
                await self._close(*victim)
            await self.app(scope, receive, watch)
        finally:
            self._opening[owner] -= 1
            if not self._opening[owner]:
                del self._opening[owner]
            if opened is not None and (session := self._sessions.get(opened)) is not None:
                session.in_flight -= 1
                session.last_used = time.monotonic()

    def _least_recently_used_idle(self, owner: str) -> tuple[str, _Session] | None:
        idle = [(sid, s) for sid, s in self._sessions.items() if s.owner == owner and not s.in_flight]
        return min(idle, key=lambda item: item[1].last_used) if idle else None

    def _prune(self) -> None:
        """Forget sessions the SDK has closed for idleness (its timeout, measured the same way)."""
        if self.idle_timeout is None:
            return
        cutoff = time.monotonic() - self.idle_timeout
        for sid in [sid for sid, s in self._sessions.items() if not s.in_flight and s.last_used < cutoff]:
            del self._sessions[sid]

    async def _close(self, sid: str, session: _Session) -> None:
        """Close ``sid`` in the SDK as its client's ``DELETE`` would (its own token, its ``Host``)."""
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [*session.headers, (SESSION_HEADER, sid.encode())],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Event().wait()  # nothing more comes; cancelled with the request
            return {"type": "http.disconnect"}

        async def discard(message: Message) -> None:
            return None

        try:
            await self.app(scope, receive, discard)
        except Exception:  # a session the SDK already ended: nothing to close
            return

    # ------------------------------------------------------------------ lifespan
    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's lifespan, with every tracked session closed (in parallel) before the SDK's
        own shutdown starts."""

        async def receive_closing() -> Message:
            message = await receive()
            if message.get("type") == "lifespan.shutdown":
                await self.close_all()
            return message

        await self.app(scope, receive_closing, send)

    async def close_all(self, limit: float = CLOSE_ALL_S) -> None:
        """Close every tracked session at once, waiting ``limit`` seconds at most."""
        sessions = list(self._sessions.items())
        self._sessions.clear()
        if not sessions:
            return
        tasks = [asyncio.ensure_future(self._close(sid, s)) for sid, s in sessions]
        _, pending = await asyncio.wait(tasks, timeout=limit)
        for task in pending:
            task.cancel()

    # ------------------------------------------------------------------ owners
    def _owner_of(self, headers: list[tuple[bytes, bytes]]) -> str | None:
        """The quota a request counts against: its bearer token's, or the one pool without tokens;
        None for a token the server does not know (the SDK refuses it)."""
        if self.tokens is None:
            return ""
        auth = _header(headers, b"authorization") or ""
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        token = token.strip()
        return _owner(token) if self.tokens.agent_for(token) is not None else None


def _owner(token: str) -> str:
    """A token's key in the quota table (a digest: the table holds no token)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _delete_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """What a ``DELETE`` for a session needs of the request that opened it."""
    keep = {b"host", b"authorization", PROTOCOL_HEADER}
    return [(k.lower(), v) for k, v in headers if k.lower() in keep]


def _may_open(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a POST without a session id can open a session: the SDK's stateful (handshake)
    protocol versions do; a request of a later, sessionless version does not."""
    version = _header(headers, PROTOCOL_HEADER)
    if version is None:
        return True
    try:
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
    except ImportError:  # pragma: no cover - an SDK without the split: every POST may open one
        return True
    return version in HANDSHAKE_PROTOCOL_VERSIONS


async def _too_many(per_token: int, scope: Scope, receive: Receive, send: Send) -> None:
    """``429``: this token's sessions are all open and busy; a JSON-RPC error naming the quota."""
    message = (
        f"session quota reached: this token already holds {per_token} open sessions, all busy "
        f"(the server's --max-sessions-per-token); close one (DELETE) or retry in {RETRY_AFTER_S} s"
    )
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(RETRY_AFTER_S).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
