"""Exact binary state of one unit by one sort: collect, pack, sort, reduce runs.

The unit's rows are collected with Polars as a group code per key column, the label, the
score and the weight; the score's ordered key (:func:`streameval.bucketing.ordered_key`) is
computed with NumPy. The group code and the score key (as a :class:`~.scorekeys.ScoreField`)
are packed, most significant first, into one ``uint64``; when unweighted the label takes the
lowest bit, so one ``np.sort`` orders everything and labels follow for free (otherwise an
``argsort`` carries labels and weights along). Runs of equal (group, score) are then summed:
they are the exact state's rows, in (group, score) order.

When the codes do not fit in 64 bits, :meth:`Collected.runs` returns None and the caller
falls back to the Polars group-by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..codes import KeyCode
from ..spec import Spec
from ..states.binary import merge_ops
from . import chunks, compiled, small_pages
from .groups import GroupCodes
from .hashcodes import hashed_codes, hashed_exprs
from .scorekeys import ScoreField, pack
from .staged import Staged

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Collect = Callable[[pl.LazyFrame, list[pl.Expr]], pl.DataFrame]


@dataclass
class Runs:
    """Distinct (group, score) rows of a unit, sorted by group code, then score ascending.

    Attributes
    ----------
    value : ndarray of uint64
        ``group << score.bits | score field`` of each run.
    pos, neg : ndarray of int64 (unweighted) or float64 (weighted)
        Σw·y and Σw·(1−y) of each run.
    n : ndarray of int64 or None
        Rows of each run, when weighted.
    score : ScoreField
        How the score key is stored in ``value``.
    key_min, key_max : int
        The smallest and largest score keys.
    groups : GroupCodes
        Turns group codes back into key columns.
    single : bool
        Whether every run is one row (unweighted, no tied scores in a group).
    sums : dict of str to ndarray or None
        Bucketed runs only (:mod:`.dense`): each bucket's ``log_loss``, ``brier`` and ``psum``.
    bucketed : tuple of (int, tuple of float) or None
        Bucketed runs only: the precision and splits the runs are buckets of.

    """

    value: U64
    pos: I64 | F64
    neg: I64 | F64
    n: I64 | None
    score: ScoreField
    key_min: int
    key_max: int
    groups: GroupCodes
    single: bool = False
    sums: dict[str, F64] | None = None
    bucketed: tuple[int, tuple[float, ...]] | None = None

    def key(self) -> I64:
        """Ordered score key (the exact bucket) of each run."""
        return self.score.decode(self.value & np.uint64((1 << self.score_bits) - 1))

    @property
    def score_bits(self) -> int:
        """Width of the score field in ``value``."""
        return self.score.bits

    def group(self) -> U64:
        """Group code of each run."""
        return self.value >> np.uint64(self.score_bits)


def collect_unit(
    lf: pl.LazyFrame,
    keys: list[str],
    codes: Mapping[str, KeyCode | None],
    rows: tuple[pl.Expr, pl.Expr, pl.Expr | None, pl.Expr, pl.Expr | None],
    collect: Collect,
    invalid: Callable[[], Exception],
) -> Collected | None:
    """The columns the sort needs of the rows of ``lf`` (None when a key has no code).

    Parameters
    ----------
    lf : LazyFrame
        The unit's rows.
    keys : list of str
        Group keys that vary over ``lf``.
    codes : mapping of str to KeyCode or None
        Integer code of each key column (None: not codable, so no sort path).
    rows : tuple of Expr
        The label as Boolean, the score as Float64, the weight (or None), the bad-row flag
        and the row key of bootstrap draws (or None; collected as ``_k``).
    collect : callable
        ``collect(lf, exprs)`` collects the columns ``exprs`` of ``lf`` (with the source's
        error handling; the shards of a source read once hand their rows over instead).
    invalid : callable
        The error to raise when some rows are bad.

    Returns
    -------
    Collected or None

    """
    label, score, weight, bad, row_key = rows
    coded = key_exprs(keys, codes)
    if coded is None:
        return None
    key_codes, exprs = coded
    exprs += [
        label.fill_null(False).cast(pl.UInt8).alias("_y"),  # 0/1 bytes: read as bool
        pl.when(~bad).then(score).alias("_p"),
    ]
    if weight is not None:
        exprs.append(weight.alias("_w"))
    if row_key is not None:
        exprs.append(row_key.alias("_k"))
    frame = collect(lf, exprs)
    if frame["_p"].null_count():
        raise invalid()
    return Collected(frame, key_codes, weight is not None)


def key_exprs(
    keys: list[str], codes: Mapping[str, KeyCode | None]
) -> tuple[list[KeyCode], list[pl.Expr]] | None:
    """The key columns' codes and the columns a unit collects for them (``_g0``, …).

    String keys (and keys without a small integer code) are collected as two hashes and the
    values (:func:`.hashcodes.hashed_exprs`); None when a key has no code, or needs the
    hashes while the compiled loops are switched off (by the tests: the Polars path).
    """
    key_codes = [codes.get(k) for k in keys]
    if any(c is None for c in key_codes):
        return None
    hashing = compiled.loops() is not None
    if not hashing and any(c is not None and c.decode is None for c in key_codes):
        return None
    exprs: list[pl.Expr] = []
    out: list[KeyCode] = []
    for i, c in enumerate(key_codes):
        assert c is not None
        out.append(c)
        exprs += (
            hashed_exprs(c, i) if hashing and c.text is not None else [c.encode.alias(f"_g{i}")]
        )
    return out, exprs


def unit_groups(frame: pl.DataFrame, key_codes: list[KeyCode]) -> tuple[GroupCodes, pl.DataFrame]:
    """The unit's group codes (:func:`key_exprs` columns), and the frame without those columns."""
    raw: list[Any] = []
    decoders, names = [], []
    ranges: list[tuple[int, int] | None] = []
    for i, code in enumerate(key_codes):
        names.append(f"_g{i}")
        if f"_h{i}" in frame.columns:  # String key collected as hashes
            loops = compiled.loops()
            assert loops is not None
            codes, decode, span = hashed_codes(frame, code, i, loops)
            raw.append(codes)
            decoders.append(decode)
            ranges.append(span)
            names += [f"_h{i}", f"_s{i}"]
        else:
            assert code.decode is not None  # (hashed-only keys are hashed above)
            raw.append(chunks(frame, [f"_g{i}"]))
            decoders.append(code.decode)
            ranges.append(None)
    with small_pages():
        groups = GroupCodes.build(decoders, raw, frame.height, ranges)
        del raw
        # the codes hold them now (indexing keeps the columns' chunks: drop would align them)
        return groups, frame[[c for c in frame.columns if c not in names]]


def table_codes(
    lf: pl.LazyFrame, keys: list[str], columns: list[pl.Expr]
) -> tuple[GroupCodes, pl.DataFrame] | None:
    """A table's rows' group codes, and ``columns`` collected with the key columns' codes.

    None where a key has no code or the compiled loops are off.
    """
    from ..codes import hashed_key, key_code

    if compiled.loops() is None:
        return None
    schema = lf.collect_schema()
    coded = key_exprs(keys, {k: key_code(k, schema[k]) or hashed_key(k, schema[k]) for k in keys})
    if coded is None:
        return None
    key_codes, exprs = coded
    return unit_groups(lf.select(*exprs, *columns).collect(), key_codes)


def table_groups(
    lf: pl.LazyFrame, keys: list[str], columns: list[pl.Expr]
) -> tuple[list[pl.Series], npt.NDArray[np.int64], int, pl.DataFrame] | None:
    """A table's rows coded by group: the keys (a row a group), the codes, the groups, ``columns``.

    The codes are 0 … groups − 1 (every row 0 without keys): :func:`table_codes` renumbered.
    """
    coded = table_codes(lf, keys, columns)
    if coded is None:
        return None
    groups, frame = coded
    codes, back = compiled.compact(groups.codes.view(np.int64), 1 << groups.bits)
    return groups.decode(back.view(np.uint64)), codes, back.size, frame


def state_runs(table: pl.DataFrame, spec: Spec) -> Runs | None:
    """A binary state table read back as runs (sorted by group, then bucket), for its metrics.

    The inverse of :func:`runs_state` (bucketed: of :func:`.dense.as_runs`' buckets): the
    table's rows are coded by group, packed with their bucket key and sorted; rows of one
    (group, bucket), which a table concatenated without merging may hold, are summed. None
    for an empty table, one without a stored column, keys without a code, keys and buckets
    too wide to pack, or unweighted counts whose pairs could pass an Int64 (states merged
    over billions of rows: the Polars finalize scales them as floats).
    """
    from ..states.binary import merge_ops

    stored = list(merge_ops(spec))
    if not table.height or any(c not in table.columns for c in stored):
        return None  # (a table written before a column was stored: the Polars finalize)
    if not spec.weighted:  # the runs' pair sums are Int64: P·N of a merged state may pass it
        positives, negatives = (int(table[c].sum()) for c in ("pos", "neg"))
        if 2 * positives * negatives >= 1 << 62:
            return None
    coded = table_codes(table.lazy(), list(spec.keys), [pl.col("bucket", *stored)])
    if coded is None:
        return None
    groups, frame = coded
    packed = pack(groups.codes, frame["bucket"].to_numpy(), groups.bits)
    if packed is None:
        return None
    field, value, low, high = packed
    order = np.argsort(value, kind="stable")
    value = value[order]
    columns = {c: frame[c].to_numpy()[order] for c in stored}
    starts = np.flatnonzero(np.append(True, value[1:] != value[:-1]))
    if starts.size < value.size:
        value = value[starts]
        columns = {c: np.add.reduceat(v, starts) for c, v in columns.items()}
    pos, neg, n = columns.pop("pos"), columns.pop("neg"), columns.pop("n", None)
    bucketed = None if spec.exact else (spec.precision, spec.splits)
    sums = columns or None
    return Runs(value, pos, neg, n, field, low, high, groups, sums=sums, bucketed=bucketed)


@dataclass
class Collected:
    """A unit's collected columns (``_g0``…, ``_y``, ``_p``, ``_w``), not yet sorted.

    Collecting (Polars) and sorting (NumPy) are separate steps so that the next unit can be
    read while this one is sorted.
    """

    frame: pl.DataFrame
    key_codes: list[KeyCode]
    weighted: bool

    def runs(self, spec: Spec | None = None) -> Runs | None:
        """Sort and reduce the rows (None when the codes do not fit in 64 bits).

        Given a bucketed ``spec``, the rows are counted straight into their buckets when
        there are few enough (:mod:`.dense`): the runs are then the buckets. Call it (or
        :meth:`staged`) once: the group code columns are dropped once read.
        """
        return self.staged(spec).runs()

    def staged(self, spec: Spec | None = None) -> Staged:
        """Start :meth:`runs` here; the :class:`Staged` returned finishes it (in another thread).

        Counting into dense buckets starts here (group codes, each row's cell, the counts);
        the float sums, or the sort, are left to the function.
        """
        if self.frame.height == 0:
            return Sorting(None, None, False)
        groups, frame = unit_groups(self.frame, self.key_codes)
        self.frame = frame
        weighted = self.weighted

        def kernel() -> Staged:
            return choose(frame, groups, spec, weighted)

        # The compiled loops leave the summing thread less to do: it places the rows too.
        return Deferred(kernel) if compiled.loops() is not None else kernel()


def choose(frame: pl.DataFrame, groups: GroupCodes, spec: Spec | None, weighted: bool) -> Staged:
    """The kernel of a unit's coded rows (``_y``, ``_p``, ``_w``): cells, or else the sort.

    Bucketed rows are counted into their cells (:func:`.dense.dense_cells`) where they can
    be; exact ones, and the rest, are sorted into runs (:class:`Sorting`).
    """
    cells = None
    if spec is not None and not spec.exact:
        from .dense import dense_cells

        with small_pages():
            cells = dense_cells(frame, groups, spec, weighted)
    return cells if cells is not None else Sorting(frame, groups, weighted)


@dataclass
class Deferred(Staged):
    """Rows whose kernel is chosen (and started) by the summing thread."""

    kernel: Callable[[], Staged]

    def _staged(self) -> Staged:
        if not hasattr(self, "_chosen"):
            self._chosen = self.kernel()
            del self.kernel  # (it holds the unit's frame and codes)
        chosen: Staged = self._chosen
        return chosen

    def _finish(self) -> Runs | None:
        """The chosen kernel's runs."""
        return self._staged().runs()

    def grouped(
        self, spec: Spec, thresholds: list[float], variance: bool = False
    ) -> pl.DataFrame | None:
        """The chosen kernel's grouped frame."""
        return self._staged().grouped(spec, thresholds, variance)

    def replicated(
        self, spec: Spec, thresholds: list[float], replicates: int
    ) -> pl.DataFrame | None:
        """The chosen kernel's replicates."""
        return self._staged().replicated(spec, thresholds, replicates)


@dataclass
class Sorting(Staged):
    """Rows to sort into exact runs (no rows: no runs)."""

    frame: pl.DataFrame | None
    groups: GroupCodes | None
    weighted: bool

    def _finish(self) -> Runs | None:
        frame, groups = self.frame, self.groups
        if frame is None or groups is None:
            return None
        self.frame = self.groups = None
        with small_pages():
            return _runs(frame, groups, self.weighted)


def ordered_keys(score: F64) -> I64:
    """Ordered key of each score, as :func:`streameval.bucketing.ordered_key` (no NaN).

    Non-negative floats are their own keys (no copy); negative ones have their low 63 bits
    flipped, and -0.0 becomes 0.0.

    >>> ordered_keys(np.array([-1.5, -0.0, 0.0, 0.25])).argsort(kind="stable").tolist()
    [0, 1, 2, 3]
    >>> int(ordered_keys(np.array([-0.0]))[0])
    0
    """
    bits = score.view(np.int64)
    if bits.size == 0 or int(bits.min()) >= 0:
        return bits
    key: I64 = np.where(bits < 0, bits ^ np.int64(0x7FFF_FFFF_FFFF_FFFF), bits)
    key[key == -1] = 0  # -0.0 (the only float whose key is -1)
    return key


def _runs(frame: pl.DataFrame, groups: GroupCodes, weighted: bool) -> Runs | None:
    """The runs of the collected columns (``_y``, ``_p``, ``_w``) in the given groups."""
    key = ordered_keys(frame["_p"].to_numpy())
    key_min, key_max = int(key.min()), int(key.max())
    label_bit = int(not weighted)
    fitted = ScoreField.fit(key, key_min, key_max, 64 - groups.bits - label_bit)
    if fitted is None and label_bit:
        label_bit = 0
        fitted = ScoreField.fit(key, key_min, key_max, 64 - groups.bits)
    if fitted is None:
        return None
    field, packed = fitted
    score_bits = field.bits
    # packed = (group << score_bits | score field) << label_bit | y, built in place
    del key
    codes = groups.codes  # shifted in place below: groups keeps only its decoders' use
    y = frame["_y"].to_numpy().view(np.bool_)
    if label_bit:
        packed <<= np.uint64(1)
        np.bitwise_or(packed, y, out=packed)
    if groups.bits:
        codes <<= np.uint64(score_bits + label_bit)
        packed |= codes
    del codes
    if label_bit:
        del frame, y
        packed.sort()
        value, pos, neg, single = _labelled_runs(packed)
        return Runs(value, pos, neg, None, field, key_min, key_max, groups, single)
    w = frame["_w"].to_numpy() if weighted else None
    del frame
    order = np.argsort(packed)
    sums = _carried_runs(packed[order], y[order], None if w is None else w[order])
    return Runs(*sums, field, key_min, key_max, groups)


Sums = tuple[U64, I64 | F64, I64 | F64, I64 | None]


def _starts(changed: npt.NDArray[np.bool_]) -> I64:
    """First index of each run, given whether each row differs from the previous one."""
    starts = np.flatnonzero(changed)
    starts += 1
    return np.concatenate((np.zeros(1, np.int64), starts))


def _labelled_runs(sorted_: U64) -> tuple[U64, I64, I64, bool]:
    """Values, pos and neg of the runs of sorted ``value << 1 | y``, and if each is one row."""
    one = np.uint64(1)
    changed = np.bitwise_xor(sorted_[1:], sorted_[:-1])
    changed = changed > one
    if changed.all():  # every score distinct within its group: a run per row
        del changed
        pos = np.bitwise_and(sorted_, one).view(np.int64)
        neg = 1 - pos
        sorted_ >>= one
        return sorted_, pos, neg, True
    starts = _starts(changed)
    del changed
    pos = np.add.reduceat(np.bitwise_and(sorted_, one).view(np.int64), starts)
    neg = np.diff(starts, append=sorted_.size) - pos
    return sorted_[starts] >> one, pos, neg, False


def _carried_runs(value: U64, y: npt.NDArray[np.bool_], w: F64 | None) -> Sums:
    """Values and sums of the runs of sorted values whose labels (and weights) came along."""
    starts = _starts(value[1:] != value[:-1])
    count = np.diff(starts, append=value.size)
    if w is None:
        pos = np.add.reduceat(y.astype(np.int64), starts)
        return value[starts], pos, count - pos, None
    zero = np.zeros((), np.float64)
    # +0.0 turns the -0.0 of a zero weight into 0.0, as Polars' sums give.
    wpos = np.add.reduceat(np.where(y, w, zero), starts) + 0.0
    wneg = np.add.reduceat(np.where(y, zero, w), starts) + 0.0
    return value[starts], wpos, wneg, count.astype(np.int64)


def runs_state(
    runs: Runs, spec: Spec, schema: pl.Schema, constants: Mapping[str, Any]
) -> pl.DataFrame:
    """The state table of the runs: key columns, ``bucket`` and the stored sums.

    Parameters
    ----------
    runs : Runs
        The unit's runs.
    spec : Spec
        The exact binary state's spec.
    schema : Schema
        The source's schema (types of the keys fixed over the unit).
    constants : mapping
        Keys fixed over the unit, and their values.

    Returns
    -------
    DataFrame
        The columns and types of :func:`streameval.states.binary.state_query`'s table.

    """
    values = {"pos": runs.pos, "neg": runs.neg, "n": runs.n}
    return state_frame(runs, runs.group(), runs.key(), values, spec, schema, constants)


def state_frame(
    runs: Runs,
    group: npt.NDArray[np.uint64],
    bucket: Any,
    values: Mapping[str, Any],
    spec: Spec,
    schema: pl.Schema,
    constants: Mapping[str, Any],
) -> pl.DataFrame:
    """The binary state table from sorted group codes, bucket keys and the value columns.

    Group codes are decoded once per group and repeated over its rows; keys fixed over the
    unit are added back; columns come in :func:`streameval.states.binary.state_query`'s order.
    """
    firsts = np.flatnonzero(np.append(True, group[1:] != group[:-1]))
    index = pl.Series(np.repeat(np.arange(firsts.size), np.diff(firsts, append=group.size)))
    columns: dict[str, Any] = {s.name: s.gather(index) for s in runs.groups.decode(group[firsts])}
    columns["bucket"] = bucket
    names = list(merge_ops(spec))
    columns.update({name: values[name] for name in names})
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    return pl.DataFrame(columns).with_columns(fixed).select([*spec.keys, "bucket", *names])
