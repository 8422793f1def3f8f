"""Bucketed binary state of one unit without a sort: count rows straight into dense cells.

In bucketed mode a unit has at most (groups × binades × 2^precision) buckets, usually far
fewer than rows. Each row's bucket is computed from its ordered score key as
:func:`streameval.bucketing.bucket_expr` does (the key floored to the spec's precision, raised
to the largest split at or below it) and given a cell index: the (group, binade) pairs that
occur are numbered in order ("coarse cells"), each gets ``2^precision`` slots plus one per split
inside that binade, and a row's slot is its bucket's rank within the binade. Cell order is then
(group, bucket) order, so ``np.bincount`` sums every column in one pass each and the occupied
cells are the buckets, already sorted: the runs the sort kernel would have reduced the buckets
to (:mod:`.buckets`), with the same integer counts and float sums that differ only by summation
order.

The cells must stay few: when the (group, binade) pairs or their slots outnumber the rows (many
groups with few rows each, high precision), :func:`dense_runs` returns None and the sort kernel
runs instead. So it does when a squared error or a sum overflows (the Polars path keeps its
``inf``/``nan`` sums).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EXACT_BITS, bucket_floor_scalar, float_to_key_scalar
from ..spec import Spec
from . import small_pages
from .groups import GroupCodes
from .runs import F64, I64, Runs, ordered_keys
from .scorekeys import ScoreField

#: Whether :meth:`.runs.Collected.runs` may count bucketed states densely (tests switch it).
ENABLED = True
_EPS = float(np.finfo(np.float64).eps)
_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
#: At most this many cells, whatever the rows (8 bytes a cell per summed column).
MAX_CELLS = 1 << 24
#: Cells allowed per row (and at least ``MIN_CELLS``): beyond, sorting the rows is cheaper.
CELLS_PER_ROW = 2
MIN_CELLS = 1 << 16


def _cuts(spec: Spec) -> I64:
    """Ordered keys of the splits that fall inside a bucket (the others change nothing)."""
    keys = {float_to_key_scalar(s) for s in spec.splits}
    inside = [k for k in keys if bucket_floor_scalar(k, spec.precision) != k]
    return np.array(sorted(inside), np.int64)


def _cell_limit(rows: int) -> int:
    return min(MAX_CELLS, max(CELLS_PER_ROW * rows, MIN_CELLS))


def dense_runs(frame: pl.DataFrame, groups: GroupCodes, spec: Spec, weighted: bool) -> Runs | None:
    """The buckets of a unit's collected rows as runs with their sums (None: use the sort).

    Parameters
    ----------
    frame : DataFrame
        The collected columns ``_y``, ``_p`` (and ``_w``) of :func:`.runs.collect_unit`.
    groups : GroupCodes
        The rows' group codes.
    spec : Spec
        The bucketed binary state's spec.
    weighted : bool
        Whether ``_w`` holds weights.

    Returns
    -------
    Runs or None
        Runs of the buckets (:attr:`Runs.sums` set), or None when the cells would be too many
        or some sum overflows.

    """
    if not ENABLED or spec.exact or spec.precision >= EXACT_BITS:
        return None
    rows = frame.height
    limit = _cell_limit(rows)
    p = spec.precision
    shift = EXACT_BITS - p
    key = ordered_keys(frame["_p"].to_numpy())
    key_min, key_max = int(key.min()), int(key.max())
    top_min, top_max = key_min >> EXACT_BITS, key_max >> EXACT_BITS
    group_space = 1 << groups.bits
    cuts = _cuts(spec)
    cut_tops = cuts >> EXACT_BITS
    with small_pages(), np.errstate(over="ignore", invalid="ignore"):
        bucket = key >> np.int64(shift)  # bucket index: binade << p | mantissa's top p bits
        scratch = np.right_shift(bucket, np.int64(p))  # binade (sign, exponent): -2048 … 2047
        # binades: the span from the lowest to the highest, or the ones that occur, ranked
        span = top_max - top_min + 1
        tops: I64 = np.arange(top_min, top_max + 1, dtype=np.int64)
        scratch -= np.int64(top_min)
        if group_space * span > limit:
            tops = np.flatnonzero(np.bincount(scratch, minlength=span)) + top_min
            if group_space * tops.size > limit:
                return None
            rank = np.zeros(span, np.int64)
            rank[tops - top_min] = np.arange(tops.size)
            np.take(rank, scratch, out=scratch)
        ntops = tops.size
        # coarse cell of each row: group code, then binade rank
        coarse = np.multiply(groups.codes.view(np.int64), np.int64(ntops))
        coarse += scratch
        occupied = np.flatnonzero(np.bincount(coarse, minlength=group_space * ntops))
        occ_tops = tops[occupied % ntops]
        high = np.searchsorted(cuts, (occ_tops + 1) << np.int64(EXACT_BITS))
        size = (1 << p) + high - np.searchsorted(cuts, occ_tops << np.int64(EXACT_BITS))
        starts = np.zeros(occupied.size + 1, np.int64)
        np.cumsum(size, out=starts[1:])
        cells = int(starts[-1])
        if cells > limit:
            return None
        # cell = start of the coarse cell + bucket's rank in its binade; with the binade's top
        # subtracted ahead so that adding the bucket index (top << p | mantissa) lands there
        adjust = np.zeros(group_space * ntops, np.int64)
        adjust[occupied] = starts[:-1] - (occ_tops << np.int64(p))
        cell = np.take(adjust, coarse, out=scratch)
        del adjust
        cell += bucket
        if cuts.size and np.isin(cut_tops, occ_tops).any():
            inside = np.flatnonzero(np.isin(key >> np.int64(EXACT_BITS), cut_tops))
            if inside.size:
                at = key[inside]
                below = np.searchsorted(cuts, (at >> np.int64(EXACT_BITS)) << np.int64(EXACT_BITS))
                cell[inside] += np.searchsorted(cuts, at, side="right") - below
        sums = _sums(frame, key, key_min, cell, cells, (bucket, coarse), weighted)
        del cell, bucket, coarse
        if sums is None:
            return None
        filled = np.flatnonzero(sums.pop("_rows"))
        out = {name: values[filled] for name, values in sums.items()}
        # each filled cell's coarse cell, then its group and bucket key
        owner = np.searchsorted(starts, filled, side="right") - 1
        local = filled - starts[owner]
        coarse_of = occupied[owner]
        group = (coarse_of // ntops).astype(np.uint64)
        binade = tops[coarse_of % ntops]
        bkey = ((binade << np.int64(p)) + local) << np.int64(shift)
        if cuts.size:
            _cut_buckets(bkey, binade, local, cuts, p)
    return _as_runs(group, bkey, out, groups, spec)


def _cut_buckets(bkey: I64, binade: I64, local: I64, cuts: I64, p: int) -> None:
    """Bucket keys of the cells in binades with splits inside a bucket (in place)."""
    shift = EXACT_BITS - p
    for b in np.unique(cuts >> EXACT_BITS):
        where = np.flatnonzero(binade == b)
        if not where.size:
            continue
        mine = cuts[(cuts >> EXACT_BITS) == b]
        floors = ((b << p) + np.arange(1 << p, dtype=np.int64)) << shift
        slots = np.sort(np.concatenate((floors, mine)))
        bkey[where] = slots[local[where]]


def _sums(
    frame: pl.DataFrame,
    key: I64,
    key_min: int,
    cell: I64,
    cells: int,
    scratch: tuple[I64, I64],
    weighted: bool,
) -> dict[str, npt.NDArray[np.generic]] | None:
    """Every stored column summed per cell (and ``_rows``), or None when some sum overflows.

    ``scratch`` holds two row-sized buffers to overwrite.
    """
    y = frame["_y"].to_numpy()
    if key_min >= 0:
        score: F64 = key.view(np.float64)
    else:
        score = np.where(key < 0, key ^ _LOW63, key).view(np.float64)
    w = frame["_w"].to_numpy() if weighted else None
    sums: dict[str, npt.NDArray[np.generic]] = {}
    if w is None:  # positives and negatives of cell c at 2c + 1 and 2c: one pass
        labelled = np.left_shift(cell, np.int64(1), out=scratch[0])
        labelled |= y
        counts = np.bincount(labelled, minlength=2 * cells)
        neg, pos = counts[0::2], counts[1::2]
        sums["neg"], sums["pos"] = neg, pos
        rows = neg + pos
    else:
        zero = np.zeros((), np.float64)
        rows = np.bincount(cell, minlength=cells)
        # +0.0 turns -0.0 into 0.0, as Polars' sums give
        sums["pos"] = np.bincount(cell, weights=np.where(y, w, zero), minlength=cells) + 0.0
        sums["neg"] = np.bincount(cell, weights=np.where(y, zero, w), minlength=cells) + 0.0
        sums["n"] = rows
    # log loss, sklearn's clipping: −log(p) for positives, −log(1 − p) for negatives
    term, other = scratch[0].view(np.float64), scratch[1].view(np.float64)
    np.clip(score, _EPS, 1.0 - _EPS, out=term)
    np.subtract(1.0, term, out=other)
    np.copyto(other, term, where=y)
    np.log(other, out=other)
    if w is not None:
        other *= w
    sums["log_loss"] = np.negative(np.bincount(cell, weights=other, minlength=cells)) + 0.0
    # squared error (p − y)²
    np.subtract(score, y, out=term)
    np.square(term, out=term)
    if w is not None:
        term *= w
    sums["brier"] = np.bincount(cell, weights=term, minlength=cells) + 0.0
    if w is not None:
        np.multiply(score, w, out=other)
    psum = np.bincount(cell, weights=score if w is None else other, minlength=cells)
    sums["psum"] = np.add(psum, 0.0, out=psum)
    del term, other
    # a squared error that overflows makes its cell's sum inf (or nan, times a zero weight)
    for name in ("log_loss", "brier", "psum"):
        if not np.isfinite(sums[name]).all():
            return None
    sums["_rows"] = rows
    return sums


def _as_runs(
    group: npt.NDArray[np.uint64],
    bucket: I64,
    sums: dict[str, npt.NDArray[np.generic]],
    groups: GroupCodes,
    spec: Spec,
) -> Runs | None:
    """The buckets as runs (group code and bucket key packed as the sort kernel packs them)."""
    low, high = int(bucket.min()), int(bucket.max())
    field = ScoreField.build(bucket, low, high, 64 - groups.bits)
    if field is None:
        return None
    value = field.encode(bucket)
    if groups.bits:
        value |= group << np.uint64(field.bits)
    pos, neg = sums.pop("pos"), sums.pop("neg")
    n = sums.pop("n", None)
    return Runs(
        value,
        pos,  # type: ignore[arg-type]
        neg,  # type: ignore[arg-type]
        n,  # type: ignore[arg-type]
        field,
        low,
        high,
        groups,
        sums=sums,  # type: ignore[arg-type]
        bucketed=(spec.precision, spec.splits),
    )
