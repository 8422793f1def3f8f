"""The command line's output: a table written to a file or stdout, or fitted to the terminal."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from . import display
from .errors import StreamevalError


@contextmanager
def output_errors(output: str) -> Iterator[None]:
    """Report a failure to write ``--output`` as an error naming that path."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StreamevalError(
            f"expected to write --output {output!r}, but that failed ({exc}); hint: check that "
            "its folder exists or can be created, is writable, and that the path is no folder"
        ) from None


def write_table(table: pl.DataFrame, output: str, fmt: str) -> None:
    """Write ``table`` to the file ``output`` (or stdout for ``-``) in ``fmt``."""
    if output == "-":
        if fmt == "parquet":
            buffer = io.BytesIO()
            table.write_parquet(buffer)
            sys.stdout.flush()
            sys.stdout.buffer.write(buffer.getvalue())
        else:
            sys.stdout.write(display.csv_text(table) if fmt == "csv" else table.write_json())
        return
    path = Path(output)
    with output_errors(output):
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            table.write_parquet(path)
        elif fmt == "csv":
            path.write_text(display.csv_text(table))
        else:
            table.write_json(path)
    display.note(f"wrote {table.height:,} rows to {path}")


def _with_interval(name: str) -> list[str]:
    return [name, f"{name}_lo", f"{name}_hi"]


def emit(
    table: pl.DataFrame,
    keys: Sequence[str],
    names: Sequence[str] | None,
    args: argparse.Namespace,
    fmt: str | None,
    hint: str = display.MORE_HINT,
) -> None:
    """Write or print ``table``: ``keys`` then ``names`` (with their intervals), or all."""
    if args.output:
        write_table(table, args.output, fmt or "csv")
        return
    keys = [k for k in dict.fromkeys(keys) if k in table.columns]
    if args.all or names is None:
        shown = [*keys, *(c for c in table.columns if c not in keys)]
    else:
        wanted = (c for name in names for c in _with_interval(name))
        shown = list(dict.fromkeys([*keys, *(c for c in wanted if c in table.columns)]))
    display.show(
        table.select(shown),
        keys,
        every_row=args.all,
        blocks=args.all,
        hidden=table.width - len(shown),
        hint=hint,
    )
