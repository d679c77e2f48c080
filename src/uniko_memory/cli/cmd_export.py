"""``uniko export``: one agent's memory as JSONL (``uniko_memory.transfer``), for ``uniko import``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import __version__
from ..model import Tier
from ..transfer import export_agent, export_lines
from .output import _err, _out, _Progress
from .store_access import CliError, add_store_options, open_kb, pick_agent, print_json, run_command


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export an agent's memory (nodes, edges, vectors) as JSONL",
        description="Write every node (redacted ones stay redacted), edge, vector and document of one agent "
        "as JSONL; `uniko import` reads it back into another store.",
    )
    add_store_options(p)
    p.add_argument("-o", "--out", required=True, help="the file to write ('-': stdout)")
    p.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("export", lambda: export(args))


async def export(args: argparse.Namespace) -> int:
    to_stdout = args.out == "-"
    target = None if to_stdout else Path(args.out)
    if target is not None and target.is_dir():
        raise CliError(f"{target} is a directory; name the file to write")
    async with open_kb(args.path) as kb:
        store = kb.store
        agent = await pick_agent(store, args.agent)
        total = sum([await store.count(agent, t) for t in Tier])
        counts: dict[str, int] = {}
        with _Progress(total, f"export {agent}", plain=args.plain, stderr=True, unit="nodes") as bar:
            records = export_agent(store, agent, uniko_version=__version__, progress=bar.advance)
            if target is None:
                async for record in records:
                    counts = record.get("counts", counts)
                    sys.stdout.write(next(export_lines([record])) + "\n")
            else:  # a temporary file beside the target, renamed at the end: no half-written export
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as fh:
                        async for record in records:
                            counts = record.get("counts", counts)
                            fh.write(next(export_lines([record])) + "\n")
                    os.replace(tmp, target)
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
                    raise
    summary = {"agent": agent, "out": args.out, **counts}
    if args.json and not to_stdout:
        print_json(summary)
    else:
        (_err if to_stdout else _out)(  # stdout carries the export itself
            f"exported agent {agent}: {counts.get('node', 0)} nodes, {counts.get('edge', 0)} edges, "
            f"{counts.get('blob', 0)} documents to {args.out}"
            + ("" if to_stdout else f"; load it with: uniko import {args.out} --path NEW.db")
        )
    return 0
