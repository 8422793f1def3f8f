r"""Tables and messages for people: fitted to the terminal, complete and plain in a pipe.

On a terminal a table shows its key columns, then as many other columns as fit the width
(an interval ``m``, ``m_lo``, ``m_hi`` as one column ``m [lo, hi]``), numbers right-aligned
to four significant digits, and says in its last lines what it left out. Piped or
redirected, a table is CSV: every row, full precision, notes on stderr.

>>> table = pl.DataFrame({"seg": ["a", "b"], "n": [10, 12], "auc": [0.81234, 0.7]})
>>> print("\n".join(render(table, ["seg"], width=40)))
seg   n     auc
───  ──  ──────
a    10  0.8123
b    12  0.7000
"""

from __future__ import annotations

import math
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

import polars as pl

DIGITS = 4
MAX_ROWS = 200
GAP = "  "
MORE_HINT = "--all prints them, --metric NAME picks some, --output FILE saves them"


def number(value: object, digits: int = DIGITS) -> str:
    """A number as text with ``digits`` significant digits (integers in full).

    >>> number(0.5), number(2 / 3), number(123456.0), number(1e-07), number(7)
    ('0.5000', '0.6667', '123456', '1.000e-07', '7')
    >>> number(float("nan")), number(None)
    ('NaN', 'null')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude < -3 or magnitude >= 15:
        return f"{value:.{digits - 1}e}"
    return f"{value:.{max(0, digits - 1 - magnitude)}f}"


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width of the terminal ``stream`` (stdout) writes to, or None when it is no terminal."""
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if not (isatty and isatty()):
        return None
    return max(20, shutil.get_terminal_size().columns)


def wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` characters (one line when ``width`` is None).

    >>> wrap("left out: a, b, c", 10)
    ['left out:', 'a, b, c']
    """
    if width is None or len(text) <= width:
        return [text]
    lead = text[: len(text) - len(text.lstrip())]
    return textwrap.wrap(
        text, width, initial_indent="", subsequent_indent=lead + indent, break_on_hyphens=False
    ) or [text[:width]]


def note(text: str, stream: TextIO | None = None) -> None:
    """Print a message for people on stderr, wrapped to the terminal when it is one."""
    stream = sys.stderr if stream is None else stream
    for line in wrap(text, terminal_width(stream), "    "):
        print(line, file=stream)


def print_text(text: str) -> None:
    """Print lines of text on stdout, each wrapped (indented) to the terminal when it is one."""
    width = terminal_width()
    for line in text.splitlines():
        for part in wrap(line, width, "    "):
            print(part)


@dataclass
class _Column:
    name: str
    cells: list[str]
    right: bool

    @property
    def width(self) -> int:
        return max([len(self.name), *map(len, self.cells)])

    def cell(self, i: int, width: int) -> str:
        text = self.name if i < 0 else self.cells[i]
        if len(text) > width:
            text = text[: width - 1] + "…"
        return text.rjust(width) if self.right else text.ljust(width)


def _texts(series: pl.Series) -> list[str]:
    return [number(v) for v in series.to_list()]


def _columns(table: pl.DataFrame, names: Sequence[str]) -> list[_Column]:
    """Display columns of ``names``; ``m``, ``m_lo``, ``m_hi`` become one ``m [lo, hi]``."""
    out = []
    for name in names:
        if name.endswith(("_lo", "_hi")) and name[:-3] in names:
            continue
        series = table[name]
        right = series.dtype.is_numeric()
        cells = _texts(series)
        if f"{name}_lo" in names and f"{name}_hi" in names:
            lo, hi = _texts(table[f"{name}_lo"]), _texts(table[f"{name}_hi"])
            cells = [f"{c} [{a}, {b}]" for c, a, b in zip(cells, lo, hi, strict=True)]
            out.append(_Column(f"{name} [lo, hi]", cells, right))
        else:
            out.append(_Column(name, cells, right))
    return out


def _fit_keys(keys: list[_Column], width: int) -> list[int]:
    """Widths of the key columns, the widest narrowed until they leave room for a column."""
    widths = [c.width for c in keys]
    budget = max(len(keys) * 4, width * 2 // 3)
    while widths and sum(widths) + len(GAP) * (len(widths) - 1) > budget and max(widths) > 4:
        widths[widths.index(max(widths))] -= 1
    return widths


def _block(keys: list[tuple[_Column, int]], cols: list[_Column], rows: int) -> list[str]:
    shown = keys + [(c, c.width) for c in cols]
    lines = [GAP.join(c.cell(-1, w) for c, w in shown).rstrip()]
    lines.append(GAP.join("─" * w for _, w in shown))
    lines += [GAP.join(c.cell(i, w) for c, w in shown).rstrip() for i in range(rows)]
    return lines


def render(
    table: pl.DataFrame,
    keys: Sequence[str],
    *,
    width: int,
    max_rows: int | None = MAX_ROWS,
    blocks: bool = False,
    hidden: int = 0,
    hint: str = MORE_HINT,
) -> list[str]:
    """The lines of ``table`` on a terminal ``width`` characters wide.

    Parameters
    ----------
    table : polars.DataFrame
        The columns to show, keys first.
    keys : list of str
        Columns repeated in every block and never left out.
    width : int
        No line is longer.
    max_rows : int, optional
        Rows beyond this are cut, and a last line says how many (None: every row).
    blocks : bool
        Show every column, in blocks of columns that fit, instead of leaving some out.
    hidden : int
        Columns of the whole table not in ``table`` (a summary's), counted in the last line.
    hint : str
        How to see the columns left out.

    Examples
    --------
    >>> t = pl.DataFrame({"k": ["a"], "x_long_name": [1.0], "y_long_name": [2.0]})
    >>> for line in render(t, ["k"], width=26, hint="--all prints it"):
    ...     print(line)
    k  x_long_name
    ─  ───────────
    a        1.000
    1 more column did not fit
        in 26 columns:
        y_long_name; --all
        prints it

    """
    head = table if max_rows is None else table.head(max_rows)
    key_cols = _columns(head, [k for k in keys if k in table.columns])
    fitted = list(zip(key_cols, _fit_keys(key_cols, width), strict=True))
    used = sum(w for _, w in fitted) + len(GAP) * max(0, len(fitted) - 1)
    others = _columns(head, [c for c in table.columns if c not in keys])
    groups: list[list[_Column]] = [[]]
    room, left = width - used, []
    for col in others:
        need = col.width + (len(GAP) if fitted or groups[-1] else 0)
        if need > room and blocks and groups[-1] and col.width + len(GAP) <= width - used:
            groups.append([])
            room = width - used
        if need <= room:
            groups[-1].append(col)
            room -= need
        else:
            left.append(col.name.removesuffix(" [lo, hi]"))
    lines: list[str] = []
    for i, group in enumerate(groups):
        lines += ([""] if i else []) + _block(fitted, group, head.height)
    if head.height < table.height:
        lines.append(f"… {table.height - head.height:,} more rows (--all, or --output FILE)")
    if left or hidden:
        parts = []
        if left:
            s = "" if len(left) == 1 else "s"
            parts.append(
                f"{len(left)} more column{s} did not fit in {width} columns: {', '.join(left)}"
            )
        if hidden:
            s = "" if hidden == 1 else "s"
            parts.append(f"{hidden} more column{s} are not in this summary")
        lines += wrap(f"{'; '.join(parts)}; {hint}", width, "    ")
    return lines


def csv_text(table: pl.DataFrame) -> str:
    """``table`` as CSV text; nested values written as their text.

    >>> print(csv_text(pl.DataFrame({"a": [1], "b": [[1, 2]]})), end="")
    a,b
    1,"[1, 2]"
    """
    nested = [c for c, t in table.schema.items() if t.is_nested()]
    if nested:
        table = table.with_columns(
            pl.col(c).map_elements(lambda v: str(list(v)), return_dtype=pl.String) for c in nested
        )
    return table.write_csv()


def show(
    table: pl.DataFrame,
    keys: Sequence[str],
    *,
    every_row: bool = False,
    blocks: bool = False,
    hidden: int = 0,
    hint: str = MORE_HINT,
) -> None:
    """Print ``table``: fitted to the terminal, or as complete CSV when stdout is no terminal.

    Piped, a note about ``hidden`` columns goes to stderr so that stdout stays CSV.
    """
    width = terminal_width()
    if width is None:
        sys.stdout.write(csv_text(table))
        if hidden:
            s = "" if hidden == 1 else "s"
            note(f"({hidden} more column{s} are not in this summary: {hint})")
        return
    lines = render(
        table,
        keys,
        width=width,
        max_rows=None if every_row else MAX_ROWS,
        blocks=blocks,
        hidden=hidden,
        hint=hint,
    )
    sys.stdout.write("\n".join(lines) + "\n")


class FittedStream:
    r"""A text stream that keeps every line within ``width`` characters on a terminal.

    Whole lines are wrapped (continuations indented); a line still being updated in place
    (shown at a flush, then overwritten after ``\r``) is cut to the width instead.

    >>> import io
    >>> out = io.StringIO()
    >>> s = FittedStream(out, 12)
    >>> _ = s.write("\r1/3 files, 100 rows"); s.flush(); _ = s.write("\rdone\n")
    >>> _ = s.write("a summary line of a run\n")
    >>> out.getvalue().split("\r")
    ['', '1/3 files, 1', 'done\na summary\n    line of\n    a run\n']
    """

    def __init__(self, inner: TextIO, width: int) -> None:
        self.inner, self.width = inner, width
        self.pending, self.shown = "", False

    def isatty(self) -> bool:
        """Whether the stream underneath is a terminal."""
        return self.inner.isatty()

    def write(self, text: str) -> int:
        """Write ``text``: whole lines wrapped, a line updated in place kept for the flush."""
        for piece in re.split(r"(\r|\n)", text):
            if piece == "\n":
                if not self.shown:
                    self.inner.write("\n".join(wrap(self.pending.rstrip(), self.width, "    ")))
                self.inner.write("\n")
                self.pending, self.shown = "", False
            elif piece == "\r":
                if not self.shown:
                    self.inner.write(self.pending[: self.width])
                self.inner.write("\r")
                self.pending, self.shown = "", False
            elif self.shown:
                self.inner.write(piece)
            else:
                self.pending += piece
        return len(text)

    def flush(self) -> None:
        """Show the line being updated, cut to the width."""
        if self.pending and not self.shown:
            self.inner.write(self.pending[: self.width])
            self.shown = True
        self.inner.flush()
