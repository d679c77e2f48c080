"""What the look-inside commands share: the store and agent options, opening a store without
creating one (read-only beside the process that writes it, with ``--read-only``), choosing the
agent, errors with exit status 2 (a locked store with the way to read it anyway), and ``--json``
output.

Each ``cmd_*`` module has a ``register(sub)`` that adds its sub-command and sets ``run`` (an
``argparse.Namespace -> int``); ``parser.main`` calls it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, NotFound, StoreLocked, UnikoError, ValidationError
from .output import _err, _out

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from ..facade import Uniko
    from ..knowledge_base import KnowledgeBase

#: The store the commands use when ``--path`` is not given (``uniko ingest``'s default too).
DEFAULT_STORE = Path("uniko.db")


#: The commands that only read, and so take ``--read-only`` (a reader beside the writing process).
READING_COMMANDS = ("recall", "list", "show", "sessions", "export", "stats")


class CliError(Exception):
    """Bad input (no such store, agent, node, a malformed file): printed, exit status 2, nothing
    written."""


def add_store_options(
    p: argparse.ArgumentParser, *, agent: bool = True, json_flag: bool = True, read_only: bool = False
) -> None:
    p.add_argument("--path", type=Path, default=DEFAULT_STORE, help=f"the store (default: ./{DEFAULT_STORE})")
    if read_only:
        add_read_only_option(p)
    if agent:
        p.add_argument(
            "--agent", default=None, help="the agent (tenant) to read; may be left out when the store has one"
        )
    if json_flag:
        p.add_argument("--json", action="store_true", help="print one JSON document for scripts")


def add_read_only_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--read-only",
        action="store_true",
        help="open the store read-only: works while another process (uniko mcp, a script) writes it",
    )


def reader_config() -> Any:
    """The config of a read-only open (``store.embedded_read_only``): no lock, every write refused."""
    from ..config import UnikoConfig

    return UnikoConfig.build({"store": {"embedded_read_only": True}})


def locked_hint(command: str) -> str:
    """What to do when ``uniko COMMAND`` finds the store open for writing elsewhere."""
    if command in READING_COMMANDS:
        return (
            f"`uniko {command}` only reads: add --read-only to read the store beside the process "
            "that holds it"
        )
    reads = ", ".join((*READING_COMMANDS, "inspect", "mcp"))
    return (
        f"`uniko {command}` writes, and one process at a time writes a store: stop the other one "
        f"(a `uniko mcp` or `uniko inspect` server, a script), or read beside it with --read-only "
        f"(uniko {reads})"
    )


def engine_error(command: str, exc: UnikoError) -> str:
    """The one line an engine error prints: its type and message, and for ``StoreLocked`` the
    read-only way in."""
    line = f"uniko {command}: {type(exc).__name__}: {exc}"
    if isinstance(exc, StoreLocked):
        line += f"\n  {locked_hint(command)}"
    return line


def require_store(path: Path) -> None:
    """An existing store file; a command that reads never creates an empty one."""
    if not path.exists():
        raise CliError(
            f"no store at {path} (create one with `uniko ingest FILE --path {path}` or `uniko demo`)"
        )
    if path.is_dir():
        raise CliError(f"{path} is a directory, not a store file")


@asynccontextmanager
async def open_kb(
    path: Path, *, models: bool = False, read_only: bool = False
) -> AsyncIterator[KnowledgeBase]:
    """The knowledge base at ``path`` (an existing one), with the default embedder when ``models``;
    ``read_only``: a reader beside the process that writes it (no lock, no write)."""
    from ..knowledge_base import KnowledgeBase

    require_store(path)
    config = reader_config() if read_only else None
    kb = await KnowledgeBase.from_config(config, path=path, default_models=models)
    try:
        yield kb
    finally:
        await kb.close()


@asynccontextmanager
async def open_engine(path: Path, *, create: bool = False, read_only: bool = False) -> AsyncIterator[Uniko]:
    """The engine (``Uniko.open``: default models, pipelines, unfinished jobs finished);
    ``read_only``: a reader beside the process that writes the store."""
    from ..facade import Uniko

    if not create or read_only:
        require_store(path)
    uni = await Uniko.open(path, reader_config() if read_only else None)
    try:
        yield uni
    finally:
        await uni.close()


async def pick_agent(store: Any, agent: str | None) -> str:
    """``agent`` if the store has it; with none given, the store's only agent."""
    agents = sorted(await store.agents())
    if agent is not None:
        if agent not in agents:
            known = ", ".join(agents) or "none"
            raise CliError(f"no agent {agent!r} in this store (agents: {known})")
        return agent
    if len(agents) == 1:
        return agents[0]
    if not agents:
        raise CliError("the store holds no agent yet")
    raise CliError(f"the store holds several agents; pick one with --agent ({', '.join(agents)})")


def print_json(value: Any) -> None:
    _out(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def short(text: str | None, width: int = 100) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= width else one[: width - 1] + "…"


def run_command(name: str, make: Callable[[], Coroutine[Any, Any, int | None]]) -> int:
    """Run one command's coroutine: bad input exits 2, another engine error 1, success 0."""
    try:
        rc = asyncio.run(make())
    except CliError as exc:
        _err(f"uniko {name}: {exc}")
        return 2
    except (ValidationError, ConfigError, NotFound) as exc:
        _err(f"uniko {name}: {exc}")
        return 2
    except UnikoError as exc:
        _err(engine_error(name, exc))
        return 1
    return 0 if rc is None else rc
