"""``uniko inspect``: the memory inspector, a local web page over one store (loopback only).

It opens the store read-write when it can (forget works from the page), and read-only beside
the process that writes it otherwise (``uniko mcp`` holding it, say): the page then reads and
recalls, and forget is left to that process. It never creates a store. It prints the URL to open,
with a per-run token (``?token=...``): every route answers only requests that carry it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .cmd_ingest import DEFAULT_PATH
from .output import _err
from .serving import run_server

DEFAULT_PORT = 8766
HOST = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="browse a memory in a local web page (tiers, provenance graph, recall trace, forget)",
        description="Serve the memory inspector on http://127.0.0.1:PORT/ (loopback only); open the URL "
        "it prints, which carries the per-run token every route needs.",
    )
    p.add_argument("--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: a free one)"
    )
    p.add_argument("--read-only", action="store_true", help="open the store read-only (no forget)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_server("inspect", _serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from ..config import UnikoConfig
    from ..errors import NotFound, StoreLocked
    from ..facade import Uniko
    from ..service.http import bind_socket, serve, url_of
    from ..service.inspector import InspectorData, inspector_app, launch_url, new_token

    if not args.path.is_file():
        raise NotFound(f"no store at {args.path}")
    reader = UnikoConfig.build({"store": {"embedded_read_only": True}})
    if args.read_only:
        uni = await Uniko.open(args.path, reader)
    else:
        try:
            uni = await Uniko.open(args.path)
        except StoreLocked:
            _err(f"uniko inspect: {args.path} is open in another process; opening it read-only (no forget)")
            uni = await Uniko.open(args.path, reader)
    try:
        sock = bind_socket(HOST, args.port)
        port = sock.getsockname()[1]
        token = new_token()
        app = inspector_app(InspectorData(uni), port=port, token=token)
        # the token goes to the user who started the inspector, and nowhere else: every route
        # answers only requests carrying it (the page keeps it in a cookie once opened)
        url = launch_url(url_of(sock, "/"), token)
        await serve(app, sock, on_ready=lambda: _err(f"uniko inspect: {args.path} at {url}"))
        return 0
    finally:
        await uni.close()
