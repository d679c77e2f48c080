"""DNS rebinding on every loopback address: the MCP HTTP app, in process, answers only a ``Host``
naming the bound address or localhost, however the address is spelt (issue 40, item 8)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from uniko_memory.errors import ConfigError
from uniko_memory.facade import Uniko
from uniko_memory.service.auth import TokenMap, canonical_host, is_loopback
from uniko_memory.service.http import loopback_hosts
from uniko_memory.service.mcp_server import build_server, http_app

pytest.importorskip("mcp", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2")

PORT = 8765
TOKEN = "token-for-alice-0123456789"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
#: Loopback addresses as a user may give ``--host``, with how a browser names each in ``Host``.
LOOPBACK = [
    ("127.0.0.2", "127.0.0.2"),
    ("127.1.2.3", "127.1.2.3"),
    ("[::1]", "[::1]"),
    ("0:0:0:0:0:0:0:1", "[::1]"),
    ("::1", "[::1]"),
    ("127.0.0.1", "127.0.0.1"),
    ("localhost", "localhost"),
    ("LOCALHOST", "localhost"),
]


@contextlib.asynccontextmanager
async def _serving(app: Any) -> AsyncIterator[Callable[[dict[str, str]], Awaitable[Any]]]:
    """``post(headers)``: one ``initialize`` request to ``app`` with those headers, its lifespan running."""
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://testserver", timeout=30) as http,
    ):

        async def post(headers: dict[str, str]) -> Any:
            accept = {"Accept": "application/json, text/event-stream"}
            return await http.post("/mcp", json=INITIALIZE, headers={**accept, **headers})

        yield post


@pytest.mark.parametrize(("bound", "named"), LOOPBACK)
async def test_every_loopback_address_refuses_a_foreign_host(uni: Uniko, bound: str, named: str) -> None:
    app = http_app(build_server(uni, agent="alice"), bound, PORT, has_tokens=False)
    async with _serving(app) as post:
        evil = await post({"Host": f"evil.example:{PORT}"})
        assert evil.status_code == 421, evil.text
        assert (await post({"Host": "evil.example"})).status_code == 421
        assert (await post({"Host": f"{named}:{PORT + 1}"})).status_code == 421
        cross = await post({"Host": f"{named}:{PORT}", "Origin": "http://evil.example"})
        assert cross.status_code == 403
        for host in (f"{named}:{PORT}", f"localhost:{PORT}"):
            ok = await post({"Host": host, "Origin": f"http://{host}"})
            assert ok.status_code == 200, (host, ok.text)


async def test_a_loopback_server_with_tokens_still_checks_the_host(uni: Uniko) -> None:
    tokens = TokenMap({TOKEN: "alice"})
    app = http_app(build_server(uni, tokens=tokens), "127.0.0.2", PORT, has_tokens=True, tokens=tokens)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with _serving(app) as post:
        assert (await post({**auth, "Host": "evil.example"})).status_code == 421
        assert (await post({**auth, "Host": f"127.0.0.2:{PORT}"})).status_code == 200


async def test_a_non_loopback_address_without_tokens_gets_no_app(uni: Uniko) -> None:
    for host in ("0.0.0.0", "::", "192.168.1.5", ""):
        with pytest.raises(ConfigError, match="without bearer tokens"):
            http_app(build_server(uni, agent="alice"), host, PORT, has_tokens=False)


@pytest.mark.parametrize(
    ("host", "canonical", "loopback"),
    [
        ("[::1]", "::1", True),
        ("0:0:0:0:0:0:0:1", "::1", True),
        (" 127.0.0.2 ", "127.0.0.2", True),
        ("127.255.255.254", "127.255.255.254", True),
        ("LocalHost", "localhost", True),
        ("0.0.0.0", "0.0.0.0", False),
        ("[::]", "::", False),
        ("evil.example", "evil.example", False),
        ("localhost.evil.example", "localhost.evil.example", False),
    ],
)
def test_host_spellings_are_normalised(host: str, canonical: str, loopback: bool) -> None:
    assert canonical_host(host) == canonical
    assert is_loopback(host) is loopback


def test_the_allow_list_is_the_bound_address_and_localhost_on_its_port() -> None:
    assert loopback_hosts("[::1]", 9000) == ["[::1]:9000", "localhost:9000", "127.0.0.1:9000"]
    assert loopback_hosts("127.0.0.2", 80) == [
        "127.0.0.2:80",
        "localhost:80",
        "127.0.0.1:80",
        "[::1]:80",
        "127.0.0.2",
        "localhost",
        "127.0.0.1",
        "[::1]",
    ]
    with pytest.raises(ConfigError):
        loopback_hosts("0.0.0.0", 9000)
