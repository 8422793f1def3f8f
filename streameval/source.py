"""Turn anything a user points at into a validated Polars ``LazyFrame``. Never collects.

Accepted sources: a path to a Parquet file, a directory (read recursively, hive partitions
such as ``day=2026-10-01/`` become columns), a glob, a list of those, a ``pl.LazyFrame``,
a ``pl.DataFrame``, a ``pyarrow.Table`` or a ``pyarrow.dataset.Dataset``.

>>> import polars as pl
>>> lf = to_lazyframe(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.9]}))
>>> require_columns(lf.collect_schema(), ["y", "p"], role="label/score")
>>> require_columns(lf.collect_schema(), ["score"], role="score")
Traceback (most recent call last):
...
streameval.errors.InputError: expected a score column 'score', but the data has no such ...
"""

from __future__ import annotations

import difflib
import glob as globlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from .errors import InputError, close_matches
from .hive import check_hive_columns, check_partition_spellings, decoded
from .options import Engine as Engine  # re-exported: the sources' engine

PathLike = str | os.PathLike[str]
Source = PathLike | Sequence[PathLike] | pl.LazyFrame | pl.DataFrame | Any

_GLOB_CHARS = set("*?[")


def _expand(path: PathLike) -> list[str]:
    """Parquet files named by one path, directory or glob (sorted), or raise InputError."""
    text = os.fspath(path)
    if any(c in text for c in _GLOB_CHARS):
        files = sorted(f for f in globlib.glob(text, recursive=True) if os.path.isfile(f))
        if not files:
            raise InputError(
                f"expected the glob {text!r} to match Parquet files, but it matched none; "
                "hint: check the pattern, or use '**' to match nested directories"
            )
        return files
    p = Path(text)
    if p.is_dir():
        files = sorted(
            str(f)
            for f in p.rglob("*")
            if f.is_file() and not f.name.startswith((".", "_")) and f.suffix != ".crc"
        )
        if not files:
            raise InputError(f"expected Parquet files under the directory {text!r}, found none")
        return files
    if p.is_file():
        return [text]
    parent = p.parent if str(p.parent) else Path(".")
    near = difflib.get_close_matches(p.name, [c.name for c in parent.iterdir()]) if (
        parent.is_dir()
    ) else []  # fmt: skip
    hint = f"; did you mean {str(parent / near[0])!r}?" if near else "; hint: check the path"
    raise InputError(
        f"expected a Parquet file, directory or glob, but {text!r} does not exist{hint}"
    )


def is_spark_frame(source: Any) -> bool:
    """Whether ``source`` is a Spark DataFrame (classic or Connect), without importing pyspark.

    :func:`streameval.evaluate` and :func:`streameval.accumulate` hand such a source to
    :mod:`streameval.spark`.

    Parameters
    ----------
    source : Any
        Any object.

    Returns
    -------
    bool
        True for a ``pyspark.sql.DataFrame`` or a Spark Connect DataFrame.

    Examples
    --------
    >>> is_spark_frame(pl.DataFrame())
    False
    >>> is_spark_frame("preds/*.parquet")
    False

    """
    kind = type(source)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.sql")


def source_files(source: Source) -> list[str] | None:
    """The Parquet files behind a path-like source, or None for in-memory sources.

    Raises InputError when two directory names spell one hive partition value
    (:func:`check_partition_spellings`).
    """
    if isinstance(source, str | os.PathLike):
        files = _expand(source)
    elif isinstance(source, list | tuple) and all(isinstance(s, str | os.PathLike) for s in source):
        if not source:
            raise InputError("expected at least one source path, got an empty list")
        files = [f for s in source for f in _expand(s)]
    else:
        return None
    check_partition_spellings(files)
    return files


def to_lazyframe(source: Source, files: list[str] | None = None) -> pl.LazyFrame:
    """Lazy view of ``source``; paths are scanned (hive partitions included), never read here.

    ``files`` are the source's files when already listed (:func:`source_files`). A file whose
    own column is named like a hive key of its path must hold the directory's value
    (:func:`check_hive_columns`, from the footers).
    """
    if isinstance(source, pl.LazyFrame):
        return source
    if isinstance(source, pl.DataFrame):
        return source.lazy()
    files = source_files(source) if files is None else files
    if files is not None:
        check_hive_columns(source, files)
        # One directory or glob goes to Polars as it is, so that only the folders below it
        # count as hive partitions (a `k=v` folder above the root is not a column).
        single = isinstance(source, str | os.PathLike) and hive_root(source) is not None
        target = os.fspath(source) if single else files  # type: ignore[arg-type]
        return pl.scan_parquet(target, hive_partitioning=True, extra_columns="ignore")
    module = type(source).__module__
    if module.startswith("pyarrow"):
        import pyarrow as pa
        import pyarrow.dataset as ds

        if isinstance(source, ds.Dataset):
            return pl.scan_pyarrow_dataset(source)
        if isinstance(source, pa.Table | pa.RecordBatch):
            try:
                frame = pl.from_arrow(source)
            except (pl.exceptions.PolarsError, pa.ArrowException) as exc:
                raise InputError(
                    f"expected Arrow data Polars can read, but converting it failed: "
                    f"{_first_line(exc)}; hint: cast the unsupported columns in pyarrow first"
                ) from None
            assert isinstance(frame, pl.DataFrame)
            return frame.lazy()
    raise InputError(
        "expected a path, glob, directory, list of paths, polars LazyFrame/DataFrame, pyarrow "
        f"Table/Dataset or Spark DataFrame as the source, got {type(source).__module__}."
        f"{type(source).__name__}; hint: convert it to one of these (pandas: pl.from_pandas)"
    )


def hive_root(source: Source) -> str | None:
    """The folder below which hive partitions count, for a single directory or glob source."""
    if not isinstance(source, str | os.PathLike):
        return None
    text = os.fspath(source)
    if any(c in text for c in _GLOB_CHARS):
        head = text[: min(text.index(c) for c in _GLOB_CHARS if c in text)]
        return os.path.dirname(head) or "."
    return text if os.path.isdir(text) else None


@dataclass
class Unit:
    """The rows of one hive partition whose column is a group key (``day=2026-10-01/``).

    No group spans two units, so each unit is accumulated (and finalized) on its own: smaller
    hash tables and sorts, memory bounded by the largest unit, nothing to re-aggregate. A unit
    is the whole source filtered on the partition value; Polars reads only its files. A shard
    of any other source (:func:`shard_units`) is a unit too, without constants.
    """

    lf: pl.LazyFrame
    constants: dict[str, Any]
    #: A shard's (:func:`shard_units`): the expression of each row's shard, and its own.
    shard: tuple[pl.Expr, int] | None = None
    #: A hive unit's files (when its value was read from their directories' names).
    files: tuple[str, ...] = ()
    #: A shard of a large hive unit (:func:`split_large`): the reader its shards share
    #: (:class:`streameval.kernels.scatter.Scatter`, set by the planner).
    scatter: Any = None


def hive_units(
    lf: pl.LazyFrame, source: Source, files: Sequence[str], keys: Sequence[str]
) -> list[Unit] | None:
    """Split the source by the first group key that is a hive partition column, if any."""
    root = hive_root(source)
    if root is None:
        return None
    parts = [Path(os.path.relpath(f, root)).parts[:-1] for f in files]
    for key in keys:
        if all(sum(p.startswith(f"{key}=") for p in fp) == 1 for fp in parts):
            named = {p[len(key) + 1 :] for fp in parts for p in fp if p.startswith(f"{key}=")}
            names = sorted(named)
            values = _partition_values(lf, key, names, files)
            held: list[tuple[str, ...]] = [()] * len(names)
            if values is None:  # read from the rows (each row carries its file's value)
                found = collect(lf.select(pl.col(key).unique()), "streaming", list(files))
                values = found.to_series().to_list()
            else:  # each value's files, from its directory's name
                index = {name: i for i, name in enumerate(names)}
                lists: list[list[str]] = [[] for _ in names]
                for f, fp in zip(files, parts, strict=True):
                    (name,) = (p[len(key) + 1 :] for p in fp if p.startswith(f"{key}="))
                    lists[index[name]].append(f)
                held = [tuple(x) for x in lists]
            return [
                Unit(
                    lf.filter(pl.col(key).is_null() if v is None else pl.col(key) == v),
                    {key: v},
                    files=held[i] if i < len(held) else (),
                )
                for i, v in enumerate(values)
            ]
    return None


#: Bytes of a hive unit's files below which its rows are not counted (:func:`split_large`):
#: far fewer rows than a shard's.
SMALL_UNIT_BYTES = 512 << 10


def _footer_rows(files: Sequence[str]) -> int | None:
    """The rows of ``files`` from their footers; None when small or not readable here.

    Files of fewer than :data:`SMALL_UNIT_BYTES` together are not counted; a file that
    cannot be read (a corrupt footer) is left to the pass, which names it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if not files or sum(os.path.getsize(f) for f in files) < SMALL_UNIT_BYTES:
            return None
        return sum(int(pq.read_metadata(f).num_rows) for f in files)
    except (pa.ArrowException, OSError):
        return None


def split_large(
    units: list[Unit],
    keys: Sequence[str],
    schema: pl.Schema,
    width: int,
    reader: Callable[[pl.LazyFrame, int, pl.Expr], Any],
) -> list[Unit]:
    """Hive units of more than :data:`SHARD_ROWS` rows split into shards of whole groups.

    A unit's rows are counted from its files' footers (units of files smaller than
    :data:`SMALL_UNIT_BYTES` are not counted); ``width`` is the columns read a row (a
    shard's budget is in rows of four). A unit split has its shards in its place, each its
    rows filtered on a hash of the keys that vary within it (:func:`shard_expr`), all
    sharing ``reader(unit rows, shards, shard expression)`` (their rows read once); a unit
    whose rows are one group (no varying key) stays whole.
    """
    out = []
    for unit in units:
        varying = [k for k in keys if k not in unit.constants]
        rows = _footer_rows(unit.files) if varying else None
        shards = 0 if rows is None else -(-(rows * max(4, width) // 4) // SHARD_ROWS)
        if shards <= 1:
            out.append(unit)
            continue
        shard = shard_expr(varying, schema, shards)
        shared = reader(unit.lf, shards, shard)
        for k in range(shards):
            lf = unit.lf.filter(shard == k)
            out.append(Unit(lf, unit.constants, (shard, k), unit.files, shared))
    return out


#: Rows of a shard at most (:func:`shard_units`): three units in flight (one summed, two read
#: ahead) at about 25 bytes a row hold 300 MB. Measured on a file of 1e8 rows: 4M keeps the
#: pass's peak near 0.9 GB at 2e7 rows and at 1e8 (12M: 1.1 and 1.6 GB), 25% slower at 2e7
#: rows (the split rows then pass through the spill files) and as fast at 1e8.
SHARD_ROWS = 4_000_000
_SHARD_SEED = 0x5AA2D
#: The seed of the first hash of a String key's values (:mod:`streameval.kernels.hashcodes`).
TEXT_SEED = 0x5E11_5EED


def text_hash(text: pl.Expr, seed: int = TEXT_SEED) -> pl.Expr:
    """A 64-bit hash of each value of ``text``, 0 for null (UInt64)."""
    return pl.when(text.is_null()).then(pl.lit(0, pl.UInt64)).otherwise(text.hash(seed))


def shard_expr(keys: Sequence[str], schema: pl.Schema, shards: int) -> pl.Expr:
    """Each row's shard (UInt64 below ``shards``): a hash of its group keys.

    The hashes of the keys are combined by exclusive or; a String key's is the one its codes
    are numbered from (:func:`text_hash`), which Polars then computes once a row.

    >>> lf = pl.LazyFrame({"g": ["a", "b", None], "d": [1, 1, 2]})
    >>> shard = shard_expr(["g", "d"], lf.collect_schema(), 3)
    >>> values = lf.select(shard).collect().to_series().to_list()
    >>> len(values), all(0 <= v < 3 for v in values)
    (3, True)
    """
    hashes = [
        text_hash(pl.col(k)) if schema[k] == pl.String else pl.col(k).hash(_SHARD_SEED + i)
        for i, k in enumerate(keys)
    ]
    combined = hashes[0]
    for h in hashes[1:]:
        combined = combined.xor(h)
    return combined % shards


def shard_units(lf: pl.LazyFrame, keys: Sequence[str], schema: pl.Schema, rows: int) -> list[Unit]:
    """The source as shards of whole groups, each of about :data:`SHARD_ROWS` rows at most.

    Sources that are neither split into hive units nor held in memory (a file, a glob, a
    LazyFrame, a hive directory grouped without its partition key) are summed shard by shard,
    as hive units are: no group spans two shards (a row's shard is a hash of its keys,
    :func:`shard_expr`), so memory holds the rows of a few shards, not of the source, and
    nothing is re-aggregated. A shard's rows are the source filtered on its hash; the compiled
    kernels read the source once for all of them (:mod:`streameval.kernels.scatter`). Without
    keys, or with one group bigger than a shard, memory grows with that group's rows.

    >>> lf = pl.LazyFrame({"g": ["a", "b", "c", "a"], "x": [1, 2, 3, 4]})
    >>> schema = lf.collect_schema()
    >>> [u.lf.collect().height for u in shard_units(lf, ["g"], schema, 4)]
    [4]
    >>> units = shard_units(lf, ["g"], schema, 9 * SHARD_ROWS)
    >>> shards = [u.lf.collect()["g"].to_list() for u in units]
    >>> len(shards), sorted(g for shard in shards for g in shard)
    (9, ['a', 'a', 'b', 'c'])
    >>> sum("a" in shard for shard in shards)  # a group is in one shard
    1
    """
    shards = -(-rows // SHARD_ROWS)
    if shards <= 1 or not keys:
        return [Unit(lf, {})]
    shard = shard_expr(keys, schema, shards)
    return [Unit(lf.filter(shard == k), {}, (shard, k)) for k in range(shards)]


def _partition_values(
    lf: pl.LazyFrame, key: str, named: list[str], files: Sequence[str] = ()
) -> list[Any] | None:
    """A hive key's values from its directory names (None when they cannot be trusted).

    The names are decoded and parsed to the key's type as Polars reads them; the parse is
    trusted when the values are distinct and together select every row (counted from the
    files' metadata, where reading the key's values from the rows touches every row).

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for day in ("2026-10-01", "2026-10-02"):
    ...     (root / f"day={day}").mkdir()
    ...     pl.DataFrame({"x": [1, 2]}).write_parquet(root / f"day={day}" / "0.parquet")
    >>> lf = pl.scan_parquet(root, hive_partitioning=True)
    >>> _partition_values(lf, "day", ["2026-10-01", "2026-10-02"])
    [datetime.date(2026, 10, 1), datetime.date(2026, 10, 2)]
    >>> _partition_values(lf, "day", ["2026-10-01", "2026-10-03"]) is None
    True
    """
    dtype = lf.collect_schema()[key]
    names = [decoded(n) for n in named]
    text = pl.Series(key, names, pl.String)
    try:
        if dtype == pl.Date:
            parsed = text.str.to_date()
        elif isinstance(dtype, pl.Datetime):
            parsed = text.str.to_datetime(time_unit=dtype.time_unit, time_zone=dtype.time_zone)
        else:
            parsed = text.cast(dtype, strict=True)
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if parsed.dtype != dtype or parsed.null_count() != names.count(None):
        return None
    if parsed.n_unique() != parsed.len():  # two names for one value ("1" and "01")
        return None
    col = pl.col(key)
    named_rows = col.is_in(parsed.drop_nulls().implode()) | (
        col.is_null() if parsed.null_count() else pl.lit(False)
    )
    try:
        matched, total = pl.collect_all(
            [lf.filter(named_rows).select(pl.len()), lf.select(pl.len())]
        )
    except _ENGINE_ERRORS as exc:
        raise read_error(exc, list(files)) from None
    if matched.item() != total.item():  # a name parsed to a value the rows do not have
        return None
    return parsed.to_list()


def require_columns(schema: pl.Schema, names: Iterable[str], *, role: str) -> None:
    """Raise InputError naming the first missing column and the closest existing names."""
    for name in names:
        if name not in schema:
            raise InputError(
                f"expected a {role} column {name!r}, but the data has no such column; "
                + close_matches(name, schema.names())
            )


def diagnose_files(
    files: Sequence[str], columns: Sequence[str] = (), *, deep: bool = False
) -> str | None:
    """Explain which file is unreadable or differs from the first, or None if all look fine.

    Checks each file's schema (types, and presence of ``columns``); with ``deep`` also decodes
    every file, to find damaged data pages. Only called on the error path.
    """
    import pyarrow.parquet as pq

    schemas = []
    for f in files:
        try:
            schemas.append((f, pq.read_schema(f)))
        except Exception as exc:
            return f"cannot read {f!r} as Parquet ({exc}); hint: remove or rewrite that file"

    def has(f: str, schema: Any, name: str) -> bool:
        in_path = any(part.startswith(f"{name}=") for part in Path(f).parts)
        return name in schema.names or in_path

    for name in columns:
        holders = [f for f, schema in schemas if has(f, schema, name)]
        lacking = [f for f, schema in schemas if not has(f, schema, name)]
        if holders and lacking:
            return (
                f"expected every partition to have the column {name!r}, but {lacking[0]!r} "
                f"lacks it (it is in {holders[0]!r}); hint: rewrite that partition, or select "
                "the files that have it"
            )
    first_file, first_schema = schemas[0]
    for f, schema in schemas[1:]:
        for field in schema:
            idx = first_schema.get_field_index(field.name)
            if idx >= 0 and first_schema.field(idx).type != field.type:
                return (
                    f"mismatched schemas across partitions: column {field.name!r} is "
                    f"{_type_name(first_schema.field(idx).type)} in {first_file!r} but "
                    f"{_type_name(field.type)} in {f!r}; hint: rewrite the partitions with one "
                    "type, or cast in a LazyFrame"
                )
    if deep:
        for f in files:
            try:
                for _ in pq.ParquetFile(f).iter_batches(batch_size=1 << 16):
                    pass
            except Exception as exc:
                return (
                    f"cannot decode {f!r}: the file is damaged ({exc}); hint: remove or "
                    "rewrite that file"
                )
    return None


def _type_name(arrow_type: Any) -> str:
    """Polars' name for an Arrow type, e.g. Float64 rather than double."""
    import pyarrow as pa

    try:
        return str(pl.from_arrow(pa.array([], type=arrow_type)).dtype)  # type: ignore[union-attr]
    except Exception:
        return str(arrow_type)


_ENGINE_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError)


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (Polars appends its query plan)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def read_error(
    exc: BaseException, files: list[str] | None, columns: Sequence[str] = ()
) -> InputError:
    """The InputError for an engine error while reading: the file to blame, if one is found."""
    hint = diagnose_files(files, columns, deep=True) if files else None
    if hint:
        return InputError(hint)
    if files:
        return InputError(
            f"reading the source failed: {_first_line(exc)}; "
            "hint: check that every file is readable Parquet with the same schema"
        )
    return InputError(
        f"computing the source failed: {_first_line(exc)}; hint: check the expressions of the "
        "LazyFrame (casts, parses) on the rows it holds"
    )


def collect(
    query: pl.LazyFrame, engine: Engine, files: list[str] | None, columns: Sequence[str] = ()
) -> pl.DataFrame:
    """Collect, turning engine errors about files into one clear message."""
    try:
        return query.collect(engine=engine)
    except _ENGINE_ERRORS as exc:
        raise read_error(exc, files, columns) from None


#: Rows per batch where a sum over a streaming source's rows is computed batch by batch in
#: memory, the batches' sums then added in their order (:mod:`streameval.ordered`).
BATCH_ROWS = 1 << 20


def collect_batches(
    query: pl.LazyFrame,
    files: list[str] | None,
    columns: Sequence[str] = (),
    rows: int | None = None,
) -> Iterator[pl.DataFrame]:
    """The rows of ``query`` in the streaming engine's batches, with :func:`collect`'s errors.

    ``rows``: every batch but the last has that many rows (else the engine's sizes).
    """
    try:
        yield from query.collect_batches(engine="streaming", chunk_size=rows)
    except _ENGINE_ERRORS as exc:
        raise read_error(exc, files, columns) from None


def schema_of(lf: pl.LazyFrame, files: list[str] | None) -> pl.Schema:
    """The source's schema, or an InputError naming the unreadable file."""
    try:
        return lf.collect_schema()
    except _ENGINE_ERRORS as exc:
        hint = diagnose_files(files) if files else None
        raise InputError(
            hint
            or f"cannot read the source's schema: {_first_line(exc)}; hint: check the columns "
            "the LazyFrame's expressions name"
        ) from None
