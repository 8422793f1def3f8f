"""The shards of a source read once: rows split by a hash of their keys as batches arrive.

A source that is neither split into hive units nor held in memory is summed in shards
(:func:`streameval.source.shard_units`): no group spans two shards, so each is summed on its
own and memory holds a shard's rows, not the source's. Filtering the source once a shard
would read it once a shard: quadratic in its size. Instead the first shard asked for reads
the source once, in Polars' streaming batches, with the columns the task's kernel collects
(:func:`streameval.kernels.collect.collect_unit` and its multiclass and regression
counterparts), and splits every batch into the shards as it arrives:

- String keys (and other hashed keys, :mod:`.hashcodes`) are numbered over the whole source
  by one hash table a key, carried from batch to batch; each new code's value is kept for
  decoding. The two hashes and the text are dropped: a key becomes one Int32 code.
- A row's shard comes with it, computed by Polars with the expression the shards' filters use
  (:func:`streameval.source.shard_expr`), so a shard holds the same groups read either way;
  a batch's rows get their places in the shards' buffers once, and each column is put
  there (:mod:`.scatterloops`), so a shard's rows of a batch are a slice of each column.
- The slices stay in memory up to :data:`SPILL_BYTES`; beyond that they are appended to one
  file a shard and column in a directory of the system's temporary directory (``TMPDIR``),
  made for the pass and removed once every shard is read back (its size checked).

Each shard is then handed to the kernel as the unit's collected rows: its columns' slices
are the chunks of a DataFrame (no copy). Rows with nulls (bad rows, which the kernel
reports), columns of another type, a hash collision, or a temporary directory that cannot
be written make the shards read the source filtered on their hash instead, as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..codes import KeyCode
from ..errors import caller_level
from . import compiled, scatterloops
from .loops import hash_table

#: Bytes of split rows kept in memory before they are written to the spill files (with
#: :data:`streameval.source.SHARD_ROWS`, what bounds a pass's memory over a file).
SPILL_BYTES = 192 << 20
_SHARD = "_shard"
_MOST_CODES = 2**31 - 1  # a hashed key's codes are kept as Int32

Collect = Callable[[pl.LazyFrame, list[pl.Expr]], pl.DataFrame]
Read = Callable[[pl.LazyFrame, Mapping[str, KeyCode | None], Collect], Any]
Batches = Callable[[pl.LazyFrame], Iterable[pl.DataFrame]]


class _Fallback(Exception):
    """The rows cannot be split here: the shards filter the source instead."""


@dataclass
class Shard:
    """Shard ``index`` of a :class:`Scatter`; ``view`` is how its reader sees the source."""

    scatter: Scatter
    index: int
    view: Callable[[pl.LazyFrame], pl.LazyFrame] = field(default=lambda lf: lf)

    def mapped(self, view: Callable[[pl.LazyFrame], pl.LazyFrame]) -> Shard:
        """The shard as a reader sees it after ``view`` (a bootstrap's row keys, say)."""
        inner = self.view
        return Shard(self.scatter, self.index, lambda lf: view(inner(lf)))

    def read(
        self,
        keys: Sequence[str],
        codes: Mapping[str, KeyCode | None],
        read: Read,
        batches: Batches,
    ) -> tuple[bool, Any]:
        """``(True, rows)``: ``read`` of this shard's rows; ``(False, None)``: filter instead.

        ``read(lf, codes, collect)`` is a task's kernel reader (its ``collect(lf, exprs)``
        collects the columns it wants); ``keys`` are the group keys (``_g0``, … in that order)
        and ``batches`` streams a query's rows with the source's error handling.
        """
        scatter = self.scatter
        scatter.run(self.view(scatter.lf), keys, codes, read, batches)
        if scatter.failed:
            return False, None
        rows = read(scatter.lf, scatter.codes(keys, codes), lambda *_: scatter.frame(self.index))
        return True, rows


class Scatter:
    """A source's rows, read once and split into ``shards`` shards of whole groups.

    ``shard`` is each row's shard (UInt64 below ``shards``), as the shards' filters compute it.
    """

    def __init__(self, lf: pl.LazyFrame, shards: int, shard: pl.Expr) -> None:
        self.lf = lf
        self.shards = shards
        self.shard = shard
        self.failed = False
        self._ran = False
        self._lock = threading.Lock()
        self._keys = 0
        self._names: list[str] = []
        self._hashed: dict[int, Any] = {}  # key index → its hash table
        self._texts: dict[int, list[pl.Series]] = {}
        self._lookups: dict[int, pl.Series] = {}
        # a buffer a column, a row a shard: the rows not spilled yet, ``_fill`` of each shard
        self._buffers: list[np.ndarray[Any, Any]] = []
        self._fill = np.zeros(shards, np.int64)
        self._dest = np.zeros(0, np.int64)  # a batch's places in the buffers
        self._counts = np.zeros(shards, np.int64)
        self._spilled = np.zeros(shards, np.int64)
        self._dir: str | None = None
        self._removal: weakref.finalize[Any, Any] | None = None  # removes _dir, once
        self._left = shards

    def run(
        self,
        lf: pl.LazyFrame,
        keys: Sequence[str],
        codes: Mapping[str, KeyCode | None],
        read: Read,
        batches: Batches,
    ) -> None:
        """Read and split the source (once; later calls return at once)."""
        with self._lock:
            if self._ran:
                return
            self._ran = True
            loops = compiled.loops()
            started: list[bool] = []

            def capture(lf: pl.LazyFrame, exprs: list[pl.Expr]) -> pl.DataFrame:
                started.append(True)
                assert loops is not None

                query = lf.select(*exprs, self.shard.alias(_SHARD))
                for batch in batches(query):
                    if batch.height:
                        self._add(batch, loops, scatterloops)
                return pl.DataFrame(schema=query.collect_schema()).drop(_SHARD)

            self._keys = len(keys)
            try:
                if loops is None or not keys:
                    raise _Fallback
                read(lf, codes, capture)
                if not started:  # the reader had no kernel for these keys
                    raise _Fallback
            except _Fallback:
                self._give_up()

    def _give_up(self) -> None:
        self.failed = True
        self._buffers = []
        self._remove()

    def _add(self, batch: pl.DataFrame, loops: Any, split: Any) -> None:
        """Split one batch into the shards."""
        if not self._names:
            self._start(batch)
        columns: dict[str, np.ndarray[Any, Any]] = {}
        for i in self._hashed:
            columns[f"_g{i}"] = self._number(batch, i, loops)
        for name in self._names:
            if name not in columns:
                column = batch[name]
                if column.null_count():
                    raise _Fallback
                columns[name] = column.to_numpy()
        shard = batch[_SHARD].to_numpy()
        split.shard_counts(shard, self._counts)
        if (self._fill + self._counts > self._buffers[0].shape[1]).any():
            self._spill()
            if (self._counts > self._buffers[0].shape[1]).any():  # a batch bigger than before
                self._allocate(int(self._counts.max()))
        if self._dest.size < shard.size:
            self._dest = np.empty(shard.size, np.int64)
        dest = self._dest[: shard.size]
        split.destinations(shard, self._fill, self._buffers[0].shape[1], dest)
        for name, buffer in zip(self._names, self._buffers, strict=True):
            split.put(columns[name], dest, buffer.reshape(-1))
        self._fill += self._counts

    def _start(self, batch: pl.DataFrame) -> None:
        """The columns kept (hashed keys become ``_g{i}`` codes) and their buffers."""
        dropped = {_SHARD} | {f"_{x}{i}" for i in range(self._keys) for x in "hs"}
        dtypes = []
        for name, dtype in batch.schema.items():
            if name in dropped:
                continue
            if not (dtype.is_numeric() or dtype == pl.Boolean):
                raise _Fallback
            hashed = name.startswith("_g") and f"_h{name[2:]}" in batch.columns
            self._names.append(name)
            dtypes.append(np.dtype(np.int32) if hashed else batch[name].to_numpy().dtype)
        for i in range(self._keys):
            if f"_h{i}" in batch.columns:
                self._hashed[i] = hash_table()
                text = batch[f"_s{i}"]
                self._texts[i] = [text.head(0).extend_constant(None, 1)]
        self._buffers = [np.empty((self.shards, 0), dtype) for dtype in dtypes]
        row = sum(d.itemsize for d in dtypes)
        self._allocate(max(SPILL_BYTES // (row * self.shards), batch.height))

    def _allocate(self, rows: int) -> None:
        """Buffers of ``rows`` rows a shard (the rows not spilled yet are none)."""
        self._buffers = [np.empty((self.shards, rows), b.dtype) for b in self._buffers]

    def _number(self, batch: pl.DataFrame, i: int, loops: Any) -> np.ndarray[Any, Any]:
        """Key ``i``'s codes over the whole source (0: null), from its two hashes."""
        first, second = (batch[f"_{x}{i}"] for x in "gh")
        if first.null_count() or second.null_count():
            raise _Fallback
        codes = np.empty(batch.height, np.int64)
        table = self._hashed[i]
        known = int(table[-1][0])
        table = loops.hashed_codes(
            first.to_numpy().view(np.int64), second.to_numpy().view(np.int64), codes, 0, table
        )
        self._hashed[i] = table
        count, ok = (int(x) for x in table[-1])
        if not ok or count > _MOST_CODES:  # a collision, or more values than Int32 codes
            raise _Fallback
        if count > known:
            self._texts[i].append(batch[f"_s{i}"].gather(table[3][known:count]))
        return codes

    def _spill(self) -> None:
        """Append the rows in the buffers to the shards' files; the buffers are empty again."""
        try:
            if self._dir is None:
                self._dir = tempfile.mkdtemp(prefix="streameval-shards-")
                # (also when a failed pass is dropped: the directory is this pass's alone)
                self._removal = weakref.finalize(self, shutil.rmtree, self._dir, True)
            for k, fill in enumerate(self._fill.tolist()):
                for c, buffer in enumerate(self._buffers):
                    if fill:
                        with open(self._path(k, c), "ab") as f:
                            f.write(buffer[k, :fill].data.cast("B"))
        except OSError as exc:
            warnings.warn(
                f"could not write the shards' rows under {tempfile.gettempdir()} ({exc}); each "
                "shard reads the source instead (slower); hint: point TMPDIR at a directory "
                "with room for the columns read",
                stacklevel=caller_level(),
            )
            raise _Fallback from None
        self._spilled += self._fill
        self._fill[:] = 0

    def _path(self, k: int, c: int) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, f"{k}.{c}")

    def frame(self, k: int) -> pl.DataFrame:
        """Shard ``k``'s rows: the spilled ones read back, then those in memory, as chunks."""
        columns = []
        spilled, fill = int(self._spilled[k]), int(self._fill[k])
        for c, (name, buffer) in enumerate(zip(self._names, self._buffers, strict=True)):
            parts: list[np.ndarray[Any, Any]] = []
            if spilled:
                path = self._path(k, c)
                size = os.path.getsize(path)
                if size != spilled * buffer.itemsize:
                    raise RuntimeError(
                        f"the spill file {path} holds {size} bytes, expected "
                        f"{spilled * buffer.itemsize}; hint: another process changed it"
                    )
                # mapped, not copied: the pages are the file's, in the system's cache
                parts.append(np.memmap(path, buffer.dtype, "r", shape=(spilled,)))
                with contextlib.suppress(OSError):  # (where a mapped file cannot be removed)
                    os.remove(path)
            if fill or not parts:
                parts.append(buffer[k, :fill])
            columns.append(pl.concat([pl.Series(name, p) for p in parts], rechunk=False))
        self._left -= 1
        if not self._left:  # every shard read: the buffers go (the frames keep their rows)
            self._buffers = []
            self._remove()
        return pl.DataFrame(columns)

    def _remove(self) -> None:
        """Remove the spill directory (made for this pass, holding only its files)."""
        if self._removal is not None:
            self._removal()  # (a finalizer runs once: never again at collection)

    def codes(
        self, keys: Sequence[str], codes: Mapping[str, KeyCode | None]
    ) -> dict[str, KeyCode | None]:
        """``codes`` with each hashed key decoded from the values kept while numbering."""
        out = dict(codes)
        for i in self._hashed:
            name = keys[i]
            if i not in self._lookups:
                self._lookups[i] = pl.concat(self._texts[i]).rename(name)
            lookup = self._lookups[i]
            out[name] = KeyCode(64, pl.lit(0, pl.Int64), lookup.gather, dtype=lookup.dtype)
        return out
