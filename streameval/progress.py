"""Progress of long passes: a progress bar on stderr at a terminal, nothing when piped.

A command (or ``evaluate(..., progress=True)``) opens :func:`showing`; the passes inside it
announce their units with :func:`expect` (hive partitions, shards, state files) and report
each unit they finish with :func:`step`. Outside :func:`showing` both do nothing, so the
library reports unconditionally and pays nothing when nobody watches. The bar is drawn by
``rich`` (imported only when a bar is shown): units done, rows, rows per second, time left.

>>> with showing("evaluate", enabled=False):
...     expect(2, "partitions")
...     step(rows=10)
>>> _ACTIVE.get() is None
True
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

_ACTIVE: ContextVar[Bar | None] = ContextVar("streameval_progress", default=None)


def count(n: float) -> str:
    """``1,234,567``: a count as people read it.

    >>> count(1234567.4)
    '1,234,567'
    """
    return f"{n:,.0f}"


def at_terminal(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stderr) is a terminal: the command line's default."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Bar:
    """One progress display: a line per pass (units done of its total, rows, rate, ETA).

    Parameters
    ----------
    description : str
        What runs (``evaluate``, ``report``, ``run``), the start of each line.
    stream : file, optional
        Where to draw (default stderr).
    terminal : bool, optional
        Draw as on a terminal even when ``stream`` is none (tests); default: detect.

    """

    def __init__(
        self, description: str, *, stream: TextIO | None = None, terminal: bool | None = None
    ) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.description = description
        self.console = Console(
            file=sys.stderr if stream is None else stream, force_terminal=terminal, highlight=False
        )
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.completed:,.0f}/{task.fields[shown_total]} {task.fields[unit]}"),
            TextColumn("{task.fields[rows]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
        )
        self.task: Any = None
        self.rows: int | None = 0
        self.total_rows: int | None = None
        self.progress.start()

    def expect(self, total: int | None, unit: str, rows: int | None = None) -> None:
        """A pass of ``total`` units begins (``rows`` in all, when known)."""
        if self.task is not None:  # the pass before, drawn once done, then hidden
            self.progress.refresh()
            self.progress.update(self.task, visible=False)
        self.rows = 0
        self.total_rows = rows
        self.task = self.progress.add_task(
            self.description,
            total=total,
            unit=unit,
            shown_total="?" if total is None else f"{total:,}",
            rows="",
        )

    def step(self, units: float = 1, rows: int | None = None, name: str | None = None) -> None:
        """``units`` more are done (with ``rows`` rows; None: not known)."""
        if self.task is None:
            self.expect(None, "units")
        self.rows = None if rows is None or self.rows is None else self.rows + rows
        elapsed = self.progress.tasks[-1].elapsed or 0.0
        shown = ""
        if self.rows is not None:
            total = "" if self.total_rows is None else f"/{count(self.total_rows)}"
            rate = f", {count(self.rows / elapsed)} rows/s" if elapsed > 0 else ""
            shown = f"{count(self.rows)}{total} rows{rate}"
        text = self.description if name is None else f"{self.description} {name}"
        self.progress.update(self.task, advance=units, rows=shown, description=text)

    def describe(self, name: str) -> None:
        """Name the unit now being worked on."""
        if self.task is not None:
            self.progress.update(self.task, description=f"{self.description} {name}")

    def log(self, text: str) -> None:
        """A line printed above the bar."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        """Remove the bar from the terminal."""
        self.progress.stop()


@contextmanager
def showing(description: str, enabled: bool, stream: TextIO | None = None) -> Iterator[None]:
    """Within, the passes' :func:`expect`/:func:`step` draw a :class:`Bar` (when enabled)."""
    if not enabled:
        yield
        return
    bar = Bar(description, stream=stream)
    token = _ACTIVE.set(bar)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        bar.close()


def expect(total: int | None, unit: str, rows: int | None = None) -> None:
    """A pass of ``total`` units begins (shown when a bar is)."""
    bar = _ACTIVE.get()
    if bar is not None:
        bar.expect(total, unit, rows)


def step(units: float = 1, rows: int | None = None, name: str | None = None) -> None:
    """A unit of the current pass is done (shown when a bar is)."""
    bar = _ACTIVE.get()
    if bar is not None:
        bar.step(units, rows, name)
