"""Printing and progress: the only place the command writes to the terminal."""

from __future__ import annotations

import sys
from typing import Any


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


class _Progress:
    """A rich progress bar when ``rich`` is installed (the ``cli`` extra); plain lines otherwise.

    ``stderr`` draws it on stderr (commands whose stdout is ``--json`` for scripts); ``unit`` names
    what the plain lines count.
    """

    def __init__(
        self, total: int, label: str, *, plain: bool = False, stderr: bool = False, unit: str = "turns"
    ) -> None:
        self.total = total
        self._stderr = stderr
        self._unit = unit
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        self._last = 0.0
        self._label = label
        if not plain:
            try:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )
            except ImportError:
                pass
            else:
                self._bar = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    transient=False,
                    console=Console(stderr=True) if stderr else None,
                )
        if self._bar is None:
            self._every = max(1, total // 10)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=self.total)
        return self

    def advance(self, n: int = 1, description: str | None = None) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(self._task, advance=n, **({"description": description} if description else {}))
        elif self.done % self._every == 0 or self.done == self.total:
            line = f"  {self._label}: {self.done}/{self.total} {self._unit}"
            (_err if self._stderr else _out)(line)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
