"""Every slice's score histogram, counted in one read of the rows.

A :class:`Layout` places the slices of the grouping sets (one feature, or a pair) side by
side; :class:`SliceCounts` takes the rows a batch at a time: each feature's values are
numbered (the same code for a value in every batch; integers, booleans, dates and enums from
their values, strings and categoricals by two hashes), each score's bucket too, and the
compiled loops (:mod:`streameval.kernels.slicing`) add every row to one cell per grouping
set. A value or a bucket seen for the first time grows the cells; memory is the number of
slices times the number of buckets, never the number of rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import ordered_keys
from ..errors import InputError
from ..kernels import loops as compiled_loops
from ..kernels.buckets import bucket_keys
from ..kernels.slicing import (
    add_runs,
    bucket_order,
    direct_codes,
    direct_table,
    gather_codes,
    value_hashes,
)
from ..source import text_hash
from ..split.keys import mix_array

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Rows staged (numbered, their batches let go) before they are counted together: each count
#: passes over all the cells once, so more rows a count add faster (at 1 << 20 the additions
#: took 18% longer).
STAGED_ROWS = 1 << 21
#: The seeds of the two hashes that number a feature's values (a collision of the first
#: is detected by the second; the pass is then read again with the next pair).
SEEDS = ((0x5EED_0F_F1, 0x5EED_0F_F2), (0x0BAD_5EED_1, 0x0BAD_5EED_2), (7, 11))


#: Physical types numbered by a direct table, and each one's least value.
SMALL_TYPES: dict[pl.DataType, int] = {
    pl.UInt8(): 0, pl.Int8(): -(2**7), pl.UInt16(): 0, pl.Int16(): -(2**15)
}  # fmt: skip


def hashed(dtype: pl.DataType) -> bool:
    """Whether a feature of ``dtype`` is numbered by hashes (strings, categoricals).

    The others are numbered from their physical values: integers, booleans, dates and enums
    (whose values are the indices of a fixed list of strings).

    >>> hashed(pl.String), hashed(pl.Categorical()), hashed(pl.Enum(["a"])), hashed(pl.Date)
    (True, True, False, False)
    """
    return dtype == pl.String or isinstance(dtype, pl.Categorical)


class Collision(Exception):
    """Two values of a feature share a first hash: number them with other seeds."""


@dataclass(frozen=True)
class Layout:
    """Where each grouping set's slices lie among all the slices.

    ``sets`` are pairs of feature indices (``second`` = the number of features for a
    one-feature set); set ``k`` of features with ``c1`` and ``c2`` codes has ``c1 · c2``
    slices from ``offset[k]``, the slice of codes ``(a, b)`` at ``offset[k] + a · c2 + b``.

    >>> layout = Layout.of([(0, 1)], [3, 4], features=2)
    >>> layout.offset.tolist(), layout.stride.tolist(), layout.slices
    ([0], [4], 12)
    """

    first: I64
    second: I64
    offset: I64
    stride: I64
    cards: tuple[int, ...]
    slices: int

    @classmethod
    def of(cls, sets: list[tuple[int, int]], cards: list[int], features: int) -> Layout:
        """The layout of ``sets`` (pairs of feature indices) given each feature's codes."""
        first = np.array([a for a, _ in sets], np.int64)
        second = np.array([b for _, b in sets], np.int64)
        sizes = np.array([cards[a] * (cards[b] if b < features else 1) for a, b in sets])
        stride = np.array([cards[b] if b < features else 1 for _, b in sets], np.int64)
        offset = np.zeros(len(sets), np.int64)
        np.cumsum(sizes[:-1], out=offset[1:])
        return cls(first, second, offset, stride, tuple(cards), int(sizes.sum()))

    def shape(self, k: int) -> tuple[int, int]:
        """Set ``k``'s codes of its first and second feature (1 for a one-feature set)."""
        a, b = int(self.first[k]), int(self.second[k])
        return self.cards[a], (self.cards[b] if b < len(self.cards) else 1)


def grouping_sets(features: int, depth: int) -> list[tuple[int, int]]:
    """The sets counted: every pair of features at depth 2, every feature at depth 1.

    At depth 2 a one-feature slice is the sum of its pairs with another feature, so it is
    not counted on its own (unless there is a single feature).

    >>> grouping_sets(3, 2), grouping_sets(2, 1)
    ([(0, 1), (0, 2), (1, 2)], [(0, 2), (1, 2)])
    """
    if depth == 2 and features >= 2:
        return list(combinations(range(features), 2))
    return [(f, features) for f in range(features)]


@dataclass
class Cells:
    """The counted cells, ``[bucket][slice]``, and each bucket code's bucket key.

    ``pos`` and ``neg`` are sums of weights of positives and negatives, ``pos_rows`` and
    ``neg_rows`` (weighted only) their rows.
    """

    pos: F64
    neg: F64
    pos_rows: F64 | None
    neg_rows: F64 | None
    keys: I64
    layout: Layout


class SliceCounts:
    """Counts the slices of ``features`` a batch of rows at a time (:meth:`add`).

    Parameters
    ----------
    features : list of str
        The feature columns.
    depth : int
        1 (one-feature slices) or 2 (and every pair of features).
    weighted : bool
        Whether the rows carry a ``_w`` weight.
    precision, splits
        The score buckets (mantissa bits, scores that start a bucket).
    max_values : int
        The most distinct values a feature may have.
    memory : int
        The most bytes the cells may take.
    seeds : tuple of int
        The two hashes' seeds.
    types : list of polars.DataType, optional
        The features' types (default: all numbered by hashes, as strings).

    """

    def __init__(
        self,
        features: list[str],
        depth: int,
        weighted: bool,
        precision: int,
        splits: tuple[float, ...],
        max_values: int,
        memory: int,
        seeds: tuple[int, int] = SEEDS[0],
        types: list[pl.DataType] | None = None,
    ) -> None:
        self.features = features
        self.hashed = [True] * len(features) if types is None else [hashed(t) for t in types]
        self.sets = grouping_sets(len(features), depth)
        self.weighted = weighted
        self.precision = precision
        self.splits = splits
        self.max_values = max_values
        self.memory = memory
        self.seeds = seeds
        self.tables: list[Any] = [
            compiled_loops.hash_table() if h else direct_table() for h in self.hashed
        ]  # (a feature of wide values swaps its direct table for a hash table: _by_value)
        self.values: list[list[pl.Series]] = [[] for _ in features]
        self.bucket_table = compiled_loops.hash_table()
        self.bucket_keys: list[I64] = []
        self.layout = Layout.of(self.sets, [1] * len(features), len(features))
        self.capacity = 0
        self.pos = np.zeros(0)
        self.neg = np.zeros(0)
        self.pos_rows = np.zeros(0)
        self.neg_rows = np.zeros(0)
        self.pool = ThreadPoolExecutor(2)
        self.room = self.filled = 0
        self._make_room(0)

    def exprs(self, schema: pl.Schema) -> list[pl.Expr]:
        """The hashes of the features numbered by hashes (besides ``_y``, ``_p``, ``_w``)."""
        out = []
        for i, name in enumerate(self.features):
            if not self.hashed[i]:
                continue
            text = pl.col(name)
            if isinstance(schema[name], pl.Categorical | pl.Enum):
                text = text.cast(pl.String)
            out += [
                text_hash(text, self.seeds[0]).alias(f"_g{i}"),
                text_hash(text, self.seeds[1]).alias(f"_h{i}"),
            ]
        return out

    def add(self, batch: pl.DataFrame) -> None:
        """Stage a batch's rows (``_y``, ``_p``, ``_w``, hashes, features); count when full.

        Each batch is numbered as it comes (its codes, buckets, labels and weights kept in
        the staging buffers, the batch itself let go); the staged rows are counted once
        they reach :data:`STAGED_ROWS` (long runs of a bucket's rows add faster).
        """
        n = batch.height
        if not n:
            return
        if self.filled + n > self.room:
            self.flush()
            self._make_room(n)
        at, stop = self.filled, self.filled + n
        buckets = self.pool.submit(self._buckets, batch, at)  # (beside the features)
        for i, table in enumerate(
            self.pool.map(lambda i: self._number(batch, i, at), range(len(self.features)))
        ):
            self.tables[i] = table
        buckets.result()
        self.staged_y[at:stop] = batch["_y"].to_numpy()
        if self.weighted:
            self.staged_w[at:stop] = batch["_w"].to_numpy()
        self.filled = stop
        if self.filled >= STAGED_ROWS:
            self.flush()

    def flush(self) -> None:
        """Count the staged rows into the cells."""
        n = self.filled
        if not n:
            return
        self._grow()
        codes, ordered = self.staged_codes, self.ordered  # (their first n columns are used)
        runs_of = self.staged_bucket[:n] * 2 + self.staged_y[:n]
        order, starts = bucket_order(runs_of, 2 * self.capacity)
        halves = np.array_split(np.arange(len(self.features)), 2)
        list(self.pool.map(lambda fs: gather_codes(codes, order, fs, ordered), halves))
        weight = self.staged_w[:n][order] if self.weighted else np.zeros(0)
        runs = starts.size - 1
        middle = min(int(np.searchsorted(starts, n // 2)) // 2 * 2, runs)  # (a bucket's two
        # runs in one thread: they share its rows' cells)
        layout = self.layout
        args = (
            ordered, weight, starts, layout.first, layout.second, layout.offset,
            layout.stride, layout.slices, self.pos, self.neg, self.pos_rows, self.neg_rows,
        )  # fmt: skip
        list(self.pool.map(lambda r: add_runs(*args, r[0], r[1]), [(0, middle), (middle, runs)]))
        self.filled = 0

    def _make_room(self, n: int) -> None:
        """Staging buffers for at least ``n`` rows (reused from flush to flush)."""
        room = max(n, STAGED_ROWS)
        if room <= self.room:
            return
        f = len(self.features)
        self.room = room
        # (codes of 16 bits unless a feature may have more values: half the bytes to move)
        code = np.int16 if self.max_values < np.iinfo(np.int16).max else np.int32
        self.staged_codes = np.empty((f, room), code)
        self.ordered = np.zeros((f + 1, room), code)  # (its last row stays 0)
        self.staged_bucket = np.empty(room, np.int64)
        self.staged_y = np.empty(room, np.int64)
        self.staged_w = np.empty(room if self.weighted else 0)

    def _number(self, batch: pl.DataFrame, i: int, at: int) -> Any:
        """Stage feature ``i``'s codes from row ``at`` (1, 2, … by first appearance; 0: null)."""
        before, _ = _numbered(self.tables[i])
        if self.hashed[i]:
            table = self.tables[i]
            out = self.staged_codes[i]
            for start, first, second in _aligned(batch[f"_g{i}"], batch[f"_h{i}"]):
                table = compiled_loops.hashed_codes(first, second, out, at + start, table)
            if not table[4][1]:
                raise Collision(self.features[i])
        else:
            table = self._by_value(batch[self.features[i]], i, at)
        count, firsts = _numbered(table)
        if count > before:
            rows = firsts[before:count] - at
            self.values[i].append(batch[self.features[i]].gather(rows))
        if count > self.max_values:
            name = self.features[i]
            raise InputError(
                f"expected at most {self.max_values} distinct values in the feature {name!r}, "
                f"found {count} so far; hint: bin it into fewer values in a LazyFrame "
                "(cut a number, keep a string's most frequent values), leave it out, or raise "
                "max_values"
            )
        return table

    def _by_value(self, values: pl.Series, i: int, at: int) -> Any:
        """Stage the codes of a feature numbered from its values (not hashed) from row ``at``.

        Values of at most 16 bits are looked up in a direct table; wider ones are numbered
        by their mix (a bijection of the value: no two values share it) and the value.
        """
        table = self.tables[i]
        out = self.staged_codes[i]
        start = 0
        for chunk in values.get_chunks():
            physical = chunk.to_physical()
            if physical.dtype == pl.Boolean:
                physical = physical.cast(pl.UInt8)
            nulls = physical.null_count()
            valid = physical.is_not_null().to_numpy() if nulls else np.zeros(0, np.bool_)
            numbers = (physical.fill_null(0) if nulls else physical).to_numpy()
            if physical.dtype in SMALL_TYPES:
                low = SMALL_TYPES[physical.dtype]
                table = direct_codes(numbers, low, valid, out, at + start, table)
            else:
                if len(table) == 3:  # (the first chunk: a hash table, not a direct one)
                    table = compiled_loops.hash_table()
                if numbers.dtype == np.uint64:  # (its bits as an int64: the same bijection)
                    numbers = numbers.view(np.int64)
                first, second = value_hashes(numbers, valid)
                table = compiled_loops.hashed_codes(first, second, out, at + start, table)
            start += chunk.len()
        return table

    def _buckets(self, batch: pl.DataFrame, at: int) -> None:
        """Stage each row's bucket code (1, 2, … by first appearance); keep each code's key."""
        score = batch["_p"].to_numpy()
        key = bucket_keys(ordered_keys(score), self.precision, self.splits)
        before = int(self.bucket_table[4][0])
        table = compiled_loops.hashed_codes(
            mix_array(key), key, self.staged_bucket, at, self.bucket_table
        )
        assert table[4][1]  # (the first hash is a bijection of the key)
        self.bucket_table = table
        count = int(table[4][0])
        if count > before:
            self.bucket_keys.append(key[table[3][before:count] - at])

    def _grow(self) -> None:
        """Make room for the values and buckets seen so far (a new layout when they grew)."""
        cards = [_numbered(t)[0] + 1 for t in self.tables]  # (code 0: null)
        buckets = int(self.bucket_table[4][0]) + 1
        if tuple(cards) == self.layout.cards and buckets <= self.capacity:
            return
        layout = Layout.of(self.sets, cards, len(self.features))
        # (a quarter more buckets than seen: few are new after the first batches)
        capacity = self.capacity if buckets <= self.capacity else buckets + buckets // 4
        arrays = 4 if self.weighted else 2
        need = capacity * layout.slices * 8 * arrays
        if need > self.memory:
            raise InputError(
                f"expected the slices' score histograms to fit in {_size(self.memory)}, but "
                f"{layout.slices:,} slices × {capacity:,} score buckets take {_size(need)}; "
                "hint: a lower precision= (fewer buckets), depth=1, fewer features or features "
                "with fewer values, or a larger memory= (--memory GiB)"
            )
        old = self.layout
        self.pos, self.neg = (self._moved(a, old, layout, capacity) for a in (self.pos, self.neg))
        if self.weighted:
            self.pos_rows = self._moved(self.pos_rows, old, layout, capacity)
            self.neg_rows = self._moved(self.neg_rows, old, layout, capacity)
        self.layout, self.capacity = layout, capacity

    def _moved(self, cells: F64, old: Layout, new: Layout, capacity: int) -> F64:
        """``cells`` of layout ``old`` in a new array of layout ``new`` and ``capacity``."""
        out = np.zeros(capacity * new.slices)
        if not cells.size:
            return out
        was = cells.reshape(self.capacity, old.slices)
        now = out.reshape(capacity, new.slices)
        for k in range(len(self.sets)):
            a, b = old.shape(k)
            c, d = new.shape(k)
            src = was[:, old.offset[k] : old.offset[k] + a * b].reshape(self.capacity, a, b)
            dst = now[: self.capacity, new.offset[k] : new.offset[k] + c * d]
            dst.reshape(self.capacity, c, d)[:, :a, :b] = src
        return out

    def close(self) -> None:
        """Let the threads go."""
        self.pool.shutdown()

    def cells(self) -> Cells:
        """The counted cells (buckets in code order; code 0 holds nothing)."""
        self.flush()
        self._grow()
        shape = (self.capacity, self.layout.slices)
        keys = np.concatenate([np.zeros(1, np.int64), *self.bucket_keys])
        b = keys.size
        pos_rows = self.pos_rows.reshape(shape)[:b] if self.weighted else None
        neg_rows = self.neg_rows.reshape(shape)[:b] if self.weighted else None
        pos, neg = self.pos.reshape(shape)[:b], self.neg.reshape(shape)[:b]
        return Cells(pos, neg, pos_rows, neg_rows, keys, self.layout)

    def decoded(self, i: int) -> pl.Series:
        """Feature ``i``'s value of each code (code 0: null)."""
        name = self.features[i]
        parts = [p.cast(pl.String) for p in self.values[i]]
        return pl.concat([pl.Series(name, [None], pl.String), *parts])


def _numbered(table: Any) -> tuple[int, I64]:
    """A numbering table's count of codes and each code's first row (hash or direct)."""
    if len(table) == 3:
        return int(table[2][0]), table[1]
    return int(table[4][0]), table[3]


def _size(n: float) -> str:
    """A number of bytes as people read it.

    >>> _size(3 << 30), _size(5 << 20), _size(1000)
    ('3.0 GiB', '5.0 MiB', '1,000 bytes')
    """
    if n >= 1 << 30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 1 << 20 else f"{n:,.0f} bytes"


def _aligned(first: pl.Series, second: pl.Series) -> Iterator[tuple[int, I64, I64]]:
    """The two hash columns chunk by chunk (no copy): each chunk's first row and values."""
    one, two = first.get_chunks(), second.get_chunks()
    if [c.len() for c in one] != [c.len() for c in two]:
        one, two = [first.rechunk()], [second.rechunk()]
    start = 0
    for a, b in zip(one, two, strict=True):
        yield start, a.to_numpy().view(np.int64), b.to_numpy().view(np.int64)
        start += a.len()
