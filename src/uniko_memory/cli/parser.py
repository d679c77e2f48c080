"""The argument parser and dispatch of the ``uniko`` command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import (
    cmd_audit,
    cmd_export,
    cmd_forget,
    cmd_import,
    cmd_inspect,
    cmd_list,
    cmd_mcp,
    cmd_recall,
    cmd_sessions,
    cmd_show,
)
from .cmd_bench import bench
from .cmd_demo import DEMO_PATH, demo, stats
from .cmd_ingest import DEFAULT_PATH, ingest, ingest_doc
from .formats import InputError
from .output import _err

#: Commands that register themselves (``register(sub)`` adds the sub-command and its ``run``).
SELF_REGISTERING = (
    cmd_recall,
    cmd_list,
    cmd_show,
    cmd_sessions,
    cmd_export,
    cmd_import,
    cmd_forget,
    cmd_mcp,
    cmd_inspect,
    cmd_audit,
)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``uniko`` command; a reader that closes the pipe early (``uniko export | head``) ends it
    quietly, as Unix tools do."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Python's recipe: point stdout at devnull so the interpreter's final flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # every later argument (--help included) belongs to the harness
        return bench(argv[1:])
    parser = argparse.ArgumentParser(prog="uniko", description="uniko-memory command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "bench",
        add_help=False,
        help="run the retrieval benchmark (benchmarks/run_bench.py; needs a source checkout); "
        "`uniko bench --help` lists its options",
    )
    p_demo = sub.add_parser("demo", help="ingest the bundled sample conversation and show what was stored")
    p_demo.add_argument(
        "--path", type=Path, default=DEMO_PATH, help=f"where the demo store is kept (default: ./{DEMO_PATH})"
    )
    p_stats = sub.add_parser("stats", help="count nodes per agent and tier in a store")
    p_stats.add_argument("path", type=Path)
    p_ing = sub.add_parser(
        "ingest",
        help="ingest a LoCoMo JSON file or a JSONL file of turns",
        description="Ingest conversations into an embedded store (see `uniko_memory.cli` for the formats).",
        epilog="A turn the engine refuses (empty, too long, addressed to too many people, an id already "
        "stored with other content) is reported on stderr with its line or record and skipped; the rest is "
        "stored. Exit status: 0 every turn stored (or already stored), 1 some turns rejected and the rest "
        "stored, 2 the file is malformed, or with --strict a turn would be refused (nothing stored).",
    )
    p_ing.add_argument("file", type=Path)
    p_ing.add_argument(
        "--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})"
    )
    p_ing.add_argument(
        "--agent",
        default=None,
        help="agent to store into (JSONL default: 'default'; LoCoMo default: each conversation's sample_id)",
    )
    p_ing.add_argument("--format", choices=("auto", "locomo", "jsonl"), default="auto")
    p_ing.add_argument(
        "--finalize",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="finalise every touched session afterwards (transcript chunks, summary); default on",
    )
    p_ing.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p_ing.add_argument(
        "--strict",
        action="store_true",
        help="check every turn first and store nothing if one would be refused (default: report and skip it)",
    )
    p_doc = sub.add_parser(
        "ingest-doc",
        help="store documents (text, Markdown, HTML, PDF) as artifacts",
        description="Store documents as artifacts with searchable chunks (see docs/artifacts.md).",
    )
    p_doc.add_argument("files", type=Path, nargs="+")
    p_doc.add_argument("--agent", required=True, help="agent to store into")
    p_doc.add_argument(
        "--path", type=Path, default=DEFAULT_PATH, help=f"the store (default: ./{DEFAULT_PATH})"
    )
    p_doc.add_argument("--mime-type", default=None, help="the type of every file (default: from its suffix)")
    p_doc.add_argument("--session", default=None, help="attach the documents to this session")
    p_doc.add_argument("--visibility", default="public", help="public (default), private:P, team:T or org:O")
    for module in SELF_REGISTERING:
        module.register(sub)
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is not None:
        rc: int = run(args)
        return rc
    if args.command == "demo":
        asyncio.run(demo(args.path))
    elif args.command == "stats":
        if not args.path.exists():
            _err(f"uniko stats: no store at {args.path}")
            return 2
        asyncio.run(stats(args.path))
    elif args.command == "ingest":
        from ..errors import UnikoError

        try:
            return asyncio.run(
                ingest(args.file, args.path, args.agent, args.format, args.finalize, args.plain, args.strict)
            )
        except InputError as exc:
            _err(f"uniko ingest: {exc}")
            return 2
        except UnikoError as exc:
            _err(f"uniko ingest: {type(exc).__name__}: {exc}")
            return 1
    elif args.command == "ingest-doc":
        from ..errors import UnikoError

        try:
            return asyncio.run(
                ingest_doc(args.files, args.path, args.agent, args.mime_type, args.session, args.visibility)
            )
        except UnikoError as exc:
            _err(f"uniko ingest-doc: {type(exc).__name__}: {exc}")
            return 2
    return 0
