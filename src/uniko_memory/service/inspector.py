"""The memory inspector: a local web page over one store (``uniko inspect``).

``InspectorData`` reads what the page shows (agents and tier counts, sessions and their turns, a
node's provenance graph, a recall with its cascade trace) and forgets; ``inspector_app`` serves it
as JSON routes plus one static page (``inspector_page/``: HTML, CSS and JS written here, no CDN).

The page puts every piece of memory content into the DOM as text (``textContent``, SVG text
nodes), never as markup, and is served with a Content-Security-Policy that admits only its own
script. Every route, the page and its reads included, answers only requests whose ``Host`` is
this loopback address (no DNS rebinding) and that carry the per-run token: the launch URL
printed for the user who started it hands it to the browser once (``?token=``, kept in a cookie),
and nothing the inspector serves hands it to anyone without it (``inspector_app``).
"""

from __future__ import annotations

import secrets
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..errors import NotFound, UnikoError, ValidationError
from ..model import Direction, EdgeType, Message, Node, Tier
from ..store.filters import Eq
from . import tools

if TYPE_CHECKING:
    from ..facade import Uniko

#: Edges the provenance graph follows: where a memory came from and what it belongs to (not the
#: turn chain ``NEXT`` or the consolidation audit trail, which would swamp it).
PROVENANCE_EDGES = (
    EdgeType.OBSERVED_IN,
    EdgeType.SUPPORTED_BY,
    EdgeType.INVALIDATES,
    EdgeType.SUPERSEDED_BY,
    EdgeType.BELONGS_TO,
    EdgeType.INVOLVES,
    EdgeType.ABOUT,
    EdgeType.IN_SESSION,
    EdgeType.SENT_BY,
    EdgeType.HAS_CHUNK,
    EdgeType.SUMMARIZES,
    EdgeType.PROMOTED,
    EdgeType.MENTIONS,
)
#: Hops from the chosen node, and nodes drawn at most.
GRAPH_DEPTH = 2
GRAPH_MAX_NODES = 60
#: Characters of a node's text shown in lists and on the graph.
LABEL_CHARS = 160
#: Entries of each channel's list the page shows.
TRACE_SHOWN = 10
#: Turns of a session and nodes of a tier listed at most.
LIST_LIMIT = 500
#: The tiers the node browser offers.
BROWSABLE = (Tier.MESSAGE, Tier.OBSERVATION, Tier.FACT, Tier.TOPIC, Tier.EPISODE, Tier.ENTITY, Tier.CHUNK)
PAGE_FILES = {
    "/": ("index.html", "text/html"),
    "/app.js": ("app.js", "text/javascript"),
    "/app.css": ("app.css", "text/css"),
}
#: The launch URL's query parameter, the header the page's requests carry, and what a request
#: without either is told.
TOKEN_PARAM = "token"
TOKEN_HEADER = "X-Inspector-Token"
TOKEN_HINT = "open the URL `uniko inspect` printed when it started (it ends in ?token=...)"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def label(node: Node) -> str:
    """A node's text for the page (its search text, name or id), cut to ``LABEL_CHARS``."""
    if node.redacted:
        return "(redacted)"
    text = None
    if isinstance(node, Message):
        text = f"{node.sender_name}: {node.content}"
    if text is None:
        try:
            text = node.search_text()
        except (AttributeError, NotImplementedError):
            text = None
    text = text or getattr(node, "name", None) or getattr(node, "external_id", None) or node.id
    text = " ".join(str(text).split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


class InspectorData:
    """What the page reads and does, on one open ``Uniko``."""

    def __init__(self, uni: Uniko) -> None:
        self.uni = uni
        self.read_only = bool(getattr(uni.kb.store, "read_only", False))

    @property
    def store(self) -> Any:
        return self.uni.kb.store

    async def overview(self) -> dict[str, Any]:
        agents = []
        for agent in sorted(await self.store.agents()):
            tiers = {t.value: n for t in Tier if (n := await self.store.count(agent, t))}
            agents.append({"agent": agent, "tiers": tiers, "sessions": tiers.get(Tier.SESSION.value, 0)})
        return {"read_only": self.read_only, "path": str(getattr(self.store, "path", "")), "agents": agents}

    async def sessions(self, agent: str) -> dict[str, Any]:
        return (await tools.list_sessions(self.uni.agent(agent), limit=LIST_LIMIT)).data

    async def messages(self, agent: str, session: str) -> dict[str, Any]:
        sess = self.uni.agent(agent).session(session)
        found = await self.store.find(
            agent, Tier.MESSAGE, Eq("session", sess.node_id), limit=LIST_LIMIT, order_by="seq"
        )
        rows = [
            {
                "id": m.id,
                "turn_id": m.external_id,
                "sender": m.sender_name,
                "content": m.content,
                "timestamp": m.timestamp.isoformat() if m.timestamp else None,
            }
            for m in found
            if isinstance(m, Message)
        ]
        return {"agent": agent, "session": session, "messages": rows}

    async def nodes(self, agent: str, tier: str) -> dict[str, Any]:
        try:
            t = Tier(tier)
        except ValueError:
            raise ValidationError(f"unknown tier {tier!r}") from None
        found = await self.store.find(agent, t, limit=LIST_LIMIT, order_by="time", descending=True)
        return {"tier": t.value, "nodes": [{"id": n.id, "tier": t.value, "label": label(n)} for n in found]}

    async def graph(self, agent: str, node_id: str) -> dict[str, Any]:
        """The node, and what its provenance edges reach in ``GRAPH_DEPTH`` hops (both ways)."""
        start = (await self.store.get_many(agent, [node_id])).get(node_id)
        if start is None:
            raise NotFound(f"no node {node_id!r} for agent {agent!r}")
        nodes: dict[str, Node] = {node_id: start}
        edges: dict[tuple[str, str, str], dict[str, str]] = {}
        frontier = [node_id]
        truncated = False
        for _ in range(GRAPH_DEPTH):
            found = await self.store.neighbors(agent, frontier, list(PROVENANCE_EDGES), Direction.BOTH)
            new: list[str] = []
            for e in found:
                for end in (e.src, e.dst):
                    if end not in nodes and end not in new:
                        if len(nodes) + len(new) >= GRAPH_MAX_NODES:
                            truncated = True
                            continue
                        new.append(end)
            got = await self.store.get_many(agent, new) if new else {}
            nodes.update(got)
            for e in found:
                if e.src in nodes and e.dst in nodes:
                    edges[(e.src, e.type.value, e.dst)] = {"src": e.src, "dst": e.dst, "type": e.type.value}
            frontier = list(got)
            if not frontier:
                break
        return {
            "center": node_id,
            "truncated": truncated,
            "nodes": [{"id": n.id, "tier": n.tier.value, "label": label(n)} for n in nodes.values()],
            "edges": list(edges.values()),
        }

    async def recall(self, agent: str, question: str, budget: int | None) -> dict[str, Any]:
        """A recall with ``explain``: the rendered bundle, its items, and the cascade's trace with
        every id the trace names labelled."""
        if not isinstance(question, str) or not question.strip():
            raise ValidationError("the question must not be empty")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise ValidationError("the budget must be a positive number of tokens")
        options: dict[str, Any] = {"explain": True}
        if budget is not None:
            options["token_budget"] = budget
        bundle = await self.uni.agent(agent).recall(question, **options)
        trace = dict(bundle.trace or {})
        channels = {name: entries[:TRACE_SHOWN] for name, entries in (trace.get("channels") or {}).items()}
        ids = {e["id"] for entries in channels.values() for e in entries} | set(trace.get("dropped") or {})
        found = await self.store.get_many(agent, sorted(ids)) if ids else {}
        return {
            "rendered": bundle.render(),
            "total_tokens": bundle.total_tokens,
            "token_budget": bundle.token_budget,
            "token_counter": bundle.token_counter,
            "coverage": round(bundle.coverage, 4),
            "phase": 1 if bundle.phase1_only else 2 if bundle.phase2_only else 3,
            "items": [
                {
                    "node_id": i.node_id,
                    "kind": i.kind,
                    "score": round(i.score, 4),
                    "relative_score": round(i.relative_score, 4),
                    "fused": round(i.fused, 6),
                    "channels": list(i.channels),
                    "tokens": i.tokens,
                    "content": i.content,
                }
                for i in bundle.items
            ],
            "trace": {
                "intent": trace.get("intent"),
                "phases": trace.get("phases"),
                "channels": channels,
                "dropped": trace.get("dropped") or {},
                "degraded": trace.get("degraded") or [],
                "elapsed_ms": trace.get("elapsed_ms"),
            },
            "labels": {nid: label(n) for nid, n in found.items()},
        }

    async def forget(self, agent: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.read_only:
            raise UnikoError(
                "this inspector opened the store read-only (another process writes it); forget there"
            )
        if body.get("confirm") is not True:
            raise ValidationError("forget needs confirm: true")
        if "hard" in body and not isinstance(body["hard"], bool):
            # "false" is a non-empty string: read as truthy it would delete instead of redact
            raise ValidationError(
                f"hard must be a JSON boolean (true or false), got {type(body['hard']).__name__} "
                f"{body['hard']!r:.40}"
            )
        allowed = {"session", "turn_id", "participant", "hard"}
        args = {k: v for k, v in body.items() if k in allowed}
        out = await tools.forget(self.uni.agent(agent), **args)
        return {"text": out.text, **out.data}


def _page_file(name: str) -> str:
    return resources.files(__package__).joinpath("inspector_page", name).read_text(encoding="utf-8")


def new_token() -> str:
    """A fresh per-run token (what the launch URL carries)."""
    return secrets.token_urlsafe(24)


def launch_url(base: str, token: str) -> str:
    """The URL that opens the page: ``base`` (``http://127.0.0.1:PORT/``) with the token, printed
    at launch for the user who started the inspector, as Jupyter does."""
    return f"{base}?{TOKEN_PARAM}={quote(token, safe='')}"


def cookie_name(port: int) -> str:
    """The page's cookie (per port: a browser shares cookies between the ports of one host)."""
    return f"uniko_inspector_{port}"


def inspector_app(data: InspectorData, *, port: int, token: str | None = None) -> Any:
    """The Starlette app: the page and its JSON routes, answering loopback hosts only, and only
    to requests that carry the per-run token (``token``; a fresh one when None, kept in
    ``app.state.token``).

    The token reaches the page only through the launch URL (``launch_url``): ``GET /?token=...``
    sets it in a cookie (``HttpOnly``, ``SameSite=Strict``) and redirects to ``/``, and every later
    request (the page, its script and style, the JSON reads) is answered only with that cookie or
    an ``X-Inspector-Token`` header. A request with neither gets 401 and no token, so another
    process on this machine learns nothing from the inspector. A recall or a forget (POST)
    needs the header itself (which another site's page cannot send) and a JSON body.
    """
    try:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
        from starlette.routing import Route
    except ImportError as exc:
        from ..errors import MissingDependency

        raise MissingDependency("starlette", "mcp", "the memory inspector (uniko inspect)") from exc

    secret = token or new_token()
    cookie = cookie_name(port)
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    headers = {
        "Content-Security-Policy": CSP,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }

    def matches(given: str | None) -> bool:
        return bool(given) and secrets.compare_digest(str(given).encode(), secret.encode())

    def refused(request: Request, *, write: bool) -> Response | None:
        if request.headers.get("host") not in hosts:
            return JSONResponse({"error": "this inspector answers on loopback only"}, status_code=403)
        header = request.headers.get(TOKEN_HEADER)
        if write:  # the header itself: a page of another site can send the cookie, not the header
            if not matches(header):
                return JSONResponse({"error": f"missing or wrong {TOKEN_HEADER}"}, status_code=403)
            if not request.headers.get("content-type", "").startswith("application/json"):
                return JSONResponse({"error": "send JSON"}, status_code=415)
        elif not (matches(header) or matches(request.cookies.get(cookie))):
            return JSONResponse(
                {"error": f"this inspector needs its per-run token: {TOKEN_HINT}"},
                status_code=401,
                headers=headers,
            )
        return None

    async def page(request: Request) -> Response:
        if request.headers.get("host") not in hosts:
            return JSONResponse({"error": "this inspector answers on loopback only"}, status_code=403)
        name, mime = PAGE_FILES[request.url.path]
        given = request.query_params.get(TOKEN_PARAM)
        if name == "index.html" and given is not None:
            if not matches(given):
                return PlainTextResponse(f"wrong token: {TOKEN_HINT}", status_code=403, headers=headers)
            # the token leaves the address bar (and the history) at once; the cookie keeps it
            moved = RedirectResponse("/", status_code=303, headers=headers)
            moved.set_cookie(cookie, secret, httponly=True, samesite="strict", path="/")
            return moved
        if not (matches(request.cookies.get(cookie)) or matches(request.headers.get(TOKEN_HEADER))):
            return PlainTextResponse(
                f"this inspector needs its per-run token: {TOKEN_HINT}", status_code=401, headers=headers
            )
        text = _page_file(name)
        if name == "index.html":  # the only value written into the page, for a holder of the token
            text = text.replace("{{TOKEN}}", secret)
        return Response(text, media_type=mime, headers=headers)

    def api(fn: Any, *, write: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            if (bad := refused(request, write=write)) is not None:
                return bad
            try:
                body = await request.json() if request.method == "POST" else {}
                if not isinstance(body, dict):
                    raise ValidationError("the request body must be a JSON object")
                result = await fn(request, body)
            except NotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404, headers=headers)
            except (UnikoError, ValueError, TypeError) as exc:
                return JSONResponse(
                    {"error": f"{type(exc).__name__}: {exc}"}, status_code=400, headers=headers
                )
            return JSONResponse(result, headers=headers)

        return endpoint

    async def overview(request: Request, body: dict[str, Any]) -> Any:
        return await data.overview()

    async def sessions(request: Request, body: dict[str, Any]) -> Any:
        return await data.sessions(request.path_params["agent"])

    async def messages(request: Request, body: dict[str, Any]) -> Any:
        return await data.messages(request.path_params["agent"], request.query_params.get("session", ""))

    async def nodes(request: Request, body: dict[str, Any]) -> Any:
        return await data.nodes(request.path_params["agent"], request.query_params.get("tier", "message"))

    async def graph(request: Request, body: dict[str, Any]) -> Any:
        return await data.graph(request.path_params["agent"], request.query_params.get("node", ""))

    async def recall(request: Request, body: dict[str, Any]) -> Any:
        budget = body.get("budget")
        return await data.recall(request.path_params["agent"], body.get("question", ""), budget)

    async def forget(request: Request, body: dict[str, Any]) -> Any:
        return await data.forget(request.path_params["agent"], body)

    async def no_icon(request: Request) -> Response:
        if (bad := refused(request, write=False)) is not None:
            return bad
        return Response(status_code=204)

    routes = [Route(path, page) for path in PAGE_FILES] + [Route("/favicon.ico", no_icon)]
    routes += [
        Route("/api/overview", api(overview)),
        Route("/api/agents/{agent}/sessions", api(sessions)),
        Route("/api/agents/{agent}/messages", api(messages)),
        Route("/api/agents/{agent}/nodes", api(nodes)),
        Route("/api/agents/{agent}/graph", api(graph)),
        # POST with the token header: a recall costs CPU, and only the page may ask for one
        Route("/api/agents/{agent}/recall", api(recall, write=True), methods=["POST"]),
        Route("/api/agents/{agent}/forget", api(forget, write=True), methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.token = secret
    return app
