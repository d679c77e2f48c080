"""``uniko mcp``: serve one memory to MCP clients, over stdio (default) or streamable HTTP.

Over stdio (how desktop hosts start a server) every call works on ``--agent``. Over HTTP the
server listens on 127.0.0.1 unless told otherwise; a bearer token (``--token`` or
``UNIKO_MCP_TOKEN``, for ``--agent``) or a tokens file (``{"token": "agent"}``, one agent per
token) is required to bind any other address, and is enforced whenever given. On any loopback
address the server answers only requests whose ``Host`` names that address or localhost (no DNS
rebinding). See docs/mcp.md.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .cmd_ingest import DEFAULT_PATH
from .output import _err
from .serving import run_server

TOKEN_ENV = "UNIKO_MCP_TOKEN"
DEFAULT_PORT = 8765
DEFAULT_AGENT = "default"
#: Mirrors ``service.sessions.DEFAULT_SESSIONS_PER_TOKEN`` (the MCP SDK is imported only to serve).
DEFAULT_SESSIONS_PER_TOKEN = 64


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve a memory to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve a memory over the Model Context Protocol: tools observe, recall, forget, "
        "list_sessions (and wake_up, feedback where this version has them). See docs/mcp.md.",
    )
    p.add_argument("--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})")
    p.add_argument(
        "--agent", default=DEFAULT_AGENT, help=f"the agent every call works on (default: {DEFAULT_AGENT})"
    )
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument(
        "--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; others need a token)"
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT}; 0: a free one)"
    )
    p.add_argument(
        "--token", default=None, help=f"bearer token for --agent (default: ${TOKEN_ENV}); prefer the variable"
    )
    p.add_argument(
        "--tokens-file", type=Path, default=None, help='JSON {"token": "agent", ...}: one agent per token'
    )
    p.add_argument(
        "--max-sessions-per-token",
        type=int,
        default=DEFAULT_SESSIONS_PER_TOKEN,
        metavar="N",
        help=f"open MCP sessions one token may hold over HTTP (default {DEFAULT_SESSIONS_PER_TOKEN}); "
        "past it its least recently used idle session is closed, or 429 when all are busy",
    )
    p.add_argument(
        "--read-only",
        action="store_true",
        help="open the store read-only beside the process that writes it; offers recall and list_sessions",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_server("mcp", _serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..service.auth import TokenMap
    from ..service.http import bind_socket, check_exposure, serve, url_of
    from ..service.mcp_server import build_server, http_app, require_mcp
    from ..service.sessions import check_quota

    require_mcp()
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if args.tokens_file is not None and token is not None:
        raise ConfigError("give either --token (or UNIKO_MCP_TOKEN) or --tokens-file, not both")
    tokens = (
        TokenMap.from_file(args.tokens_file)
        if args.tokens_file
        else TokenMap({token: args.agent})
        if token
        else None
    )
    if not args.http and tokens is not None:
        raise ConfigError(
            "bearer tokens are for --http; over stdio the host that starts the server is the client"
        )
    sock = None
    if args.http:
        check_quota(args.max_sessions_per_token)
        check_exposure(args.host, tokens is not None)
        sock = bind_socket(args.host, args.port)
    from ..config import UnikoConfig
    from ..facade import Uniko

    config = UnikoConfig.build({"store": {"embedded_read_only": True}}) if args.read_only else None
    try:
        uni = await Uniko.open(args.path, config)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    try:
        server = build_server(uni, agent=args.agent, tokens=tokens)
        if sock is None:
            await server.run_stdio_async()
            return 0
        host, port = sock.getsockname()[:2]
        app = http_app(
            server,
            host,
            port,
            has_tokens=tokens is not None,
            tokens=tokens,
            sessions_per_token=args.max_sessions_per_token,
        )
        url = url_of(sock, "/mcp")
        auth = "bearer token required" if tokens else "no authentication (loopback)"
        await serve(app, sock, on_ready=lambda: _err(f"uniko mcp: serving {args.path} at {url} ({auth})"))
        return 0
    finally:
        await uni.close()
