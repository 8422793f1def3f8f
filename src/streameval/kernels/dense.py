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
runs instead. So it does when a squared error or a sum could overflow (scores or weights near
the float range's ends; the Polars path keeps its ``inf``/``nan`` sums): once the rows are
placed, the float sums cannot fail, so the group codes are let go early.

With numba installed (the ``fast`` extra), :func:`dense_cells` hands the unit to
:mod:`.compiled`, which fills the same cells with compiled loops; this module's NumPy passes
are the fallback and the reference the tests compare them with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EXACT_BITS, bucket_floor_scalar, float_to_key_scalar, key_to_float_scalar
from ..spec import Spec
from . import small_pages
from .compiled import CompiledCells, compiled_cells, loops
from .groups import GroupCodes
from .runs import F64, I64, Runs, ordered_keys
from .scorekeys import ScoreField
from .staged import Staged

#: Whether :meth:`.runs.Collected.runs` may count bucketed states densely (tests switch it).
ENABLED = True
_EPS = float(np.finfo(np.float64).eps)
_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)
#: At most this many cells, whatever the rows (8 bytes a cell per summed column).
MAX_CELLS = 1 << 24
#: Cells allowed per row (and at least ``MIN_CELLS``): beyond, sorting the rows is cheaper.
CELLS_PER_ROW = 2
MIN_CELLS = 1 << 16
#: Rows × max(1, |score|)² × the largest weight below this: no sum can overflow.
SAFE = 1e300


def cuts_inside(spec: Spec) -> I64:
    """Ordered keys of the splits that fall inside a bucket (the others change nothing)."""
    keys = {float_to_key_scalar(s) for s in spec.splits}
    inside = [k for k in keys if bucket_floor_scalar(k, spec.precision) != k]
    return np.array(sorted(inside), np.int64)


def cell_limit(rows: int) -> int:
    """The most cells a unit of ``rows`` rows may be counted in (else the sort runs)."""
    return min(MAX_CELLS, max(CELLS_PER_ROW * rows, MIN_CELLS))


def coarse_starts(binades: I64, cuts: I64, p: int) -> I64:
    """The first cell of each coarse cell (of these binades, in order) and one past the last.

    A coarse cell has a cell per bucket: ``2**p``, plus one per split inside a bucket of its
    binade (sorted ``cuts``, :func:`cuts_inside`).

    >>> coarse_starts(np.array([1, 2]), np.array([(2 << 52) + 5]), 3).tolist()
    [0, 8, 17]
    """
    high = np.searchsorted(cuts, (binades + 1) << np.int64(EXACT_BITS))
    size = (1 << p) + high - np.searchsorted(cuts, binades << np.int64(EXACT_BITS))
    starts = np.zeros(binades.size + 1, np.int64)
    np.cumsum(size, out=starts[1:])
    return starts


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
        or some sum could overflow.

    """
    cells = dense_cells(frame, groups, spec, weighted)
    return None if cells is None else cells.runs()


@dataclass
class Cells(Staged):
    """A unit's rows placed in their cells and counted; :meth:`runs` sums the rest.

    The two steps run in different threads: placing and counting with the reading of the
    unit, summing the floats while the next unit is read. ``cell`` holds each row's cell (the
    cells of the ``occupied`` coarse cells start at ``starts``), ``counts`` the counts of the
    ``filled`` cells, ``scratch`` a row-sized buffer.
    """

    frame: pl.DataFrame
    groups: GroupCodes
    spec: Spec
    key: I64
    cell: I64
    scratch: I64
    filled: I64
    counts: dict[str, npt.NDArray[np.generic]]
    starts: I64
    occupied: I64
    tops: I64

    def _finish(self) -> Runs | None:
        """The buckets as runs with their sums (None, for the Polars path, if a sum overflows)."""
        with small_pages(), np.errstate(over="ignore", invalid="ignore"):
            term = self.scratch.view(np.float64)
            filled = self.filled
            sums = _float_sums(self.frame, self.key, self.cell, term, int(self.starts[-1]))
            del self.cell, self.scratch, term
            if sums is None:
                return None
            out = {name: values[filled] for name, values in sums.items()}
            out.update(self.counts)
            return filled_runs(
                filled, out, self.starts, self.occupied, self.tops, self.groups, self.spec
            )


def filled_runs(
    filled: I64,
    sums: dict[str, npt.NDArray[np.generic]],
    starts: I64,
    occupied: I64,
    tops: I64,
    groups: GroupCodes,
    spec: Spec,
) -> Runs | None:
    """The filled cells as runs: each one's coarse cell, then its group and bucket key.

    ``sums`` holds the filled cells' counts and sums; ``starts`` the first cell of each
    ``occupied`` coarse cell (``group code × len(tops) + binade rank``), and one past the last.
    """
    p, ntops = spec.precision, tops.size
    if int(starts[-1]) == occupied.size << p:  # no splits: 2^p cells each
        owner = filled >> np.int64(p)
        local = filled & np.int64((1 << p) - 1)
    else:
        owner = np.searchsorted(starts, filled, side="right") - 1
        local = filled - starts[owner]
    coarse_of = occupied[owner]
    group = (coarse_of // ntops).astype(np.uint64)
    return slot_runs(group, tops[coarse_of % ntops], local, sums, groups, spec)


def slot_runs(
    group: npt.NDArray[np.uint64],
    binade: I64,
    local: I64,
    sums: dict[str, npt.NDArray[np.generic]],
    groups: GroupCodes,
    spec: Spec,
) -> Runs | None:
    """Runs of filled cells given their group codes, binades and slots in their binade.

    A slot is a bucket's rank in its binade: in a binade with splits inside its buckets, the
    slots past a split are the split's buckets.
    """
    p = spec.precision
    bkey = ((binade << np.int64(p)) + local) << np.int64(EXACT_BITS - p)
    cuts = cuts_inside(spec)
    if cuts.size:
        _cut_buckets(bkey, binade, local, cuts, p)
    return _as_runs(group, bkey, sums, groups, spec)


def dense_cells(
    frame: pl.DataFrame, groups: GroupCodes, spec: Spec, weighted: bool
) -> Cells | CompiledCells | None:
    """Each row's cell, and the rows (and labels) counted per cell; None: use the sort.

    Parameters are those of :func:`dense_runs`.
    """
    if not ENABLED or spec.exact or spec.precision >= EXACT_BITS:
        return None
    compiled = loops()
    if compiled is not None:
        return compiled_cells(frame, groups, spec, weighted, compiled)
    rows = frame.height
    limit = cell_limit(rows)
    p = spec.precision
    shift = EXACT_BITS - p
    key = ordered_keys(frame["_p"].to_numpy())
    key_min, key_max = int(key.min()), int(key.max())
    top_min, top_max = key_min >> EXACT_BITS, key_max >> EXACT_BITS
    largest = max(1.0, abs(key_to_float_scalar(key_min)), abs(key_to_float_scalar(key_max)))
    heaviest = max(1.0, float(frame["_w"].max())) if weighted else 1.0  # type: ignore[arg-type]
    if not largest * largest * heaviest * rows < SAFE:
        return None
    group_space = 1 << groups.bits
    cuts = cuts_inside(spec)
    cut_tops = cuts >> EXACT_BITS
    with small_pages():
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
            np.take(rank, scratch, out=scratch, mode="clip")  # clip: not buffered
        ntops = tops.size
        # coarse cell of each row (group code, then binade rank), over the rows' codes: the
        # runs decode group codes from the cells; restored below if the sort runs after all
        coarse = np.multiply(
            groups.codes.view(np.int64), np.int64(ntops), out=groups.codes.view(np.int64)
        )
        coarse += scratch
        codes, groups = groups.codes, replace(groups, codes=np.zeros(0, np.uint64))
        occupied = np.flatnonzero(np.bincount(coarse, minlength=group_space * ntops))
        occ_tops = tops[occupied % ntops]
        starts = coarse_starts(occ_tops, cuts, p)
        cells = int(starts[-1])
        if cells > limit:
            np.floor_divide(coarse, np.int64(ntops), out=coarse)  # the group codes again
            return None
        del codes
        # cell = start of the coarse cell + bucket's rank in its binade; with the binade's top
        # subtracted ahead so that adding the bucket index (top << p | mantissa) lands there
        adjust = np.zeros(group_space * ntops, np.int64)
        adjust[occupied] = starts[:-1] - (occ_tops << np.int64(p))
        cell = np.take(adjust, coarse, out=scratch, mode="clip")
        del adjust
        cell += bucket
        if cuts.size and np.isin(cut_tops, occ_tops).any():
            inside = np.flatnonzero(np.isin(key >> np.int64(EXACT_BITS), cut_tops))
            if inside.size:
                at = key[inside]
                below = np.searchsorted(cuts, (at >> np.int64(EXACT_BITS)) << np.int64(EXACT_BITS))
                cell[inside] += np.searchsorted(cuts, at, side="right") - below
        filled, counts = _counts(frame, cell, cells, bucket, weighted)
        del bucket
    return Cells(frame, groups, spec, key, cell, coarse, filled, counts, starts, occupied, tops)


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


def _counts(
    frame: pl.DataFrame, cell: I64, cells: int, scratch: I64, weighted: bool
) -> tuple[I64, dict[str, npt.NDArray[np.generic]]]:
    """The filled cells, and their rows (weighted) or their positives and negatives."""
    if weighted:
        rows = np.bincount(cell, minlength=cells)
        filled = np.flatnonzero(rows)
        return filled, {"n": rows[filled]}
    # positives and negatives of cell c at 2c + 1 and 2c: one pass
    labelled = np.left_shift(cell, np.int64(1), out=scratch)
    labelled |= frame["_y"].to_numpy()  # 0/1 bytes
    both = np.bincount(labelled, minlength=2 * cells)
    neg, pos = both[0::2], both[1::2]
    filled = np.flatnonzero(np.bitwise_or(neg, pos))
    return filled, {"pos": pos[filled], "neg": neg[filled]}


def _float_sums(
    frame: pl.DataFrame, key: I64, cell: I64, term: F64, cells: int
) -> dict[str, npt.NDArray[np.generic]] | None:
    """The float columns summed per cell, or None when some sum overflows.

    ``term`` is a row-sized buffer to overwrite.
    """
    y = frame["_y"].to_numpy().view(np.bool_)
    score: F64 = key.view(np.float64)
    if key.size and int(key.min()) < 0:
        score = np.where(key < 0, key ^ _LOW63, key).view(np.float64)
    w = frame["_w"].to_numpy() if "_w" in frame.columns else None
    sums: dict[str, npt.NDArray[np.generic]] = {}
    if w is not None:
        # +0.0 turns -0.0 into 0.0, as Polars' sums give
        np.copyto(term, np.zeros((), np.float64))
        np.copyto(term, w, where=y)
        sums["pos"] = np.bincount(cell, weights=term, minlength=cells) + 0.0
        np.subtract(w, term, out=term)
        sums["neg"] = np.bincount(cell, weights=term, minlength=cells) + 0.0
    log_terms(score, y, w, out=term)
    sums["log_loss"] = np.negative(np.bincount(cell, weights=term, minlength=cells)) + 0.0
    # squared error (p − y)²
    np.subtract(score, y, out=term)
    np.square(term, out=term)
    if w is not None:
        term *= w
    sums["brier"] = np.bincount(cell, weights=term, minlength=cells) + 0.0
    if w is not None:
        np.multiply(score, w, out=term)
    psum = np.bincount(cell, weights=score if w is None else term, minlength=cells)
    sums["psum"] = np.add(psum, 0.0, out=psum)
    # a squared error that overflows makes its cell's sum inf (or nan, times a zero weight)
    for name in ("log_loss", "brier", "psum"):
        if not np.isfinite(sums[name]).all():
            return None
    return sums


def log_terms(score: F64, y: npt.NDArray[np.bool_], w: F64 | None, out: F64 | None = None) -> F64:
    """Each row's log of its clipped probability of its label (times its weight).

    sklearn's clipping: ``log(p)`` for positives, ``log(1 − p)`` for negatives, with ``p``
    clipped to [eps, 1 − eps]; the log loss is minus their sum.

    >>> log_terms(np.array([0.5, 0.25]), np.array([True, False]), None).round(4).tolist()
    [-0.6931, -0.2877]
    """
    term = np.clip(score, _EPS, 1.0 - _EPS, out=out)
    np.subtract(term, ~y, out=term)  # |p − 0| = p and |p − 1| = 1 − p, both exact
    np.abs(term, out=term)
    np.log(term, out=term)
    if w is not None:
        term *= w
    return term


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
