"""Hive directory names: one spelling per value, and file columns that agree with them.

``day=2026-10-01/`` and ``day=20261001/`` name one day; Polars would read them as two values
(or, for ``seg=1/`` and ``seg=01/``, as one value counted from both folders), so two names
of one value are refused. A file's own column named like a hive key of its path is replaced
by the directory's value when Polars reads it; it must agree with it, as files written with
Polars' ``partition_by`` do. Both checks read directory names and Parquet footers only.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .errors import InputError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def decoded(raw: str) -> str | None:
    """A hive directory's value as Polars reads it: URL-decoded, None for the null partition."""
    return None if raw == HIVE_NULL else unquote(raw)


def _meanings(text: str | None) -> set[tuple[str, Any]]:
    """What a partition value can stand for: the text itself, a number, a boolean, a date.

    Two names share a meaning when they denote one value (``1`` and ``01``, ``2026-10-01`` and
    ``20261001``), whatever type the key is read as.

    >>> sorted(kind for kind, _ in _meanings("20261001"))
    ['date', 'datetime', 'number', 'text']
    >>> [kind for kind, _ in _meanings("01") & _meanings("1.0")]
    ['number']
    """
    if text is None:
        return {("null", None)}
    found: set[tuple[str, Any]] = {("text", text)}
    if _NUMBER.fullmatch(text):
        found.add(("number", Decimal(text)))
    if text.lower() in ("true", "false"):
        found.add(("bool", text.lower() == "true"))
    for kind, parse in (("date", date.fromisoformat), ("datetime", datetime.fromisoformat)):
        with contextlib.suppress(ValueError):
            found.add((kind, parse(text)))
    return found


def _hive_pairs(parts: Sequence[str]) -> dict[str, str]:
    """The ``key=value`` directory names among ``parts``, as key → raw value."""
    return dict(p.split("=", 1) for p in parts if "=" in p[1:])


def check_partition_spellings(files: Sequence[str]) -> None:
    """Refuse two directory names that give one hive key the same value, naming both.

    ``day=2026-10-01/`` and ``day=20261001/`` (or ``seg=1/`` and ``seg=01/``, ``seg=a%20b/``
    and ``seg=a b/``) are one value spelled two ways: Polars reads them as two groups, or one
    group counted from both, and totals count both. Only directory names are looked at.

    >>> check_partition_spellings(["p/day=2026-10-01/a.parquet", "p/day=2026-10-02/a.parquet"])
    >>> check_partition_spellings(["p/seg=1/a.parquet", "p/seg=01/a.parquet"])
    Traceback (most recent call last):
    ...
    streameval.errors.InputError: expected one directory name per value of the hive key 'seg', ...
    """
    named: dict[str, dict[str, str]] = {}  # key -> raw value -> the first directory so named
    for folder in dict.fromkeys(os.path.dirname(f) for f in files):
        parts = Path(folder).parts
        for i, part in enumerate(parts):
            if "=" in part[1:]:
                key, raw = part.split("=", 1)
                named.setdefault(key, {}).setdefault(raw, str(Path(*parts[: i + 1])))
    for key, folders in named.items():
        first: dict[tuple[str, Any], str] = {}
        for raw in sorted(folders) if len(folders) > 1 else ():
            for meaning in sorted(_meanings(decoded(raw)), key=str):
                other = first.setdefault(meaning, raw)
                if other != raw:
                    raise InputError(
                        f"expected one directory name per value of the hive key {key!r}, but "
                        f"'{key}={other}' and '{key}={raw}' both hold {meaning[1]!s} "
                        f"({folders[other]!r} and {folders[raw]!r}), so its rows would be "
                        "counted twice or split; hint: move the files into one of the two "
                        "directories"
                    )


def check_hive_columns(source: Any, files: Sequence[str]) -> None:
    """Refuse a file whose own column, named like a hive key of its path, differs from it.

    Polars replaces such a column with the directory's value. The column may stay in the file
    (Polars' ``partition_by`` writes keep it) if its footer statistics show every row equal
    to the directory's value; otherwise the file is named. Reads footers only, and only of
    files with ``key=value`` directories (those below ``source`` when it is one directory).
    """
    root = os.fspath(source) if isinstance(source, str | os.PathLike) else None
    root = root if root is not None and os.path.isdir(root) else None
    for f in files:
        pairs = _hive_pairs(Path(os.path.relpath(f, root) if root else f).parts[:-1])
        if pairs:
            _check_file_keys(f, pairs)


def _check_file_keys(path: str, pairs: dict[str, str]) -> None:
    """Raise InputError if a column of ``path`` named like a key in ``pairs`` differs from it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        names = meta.schema.to_arrow_schema().names
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"cannot read {path!r} as Parquet ({exc}); hint: remove or rewrite that file"
        ) from None
    for key in (k for k in pairs if k in names):
        value = decoded(pairs[key])
        found = _footer_disagreement(meta, key, value)
        if found:
            raise InputError(
                f"expected the column {key!r} of {path!r} to hold its directory's value "
                f"{value!r} in every row (the hive key {key!r} replaces it when read), but "
                f"{found}; hint: drop the column from the file, or move the file to the "
                "directory of its value"
            )


def _footer_disagreement(meta: Any, key: str, value: str | None) -> str | None:
    """Why the footer statistics do not show every row of ``key`` equal to ``value``, or None."""
    leaves = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if key not in leaves:
        return "it is a nested column"
    index, wanted = leaves.index(key), _meanings(value)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        stats = group.column(index).statistics
        if group.num_rows == 0:
            continue
        if (
            stats is None
            or not stats.has_null_count
            or (value is not None and not stats.has_min_max)
        ):
            return "the file has no statistics for it, so this cannot be checked without a read"
        if value is None:
            if stats.null_count != group.num_rows:
                return "it holds values other than null"
            continue
        if stats.null_count:
            return f"it holds {stats.null_count} null(s)"
        low, high = (_stat_text(v, stats.physical_type) for v in (stats.min, stats.max))
        if not (_meanings(low) & wanted and _meanings(high) & wanted):
            return f"it holds values from {low!r} to {high!r}"
    return None


def _stat_text(value: Any, physical_type: str) -> str:
    """A footer statistic as text comparable with a directory name."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, date):  # datetime too
        return value.isoformat()
    if physical_type == "FLOAT":
        import numpy as np

        return str(np.float32(value))
    return str(value)
