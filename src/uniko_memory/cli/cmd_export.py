"""``uniko export``: one agent's memory as JSONL (``uniko_memory.transfer``), for ``uniko import``.

Where the export goes (``-o``), decided before the store is opened, so a refusal writes nothing:

- absent, ``-``, or the file standard output already is (``-o /dev/stdout``, whatever stdout is
  redirected to, ``>>`` included): standard output;
- a device, FIFO or socket (``/dev/stdout``, ``/dev/fd/3``, a named pipe), directly or through a
  symlink: streamed into it; it is never replaced (a block device is refused: a disk is no place
  for an export);
- a regular file or a path not yet there: a temporary file beside it, renamed over it once the
  export is complete (no half-written export; the old file stays until then);
- a symlink to a regular file: written through it once the export is complete (the target is
  overwritten in place, the link stays);
- a directory, a symlink to nowhere, or a folder that does not exist: refused with a message.

Renaming over the path is kept for regular files alone: a rename over a symlink or a device
replaces it (``uniko export -o /dev/stdout``, run as root, once turned ``/dev/stdout`` into a
regular file: issue 40.2).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from enum import Enum
from pathlib import Path
from typing import IO, Any, TypeVar

from .. import __version__
from ..model import Tier
from ..transfer import export_agent, export_lines
from .output import _err, _out, _Progress
from .store_access import CliError, add_store_options, open_kb, pick_agent, print_json, run_command

T = TypeVar("T")


class Way(Enum):
    """How the export reaches its target (see the module docstring)."""

    STDOUT = "stdout"
    STREAM = "stream"
    THROUGH = "through"
    REPLACE = "replace"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="export an agent's memory (nodes, edges, vectors) as JSONL",
        description="Write every node (redacted ones stay redacted), edge, vector and document of one agent "
        "as JSONL; `uniko import` reads it back into another store.",
    )
    add_store_options(p, read_only=True)
    p.add_argument(
        "-o",
        "--out",
        default="-",
        help="where to write: a file (replaced only once the export is complete), a device or FIFO such "
        "as /dev/stdout (streamed into), or '-' for standard output (the default); a directory is refused",
    )
    p.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("export", lambda: export(args))


def way_to(out: str) -> Way:
    """How to write to ``out``; ``CliError`` (before anything is written) for a target that cannot
    take an export. Only a regular file or a new path is ever renamed over."""
    if out == "-":
        return Way.STDOUT
    path = Path(out)
    try:
        mode = os.stat(path).st_mode  # follows symlinks: what a write would reach
    except FileNotFoundError:
        if path.is_symlink():
            raise CliError(
                f"{out} is a symlink to a path that does not exist; name the file itself"
            ) from None
        if not path.parent.is_dir():
            raise CliError(f"{out}: the folder {path.parent} does not exist") from None
        return Way.REPLACE
    except OSError as exc:  # a symlink loop, a path through a file, no permission
        raise CliError(f"{out}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise CliError(f"{out} is a directory; name the file to write (or leave out -o for standard output)")
    if stat.S_ISBLK(mode):
        raise CliError(f"{out} is a block device; an export is not written onto a disk")
    if _is_stdout(out):  # written through stdout's own descriptor: its append mode and position hold
        return Way.STDOUT
    if not stat.S_ISREG(mode):  # a character device, FIFO or socket: /dev/stdout, /dev/null, a pipe
        return Way.STREAM
    return Way.THROUGH if path.is_symlink() else Way.REPLACE


async def export(args: argparse.Namespace) -> int:
    way = way_to(args.out)
    async with open_kb(args.path, read_only=args.read_only) as kb:
        store = kb.store
        agent = await pick_agent(store, args.agent)
        total = sum([await store.count(agent, t) for t in Tier])
        with _Progress(total, f"export {agent}", plain=args.plain, stderr=True, unit="nodes") as bar:
            records = export_agent(store, agent, uniko_version=__version__, progress=bar.advance)
            counts = await _write(records, args.out, way)
    _summarise(args, agent, counts, way)
    return 0


async def _write(records: AsyncIterator[dict[str, Any]], out: str, way: Way) -> dict[str, int]:
    """Write the records to ``out`` the way ``way_to`` chose; returns the end record's counts."""
    if way is Way.STDOUT:
        return await _lines(records, sys.stdout)
    if way is Way.STREAM:
        with _opened(out, lambda: open(out, "w", encoding="utf-8")) as fh:
            return await _lines(records, fh)
    if way is Way.THROUGH:
        return await _write_through(records, out)
    return await _write_replacing(records, Path(out))


async def _lines(records: AsyncIterator[dict[str, Any]], fh: IO[str]) -> dict[str, int]:
    """Write each record as one JSON line, flushed at the end so a stream's reader gets it all;
    returns the end record's counts (the summary reports them)."""
    counts: dict[str, int] = {}
    async for record in records:
        counts = record.get("counts", counts)
        fh.write(next(export_lines([record])) + "\n")
    fh.flush()
    return counts


async def _write_through(records: AsyncIterator[dict[str, Any]], out: str) -> dict[str, int]:
    """A symlink to a regular file: spool the export (a private, unnamed temporary file), then
    overwrite the link's target in place, so the link survives and a failed export leaves the
    target as it was."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
        counts = await _lines(records, spool)
        spool.seek(0)
        with _opened(out, lambda: open(out, "w", encoding="utf-8")) as fh:
            while chunk := spool.read(1 << 20):
                fh.write(chunk)
    return counts


async def _write_replacing(records: AsyncIterator[dict[str, Any]], target: Path) -> dict[str, int]:
    """A regular file or a new path: a temporary file beside it, renamed over it at the end (no
    half-written export). The target is looked at again just before the rename: if it has become
    anything but a regular file meanwhile, nothing is renamed over it."""
    fd, tmp = _opened(str(target), lambda: tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            counts = await _lines(records, fh)
        if way_to(str(target)) is not Way.REPLACE:
            raise CliError(f"{target} changed while exporting and is no longer a regular file; not replaced")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return counts


def _opened(out: str, opener: Callable[[], T]) -> T:
    """``opener()``, with an ``OSError`` (no permission, a read-only file system) turned into the
    command's own error instead of a traceback."""
    try:
        return opener()
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None


def _is_stdout(out: str) -> bool:
    """Whether ``out`` is the file standard output already writes to (``-o /dev/stdout``)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.path.samestat(os.stat(out), os.fstat(sys.stdout.fileno()))
    return False


def _summarise(args: argparse.Namespace, agent: str, counts: dict[str, int], way: Way) -> None:
    """One line (or ``--json``) on what was written: on stderr when stdout carries the export, with
    the import hint only when the export is a file."""
    summary = {"agent": agent, "out": args.out, **counts}
    if args.json and way is not Way.STDOUT:
        print_json(summary)
        return
    line = (
        f"exported agent {agent}: {counts.get('node', 0)} nodes, {counts.get('edge', 0)} edges, "
        f"{counts.get('blob', 0)} documents to {'standard output' if args.out == '-' else args.out}"
    )
    if way in (Way.REPLACE, Way.THROUGH):
        line += f"; load it with: uniko import {args.out} --path NEW.db"
    (_err if way is Way.STDOUT else _out)(line)
