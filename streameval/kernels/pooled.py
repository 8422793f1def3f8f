"""Day states on one index, so that any set of days is summed without a merge.

A job's checks pool the same days again and again: a ``history`` baseline of 28 days is
merged for every judged day, and each merge re-aggregates every row of every day it holds.
Here every day state's rows are coded once, on one sorted index of (group, bucket) words
(:class:`DayIndex`), and a :class:`Pool` holds the index's sums over a set of days. Moving
the pool to the next judged day's days adds the day that came in and takes away the day that
left, row by row: the work of two days, not of 28 (a day less the rows of the groups a check
left out of it). Integer sums (the unweighted counts) are kept per (group, bucket) word (in
16 or 32 bits where no sum can pass 2^15 − 1 or 2^31 − 1) and per group, and are exact
whatever the order of additions and removals.
Float sums (log loss, Brier, the score sum and hinge) are kept per group only, where the
metrics read them: the index holds each day's sums per group, and a snapshot adds the days it
holds in day order, so its float sums depend on its days alone, not on the moves that
brought the pool there, and are those :meth:`Pooled.of_tables` gives for the same days'
tables, bit for bit. The pooled sums come out as :class:`~.runs.Runs` (sorted by group,
then bucket, the float sums as :class:`~.runs.GroupSums`): the compiled finalize reads them
without coding a state table again.

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
>>> [pool.move(d).pooled().runs().pos.tolist() for d in ([0, 1], [1])]
[[4, 0], [3]]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from ..spec import Spec
from . import compiled, each
from .collect import packed_rows
from .drift import weigh_range
from .groups import GroupCodes
from .runs import F64, I64, U64, GroupSums, Runs
from .scorekeys import ScoreField

I32 = npt.NDArray[np.int32]
#: A pool's sums of counts at each position (16, 32 or 64 bits; columns × positions).
Counts = npt.NDArray[np.signedinteger[Any]]
#: The largest sum a pool keeps in 32 bits.
NARROW = 2**31 - 1
#: The largest sum a pool keeps in 16 bits.
NARROWEST = 2**15 - 1
#: The fewest rows of a day two threads add to a pool (half each).
SPLIT_ROWS = 1 << 16
#: A score histogram on an index (:func:`~.drift.weighed_runs`' parts, each bucket's
#: position for its field): positions, rows, starts, codes, rows.
Weighed = tuple[I64, F64, I64, U64, I64]


@numba.njit(cache=True, nogil=True)
def _slide(
    at: I64, rows: I64, lo: int, hi: int, sign: int, ints: I64, sums: Counts, half: int
) -> tuple[int, int]:  # pragma: no cover - compiled
    """Add (``sign`` 1) or take away (−1) rows ``lo`` … ``hi`` − 1 of a day at their index ``at``.

    The rows are ``rows[lo:hi]`` (empty ``rows``: the day's rows ``lo`` … ``hi`` − 1);
    ``ints`` are the day's columns (columns × rows), ``sums`` the index's (columns ×
    positions). A position holds rows while one of its sums is not 0 (a day's row counts
    at least one row: :meth:`DayIndex.build`). Returns how many positions came to hold rows
    less how many stopped, below ``half`` and from it.
    """
    first, second = 0, 0
    columns = ints.shape[0]
    for k in range(lo, hi):
        r = rows[k] if rows.size else k
        i = at[r]
        was, now = False, False
        for c in range(columns):
            before = sums[c, i]
            after = before + sign * ints[c, r]
            sums[c, i] = after
            was |= before != 0
            now |= after != 0
        if was != now:
            if i < half:
                first += 1 if now else -1
            else:
                second += 1 if now else -1
    return first, second


@numba.njit(cache=True, nogil=True)
def _summed(value: U64, order: I64, ints: I64) -> tuple[U64, I64]:  # pragma: no cover - compiled
    """The distinct words of ``value`` in ``order`` (ascending), and each one's ``ints`` summed.

    ``ints`` are the rows' columns (columns × rows); one pass counts the words, one sums.
    """
    distinct = 0
    for j in range(order.size):
        if j == 0 or value[order[j]] != value[order[j - 1]]:
            distinct += 1
    words = np.empty(distinct, np.uint64)
    sums = np.zeros((ints.shape[0], distinct), np.int64)
    k = -1
    for j in range(order.size):
        r = order[j]
        if k < 0 or value[r] != words[k]:
            k += 1
            words[k] = value[r]
        for c in range(ints.shape[0]):
            sums[c, k] += ints[c, r]
    return words, sums


@numba.njit(cache=True, nogil=True)
def _keep(
    words: U64, sums: Counts, start: int, stop: int, k: int, kept: U64, ints: I64
) -> None:  # pragma: no cover - compiled
    """Copy positions ``start`` … ``stop`` − 1 holding rows to ``k`` on: their words, sums."""
    columns = sums.shape[0]
    for i in range(start, stop):
        held = False
        for c in range(columns):
            held |= sums[c, i] != 0
        if held:
            kept[k] = words[i]
            for c in range(columns):
                ints[c, k] = sums[c, i]
            k += 1


def _kept(held: I64, words: U64, sums: Counts) -> tuple[U64, I64]:
    """The words of the positions holding rows and their integer sums.

    Two threads, each over a half of the positions (``held``: how many of each hold rows);
    the copy is bound by memory.
    """
    size = words.size
    halves = [(0, size // 2), (size // 2, size)]
    kept = np.empty(int(held.sum()), np.uint64)
    ints = np.empty((sums.shape[0], kept.size), np.int64)
    firsts = [0, int(held[0])]
    each(lambda j: _keep(words, sums, *halves[j], firsts[j], kept, ints), [0, 1])
    return kept, ints


def _held(sums: Counts, start: int, stop: int) -> int:
    """How many of positions ``start`` … ``stop`` − 1 hold rows (one of their sums is not 0)."""
    return int(np.count_nonzero(np.any(sums[:, start:stop] != 0, axis=0)))


@dataclass
class Coding:
    """How pooled words are coded: the spec, group codes, score field and key range.

    ``codes`` are the sorted group codes the float sums are per.
    """

    spec: Spec
    groups: GroupCodes
    score: ScoreField
    key_min: int
    key_max: int
    codes: U64


@dataclass
class DayIndex:
    """Every day state's rows coded on one sorted index of (group, bucket) words.

    Attributes
    ----------
    coding : Coding
        The days' spec (unweighted: their counts are integers), how a word holds a group
        code and a bucket key, and the distinct group codes of all days (sorted).
    words : ndarray of uint64
        The distinct (group, bucket) words of all days, sorted.
    at : list of ndarray of int64
        Each day's rows' positions in ``words``.
    slot : list of ndarray of int32
        Each day's rows' groups (their positions in ``coding.codes``).
    starts : ndarray of int64
        Each group's first position in ``words`` (by its place in ``coding.codes``), and
        the number of words.
    ints : list of ndarray of int64
        Each day's integer columns (columns × rows).
    floats : list of ndarray of float64
        Each day's float columns summed per group (columns × groups, in ``coding.codes``
        order).
    group_ints : list of ndarray of int64
        Each day's integer columns summed per group (the same layout).
    rising : list of bool
        Whether each day's rows' positions rise strictly (then no two rows share a
        position: halves of its rows are added by two threads).
    int_names, float_names : list of str
        The columns' names.

    """

    coding: Coding
    words: U64
    at: list[I64]
    slot: list[I32]
    starts: I64
    ints: list[I64]
    floats: list[F64]
    group_ints: list[I64]
    rising: list[bool]
    int_names: list[str]
    float_names: list[str]
    known: pl.DataFrame | None = None
    widest: int | None = None
    rows_of: dict[tuple[int, bytes], I64] = field(default_factory=dict)

    @classmethod
    def build(
        cls, tables: Sequence[pl.DataFrame], spec: Spec, columns: Sequence[str]
    ) -> DayIndex | None:
        """The index of the day tables' rows (each: keys, ``bucket``, ``columns``).

        None where the keys have no code, the words do not pack, a row counts no row (its
        integer columns all 0, or one below 0: a pool tells the positions that hold rows by
        their sums), or the compiled loops are off (the caller then merges the states).
        """
        if compiled.loops() is None or not tables:
            return None
        ints = [c for c in columns if tables[0].schema[c].is_integer()]
        counts = [_columns(t, ints, np.int64) for t in tables]
        if not all(_counting(c) for c in counts):
            return None
        both = pl.concat([t.select(*spec.keys, "bucket") for t in tables])
        coded = packed_rows(both, list(spec.keys), []) if both.height else None
        if coded is None:
            return None
        groups, _, (score, value, key_min, key_max) = coded
        del both
        words, at = _distinct(value)
        codes, slot = _group_slots(words, at, score.bits)
        bounds = np.cumsum([0, *(t.height for t in tables)])
        floats = [c for c in columns if c not in ints]
        days = range(len(tables))
        slots = [slot[bounds[i] : bounds[i + 1]] for i in days]
        positions = [at[bounds[i] : bounds[i + 1]] for i in days]

        def group_sums(i: int) -> F64:
            """Day ``i``'s float columns summed per group."""
            return _day_sums(slots[i], _columns(tables[i], floats, np.float64), codes.size)

        return cls(
            Coding(spec, groups, score, key_min, key_max, codes),
            words,
            positions,
            slots,
            np.append(np.searchsorted(words, codes << np.uint64(score.bits)), words.size),
            counts,
            [group_sums(i) for i in days],
            [_day_sums(slots[i], counts[i], codes.size) for i in days],
            [bool(_ascending(p)) for p in positions],
            ints,
            floats,
        )

    def sum_type(self) -> type:
        """The integer type of a pool's sums: the narrowest no sum at a position can pass.

        A position's sum is at most its column's sum over every day (32 bits where that
        fits) and, where a day has one row at a position (its rows' positions rise), the
        sum of each day's largest value (16 bits where that fits: a quarter of the memory a
        walk of the pool reads); a day whose positions do not rise counts its whole sum.
        """
        if self.widest is None:
            days = [(d, ints) for d, ints in enumerate(self.ints) if ints.size]
            tops = [ints.max(axis=1) if self.rising[d] else ints.sum(axis=1) for d, ints in days]
            columns = [ints.sum(axis=1) for _, ints in days]
            top = int(np.sum(tops, axis=0).max(initial=0)) if tops else 0
            self.widest = min(top, int(np.sum(columns, axis=0).max(initial=0))) if tops else 0
        if self.widest <= NARROWEST:
            return np.int16
        return np.int32 if self.widest <= NARROW else np.int64

    def weighed(self, day: int) -> Weighed:
        """Day ``day``'s rows as a score histogram on the index.

        :func:`~.drift.weighed_runs`' parts, with each bucket's position on the index for
        its score field (ordered as the scores within a group, and comparable with another
        histogram's only on this index): its rows, each group's first bucket, code and rows.
        Two threads each take the groups of a half of the rows: one pass counts the runs of
        weight and the groups, one copies them.
        """
        at, slot = self.at[day], self.slot[day]
        pos, neg = (self.ints[day][c] for c in index_of(self.int_names, ("pos", "neg")))
        if not self.rising[day]:  # (rows not in word order)
            order = np.argsort(at, kind="stable")
            at, slot, pos, neg = at[order], slot[order], pos[order], neg[order]
        n = at.size
        middle = int(np.searchsorted(slot, slot[n // 2])) if n >= SPLIT_ROWS else 0
        parts = [(0, middle), (middle, n)] if middle else [(0, n)]
        counted = each(lambda part: _day_count(pos, neg, slot, *part), parts)
        kept, groups = (sum(c[i] for c in counted) for i in (0, 1))
        out = (
            np.empty(kept, np.int64),
            np.empty(kept, np.float64),
            np.empty(groups + 1, np.int64),
            np.empty(groups, np.uint64),
            np.zeros(groups, np.int64),
        )
        firsts = [(0, 0), counted[0]]  # (where each part's runs and groups go)
        each(
            lambda j: _day_fill(at, slot, pos, neg, self.coding.codes, *parts[j], *firsts[j], out),
            list(range(len(parts))),
        )
        out[2][groups] = kept
        return out

    def rows(self, day: int, slots: I64) -> I64:
        """The day's rows of the groups ``slots`` (sorted positions in ``coding.codes``).

        Kept: a day's rejected slices are left out of every pool that holds the day.
        """
        key = (day, slots.tobytes())
        if key not in self.rows_of:
            slot = self.slot[day]
            if self.rising[day]:  # (rows in word order: a group's are one run of them)
                wanted = slots.astype(slot.dtype)  # (not the rows cast to the slots' type)
                first = np.searchsorted(slot, wanted, side="left")
                size = np.searchsorted(slot, wanted, side="right") - first
                runs = np.repeat(first - np.cumsum(size) + size, size)
                self.rows_of[key] = np.arange(runs.size, dtype=np.int64) + runs
            else:
                table = np.zeros(self.coding.codes.size, np.bool_)
                table[slots] = True
                self.rows_of[key] = np.flatnonzero(table[slot])
        return self.rows_of[key]

    def group_slots(self, keys: pl.DataFrame) -> I64:
        """The groups ``keys`` names (rows of the key columns) that the days hold.

        Their positions in ``coding.codes``, sorted.
        """
        found = keys.select(self.coding.spec.keys).join(
            self.groups(),
            on=list(self.coding.spec.keys),
            how="inner",
            nulls_equal=True,
            maintain_order="left_right",
        )
        return np.unique(found["_b"].to_numpy().astype(np.int64))

    def groups(self) -> pl.DataFrame:
        """Every group's keys and ``_b``, its position in ``coding.codes`` (decoded once)."""
        if self.known is None:
            codes = self.coding.codes
            keys = self.coding.groups.decode(codes) if self.coding.spec.keys else []
            self.known = pl.DataFrame([*keys, pl.Series("_b", np.arange(codes.size))])
        return self.known


@numba.njit(cache=True, nogil=True)
def _ascending(at: I64) -> bool:  # pragma: no cover - compiled
    """Whether ``at`` rises strictly."""
    r = 1
    while r < at.size and at[r] > at[r - 1]:
        r += 1
    return r >= at.size


@numba.njit(cache=True, nogil=True)
def _day_count(
    pos: I64, neg: I64, slot: I32, lo: int, hi: int
) -> tuple[int, int]:  # pragma: no cover - compiled
    """Rows ``lo`` … ``hi`` − 1 of a day (positions ascending): its runs of weight, groups."""
    kept, groups, last = 0, 0, -1
    for r in range(lo, hi):
        if pos[r] + neg[r] != 0:
            kept += 1
            if slot[r] != last:
                groups += 1
                last = slot[r]
    return kept, groups


@numba.njit(cache=True, nogil=True)
def _day_fill(
    at: I64, slot: I32, pos: I64, neg: I64, codes: U64, lo: int, hi: int, k: int, g: int,
    out: Weighed,
) -> None:  # pragma: no cover - compiled  # fmt: skip
    """Rows ``lo`` … ``hi`` − 1 of a day into ``out`` (:data:`Weighed`).

    From run ``k`` and group ``g`` on, as :func:`_day_count` counted the rows before them.
    """
    positions, mass, starts, group_codes, totals = out
    g, last = g - 1, -1
    for r in range(lo, hi):
        rows = pos[r] + neg[r]
        if rows != 0:
            if slot[r] != last:
                g += 1
                last = slot[r]
                group_codes[g] = codes[last]
                starts[g] = k
            positions[k] = at[r]
            mass[k] = rows
            totals[g] += rows
            k += 1


def _columns(frame: pl.DataFrame, names: list[str], dtype: type) -> npt.NDArray[Any]:
    """The columns ``names`` of ``frame`` as one array (columns × rows) of ``dtype``.

    ``dtype`` is ``np.int64`` or ``np.float64``. (Polars writes the rows × columns array
    column by column, in Fortran order: its transpose is the array, C-contiguous.)
    """
    if not names:
        return np.empty((0, frame.height), dtype)
    cast = pl.Int64 if dtype is np.int64 else pl.Float64
    out: npt.NDArray[Any] = frame.select(pl.col(names).cast(cast)).to_numpy(order="fortran").T
    if out.dtype != dtype:  # (a null count: never in a state table)
        raise ValueError(f"expected {names} without nulls, got an array of {out.dtype}")
    return out


def _group_slots(words: U64, at: I64, bits: int) -> tuple[U64, I32]:
    """The sorted distinct group codes of ``words``, and each row's (at ``at``) among them."""
    codes, ordinal = _word_groups(words, bits)
    return codes, ordinal[at]


def _word_groups(words: U64, bits: int) -> tuple[U64, I32]:
    """The sorted distinct group codes of the sorted ``words``, and each word's among them."""
    group = words >> np.uint64(bits)  # (sorted: the words are)
    new = np.empty(group.size, np.bool_)
    new[:1] = True
    np.not_equal(group[1:], group[:-1], out=new[1:])
    ordinal = np.cumsum(new, dtype=np.int32)
    ordinal -= 1
    return group[new], ordinal


def _slots(codes: U64, of: U64, bits: int) -> I32:
    """Each of the group codes ``of``'s position among the sorted ``codes`` (which hold it)."""
    if bits > 24:  # (too many codes for a table of them)
        return np.searchsorted(codes, of).astype(np.int32)
    table = np.zeros(1 << bits, np.int32)
    table[codes.astype(np.intp)] = np.arange(codes.size, dtype=np.int32)
    return _looked_up(table, of)


@numba.njit(cache=True, nogil=True)
def _looked_up(table: I32, of: U64) -> I32:  # pragma: no cover - compiled
    """``table[of]``, without a copy of ``of`` as indices."""
    out = np.empty(of.size, np.int32)
    for r in range(of.size):
        out[r] = table[of[r]]
    return out


@numba.njit(cache=True, nogil=True)
def _day_sums(
    slot: I32, values: npt.NDArray[Any], size: int
) -> npt.NDArray[Any]:  # pragma: no cover - compiled
    """A day's columns (``values``: columns × rows) summed per group slot, row by row.

    Of the values' type (integer counts, or float sums: both the index's days and summed
    tables add them so, the same sums bit for bit).
    """
    out = np.zeros((values.shape[0], size), values.dtype)
    for r in range(slot.size):
        g = slot[r]
        for c in range(values.shape[0]):
            out[c, g] += values[c, r]
    return out


def _counting(ints: I64) -> bool:
    """Whether every row of a day's integer columns (columns × rows) counts a row.

    Each is at least 0 and one of them above: a pool's position holds rows while its sums
    are not all 0.

    >>> _counting(np.array([[1, 0], [0, 2]])), _counting(np.array([[1, 0], [0, 0]]))
    (True, False)
    """
    if not ints.shape[1]:
        return True
    return bool(ints.min(initial=0) >= 0 and (ints.max(axis=0) > 0).all())


def _distinct(value: U64) -> tuple[U64, I64]:
    """The sorted distinct words and each word's position among them.

    One sort gives both (Polars' multithreaded ``arg_sort``).
    """
    order = pl.Series(value).arg_sort().to_numpy()
    return _ranked(value[order], order)


@numba.njit(cache=True, nogil=True)
def _ranked(ordered: U64, order: I64) -> tuple[U64, I64]:  # pragma: no cover - compiled
    """The distinct words of ``ordered`` (``value[order]``) and each row's rank among them."""
    distinct = 0
    for j in range(ordered.size):
        if j == 0 or ordered[j] != ordered[j - 1]:
            distinct += 1
    words = np.empty(distinct, np.uint64)
    at = np.empty(ordered.size, np.int64)
    k = -1
    for j in range(ordered.size):
        if k < 0 or ordered[j] != words[k]:
            k += 1
            words[k] = ordered[j]
        at[order[j]] = k
    return words, at


class Pool:
    """The index's sums over a set of days, each less the rows of some of its groups.

    Moved from one set to the next by its changes: the days that came in added, those that
    left taken away, and a day whose groups left out changed by those groups' rows alone. A
    day's rows of the groups left out are never in the pool, so a baseline that leaves out
    the slices a check rejected reads the pool as it is, day after day.
    """

    def __init__(self, index: DayIndex) -> None:
        self.index = index
        #: The days held, each with the groups left out of it (slots, sorted; none: empty).
        self.days: dict[int, I64] = {}
        size = index.words.size
        self.held = np.zeros(2, np.int64)  # (positions holding rows in each half)
        # (16 or 32 bits where no sum can pass 2^15 − 1 or 2^31 − 1: less memory to walk)
        self.sums: npt.NDArray[Any] = np.zeros((len(index.int_names), size), index.sum_type())
        self.group_sums = np.zeros((len(index.int_names), index.coding.codes.size), np.int64)

    def moves(self, days: Sequence[int], out: Mapping[int, I64] | None = None) -> int:
        """The work of :meth:`move` to hold ``days`` less ``out``.

        2 a day added or taken away, 1 a day whose groups left out change; at most 2 a day
        (started again).
        """
        wanted = _wanted(days, out)
        whole = len(self.days.keys() ^ wanted.keys())
        changed = sum(not _same(self.days[d], wanted[d]) for d in self.days.keys() & wanted.keys())
        return min(2 * whole + changed, 2 * len(wanted))

    def move(self, days: Sequence[int], out: Mapping[int, I64] | None = None) -> Pool:
        """Hold the sums of ``days``, each less its rows of the groups ``out[day]`` (slots)."""
        wanted = _wanted(days, out)
        gone = [d for d in self.days if d not in wanted]
        new = [d for d in wanted if d not in self.days]
        if len(gone) + len(new) > len(wanted):  # (starting again is less work)
            for a in (self.held, self.sums, self.group_sums):
                a.fill(0)
            self.days, gone, new = {}, [], list(wanted)
        for day in sorted(gone):
            self._slide(day, 1, self.days.pop(day))  # (whole again, then taken away)
            self._slide(day, -1)
        for day in sorted(self.days):  # (held still: the groups left out that changed)
            before, after = self.days[day], wanted[day]
            if not _same(before, after):
                self._slide(day, 1, np.setdiff1d(before, after))
                self._slide(day, -1, np.setdiff1d(after, before))
                self.days[day] = after
        for day in sorted(new):
            self._slide(day, 1)
            self._slide(day, -1, wanted[day])
            self.days[day] = wanted[day]
        return self

    def _slide(self, day: int, sign: int, groups: I64 | None = None) -> None:
        """Add or take away a day's rows (of the groups ``groups``, slots: all of them).

        The rows' sums per group are the day's (:attr:`DayIndex.group_ints`); where the
        day's positions rise, two threads add half of the rows each (positions apart).
        """
        index = self.index
        if groups is None:
            rows, n = NONE, index.at[day].size
            self.group_sums += sign * index.group_ints[day]
        elif groups.size:
            rows = index.rows(day, groups)
            n = rows.size
            self.group_sums[:, groups] += sign * index.group_ints[day][:, groups]
        else:
            return
        parts = [(0, n // 2), (n // 2, n)] if index.rising[day] and n >= SPLIT_ROWS else [(0, n)]
        half = self.sums.shape[1] // 2
        at, ints = index.at[day], index.ints[day]
        for first, second in each(
            lambda part: _slide(at, rows, *part, sign, ints, self.sums, half), parts
        ):
            self.held += (first, second)

    def pooled(self) -> Pooled:
        """The pooled sums (each day less its rows of the groups left out).

        The float sums are the days' per-group sums added in day order (those of the groups
        left out on a day zeroed).
        """
        index = self.index
        kept, counts = _kept(self.held, index.words, self.sums)
        sums = np.zeros((len(index.float_names), index.coding.codes.size))
        for day, out in sorted(self.days.items()):
            day_sums = index.floats[day]
            if out.size:
                day_sums = day_sums.copy()
                day_sums[:, out] = 0.0
            sums += day_sums
        ints = dict(zip(index.int_names, counts, strict=True))
        floats = dict(zip(index.float_names, sums, strict=True))
        return Pooled(index.coding, kept, ints, floats)

    def weighed(self) -> Weighed:
        """The pooled rows per (group, bucket) as a histogram.

        Read from the pool's counts (no snapshot); the buckets are positions on the index
        (see :meth:`DayIndex.weighed`).
        """
        pos, neg = index_of(self.index.int_names, ("pos", "neg"))
        return self._weighed(self.sums[pos], self.sums[neg])

    def _weighed(self, pos: I64, neg: I64) -> Weighed:
        """The positions holding rows as a histogram: two threads, each over whole groups.

        The first takes the positions up to the end of the group at the middle position.
        """
        words, index = self.index.words, self.index
        bits, groups = index.coding.score.bits, index.coding.codes.size
        half = words.size // 2
        split = half
        if half < words.size:  # (the end of the group at the middle)
            last = (words[half] >> np.uint64(bits) << np.uint64(bits)) | np.uint64((1 << bits) - 1)
            split = int(np.searchsorted(words, last, side="right"))
        before = int(self.held[0]) + _held(self.sums, half, split)
        fields = np.empty(int(self.held.sum()), np.uint64)
        mass = np.empty(fields.size, np.float64)
        ranges = [(0, split, 0), (split, words.size, before)]
        parts = each(
            lambda r: weigh_range(words, pos, neg, bits, *r, fields, mass, groups, True),
            ranges,
        )
        if parts[0][3] != before or parts[1][3] != fields.size:
            raise ValueError("a pool holds other positions than it counted")
        starts = np.concatenate([parts[0][0], parts[1][0], [fields.size]]).astype(np.int64)
        codes = np.concatenate([parts[0][1], parts[1][1]])
        totals = np.concatenate([parts[0][2], parts[1][2]])
        return fields.view(np.int64), mass, starts, codes, totals


#: No groups left out.
NONE: I64 = np.zeros(0, np.int64)


def _wanted(days: Sequence[int], out: Mapping[int, I64] | None) -> dict[int, I64]:
    """Each of ``days`` with its groups left out (``out``'s, or none)."""
    out = out or {}
    return {d: out.get(d, NONE) for d in days}


def _same(a: I64, b: I64) -> bool:
    """Whether two sorted slot arrays name the same groups."""
    return a.size == b.size and bool(np.array_equal(a, b))


def index_of(names: Sequence[str], wanted: Sequence[str]) -> list[int]:
    """The positions of ``wanted`` among ``names``."""
    return [list(names).index(name) for name in wanted]


@dataclass
class Pooled:
    """Pooled sums at one moment: its words' integer sums and its groups' float sums.

    ``words`` are the (group, bucket) words it holds, sorted, and ``ints`` their sums;
    ``floats`` are per group of ``coding.codes`` (0 for a group it does not hold).
    """

    coding: Coding
    words: U64
    ints: dict[str, I64]
    floats: dict[str, F64]

    @classmethod
    def of_tables(
        cls, tables: Sequence[pl.DataFrame], spec: Spec, columns: Sequence[str]
    ) -> Pooled | None:
        """The sums of state tables (each: keys, ``bucket``, ``columns``), as merging them.

        Without an index: the rows are coded, sorted by word and the rows of one word summed
        (one compiled pass), the float columns summed per group. None where the keys have
        no code, the words do not pack, or the compiled loops are off.
        """
        if compiled.loops() is None or not tables:
            return None
        keys = list(spec.keys)
        both = pl.concat([t.select(*keys, "bucket", *columns) for t in tables])
        coded = packed_rows(both.select(*keys, "bucket"), keys, []) if both.height else None
        if coded is None:
            return None
        groups, _, (score, value, key_min, key_max) = coded
        ints = [c for c in columns if both.schema[c].is_integer()]
        floats = [c for c in columns if c not in ints]
        order = pl.Series(value).arg_sort().to_numpy()
        words, sums = _summed(value, order, _columns(both, ints, np.int64))
        codes = _word_groups(words, score.bits)[0]
        per_group = {}
        if floats:  # (each group's float sums, a day after another: as a pool's snapshot)
            slot = _slots(codes, groups.codes, groups.bits)
            values = _columns(both, floats, np.float64)
            bounds = np.cumsum([0, *(t.height for t in tables)])
            sums_of = np.zeros((len(floats), codes.size))
            for a, b in itertools.pairwise(bounds):
                sums_of += _day_sums(slot[a:b], values[:, a:b], codes.size)
            per_group = dict(zip(floats, sums_of, strict=True))
        coding = Coding(spec, groups, score, key_min, key_max, codes)
        return cls(coding, words, dict(zip(ints, sums, strict=True)), per_group)

    def runs(self) -> Runs:
        """The rows as runs: ``pos`` and ``neg`` per bucket, the float sums per group."""
        spec = self.coding.spec
        return Runs(
            self.words,
            self.ints["pos"],
            self.ints["neg"],
            None,
            self.coding.score,
            self.coding.key_min,
            self.coding.key_max,
            self.coding.groups,
            bucketed=None if spec.exact else (spec.precision, spec.splits),
            group_sums=GroupSums(self.coding.codes, self.floats) if self.floats else None,
        )

    def counts(self) -> pl.DataFrame:
        """The rows as a table: the keys, ``bucket`` and the integer columns."""
        score = self.coding.score
        group = self.words >> np.uint64(score.bits)
        bucket = score.decode(self.words & np.uint64((1 << score.bits) - 1))
        keys = self.coding.groups.decode(group) if self.coding.spec.keys else []
        ints = [pl.Series(c, v) for c, v in self.ints.items()]
        return pl.DataFrame([*keys, pl.Series("bucket", bucket), *ints])

    def group_totals(self) -> pl.DataFrame:
        """The groups' float sums: the keys and the float columns, a row per group it holds."""
        codes = _word_groups(self.words, self.coding.score.bits)[0]
        sums = GroupSums(self.coding.codes, self.floats).of(codes)
        return pl.DataFrame([*self._keys(codes), *(pl.Series(c, v) for c, v in sums.items())])

    def group_ints(self, names: Sequence[str]) -> pl.DataFrame:
        """The integer columns ``names`` summed per group: the keys and the sums, a row a group."""
        codes, ordinal = _word_groups(self.words, self.coding.score.bits)
        firsts = np.flatnonzero(np.diff(ordinal, prepend=-1))
        sums = [pl.Series(c, np.add.reduceat(self.ints[c], firsts)) for c in names]
        return pl.DataFrame([*self._keys(codes), *sums])

    def _keys(self, codes: U64) -> list[pl.Series]:
        """The key columns of the group codes ``codes``."""
        return self.coding.groups.decode(codes) if self.coding.spec.keys else []
