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
from .store_access import (
    DEFAULT_STORE,
    CliError,
    add_read_only_option,
    engine_error,
    require_store,
    run_command,
)

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


def _is_path_option(arg: str) -> bool:
    return arg == "--path" or arg.startswith("--path=")


def hoist_path(argv: Sequence[str]) -> list[str]:
    """``uniko --path DB COMMAND ...`` is ``uniko COMMAND --path DB ...``: a ``--path`` given before
    the command moves after it, so every command reads it in one place. Given on both sides it must
    name one store (``CliError`` otherwise)."""
    front: list[str] = []
    i = 0
    while i < len(argv) and _is_path_option(argv[i]):
        take = 1 if "=" in argv[i] else 2
        front += argv[i : i + take]
        i += take
    if not front or i >= len(argv):
        return list(argv)
    command, rest = argv[i], list(argv[i + 1 :])
    if command == "bench":
        raise CliError("`uniko bench` takes no --path: it builds its own stores (see `uniko bench --help`)")
    if any(_is_path_option(a) for a in rest):
        given = [
            _path_value(front, 0),
            *(_path_value(rest, j) for j, a in enumerate(rest) if _is_path_option(a)),
        ]
        if len({Path(g) for g in given if g is not None}) > 1:
            raise CliError(
                f"--path is given twice with different stores ({', '.join(map(str, given))}); give one"
            )
    return [command, *front, *rest]


def _path_value(args: Sequence[str], at: int) -> str | None:
    arg = args[at]
    if arg.startswith("--path="):
        return arg.split("=", 1)[1]
    return args[at + 1] if at + 1 < len(args) else None


def _main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = hoist_path(sys.argv[1:] if argv is None else argv)
    except CliError as exc:
        _err(f"uniko: {exc}")
        return 2
    if argv[:1] == ["bench"]:  # every later argument (--help included) belongs to the harness
        return bench(argv[1:])
    parser = argparse.ArgumentParser(
        prog="uniko",
        description="uniko-memory command line",
        epilog="Every command that opens a store takes --path DB (default ./uniko.db; the demo's "
        "./uniko-demo.db), before or after the command name.",
    )
    parser.add_argument(
        "--path",
        type=Path,
        dest="store_before_command",
        metavar="DB",
        help="the store, for the command that follows (the same as --path after it)",
    )
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
    p_stats.add_argument(
        "store", type=Path, nargs="?", default=None, help=f"the store (or --path; default: ./{DEFAULT_STORE})"
    )
    p_stats.add_argument("--path", type=Path, default=None, help=f"the store (default: ./{DEFAULT_STORE})")
    add_read_only_option(p_stats)
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
        return run_command("demo", lambda: demo(args.path))
    elif args.command == "stats":
        return _stats(args)
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
            _err(engine_error("ingest", exc))
            return 1
    elif args.command == "ingest-doc":
        from ..errors import UnikoError

        try:
            return asyncio.run(
                ingest_doc(args.files, args.path, args.agent, args.mime_type, args.session, args.visibility)
            )
        except UnikoError as exc:
            _err(engine_error("ingest-doc", exc))
            return 2
    return 0


def _stats(args: argparse.Namespace) -> int:
    """``uniko stats [DB] [--path DB]``: the store as a word or as ``--path``, as every command takes it."""
    if args.store is not None and args.path is not None and args.store != args.path:
        _err(f"uniko stats: two stores given ({args.store} and --path {args.path}); give one")
        return 2
    path = args.store or args.path or DEFAULT_STORE

    async def run() -> None:
        require_store(path)
        await stats(path, read_only=args.read_only)

    return run_command("stats", run)
