"""What runs on Spark's executors: Arrow batches in, states and metric tables out (no pyspark).

Spark hands a ``mapInArrow`` function one partition as an iterator of Arrow record batches
(10,000 rows each by default). Calling Polars per batch would pay its fixed costs a hundred
times per million rows, so batches are buffered into blocks of about ``block_rows`` rows; each
block is accumulated by :func:`streameval.accumulate` on an in-memory DataFrame, the very code
of the local path, and the partition's block states are merged before anything leaves it.

A partition's state leaves as *blobs*: its rows split by a hash of the group keys into
``parts`` slices, each slice one row ``(part, Arrow IPC bytes)``. Spark repartitions the blobs
on ``part``, so every state row of a group meets in one partition, where :func:`merger`
re-aggregates them (for :func:`streameval.spark.accumulate`) or :func:`finalizer` also
computes the metric table (for :func:`streameval.spark.evaluate`). Spark thus moves a few
thousand byte strings instead of millions of state rows, each of which would cross between
Arrow and Spark's row format twice.

Errors that streameval raises on bad input are passed to the driver in a form it turns back
into the same exception (:func:`encode_error` / :func:`decode_error`).
"""

from __future__ import annotations

import builtins
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from .. import errors
from ..crossval import fold_metrics
from ..local import warn_once
from ..options import Accumulation
from ..pipeline import local_accumulate
from ..state import State, merge
from .rows import marker

FINALIZED = "ipc binary, warnings string, bad long"

_MARK = "@@streameval-error@@"
_ERROR = re.compile(re.escape(_MARK) + r"(.*?)" + re.escape(_MARK), re.DOTALL)
# Merge a partition's block states whenever they hold this many rows together, so that an
# executor holds at most about one merged state plus this many rows.
_MERGE_ROWS = 4_000_000


def encode_error(error: errors.StreamevalError) -> RuntimeError:
    """A RuntimeError whose text carries ``error``'s class and message to the driver.

    >>> e = encode_error(errors.InputError("expected x, got y"))
    >>> decoded = decode_error(str(e))
    >>> type(decoded).__name__, str(decoded)
    ('InputError', 'expected x, got y')
    """
    payload = json.dumps({"type": type(error).__name__, "message": str(error)})
    return RuntimeError(f"{_MARK}{payload}{_MARK}")


def decode_error(text: str) -> errors.StreamevalError | None:
    """The streameval error encoded in ``text`` (a Spark exception's message), if any."""
    found = _ERROR.search(text)
    if found is None:
        return None
    payload = json.loads(found.group(1))
    kind = getattr(errors, str(payload.get("type")), errors.InputError)
    if not (isinstance(kind, type) and issubclass(kind, errors.StreamevalError)):
        kind = errors.InputError
    error: errors.StreamevalError = kind(payload["message"])
    return error


@dataclass(frozen=True)
class Task:
    """One accumulation shipped to the executors: keyword arguments and block size.

    Attributes
    ----------
    options : dict
        Keyword arguments of :func:`streameval.accumulate` (source excluded).
    block_rows : int
        Rows buffered per Polars call.

    """

    options: Mapping[str, Any]
    block_rows: int = 1_000_000

    def state(self, table: pa.Table) -> State:
        """The state of one block of input rows."""
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return local_accumulate(frame, Accumulation(**self.options, engine="in-memory"))


def blocks(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Record batches regrouped into tables of at least ``rows`` rows (the last may be short).

    >>> b = pa.RecordBatch.from_pydict({"x": [1, 2, 3]})
    >>> [t.num_rows for t in blocks(iter([b] * 5), 7)]
    [9, 6]
    """
    buffer: list[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        buffer.append(batch)
        held += batch.num_rows
        if held >= rows:
            yield pa.Table.from_batches(buffer)
            buffer, held = [], 0
    if buffer:
        yield pa.Table.from_batches(buffer)


def partition_state(task: Task, batches: Iterator[pa.RecordBatch]) -> State | None:
    """The merged state of one Spark partition (None when it has no rows)."""
    states: list[State] = []
    held = 0
    for table in blocks(batches, task.block_rows):
        state = task.state(table)
        states.append(state)
        held += state.table.height
        if len(states) > 1 and held >= _MERGE_ROWS:
            states = [merge(states)]
            held = states[0].table.height
    return merge(states) if states else None


BLOBS = "part int, ipc binary"
_IPC = pa.ipc.IpcWriteOptions(compression="lz4")


def encode_table(table: pl.DataFrame) -> bytes:
    """A table as (LZ4-compressed) Arrow IPC bytes.

    >>> decode_table(encode_table(pl.DataFrame({"x": [1, 2]})))["x"].to_list()
    [1, 2]
    """
    sink = pa.BufferOutputStream()
    arrow = table.to_arrow()
    with pa.ipc.new_stream(sink, arrow.schema, options=_IPC) as writer:
        writer.write_table(arrow)
    return bytes(sink.getvalue().to_pybytes())


def decode_table(payload: bytes) -> pl.DataFrame:
    """The table of :func:`encode_table`'s bytes."""
    frame = pl.from_arrow(pa.ipc.open_stream(pa.py_buffer(payload)).read_all())
    assert isinstance(frame, pl.DataFrame)
    return frame


def split(
    table: pl.DataFrame, route: Sequence[str], parts: int
) -> Iterator[tuple[int, pl.DataFrame]]:
    """``(part, rows)`` slices of a state table: a hash of the ``route`` keys modulo ``parts``.

    Rows with equal route keys land in the same part (Polars' hash, the same on every
    executor running the same Polars version).

    >>> t = pl.DataFrame({"g": ["a", "b", "a", "c"], "n": [1, 2, 3, 4]})
    >>> sorted(len(rows) for _, rows in split(t, ["g"], 2)) in ([1, 3], [2, 2], [4])
    True
    >>> [(part, len(rows)) for part, rows in split(t, [], 8)]
    [(0, 4)]
    """
    if not route or parts == 1:
        yield 0, table
        return
    code = (pl.struct(list(route)).hash(seed=0) % parts).cast(pl.Int32).alias("_se_part")
    for (part,), rows in table.with_columns(code).partition_by("_se_part", as_dict=True).items():
        yield int(part), rows.drop("_se_part")


def blobs(state: State, route: Sequence[str], parts: int) -> Iterator[pa.RecordBatch]:
    """A state as :data:`BLOBS` rows, one per part its groups hash to."""
    for part, rows in split(state.table, route, parts):
        yield blob(part, rows)


def blob(part: int, rows: pl.DataFrame) -> pa.RecordBatch:
    """One :data:`BLOBS` row: a part and its rows as Arrow IPC bytes."""
    return pa.RecordBatch.from_pydict(
        {"part": pa.array([part], pa.int32()), "ipc": [encode_table(rows)]}
    )


def mapper(
    task: Task, route: Sequence[str], parts: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The first ``mapInArrow`` function: a partition's rows → its state, as blobs."""

    def accumulate_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            state = partition_state(task, batches)
        except errors.StreamevalError as error:
            raise encode_error(error) from None
        if state is not None:
            yield from blobs(state, route, parts)

    return accumulate_partition


def merged(target: State, batches: Iterator[pa.RecordBatch]) -> State | None:
    """The re-aggregated state of a partition's blobs (None when it has none).

    ``target`` (the state of no rows) gives the spec and the column types.
    """
    tables = [decode_table(p) for b in batches for p in b.column("ipc").to_pylist()]
    if not tables:
        return None
    frame = conform(pl.concat(tables, how="vertical_relaxed"), target.table.schema)
    return merge([State(target.spec, frame), State(target.spec, frame.clear())])


def conform(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """``frame`` with the columns and types of ``schema`` (time zones converted, not recast).

    >>> t = pl.DataFrame({"x": [1], "at": [0]}).with_columns(
    ...     pl.from_epoch("at").dt.replace_time_zone("UTC").dt.convert_time_zone("Asia/Tokyo")
    ... )
    >>> conform(t, pl.Schema({"at": pl.Datetime("us", "UTC"), "x": pl.Int32})).row(0)
    (datetime.datetime(1970, 1, 1, 0, 0, tzinfo=zoneinfo.ZoneInfo(key='UTC')), 1)
    """
    columns = []
    for name, dtype in schema.items():
        column = pl.col(name)
        zone = getattr(dtype, "time_zone", None)
        if zone is not None and getattr(frame.schema[name], "time_zone", None) is not None:
            column = column.dt.convert_time_zone(zone)
        columns.append(column.cast(dtype))
    return frame.select(columns)


def merger(target: State) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function merging the whole groups of a partition (one blob out)."""

    def merge_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        state = merged(target, batches)
        if state is not None:
            yield from blobs(state, [], 1)

    return merge_partition


@dataclass(frozen=True)
class Finish:
    """What :func:`streameval.evaluate` does with a state: ``State.metrics`` or ``fold_metrics``."""

    folds: str | None = None
    repeats: str | None = None
    threshold: float | Sequence[float] | None = None
    alpha: float = 0.5
    beta: float = 1.0
    metrics: Sequence[str] | None = None
    jackknife: str | None = None
    ci: str | None = None
    level: float = 0.95
    auc_method: str = "delong"

    def __call__(self, state: State) -> pl.DataFrame:
        """The metric table of ``state``."""
        inference = {"ci": self.ci, "level": self.level, "auc_method": self.auc_method}
        if self.folds is not None:
            return fold_metrics(
                state, self.folds, self.repeats, threshold=self.threshold, alpha=self.alpha,
                beta=self.beta, metrics=self.metrics, **inference,  # type: ignore[arg-type]
            )  # fmt: skip
        return state.metrics(
            self.threshold, alpha=self.alpha, beta=self.beta, metrics=self.metrics,
            jackknife=self.jackknife,
            **inference,  # type: ignore[arg-type]
        )  # fmt: skip


def encode_warnings(caught: Sequence[warnings.WarningMessage]) -> list[dict[str, Any]]:
    """Warnings as JSON-able records (a DomainWarning keeps its counts)."""
    out: list[dict[str, Any]] = []
    for w in caught:
        if isinstance(w.message, errors.DomainWarning):
            out.append({"domain": w.message.problems})
        else:
            out.append({"category": w.category.__name__, "message": str(w.message)})
    return out


def reissue(records: Sequence[Mapping[str, Any]]) -> None:
    """Warn on the driver what the executors caught, as the local evaluate does for its units.

    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     reissue([{"category": "UserWarning", "message": "careful"}])
    >>> [str(w.message) for w in caught]
    ['careful']
    """
    messages = []
    for r in records:
        if "domain" in r:
            message: Warning = errors.DomainWarning(dict(r["domain"]))
        else:
            kind = getattr(errors, r["category"], getattr(builtins, r["category"], UserWarning))
            kind = kind if isinstance(kind, type) and issubclass(kind, Warning) else UserWarning
            message = kind(r["message"])
        messages.append(warnings.WarningMessage(message, type(message), __file__, 0))
    warn_once(messages)


def batch_frame(batches: Iterator[pa.RecordBatch]) -> pl.DataFrame | None:
    """A partition's Arrow batches as one DataFrame (None when they hold no rows)."""
    held = [b for b in batches if b.num_rows]
    if not held:
        return None
    frame = pl.from_arrow(pa.Table.from_batches(held))
    assert isinstance(frame, pl.DataFrame)
    return frame


def gathered(target: State, batches: Iterator[pa.RecordBatch]) -> pl.DataFrame | None:
    """The state table of a partition's state rows, aggregated by Spark (None: no rows)."""
    frame = batch_frame(batches)
    return None if frame is None else conform(frame, target.table.schema)


def encoder() -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function sending a partition's state rows as one blob."""

    def encode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        frame = batch_frame(batches)
        if frame is not None:
            yield blob(0, frame)

    return encode_partition


def finalizer(
    target: State, finish: Finish, merge: bool = True
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function finalizing the whole groups of a partition.

    ``merge``: its batches are blobs of partial states, re-aggregated first (:func:`merged`);
    otherwise they are state rows Spark aggregated (:func:`gathered`). The metric table goes
    back as Arrow IPC bytes with the warnings it raised; a partition holding rows of a null
    bucket (rows that cannot be evaluated) sends their count as ``bad`` instead, for the
    driver to name the problem.
    """

    def finalize_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            if merge:
                state = merged(target, batches)
            else:
                table = gathered(target, batches)
                # (rows of a null bucket: checked before a State, which checks its sums)
                if table is not None and (bad := table[marker(target.spec)].null_count()):
                    yield pa.RecordBatch.from_pydict(
                        {"ipc": [b""], "warnings": ["[]"], "bad": [bad]}
                    )
                    return
                state = None if table is None else State(target.spec, table)
            if state is None:
                return
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                table = finish(state)
        except errors.StreamevalError as error:
            raise encode_error(error) from None
        record = {
            "ipc": [encode_table(table)],
            "warnings": [json.dumps(encode_warnings(caught))],
            "bad": [0],
        }
        yield pa.RecordBatch.from_pydict(record)

    return finalize_partition
