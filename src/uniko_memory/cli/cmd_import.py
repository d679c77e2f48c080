"""``uniko import FILE``: load an agent's export (``uniko export``) into a store, all or nothing."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

from ..transfer import ExportError, check_import, import_agent, read_export
from .output import _out, _Progress
from .store_access import DEFAULT_STORE, CliError, open_kb, print_json, run_command


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="import an agent's export (JSONL from `uniko export`) into a store",
        description="Check the whole file, then write the agent's nodes, edges and vectors in one "
        "transaction. The agent must not have memory in the target store yet.",
    )
    p.add_argument("file", type=Path)
    p.add_argument(
        "--path",
        type=Path,
        default=DEFAULT_STORE,
        help=f"the store (created if missing; default ./{DEFAULT_STORE})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document for scripts")
    p.add_argument("--plain", action="store_true", help="plain progress lines instead of a progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_command("import", lambda: import_file(args))


def _read(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as fh:
            return read_export(fh)
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None
    except ExportError as exc:
        raise CliError(f"{path}: {exc}; nothing was imported") from None


def _files_to_make(path: Path) -> list[Path]:
    """What opening a new store at ``path`` creates and a refused import removes again: the file,
    SQLite's journal files and the lock file beside the real path (those already there are kept)."""
    real = Path(os.path.realpath(path))
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm"), real.with_name(real.name + ".lock")]
    return [p for p in files if not os.path.lexists(p)]


async def import_file(args: argparse.Namespace) -> int:
    data = _read(args.file)  # the whole file is checked before the store is opened
    created = not args.path.exists()
    args.path.parent.mkdir(parents=True, exist_ok=True)
    made = _files_to_make(args.path) if created else []
    if created:
        args.path.touch()
    ok = False
    try:
        async with open_kb(args.path, models=True) as kb:
            model = getattr(kb.embedder, "model_id", None)
            try:
                await check_import(kb.store, data, embedding_model=model)
            except ExportError as exc:
                raise CliError(f"{args.file}: {exc}; nothing was imported") from None
            with _Progress(
                len(data.nodes), f"import {data.header.agent}", plain=args.plain, stderr=True, unit="nodes"
            ) as bar:
                report = await import_agent(kb.store, data, progress=bar.advance)
        ok = True
    finally:
        if not ok:  # leave no empty store (nor its lock file) behind a refused import
            for path in made:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
    if args.json:
        print_json(report.model_dump())
    else:
        _out(
            f"imported agent {report.agent}: {report.nodes} nodes, {report.edges} edges, {report.blobs} "
            f'documents into {args.path}; try: uniko recall "..." --path {args.path} --agent {report.agent}'
        )
    return 0
