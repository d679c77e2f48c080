"""The inspector's per-run token guards every route (issue 40, item 12): its reads answered
without it, and ``GET /`` wrote it into the page for any local process that asked. Now the token
reaches a browser only through the launch URL printed for the user who started the inspector
(``?token=``, then a cookie), and nothing is served, nor the token told, without it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.unit.ingest._support import open_uni, turn
from uniko_memory.facade import Uniko
from uniko_memory.service.inspector import (
    PAGE_FILES,
    InspectorData,
    cookie_name,
    inspector_app,
    launch_url,
    new_token,
)

pytest.importorskip("starlette", reason="the mcp extra is not installed")
httpx2 = pytest.importorskip("httpx2")

PORT = 8766
BASE = f"http://127.0.0.1:{PORT}/"
READS = [
    "api/overview",
    "api/agents/alice/sessions",
    "api/agents/alice/messages?session=s1",
    "api/agents/alice/nodes?tier=message",
    "api/agents/alice/graph?node=x",
    "favicon.ico",
]


@pytest.fixture
async def uni() -> AsyncIterator[Uniko]:
    u = await open_uni()
    await u.agent("alice").session("s1").observe(turn("alice", "My cat is called Miso.", 0, id="t0"))
    await u.agent("alice").flush()
    try:
        yield u
    finally:
        await u.close()


@pytest.fixture
async def served(uni: Uniko) -> AsyncIterator[tuple[Any, str]]:
    token = new_token()
    app = inspector_app(InspectorData(uni), port=PORT, token=token)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=BASE, timeout=30) as http:
        yield http, token


async def test_no_route_answers_without_the_token(served: tuple[Any, str]) -> None:
    http, token = served
    for path in [p.lstrip("/") for p in PAGE_FILES] + READS:
        r = await http.get(path)
        assert r.status_code == 401, (path, r.status_code, r.text[:200])
        assert token not in r.text and "Miso" not in r.text
        assert "set-cookie" not in r.headers
    for path in ("api/agents/alice/recall", "api/agents/alice/forget"):
        r = await http.post(path, json={"question": "cat", "session": "s1", "confirm": True})
        assert r.status_code == 403 and token not in r.text


async def test_a_wrong_token_gets_nothing(served: tuple[Any, str]) -> None:
    http, token = served
    wrong = new_token()
    r = await http.get("/", params={"token": wrong})
    assert r.status_code == 403 and token not in r.text and "set-cookie" not in r.headers
    for headers in ({"X-Inspector-Token": wrong}, {"Cookie": f"{cookie_name(PORT)}={wrong}"}):
        assert (await http.get("api/overview", headers=headers)).status_code == 401
        assert (await http.get("/", headers=headers)).status_code == 401


async def test_the_launch_url_hands_the_token_to_the_browser_once(served: tuple[Any, str]) -> None:
    http, token = served
    url = launch_url(BASE, token)
    assert url == f"{BASE}?token={token}"
    r = await http.get(url)
    assert r.status_code == 303 and r.headers["location"] == "/"  # the token leaves the address bar
    assert token not in r.headers["location"]
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{cookie_name(PORT)}={token}")
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower() and "path=/" in cookie.lower()
    # the browser now holds the cookie: the page, its files and the reads answer
    page = await http.get("/")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert f'content="{token}"' in page.text  # the page's script sends it as a header on its requests
    assert (await http.get("app.js")).status_code == 200
    overview = await http.get("api/overview")
    assert overview.status_code == 200 and overview.json()["agents"][0]["agent"] == "alice"
    assert (await http.get("api/agents/alice/messages", params={"session": "s1"})).json()["messages"]
    # a POST needs the header itself, not the cookie alone (what another site's page could send)
    r = await http.post("api/agents/alice/recall", json={"question": "What is the cat called?"})
    assert r.status_code == 403
    r = await http.post(
        "api/agents/alice/recall",
        json={"question": "What is the cat called?"},
        headers={"X-Inspector-Token": token},
    )
    assert r.status_code == 200 and "Miso" in r.json()["rendered"]


async def test_the_header_alone_opens_the_reads(served: tuple[Any, str]) -> None:
    http, token = served
    r = await http.get("api/overview", headers={"X-Inspector-Token": token})
    assert r.status_code == 200


async def test_forget_takes_json_booleans_only_over_http(served: tuple[Any, str]) -> None:
    http, token = served
    headers = {"X-Inspector-Token": token}
    body = {"session": "s1", "turn_id": "t0", "confirm": True, "hard": "false"}
    r = await http.post("api/agents/alice/forget", json=body, headers=headers)
    assert r.status_code == 400 and "JSON boolean" in r.json()["error"]
    msgs = (await http.get("api/agents/alice/messages", params={"session": "s1"}, headers=headers)).json()
    assert [m["turn_id"] for m in msgs["messages"]] == ["t0"]  # nothing forgotten
    r = await http.post("api/agents/alice/forget", json={**body, "hard": False}, headers=headers)
    assert r.status_code == 200 and r.json()["hard"] is False


async def test_an_app_without_a_given_token_keeps_its_own(uni: Uniko) -> None:
    app = inspector_app(InspectorData(uni), port=PORT)
    assert isinstance(app.state.token, str) and len(app.state.token) >= 24
