"""What runs on Spark's executors: Arrow batches in, a merged state table out (no pyspark).

Spark hands a ``mapInArrow`` function one partition as an iterator of Arrow record batches
(10,000 rows each by default). Calling Polars per batch would pay its fixed costs a hundred
times per million rows, so batches are buffered into blocks of about ``block_rows`` rows; each
block is accumulated by :func:`streameval.accumulate` on an in-memory DataFrame, the very code
of the local path, and the partition's block states are merged before anything leaves the
executor. Errors that streameval raises on bad input are passed to the driver in a form it
turns back into the same exception (:func:`encode_error` / :func:`decode_error`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from .. import errors
from ..accumulate import accumulate
from ..state import State, merge

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
    """One accumulation shipped to the executors: keyword arguments and the output schema.

    Attributes
    ----------
    options : dict
        Keyword arguments of :func:`streameval.accumulate` (source excluded).
    schema : pyarrow.Schema
        The Arrow schema the executors' state tables are cast to (types Spark accepts).
    block_rows : int
        Rows buffered per Polars call.

    """

    options: Mapping[str, Any]
    schema: pa.Schema
    block_rows: int = 1_000_000

    def state(self, table: pa.Table) -> State:
        """The state of one block of input rows."""
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return accumulate(frame, engine="in-memory", **self.options)


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


def state_batches(task: Task, state: State) -> Iterator[pa.RecordBatch]:
    """A state table as Arrow batches of ``task.schema`` (what Spark was told to expect)."""
    table = state.table.select(task.schema.names).to_arrow()
    yield from table.cast(task.schema).to_batches(max_chunksize=1_000_000)


def mapper(task: Task) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function given to ``DataFrame.mapInArrow``: a partition's batches → its state."""

    def accumulate_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            state = partition_state(task, batches)
        except errors.StreamevalError as error:
            raise encode_error(error) from None
        if state is not None:
            yield from state_batches(task, state)

    return accumulate_partition


def serialize(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A partition's batches as Arrow IPC streams in a binary column ``ipc`` (for collecting).

    >>> b = pa.RecordBatch.from_pydict({"x": [1, 2]})
    >>> out = list(serialize(iter([b, b])))
    >>> payloads = [r for batch in out for r in batch.column(0).to_pylist()]
    >>> len(payloads), deserialize(payloads, b.schema)["x"].to_pylist()
    (1, [1, 2, 1, 2])
    """
    sink = pa.BufferOutputStream()
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    for batch in batches:
        if writer is None:
            writer = pa.ipc.new_stream(sink, batch.schema)
        writer.write_batch(batch)
        if sink.tell() >= 64 << 20:
            writer.close()
            yield pa.RecordBatch.from_pydict({"ipc": [sink.getvalue().to_pybytes()]})
            sink, writer = pa.BufferOutputStream(), None
    if writer is not None:
        writer.close()
        yield pa.RecordBatch.from_pydict({"ipc": [sink.getvalue().to_pybytes()]})


def deserialize(payloads: list[bytes], schema: pa.Schema) -> pa.Table:
    """The table of :func:`serialize`'s payloads (empty with ``schema`` when there are none)."""
    tables = [pa.ipc.open_stream(pa.py_buffer(p)).read_all() for p in payloads]
    tables = [t.cast(schema) for t in tables]
    return pa.concat_tables(tables) if tables else schema.empty_table()
