"""State ⇄ Parquet: the spec, schema version and a checksum travel in the file's metadata.

A state file is trusted only whole. :func:`write_state` stores a SHA-256 digest of
the schema version, the spec's JSON bytes and the table's content (:func:`content_digest`:
column names, types, null masks and values, independent of how Parquet chunks them) and
writes Parquet page checksums. :func:`read_state` verifies both before anything uses the
data, then checks that the spec's fields are well formed (:meth:`Spec.from_json`) and that
the table holds the columns, types and buckets the spec implies (:func:`validate_spec`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterator

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import files
from .bucketing import EXACT_BITS, float_to_key_scalar
from .errors import StateFileError
from .spec import READABLE_VERSIONS, SCHEMA_VERSION, Spec
from .states import kind_module
from .states.data import StateData

SPEC_KEY = b"streameval.spec"
VERSION_KEY = b"streameval.schema_version"
CHECKSUM_KEY = b"streameval.checksum"
ALGORITHM = "sha256"

_RECOMPUTE = "hint: recompute the state from its source and write it again"


def write_state(
    state: StateData, path: str | os.PathLike[str], *, tag: str = files.DEFAULT_TAG
) -> None:
    """Write ``state`` to ``path`` atomically (temporary file in the same folder, then rename).

    The file gets the user's default mode; ``tag`` marks its temporary file (see
    :mod:`streameval.files`).

    >>> import polars as pl, streameval as se, tempfile, os
    >>> st = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}), label="y", score="p")
    >>> path = os.path.join(tempfile.mkdtemp(), "state.parquet")
    >>> st.write(path)
    >>> se.read_state(path).table.equals(st.table)
    True
    """
    table = state.table.to_arrow()
    spec = state.spec.to_json().encode()
    version = str(state.spec.schema_version).encode()
    meta = dict(table.schema.metadata or {})
    meta[SPEC_KEY] = spec
    meta[VERSION_KEY] = version
    meta[CHECKSUM_KEY] = f"{ALGORITHM}:{content_digest(version, spec, state.table)}".encode()
    table = table.replace_schema_metadata(meta)

    def write(tmp: str) -> None:
        pq.write_table(table, tmp, compression="zstd", write_page_checksum=True)

    files.atomic_write(path, write, tag=tag)


def read_state_file(path: str | os.PathLike[str]) -> tuple[Spec, pl.DataFrame]:
    """The spec and table of a state written by :meth:`State.write`, verified whole or refused.

    :func:`streameval.read_state` makes them a ``State`` (its docstring says what is
    verified and what is refused).
    """
    name = os.fspath(path)
    table = _read_parquet(name)
    meta = table.schema.metadata or {}
    if SPEC_KEY not in meta:
        raise StateFileError(
            f"expected streameval state metadata in {name!r}, found none; "
            "hint: this is a Parquet file, but not one written by State.write"
        )
    version = meta.get(VERSION_KEY, b"0")
    _check_version(version, name)
    if CHECKSUM_KEY not in meta:
        raise StateFileError(
            f"expected a checksum in the metadata of {name!r}, found none: it was written by "
            f"an older streameval, or its metadata was altered; {_RECOMPUTE}"
        )
    frame = _to_polars(table, name)
    _verify_checksum(meta[CHECKSUM_KEY], content_digest(version, meta[SPEC_KEY], frame), name)
    try:
        text = meta[SPEC_KEY].decode()
    except UnicodeDecodeError:  # pragma: no cover - the checksum covers these bytes
        text = ""
    spec = Spec.from_json(text, source=f"the spec of {name!r}")
    if spec.schema_version != int(version):
        raise StateFileError(
            f"expected the spec of {name!r} to be of the file's schema version "
            f"{int(version)}, but it is of version {spec.schema_version}; {_RECOMPUTE}"
        )
    validate_spec(spec, frame, name)
    return spec, frame


def _read_parquet(name: str) -> pa.Table:
    """The file's Arrow table, Parquet page checksums verified; any failure a StateFileError."""
    if os.path.isdir(name):
        raise StateFileError(
            f"expected a state file, but {name!r} is a directory; hint: merge the "
            "files in it: se.merge([se.read_state(p) for p in paths])"
        )
    try:
        return pq.read_table(name, page_checksum_verification=True)
    except FileNotFoundError:
        raise StateFileError(
            f"expected a state file at {name!r}, found none; hint: check the path, "
            "or accumulate and write the state first"
        ) from None
    except Exception as exc:  # a damaged footer makes pyarrow raise many kinds of error
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise StateFileError(
            f"cannot read the state file {name!r} as Parquet ({first}); "
            "hint: it may be truncated, corrupted or not a state file"
        ) from None


def _check_version(version: bytes, name: str) -> None:
    """Refuse a file of a schema version this one cannot read (first: its checksum may differ)."""
    try:
        number = int(version)
    except ValueError:
        number = None
    if number not in READABLE_VERSIONS:
        raise StateFileError(
            f"expected state schema version {SCHEMA_VERSION} (or one of "
            f"{', '.join(map(str, READABLE_VERSIONS))}), but {name!r} has "
            f"version {version.decode(errors='replace')}; hint: recompute the state with this "
            "streameval version"
        )


def _to_polars(table: pa.Table, name: str) -> pl.DataFrame:
    try:
        frame = pl.from_arrow(table.replace_schema_metadata(None))
    except Exception as exc:  # types a damaged footer made up
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise StateFileError(
            f"cannot read the table of the state file {name!r} ({first}); "
            "hint: it may be corrupted or not a state file"
        ) from None
    if not isinstance(frame, pl.DataFrame):  # pragma: no cover - a table gives a frame
        raise StateFileError(f"expected a table in {name!r}; {_RECOMPUTE}")
    return frame


def _verify_checksum(stored: bytes, digest: str, name: str) -> None:
    expected = f"{ALGORITHM}:{digest}".encode()
    if not hmac.compare_digest(stored, expected):
        raise StateFileError(
            f"expected the state file {name!r} to match its {ALGORITHM} checksum, but its "
            "table or metadata (spec, schema version) differ from what was written: the file "
            f"is corrupted or was altered; {_RECOMPUTE}"
        )


def content_digest(version: bytes, spec: bytes, frame: pl.DataFrame) -> str:
    """SHA-256 hex digest of a schema version, a spec's JSON bytes and a table's content.

    The table's part covers its height and, per column, the name, the Polars type, the null
    mask and the values in a canonical form, so it does not depend on chunking or on what
    null slots hold: a frame read back from Parquet has the digest of the frame written.

    >>> import polars as pl
    >>> a = pl.DataFrame({"k": ["x", None], "v": [1.5, 2.0]})
    >>> b = pl.concat([a[:1], a[1:]], rechunk=False)
    >>> content_digest(b"2", b"{}", a) == content_digest(b"2", b"{}", b)
    True
    >>> content_digest(b"2", b"{}", a) == content_digest(b"2", b"{ }", a)
    False
    """
    h = hashlib.sha256()

    def part(data: bytes | memoryview) -> None:
        view = memoryview(data)
        h.update(view.nbytes.to_bytes(8, "little"))
        h.update(view)

    part(version)
    part(spec)
    part(frame.height.to_bytes(8, "little"))
    for series in frame.iter_columns():
        part(series.name.encode())
        part(str(series.dtype).encode())
        for data in _column_parts(series):
            part(data)
    return h.hexdigest()


def _column_parts(series: pl.Series) -> Iterator[bytes | memoryview]:
    """Canonical bytes of a column: null count, null mask, then its values."""
    nulls = series.null_count()
    yield nulls.to_bytes(8, "little")
    if nulls:
        yield np.packbits(series.is_null().to_numpy()).tobytes()
    dtype = series.dtype
    if (dtype.is_numeric() and not isinstance(dtype, pl.Decimal)) or dtype.is_temporal():
        physical = series.to_physical()
        yield from _buffer(physical.fill_null(0) if nulls else physical)
    elif dtype == pl.Boolean:
        yield from _buffer(series.fill_null(False) if nulls else series)
    elif dtype in (pl.String, pl.Binary, pl.Categorical) or isinstance(dtype, pl.Enum | pl.Decimal):
        text = series if dtype in (pl.String, pl.Binary) else series.cast(pl.String)
        yield from _bytes_values(text.fill_null("" if text.dtype == pl.String else b""))
    else:  # nested or other rare key types
        yield repr(series.to_list()).encode()


def _buffer(series: pl.Series) -> Iterator[memoryview]:
    values = np.ascontiguousarray(series.to_numpy())
    yield values.data.cast("B")


def _bytes_values(series: pl.Series) -> Iterator[bytes | memoryview]:
    """Value lengths and the concatenated bytes of a String or Binary column."""
    array = series.to_arrow().cast(pa.large_binary())
    if isinstance(array, pa.ChunkedArray):  # pragma: no cover - a Series gives one array
        array = array.combine_chunks()
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)
    offsets = offsets[array.offset : array.offset + len(array) + 1]
    yield np.diff(offsets).data.cast("B")
    data = array.buffers()[2]
    if data is not None and len(offsets):
        yield memoryview(data)[int(offsets[0]) : int(offsets[-1])]


def validate_spec(spec: Spec, table: pl.DataFrame, path: str) -> None:
    """Refuse a spec that contradicts its table: columns, their types, bucket edges.

    The table must hold exactly the spec's keys, the kind's row columns and its value
    columns (:mod:`streameval.states`); row columns and counts are integers, sums of
    weights Float64 when the state is weighted; each bucket is a bucket edge at the spec's
    precision (or one of its splits).

    >>> import polars as pl, streameval as se
    >>> from dataclasses import replace
    >>> st = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}), label="y", score="p")
    >>> validate_spec(st.spec, st.table, "s.parquet")
    >>> validate_spec(replace(st.spec, kind="regression"), st.table, "s.parquet")
    Traceback (most recent call last):
    ...
    streameval.errors.StateFileError: expected the table of 's.parquet' to have the columns ...
    """
    kind = kind_module(spec)
    rows = list(kind.group_columns(spec))
    values = list(kind.merge_ops(spec))
    expected = [*spec.keys, *rows, *values]
    if sorted(expected) != sorted(table.columns):
        missing = [c for c in expected if c not in table.columns]
        extra = [c for c in table.columns if c not in expected]
        raise StateFileError(
            f"expected the table of {path!r} to have the columns its {spec.kind} spec implies "
            f"(keys {list(spec.keys)}), but {_listed('lacks', missing)}"
            f"{' and ' if missing and extra else ''}{_listed('has extra', extra)}; "
            f"the spec or the table was altered; {_RECOMPUTE}"
        )
    wrong = [
        f"{c!r} is {table.schema[c]}, expected {want}"
        for c in [*rows, *values]
        if not _dtype_fits(table.schema[c], want := _expected_dtype(c, spec, c in rows))
    ]
    if wrong:
        raise StateFileError(
            f"expected the state columns of {path!r} to have the types its spec implies, but "
            f"{'; '.join(wrong)}; the spec or the table was altered; {_RECOMPUTE}"
        )
    _check_buckets(spec, table, [c for c in rows if c.startswith("bucket")], path)


def _listed(what: str, names: list[str]) -> str:
    return f"{what} {', '.join(repr(n) for n in names)}" if names else ""


_COUNTS = (
    "n", "n_outside", "n_unnormalized", "queries", "relevant_queries", "seen", "n_unlabeled",
)  # fmt: skip


def _expected_dtype(column: str, spec: Spec, row_column: bool) -> str:
    """The type a state column must have: "integer", "Int64" or "Float64"."""
    if row_column:
        return "integer"
    if column in _COUNTS or column.startswith("bad_"):
        return "Int64"
    if column in ("pos", "neg", "unlabeled") and not spec.weighted:
        return "Int64"
    return "Float64"


def _dtype_fits(dtype: pl.DataType, want: str) -> bool:
    return dtype.is_integer() if want == "integer" else str(dtype) == want


def _check_buckets(spec: Spec, table: pl.DataFrame, buckets: list[str], path: str) -> None:
    """Every bucket key must be a bucket edge at ``spec.precision`` or one of the splits."""
    if spec.precision >= EXACT_BITS or not buckets:
        return
    step = 1 << (EXACT_BITS - spec.precision)
    cuts = pl.Series([float_to_key_scalar(s) for s in spec.splits], dtype=pl.Int64)
    off = [(pl.col(b) % step != 0) & ~pl.col(b).is_in(pl.lit(cuts).implode()) for b in buckets]
    found = table.select(pl.any_horizontal(off).fill_null(False).sum()).item()
    if found:
        raise StateFileError(
            f"expected the buckets of {path!r} to be bucket edges at its spec's precision "
            f"({spec.precision} bits), but {found} row(s) are not: the spec's precision or "
            f"splits were altered; {_RECOMPUTE}"
        )
