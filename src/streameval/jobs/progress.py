r"""Progress of a run on stderr: one updating line on a terminal, plain log lines otherwise.

>>> import io
>>> out = io.StringIO()
>>> p = Progress(files=3, rows=300, stream=out, clock=iter([0.0, 1.0, 2.0, 3.0]).__next__)
>>> p.done("day=2026-10-01", files=1, rows=100)
>>> print(out.getvalue().replace(" [", "\n["))
streameval run: day=2026-10-01: 1 file(s), 100 rows
[1/3 files, 100/300 rows, 100 rows/s, ETA 0:00:02]
<BLANKLINE>
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

PREFIX = "streameval run: "


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _count(n: float) -> str:
    return f"{n:,.0f}"


class Progress:
    """Counts files and rows done against the totals of a run's partitions."""

    def __init__(
        self,
        files: int,
        rows: int,
        *,
        stream: TextIO | None = None,
        quiet: bool = False,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty()) if tty is None else tty
        self.files, self.rows = files, rows
        self.files_done = self.rows_done = 0
        self.clock = clock
        self.start = clock()
        self._last = -1.0
        self._width = 0

    def status(self) -> str:
        """``3/30 files, 1,200/9,000 rows, 5,000 rows/s, ETA 0:00:02``."""
        elapsed = self.clock() - self.start
        rate = self.rows_done / elapsed if elapsed > 0 else 0.0
        left = self.rows - self.rows_done
        eta = _duration(left / rate) if rate > 0 else "?"
        return (
            f"{self.files_done}/{self.files} files, {_count(self.rows_done)}/{_count(self.rows)} "
            f"rows, {_count(rate)} rows/s, ETA {eta}"
        )

    def begin(self, name: str) -> None:
        """A partition is being computed (shown on a terminal only)."""
        if self.tty and not self.quiet:
            self._line(f"{name} … [{self.status()}]")

    def done(self, name: str, *, files: int, rows: int) -> None:
        """A partition's state is stored."""
        self.files_done += files
        self.rows_done += rows
        if self.quiet:
            return
        if self.tty:
            self._line(f"{name} done [{self.status()}]")
        else:
            text = f"{name}: {files} file(s), {_count(rows)} rows [{self.status()}]"
            self.log(text)

    def _line(self, text: str) -> None:
        line = PREFIX + text
        pad = max(0, self._width - len(line))
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._width = len(line)

    def log(self, text: str, *, always: bool = False) -> None:
        """One log line (ends an updating line first)."""
        if self.quiet and not always:
            return
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        self.stream.write(PREFIX + text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the updating line."""
        if self.tty and self._width and not self.quiet:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
