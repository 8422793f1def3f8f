"""Day states on one index, so that any set of days is summed without a merge.

A job's checks pool the same days again and again: a ``history`` baseline of 28 days is
merged for every judged day, and each merge re-aggregates every row of every day it holds.
Here every day state's rows are coded once, on one sorted index of (group, bucket) words
(:class:`DayIndex`), and a :class:`Pool` holds the index's sums over a set of days. Moving
the pool to the next judged day's days adds the day that came in and takes away the day that
left, row by row: the work of two days, not of 28. Integer sums (the unweighted counts) are
exact whatever the order of additions and removals; float sums are kept as a compensated
pair (Neumaier: each addition's rounding error is itself summed), so taking a day away gives
back the sum of the days that remain to about one rounding of the result. The pooled sums
come out as :class:`~.runs.Runs` (sorted by group, then bucket): the compiled finalize
reads them without coding a state table again.

>>> import polars as pl
>>> from streameval.spec import Spec
>>> from streameval.bucketing import EXACT_BITS
>>> spec = Spec(kind="binary", keys=("g",), precision=EXACT_BITS)
>>> days = [
...     pl.DataFrame({"g": ["a", "b"], "bucket": [5, 7], "pos": [1, 0], "neg": [0, 2]}),
...     pl.DataFrame({"g": ["a"], "bucket": [5], "pos": [3], "neg": [1]}),
... ]
>>> index = DayIndex.build(days, spec, ["pos", "neg"])
>>> pool = Pool(index)
>>> [pool.move(d).pooled().runs(["pos", "neg"]).pos.tolist() for d in ([0, 1], [1])]
[[4, 0], [3]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from ..spec import Spec
from . import compiled, each
from .collect import packed_rows
from .groups import GroupCodes
from .runs import F64, I64, U64, Runs
from .scorekeys import ScoreField


@numba.njit(cache=True, nogil=True)
def _slide(
    at: I64,
    rows: I64,
    sign: int,
    ints: I64,
    floats: F64,
    count: I64,
    sums: I64,
    high: F64,
    low: F64,
) -> None:  # pragma: no cover - compiled
    """Add (``sign`` 1) or take away (−1) the rows ``rows`` of a day at their index ``at``.

    ``ints`` and ``floats`` are the day's columns (columns × rows); ``sums`` and
    ``high``/``low`` the index's (columns × positions), ``count`` its rows per position.
    """
    for r in rows:
        i = at[r]
        count[i] += sign
        for c in range(ints.shape[0]):
            sums[c, i] += sign * ints[c, r]
        for c in range(floats.shape[0]):
            x = sign * floats[c, r]
            h = high[c, i]
            t = h + x
            if abs(h) >= abs(x):
                low[c, i] += (h - t) + x
            else:
                low[c, i] += (x - t) + h
            high[c, i] = t


@numba.njit(cache=True, nogil=True)
def _held(count: I64, start: int, stop: int) -> int:  # pragma: no cover - compiled
    """How many positions ``start`` … ``stop`` − 1 hold rows."""
    held = 0
    for i in range(start, stop):
        held += count[i] != 0
    return held


@numba.njit(cache=True, nogil=True)
def _keep(
    count: I64,
    sums: I64,
    high: F64,
    low: F64,
    start: int,
    stop: int,
    k: int,
    at: I64,
    ints: I64,
    floats: F64,
) -> None:  # pragma: no cover - compiled
    """Copy positions ``start`` … ``stop`` − 1 holding rows to ``k`` on: their sums."""
    for i in range(start, stop):
        if count[i] != 0:
            at[k] = i
            for c in range(sums.shape[0]):
                ints[c, k] = sums[c, i]
            for c in range(high.shape[0]):
                floats[c, k] = high[c, i] + low[c, i]
            k += 1


def _kept(count: I64, sums: I64, high: F64, low: F64) -> tuple[I64, I64, F64]:
    """The positions holding rows, their integer sums and their float sums (high + low).

    Two threads, each over half of the positions (the copy is bound by memory).
    """
    halves = [(0, count.size // 2), (count.size // 2, count.size)]
    held = each(lambda h: _held(count, *h), halves)
    at = np.empty(sum(held), np.int64)
    ints = np.empty((sums.shape[0], at.size), np.int64)
    floats = np.empty((high.shape[0], at.size), np.float64)
    firsts = [0, held[0]]
    each(lambda j: _keep(count, sums, high, low, *halves[j], firsts[j], at, ints, floats), [0, 1])
    return at, ints, floats


@dataclass
class DayIndex:
    """Every day state's rows coded on one sorted index of (group, bucket) words.

    Attributes
    ----------
    spec : Spec
        The days' spec (unweighted: their counts are integers).
    groups : GroupCodes
        Turns the words' group codes back into key columns.
    score : ScoreField
        How a bucket key is stored in a word's low bits.
    key_min, key_max : int
        The smallest and largest bucket key.
    words : ndarray of uint64
        The distinct (group, bucket) words of all days, sorted.
    at : list of ndarray of int64
        Each day's rows' positions in ``words``.
    group : list of ndarray of uint64
        Each day's rows' group codes.
    ints, floats : list of ndarray
        Each day's integer and float columns (columns × rows).
    int_names, float_names : list of str
        The columns' names.

    """

    spec: Spec
    groups: GroupCodes
    score: ScoreField
    key_min: int
    key_max: int
    words: U64
    at: list[I64]
    group: list[U64]
    ints: list[I64]
    floats: list[F64]
    int_names: list[str]
    float_names: list[str]
    known: pl.DataFrame | None = None

    @classmethod
    def build(
        cls, tables: Sequence[pl.DataFrame], spec: Spec, columns: Sequence[str]
    ) -> DayIndex | None:
        """The index of the day tables' rows (each: keys, ``bucket``, ``columns``).

        None where the keys have no code, the words do not pack, or the compiled loops
        are off (the caller then merges the states).
        """
        if compiled.loops() is None or not tables:
            return None
        both = pl.concat([t.select(*spec.keys, "bucket", *columns) for t in tables])
        coded = packed_rows(both, list(spec.keys), list(columns)) if both.height else None
        if coded is None:
            return None
        groups, frame, (score, value, key_min, key_max) = coded
        words, at = _distinct(value)
        bounds = np.cumsum([0, *(t.height for t in tables)])
        ints = [c for c in columns if frame.schema[c].is_integer()]
        floats = [c for c in columns if c not in ints]
        int_cols = _columns(frame, ints, np.int64)
        float_cols = _columns(frame, floats, np.float64)

        days = range(len(tables))
        return cls(
            spec,
            groups,
            score,
            key_min,
            key_max,
            words,
            [at[bounds[i] : bounds[i + 1]] for i in days],
            [groups.codes[bounds[i] : bounds[i + 1]] for i in days],
            [int_cols[:, bounds[i] : bounds[i + 1]] for i in days],
            [float_cols[:, bounds[i] : bounds[i + 1]] for i in days],
            ints,
            floats,
        )

    def of_groups(self, day: int, codes: U64) -> npt.NDArray[np.bool_]:
        """Whether each of the day's rows is of a group among ``codes``."""
        group = self.group[day]
        if self.groups.bits > 24:  # (too many codes for a table of them)
            return np.isin(group, codes)
        table = np.zeros(1 << self.groups.bits, np.bool_)
        table[codes.astype(np.intp)] = True
        out: npt.NDArray[np.bool_] = table[group.astype(np.intp)]
        return out

    def group_codes(self, keys: pl.DataFrame) -> U64:
        """The codes of the groups ``keys`` names (rows of the key columns) that the days hold."""
        found = keys.select(self.spec.keys).join(
            self._known(), on=list(self.spec.keys), how="inner", nulls_equal=True
        )
        return np.unique(found["_code"].to_numpy().astype(np.uint64))

    def _known(self) -> pl.DataFrame:
        """Every group's keys and code (decoded once)."""
        if self.known is None:
            group = self.words >> np.uint64(self.score.bits)  # (sorted: the words are)
            codes = group[np.flatnonzero(np.append(True, group[1:] != group[:-1]))]
            self.known = pl.DataFrame(self.groups.decode(codes)).with_columns(
                pl.Series("_code", codes)
            )
        return self.known


def _columns(frame: pl.DataFrame, names: list[str], dtype: type) -> npt.NDArray[Any]:
    """The columns ``names`` of ``frame`` as one array (columns × rows) of ``dtype``."""
    out: npt.NDArray[Any] = np.empty((len(names), frame.height), dtype)
    for j, c in enumerate(names):
        out[j] = frame[c].to_numpy()
    return out


def _distinct(value: U64) -> tuple[U64, I64]:
    """The sorted distinct words and each word's position among them.

    One sort gives both (Polars' multithreaded ``arg_sort``).
    """
    order = pl.Series(value).arg_sort().to_numpy()
    ordered = value[order]
    new = np.empty(value.size, np.bool_)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    ranks = np.cumsum(new, dtype=np.int64)
    ranks -= 1
    at = np.empty(value.size, np.int64)
    at[order] = ranks
    return ordered[new], at


class Pool:
    """The index's sums over a set of days, moved from one set to the next by its changes."""

    def __init__(self, index: DayIndex) -> None:
        self.index = index
        self.days: set[int] = set()
        size = index.words.size
        self.count = np.zeros(size, np.int64)
        self.sums = np.zeros((len(index.int_names), size), np.int64)
        self.high = np.zeros((len(index.float_names), size), np.float64)
        self.low = np.zeros_like(self.high)

    def move(self, days: Sequence[int]) -> Pool:
        """Hold the sums of ``days`` (the days that came in added, those that left removed)."""
        wanted = set(days)
        gone, new = self.days - wanted, wanted - self.days
        if len(gone) + len(new) > len(wanted):  # (starting again is less work)
            for a in (self.count, self.sums, self.high, self.low):
                a.fill(0)
            gone, new = set(), wanted
        for day in sorted(gone):
            self._slide(day, -1)
        for day in sorted(new):
            self._slide(day, 1)
        self.days = wanted
        return self

    def _slide(self, day: int, sign: int, rows: I64 | None = None) -> None:
        index = self.index
        every = np.arange(index.at[day].size, dtype=np.int64) if rows is None else rows
        _slide(
            index.at[day], every, sign, index.ints[day], index.floats[day],
            self.count, self.sums, self.high, self.low,
        )  # fmt: skip

    def pooled(self, without: Mapping[int, U64] | None = None) -> Pooled:
        """The pooled sums, less each day's rows of the group codes ``without[day]``.

        Those rows are taken away for the snapshot and added back after it (no copy of the
        pool): its counts are as before, its float sums to their compensation's rounding.
        """
        left: list[tuple[int, I64]] = []
        for day, codes in (without or {}).items():
            if day in self.days and codes.size:
                left.append((day, np.flatnonzero(self.index.of_groups(day, codes))))
        for day, rows in left:
            self._slide(day, -1, rows)
        kept, counts, sums = _kept(self.count, self.sums, self.high, self.low)
        for day, rows in left:
            self._slide(day, 1, rows)
        index = self.index
        ints = dict(zip(index.int_names, counts, strict=True))
        floats = dict(zip(index.float_names, sums, strict=True))
        return Pooled(index, index.words[kept], ints, floats)


@dataclass
class Pooled:
    """A pool's sums at one moment: the words of the (group, bucket) rows it holds and sums."""

    index: DayIndex
    words: U64
    ints: dict[str, I64]
    floats: dict[str, F64]

    def runs(self, names: Sequence[str]) -> Runs:
        """The rows as runs of the columns ``names`` (``pos``, ``neg`` and bucketed sums)."""
        spec = self.index.spec
        sums = {c: self.floats[c] for c in names if c in self.floats}
        return Runs(
            self.words,
            self.ints["pos"],
            self.ints["neg"],
            None,
            self.index.score,
            self.index.key_min,
            self.index.key_max,
            self.index.groups,
            sums=sums or None,
            bucketed=None if spec.exact else (spec.precision, spec.splits),
        )

    def table(self) -> pl.DataFrame:
        """The rows as a state table: the keys, ``bucket`` and every column, as a merge has."""
        score = self.index.score
        group = self.words >> np.uint64(score.bits)
        bucket = score.decode(self.words & np.uint64((1 << score.bits) - 1))
        keys = self.index.groups.decode(group) if self.index.spec.keys else []
        return pl.DataFrame(
            [
                *keys,
                pl.Series("bucket", bucket),
                *(pl.Series(c, v) for c, v in {**self.ints, **self.floats}.items()),
            ]
        )
