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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import ordered_keys
from ..spec import Spec
from ..tasks.binary.state import merge_ops
from .groups import GroupCodes
from .scorekeys import ScoreField

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass
class GroupSums:
    """Float sums kept per group: the sorted group codes and each sum's value per code.

    >>> sums = GroupSums(np.array([2, 5, 9], np.uint64), {"brier": np.array([0.5, 1.0, 2.0])})
    >>> sums.of(np.array([5, 9], np.uint64))["brier"].tolist()
    [1.0, 2.0]
    """

    codes: U64
    sums: dict[str, F64]

    def of(self, codes: U64) -> dict[str, F64]:
        """The sums of the groups ``codes`` (each among :attr:`codes`)."""
        at = np.searchsorted(self.codes, codes)
        return {name: values[at] for name, values in self.sums.items()}


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
        Bucketed runs only (:mod:`.dense`): each bucket's ``log_loss``, ``brier``, ``psum``
        and ``hinge`` (a state of schema version 2 read back: no ``hinge``).
    bucketed : tuple of (int, tuple of float) or None
        Bucketed runs only: the precision and splits the runs are buckets of.
    group_sums : GroupSums or None
        Bucketed runs whose loss sums are kept per group, not per bucket (a pool's,
        :mod:`.pooled`): each group's ``log_loss``, ``brier`` and ``hinge`` (``sums`` is
        then None).

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
    group_sums: GroupSums | None = None

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


@dataclass
class TaggedRuns:
    """The runs of several states finalized as one table, each state's groups tagged.

    ``parts`` holds each state's runs and a one-row frame of the values its rows take in
    more key columns (a job's window, end day and days); ``spec`` is the runs' spec (its
    keys those of the runs, without the tags). Read by
    :func:`streameval.kernels.metrics.tagged_grouped`.
    """

    spec: Spec
    parts: list[tuple[Runs, pl.DataFrame]]
    #: Which parts' grouped frames to keep (in :attr:`grouped`), one flag per part.
    keep: tuple[bool, ...] = ()
    #: Each part's grouped frame (untagged, with DeLong's ``_var``), kept as computed (None
    #: where :attr:`keep` is False).
    grouped: list[pl.DataFrame | None] = field(default_factory=list)
    #: The thresholds the grouped frames hold the confusion counts at.
    thresholds: tuple[float, ...] = ()


@dataclass
class Grouped:
    """A state's rows already aggregated per group, at ``thresholds``, with ``_var``.

    The frame of :func:`streameval.kernels.metrics.runs_grouped` (with the variance): the
    metric table of the state at other thresholds needs its runs again.
    """

    frame: pl.DataFrame
    thresholds: tuple[float, ...]


def row_literals(row: pl.DataFrame) -> list[pl.Expr]:
    """The values of a one-row frame as literal columns of its types.

    >>> frame = pl.DataFrame({"g": [1, 2]}).with_columns(row_literals(pl.DataFrame({"w": ["7d"]})))
    >>> frame["w"].to_list()
    ['7d', '7d']
    """
    return [pl.lit(row[c][0], row.schema[c]).alias(c) for c in row.columns]


def sorted_runs(frame: pl.DataFrame, groups: GroupCodes, weighted: bool) -> Runs | None:
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
        The columns and types of :func:`streameval.tasks.binary.state.state_query`'s table.

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
    unit are added back; columns come in :func:`streameval.tasks.binary.state.state_query`'s order.
    """
    firsts = np.flatnonzero(np.append(True, group[1:] != group[:-1]))
    index = pl.Series(np.repeat(np.arange(firsts.size), np.diff(firsts, append=group.size)))
    columns: dict[str, Any] = {s.name: s.gather(index) for s in runs.groups.decode(group[firsts])}
    columns["bucket"] = bucket
    names = list(merge_ops(spec))
    columns.update({name: values[name] for name in names})
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    return pl.DataFrame(columns).with_columns(fixed).select([*spec.keys, "bucket", *names])
