"""``uniko mcp`` end to end: a real server process, driven by the MCP SDK's client over stdio and
over streamable HTTP (bearer tokens, one agent per token, refusals)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2")

from mcp.client.streamable_http import streamable_http_client  # noqa: E402

TOKEN_A = "token-for-alice-0123456789"
TOKEN_B = "token-for-bob-0123456789ab"
TURN = {"sender": "alice", "content": "My cat is called Miso.", "at": "2024-05-01T10:00:00Z", "id": "t1"}
#: Seconds a server process gets to load the models and start listening.
START_TIMEOUT = 120


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "uniko_memory.cli", "mcp", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("UNIKO_MCP_TOKEN", None)
    return env


async def test_stdio_observe_recall_list_forget(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    params = mcp.StdioServerParameters(
        command=sys.executable, args=_cmd("--path", str(db), "--agent", "alice")[1:], env=_env()
    )
    async with mcp.Client(params, read_timeout_seconds=START_TIMEOUT) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"observe", "recall", "forget", "list_sessions"} <= names
        stored = await client.call_tool("observe", {"session": "s1", "turns": [TURN]})
        assert stored.structured_content["stored"] == 1, stored.content
        got = await client.call_tool("recall", {"question": "What is the name of the cat?", "budget": 120})
        assert "Miso" in got.content[0].text and got.content[0].text.startswith("Memory (quoted data")
        assert got.structured_content["total_tokens"] <= 120
        listed = await client.call_tool("list_sessions", {})
        assert [s["session"] for s in listed.structured_content["sessions"]] == ["s1"]
        bad = await client.call_tool("recall", {"question": "x", "budget": -1})
        assert bad.is_error and "budget" in bad.content[0].text
        gone = await client.call_tool("forget", {"session": "s1", "turn_id": "t1"})
        assert not gone.is_error
    # the server process closed the store on EOF: it opens again, with the turn redacted
    from uniko_memory.model import Tier
    from uniko_memory.store.embedded import EmbeddedStore

    store = await EmbeddedStore.open(db)
    try:
        assert await store.count("alice", Tier.MESSAGE) == 0
        assert await store.count("alice", Tier.SESSION) == 1
    finally:
        await store.close()


class HttpServer:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    async def call(self, token: str | None, name: str, args: dict[str, Any]) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            mcp.Client(streamable_http_client(self.url, http_client=http)) as client,
        ):
            return await client.call_tool(name, args)


def _start(*args: str) -> HttpServer:
    proc = subprocess.Popen(
        _cmd(*args), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_env()
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # the server says where it listens once it does
        lines.append(line)
        if m := re.search(r"at (http://\S+/mcp)", line):
            return HttpServer(proc, m.group(1))
    proc.wait(timeout=10)
    raise AssertionError(f"the server exited ({proc.returncode}) before listening: {''.join(lines)}")


def _stop(server: HttpServer) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({TOKEN_A: "alice", TOKEN_B: "bob"}))
    server = _start("--http", "--port", "0", "--path", str(tmp_path / "m.db"), "--tokens-file", str(tokens))
    try:
        yield server
    finally:
        _stop(server)


async def test_http_each_token_opens_its_own_agent(http_server: HttpServer) -> None:
    stored = await http_server.call(TOKEN_A, "observe", {"session": "s1", "turns": [TURN]})
    assert stored.structured_content["stored"] == 1
    mine = await http_server.call(TOKEN_A, "recall", {"question": "What is the name of the cat?"})
    assert "Miso" in mine.content[0].text
    theirs = await http_server.call(TOKEN_B, "recall", {"question": "What is the name of the cat?"})
    assert theirs.structured_content["items"] == [] and "Miso" not in theirs.content[0].text
    assert (await http_server.call(TOKEN_B, "list_sessions", {})).structured_content["total"] == 0
    assert (await http_server.call(TOKEN_A, "list_sessions", {})).structured_content["total"] == 1


@pytest.mark.parametrize("token", [None, "not-a-known-token-at-all"])
async def test_http_refuses_a_request_without_a_known_token(
    http_server: HttpServer, token: str | None
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        resp = await http.post(
            http_server.url,
            json=body,
            headers={**headers, "Accept": "application/json, text/event-stream"},
        )
    assert resp.status_code == 401
    assert "Bearer" in resp.headers.get("www-authenticate", "")


def test_http_on_a_non_loopback_address_needs_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        _cmd("--http", "--host", "0.0.0.0", "--port", "0", "--path", str(tmp_path / "m.db")),
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 2
    assert "refusing to serve memory on 0.0.0.0 without bearer tokens" in done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before the store was opened


async def test_http_loopback_without_tokens_serves_the_configured_agent(tmp_path: Path) -> None:
    server = _start("--http", "--port", "0", "--path", str(tmp_path / "m.db"), "--agent", "carol")
    try:
        await server.call(None, "observe", {"session": "s1", "turns": [TURN]})
        listed = await server.call(None, "list_sessions", {})
        assert listed.structured_content["total"] == 1
    finally:
        _stop(server)
    assert server.proc.returncode == 0  # SIGTERM: a clean shutdown, the store closed


@pytest.mark.parametrize("host", ["127.0.0.2", "[::1]"])
async def test_http_on_any_loopback_address_refuses_a_rebound_host(tmp_path: Path, host: str) -> None:
    """Issue 40, item 8: bound to a loopback address spelt other than 127.0.0.1 / localhost / ::1,
    the server answered ``Host: evil.example`` (a DNS-rebinding page) and served the memory."""
    server = _start("--http", "--host", host, "--port", "0", "--path", str(tmp_path / "m.db"), "--agent", "a")
    try:
        await server.call(None, "observe", {"session": "s1", "turns": [TURN]})  # its own name: served
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:
            for evil in ("evil.example", f"evil.example:{urlsplit(server.url).port}"):
                resp = await http.post(server.url, json=body, headers={**accept, "Host": evil})
                assert resp.status_code == 421, (evil, resp.status_code, resp.text)
    finally:
        _stop(server)


def _start_inspector(db: Path) -> tuple[subprocess.Popen[str], str | None, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "uniko_memory.cli", "inspect", "--path", str(db), "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert proc.stderr is not None
    notes = []
    for line in proc.stderr:
        notes.append(line)
        if m := re.search(r"at (http://127\.0\.0\.1:\d+/\?token=\S+)", line):
            return proc, m.group(1), "".join(notes)
    return proc, None, "".join(notes)


async def test_the_inspector_reads_beside_a_running_server(tmp_path: Path) -> None:
    """The server is the one writer; ``uniko inspect`` on the same store opens it read-only and
    sees what the server stores."""
    db = tmp_path / "m.db"
    server = _start("--http", "--port", "0", "--path", str(db), "--agent", "alice")
    inspector = None
    try:
        await server.call(None, "observe", {"session": "s1", "turns": [TURN]})
        inspector, url, notes = _start_inspector(db)
        assert url, notes
        assert "opening it read-only" in notes
        base, _, token = url.partition("?token=")
        async with httpx2.AsyncClient(timeout=60, headers={"X-Inspector-Token": token}) as http:
            overview = (await http.get(base + "api/overview")).json()
            assert overview["read_only"] is True
            assert overview["agents"][0]["tiers"]["message"] == 1
            second = {**TURN, "id": "t2", "content": "Miso loves tuna."}
            await server.call(None, "observe", {"session": "s1", "turns": [second]})
            msgs = (await http.get(base + "api/agents/alice/messages?session=s1")).json()["messages"]
            assert [m["turn_id"] for m in msgs] == ["t1", "t2"]  # the writer's new turn, seen
    finally:
        if inspector is not None:
            inspector.terminate()
            inspector.wait(timeout=30)
        _stop(server)


async def test_a_killed_server_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    """Several clients write through the one server; it is SIGKILLed mid-run: every turn a client
    got an answer for is stored, and the next server opens the store at once."""
    from uniko_memory.model import Message, Tier
    from uniko_memory.store.embedded import EmbeddedStore

    db = tmp_path / "m.db"
    server = _start("--http", "--port", "0", "--path", str(db), "--agent", "alice")
    acked: list[str] = []

    async def client(k: int) -> None:
        for i in range(1000):
            turn = {**TURN, "id": f"c{k}-{i}", "content": f"Client {k} says hello number {i}."}
            got = await server.call(None, "observe", {"session": f"s{k}", "turns": [turn]})
            assert got.structured_content["stored"] == 1
            acked.append(turn["id"])

    tasks = [asyncio.create_task(client(k)) for k in range(3)]
    try:
        while len(acked) < 15:
            await asyncio.sleep(0.05)
            assert not any(t.done() for t in tasks), [t.exception() for t in tasks if t.done()]
        server.proc.kill()
        server.proc.wait(timeout=30)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    store = await EmbeddedStore.open(db)  # the dead server's lock went with it
    try:
        found = await store.find("alice", Tier.MESSAGE, limit=100_000)
        stored = {m.external_id for m in found if isinstance(m, Message)}
    finally:
        await store.close()
    assert set(acked) <= stored, sorted(set(acked) - stored)
