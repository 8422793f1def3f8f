"""State ⇄ Parquet: the spec and schema version travel in the file's metadata."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import StateFileError
from .spec import SCHEMA_VERSION, Spec
from .state import State

SPEC_KEY = b"streameval.spec"
VERSION_KEY = b"streameval.schema_version"


def write_state(state: State, path: str | os.PathLike[str]) -> None:
    """Write ``state`` to ``path`` atomically (temporary file in the same folder, then rename).

    >>> import polars as pl, streameval as se, tempfile, os
    >>> st = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}), label="y", score="p")
    >>> path = os.path.join(tempfile.mkdtemp(), "state.parquet")
    >>> st.write(path)
    >>> se.read_state(path).table.equals(st.table)
    True
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    table = state.table.to_arrow()
    meta = dict(table.schema.metadata or {})
    meta[SPEC_KEY] = state.spec.to_json().encode()
    meta[VERSION_KEY] = str(SCHEMA_VERSION).encode()
    table = table.replace_schema_metadata(meta)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_state(path: str | os.PathLike[str]) -> State:
    """Read a state written by :meth:`State.write`; refuse unknown schema versions."""
    import polars as pl

    if os.path.isdir(path):
        raise StateFileError(
            f"expected a state file, but {os.fspath(path)!r} is a directory; hint: merge the "
            "files in it: se.merge([se.read_state(p) for p in paths])"
        )
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise StateFileError(
            f"expected a state file at {os.fspath(path)!r}, found none; hint: check the path, "
            "or accumulate and write the state first"
        ) from None
    except (pa.ArrowException, OSError) as exc:
        raise StateFileError(
            f"cannot read the state file {os.fspath(path)!r} as Parquet ({exc}); "
            "hint: it may be truncated or not a state file"
        ) from None
    meta = table.schema.metadata or {}
    if SPEC_KEY not in meta:
        raise StateFileError(
            f"expected streameval state metadata in {os.fspath(path)!r}, found none; "
            "hint: this is a Parquet file, but not one written by State.write"
        )

    def bad_metadata(exc: Exception) -> StateFileError:
        return StateFileError(
            f"cannot read the state metadata of {os.fspath(path)!r} ({exc!r}); hint: the file "
            "was not written by State.write, or was altered"
        )

    try:
        version = int(meta.get(VERSION_KEY, b"0"))
    except ValueError as exc:
        raise bad_metadata(exc) from None
    if version != SCHEMA_VERSION:
        raise StateFileError(
            f"expected state schema version {SCHEMA_VERSION}, but {os.fspath(path)!r} has "
            f"version {version}; hint: recompute the state with this streameval version"
        )
    try:
        spec = Spec.from_json(meta[SPEC_KEY].decode())
    except (ValueError, KeyError, TypeError) as exc:
        raise bad_metadata(exc) from None
    frame = pl.from_arrow(table.replace_schema_metadata(None))
    assert isinstance(frame, pl.DataFrame)
    return State(spec, frame)
