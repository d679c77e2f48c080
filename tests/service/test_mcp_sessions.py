"""MCP over HTTP, many sessions (issue 40, item 9): one token cannot fill the SDK's shared session
cap (a quota per token: its least recently used idle session is closed for a new one, 429 when all
are busy), and SIGTERM ends the server within seconds with hundreds of sessions open."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.service.auth import TokenMap
from uniko_memory.service.mcp_server import build_server, http_app
from uniko_memory.service.sessions import DEFAULT_SESSIONS_PER_TOKEN, check_quota

pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2")

PORT = 8765
HOST = f"127.0.0.1:{PORT}"
TOKEN_A = "token-for-alice-0123456789"
TOKEN_B = "token-for-bob-0123456789ab"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = (b"accept", b"application/json, text/event-stream")


class Reply:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.started = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
            self.started.set()
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


def _scope(
    method: str, token: str | None, session: str | None, extra: list[tuple[bytes, bytes]]
) -> dict[str, Any]:
    headers = [(b"host", HOST.encode()), ACCEPT, *extra]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if session:
        headers.append((b"mcp-session-id", session.encode()))
        headers.append((b"mcp-protocol-version", b"2025-06-18"))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", PORT),
    }


async def _request(
    app: Any, method: str, token: str | None, session: str | None = None, body: Any = None
) -> Reply:
    data = json.dumps(body).encode() if body is not None else b""
    extra = [(b"content-type", b"application/json")] if body is not None else []
    reply = Reply()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": data, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    await app(_scope(method, token, session, extra), receive, reply.send)
    return reply


async def _open(app: Any, token: str | None) -> Reply:
    return await _request(app, "POST", token, body=INITIALIZE)


async def _ping(app: Any, token: str | None, session: str) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return (await _request(app, "POST", token, session, body)).status


@contextlib.asynccontextmanager
async def _stream(app: Any, token: str | None, session: str) -> AsyncIterator[Reply]:
    """An open GET event stream on ``session`` (a busy session) while the block runs."""
    reply = Reply()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:  # a GET has an empty body, then the client stays
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    task = asyncio.create_task(app(_scope("GET", token, session, []), receive, reply.send))
    try:
        await asyncio.wait_for(reply.started.wait(), 10)
        assert reply.status == 200
        yield reply
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


@contextlib.asynccontextmanager
async def _running(app: Any) -> AsyncIterator[Any]:
    async with app.router.lifespan_context(app):
        yield app


async def test_one_token_cannot_take_the_other_tenants_sessions(uni: Uniko) -> None:
    tokens = TokenMap({TOKEN_A: "alice", TOKEN_B: "bob"})
    server = build_server(uni, tokens=tokens)
    app = http_app(server, "127.0.0.1", PORT, has_tokens=True, tokens=tokens, sessions_per_token=3)
    async with _running(app):
        opened = []
        for _ in range(10):  # far past its quota: each new one closes the oldest idle one
            reply = await _open(app, TOKEN_A)
            assert reply.status == 200, reply.body
            opened.append(reply.headers["mcp-session-id"])
        assert app.open_sessions(TOKEN_A) == 3
        assert len(server.session_manager._server_instances) == 3  # closed in the SDK too
        assert await _ping(app, TOKEN_A, opened[0]) == 404  # the least recently used: closed
        assert [await _ping(app, TOKEN_A, s) for s in opened[-3:]] == [200, 200, 200]
        # the other tenant still gets its whole quota
        theirs = [await _open(app, TOKEN_B) for _ in range(3)]
        assert [r.status for r in theirs] == [200, 200, 200]
        assert app.open_sessions(TOKEN_B) == 3 and app.open_sessions(TOKEN_A) == 3
        # a client's own DELETE frees its place at once
        gone = await _request(app, "DELETE", TOKEN_A, opened[-1])
        assert gone.status == 200 and app.open_sessions(TOKEN_A) == 2


async def test_a_busy_session_is_never_closed_and_the_quota_answers_429(uni: Uniko) -> None:
    tokens = TokenMap({TOKEN_A: "alice", TOKEN_B: "bob"})
    app = http_app(
        build_server(uni, tokens=tokens),
        "127.0.0.1",
        PORT,
        has_tokens=True,
        tokens=tokens,
        sessions_per_token=2,
    )
    async with _running(app):
        first, second = [(await _open(app, TOKEN_A)).headers["mcp-session-id"] for _ in range(2)]
        async with _stream(app, TOKEN_A, first), _stream(app, TOKEN_A, second):
            refused = await _open(app, TOKEN_A)
            assert refused.status == 429, refused.body
            assert refused.headers.get("retry-after")
            error = json.loads(refused.body)["error"]["message"]
            assert (
                "session quota" in error
                and "2 open sessions" in error
                and "--max-sessions-per-token" in error
            )
            assert await _ping(app, TOKEN_A, first) == 200 and await _ping(app, TOKEN_A, second) == 200
            assert (await _open(app, TOKEN_B)).status == 200  # another tenant is not affected
        # the streams ended: the least recently used one makes room again
        assert await _ping(app, TOKEN_A, second) == 200
        assert (await _open(app, TOKEN_A)).status == 200
        assert await _ping(app, TOKEN_A, first) == 404 and await _ping(app, TOKEN_A, second) == 200


async def test_without_tokens_every_client_shares_one_quota(uni: Uniko) -> None:
    app = http_app(
        build_server(uni, agent="alice"), "127.0.0.1", PORT, has_tokens=False, sessions_per_token=2
    )
    async with _running(app):
        for _ in range(5):
            assert (await _open(app, None)).status == 200
        assert app.open_sessions() == 2


async def test_unknown_tokens_take_no_place_and_bad_quotas_are_refused(uni: Uniko) -> None:
    tokens = TokenMap({TOKEN_A: "alice"})
    app = http_app(
        build_server(uni, tokens=tokens),
        "127.0.0.1",
        PORT,
        has_tokens=True,
        tokens=tokens,
        sessions_per_token=1,
    )
    async with _running(app):
        assert (await _open(app, "not-a-known-token-at-all")).status == 401
        assert (await _open(app, None)).status == 401
        assert app.open_sessions() == 0
    assert DEFAULT_SESSIONS_PER_TOKEN == 64
    for bad in (0, -1, True, 2.5, "8"):
        with pytest.raises(ConfigError, match="sessions per token"):
            check_quota(bad)
    with pytest.raises(ConfigError, match="per token"):
        http_app(build_server(uni, tokens=tokens), "127.0.0.1", PORT, has_tokens=True)


def test_the_cli_default_matches_the_service() -> None:
    from uniko_memory.cli import cmd_mcp

    assert cmd_mcp.DEFAULT_SESSIONS_PER_TOKEN == DEFAULT_SESSIONS_PER_TOKEN


# ---------------------------------------------------------------------------------- the process
def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, dict[str, str]]:
    tokens = {f"token-of-tenant-{i}-0123456789": f"agent{i}" for i in range(4)}
    (tmp_path / "tokens.json").write_text(json.dumps(tokens))
    env = dict(os.environ)
    env.pop("UNIKO_MCP_TOKEN", None)
    cmd = [sys.executable, "-m", "uniko_memory.cli", "mcp", "--http", "--port", "0"]
    cmd += ["--path", str(tmp_path / "m.db"), "--tokens-file", str(tmp_path / "tokens.json"), *extra]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if m := re.search(r"at (http://\S+/mcp)", line):
            return proc, m.group(1), tokens
    proc.wait(timeout=10)
    raise AssertionError(f"the server did not start: {''.join(lines)}")


async def test_one_token_past_its_quota_closes_its_own_oldest_session(tmp_path: Path) -> None:
    proc, url, tokens = _start(tmp_path)  # the default quota: 64 sessions per token
    mine, theirs = list(tokens)[:2]
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:

            async def open_one(token: str) -> str:
                r = await http.post(
                    url, json=INITIALIZE, headers={**accept, "Authorization": f"Bearer {token}"}
                )
                assert r.status_code == 200, r.text
                return str(r.headers["mcp-session-id"])

            async def ping(token: str, sid: str) -> int:
                headers = {**accept, "Authorization": f"Bearer {token}", "Mcp-Session-Id": sid}
                body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                return int((await http.post(url, json=body, headers=headers)).status_code)

            other = await open_one(theirs)
            opened = [await open_one(mine) for _ in range(DEFAULT_SESSIONS_PER_TOKEN + 6)]
            assert await ping(mine, opened[0]) == 404  # closed for a newer one of the same token
            assert await ping(mine, opened[5]) == 404
            assert await ping(mine, opened[6]) == 200 and await ping(mine, opened[-1]) == 200
            assert await ping(theirs, other) == 200  # the other tenant's session is untouched
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_sigterm_ends_the_server_in_seconds_with_hundreds_of_sessions_open(tmp_path: Path) -> None:
    """200 sessions (50 for each of 4 tokens), 20 of them with an open event stream, and one client
    that sent half a request and then nothing: SIGTERM, and the process is gone within 5 s, clean."""
    proc, url, tokens = _start(tmp_path)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    stuck = None
    try:
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30, limits=httpx2.Limits(max_connections=64)) as http:
            gate = asyncio.Semaphore(16)

            async def open_one(token: str) -> tuple[str, str]:
                async with gate:
                    r = await http.post(
                        url, json=INITIALIZE, headers={**accept, "Authorization": f"Bearer {token}"}
                    )
                assert r.status_code == 200, r.text
                return token, str(r.headers["mcp-session-id"])

            opened = await asyncio.gather(*(open_one(t) for t in tokens for _ in range(50)))
            assert len({sid for _, sid in opened}) == 200
            streams: list[int] = []
            all_listening = asyncio.Event()

            async def listen(token: str, sid: str) -> None:
                headers = {
                    "Accept": "text/event-stream",
                    "Authorization": f"Bearer {token}",
                    "Mcp-Session-Id": sid,
                    "Mcp-Protocol-Version": "2025-06-18",
                }
                with contextlib.suppress(Exception):
                    async with http.stream("GET", url, headers=headers) as r:
                        streams.append(r.status_code)
                        if len(streams) == 20:
                            all_listening.set()
                        async for _ in r.aiter_bytes():
                            pass

            listening = [asyncio.create_task(listen(t, s)) for t, s in opened[:20]]
            token, sid = opened[0]
            stuck = socket.create_connection(("127.0.0.1", port))
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: 1000\r\nMcp-Session-Id: {sid}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n"
                '{"jsonrpc": "2.0",'
            )
            stuck.sendall(head.encode())
            await asyncio.wait_for(all_listening.wait(), 30)
            assert streams == [200] * 20
            await asyncio.sleep(0.3)  # the half request has reached the server
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(proc.wait, 20)
            took = time.monotonic() - started
            for task in listening:
                task.cancel()
            await asyncio.gather(*listening, return_exceptions=True)
        assert proc.poll() == 0, f"still running {took:.1f} s after SIGTERM (returncode {proc.poll()})"
        assert took < 5, f"SIGTERM took {took:.1f} s"
    finally:
        if stuck is not None:
            stuck.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_a_bad_quota_is_refused_before_the_store_opens(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("UNIKO_MCP_TOKEN", None)
    cmd = [sys.executable, "-m", "uniko_memory.cli", "mcp", "--http", "--port", "0"]
    cmd += ["--path", str(tmp_path / "m.db"), "--max-sessions-per-token", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "sessions per token" in done.stderr, done.stderr
    assert not (tmp_path / "m.db").exists()
