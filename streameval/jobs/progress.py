r"""Progress of a run on stderr: a progress bar on a terminal, plain log lines otherwise.

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

from ..progress import Bar, at_terminal, count

PREFIX = "streameval run: "


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """Counts files and rows done against the totals of a run's partitions.

    On a terminal, a :class:`streameval.progress.Bar` (partitions, rows, rate, time left)
    with the log lines above it; otherwise one line per partition stored.
    """

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
        self.tty = at_terminal(self.stream) if tty is None else tty
        self.files, self.rows = files, rows
        self.files_done = self.rows_done = 0
        self.clock = clock
        self.start = clock()
        self.bar: Bar | None = None
        if self.tty and not quiet and files:
            self.bar = Bar("streameval run", stream=self.stream, terminal=True)
            self.bar.expect(files, "files", rows)

    def status(self) -> str:
        """``3/30 files, 1,200/9,000 rows, 5,000 rows/s, ETA 0:00:02``."""
        elapsed = self.clock() - self.start
        rate = self.rows_done / elapsed if elapsed > 0 else 0.0
        left = self.rows - self.rows_done
        eta = _duration(left / rate) if rate > 0 else "?"
        return (
            f"{self.files_done}/{self.files} files, {count(self.rows_done)}/{count(self.rows)} "
            f"rows, {count(rate)} rows/s, ETA {eta}"
        )

    def begin(self, name: str) -> None:
        """A partition is being computed (named on the bar)."""
        if self.bar is not None:
            self.bar.describe(name)

    def done(self, name: str, *, files: int, rows: int) -> None:
        """A partition's state is stored."""
        self.files_done += files
        self.rows_done += rows
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.step(files, rows, name)
        elif not self.tty:
            text = f"{name}: {files} file(s), {count(rows)} rows [{self.status()}]"
            self.log(text)

    def log(self, text: str, *, always: bool = False) -> None:
        """One log line (above the bar on a terminal)."""
        if self.quiet and not always:
            return
        if self.bar is not None:
            self.bar.log(PREFIX + text)
            return
        self.stream.write(PREFIX + text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Remove the bar."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
