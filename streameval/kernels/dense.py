"""Bucketed binary state of one unit without a sort: rows counted straight into their cells.

In bucketed mode a unit's rows fall in (group, binade) pairs, "coarse cells", each holding
``2^precision`` buckets plus one per split inside that binade. A row's cell is its coarse
cell's start plus its bucket's rank within the binade, so cell order is (group, bucket) order:
the filled cells are the state's buckets, already sorted, with the same integer counts as the
sort kernel's runs (:mod:`.buckets`) and float sums that differ only by summation order.

:func:`dense_cells` is the one entry point; the compiled loops (:mod:`.compiled`,
:mod:`.loops`) do the work, for any number of groups and any density (a coarse cell's window
is summed in cache, and only filled cells are kept). Units whose squared errors or sums could
overflow (scores or weights near the float range's ends; the Polars path keeps its
``inf``/``nan`` sums), or whose precision is above the windows' bound
(:data:`.compiled.MAX_WINDOW_BITS`), are sorted instead. This module holds the cell layout
both the loops and the runs read.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..bucketing import EXACT_BITS, bucket_floor_scalar, float_to_key_scalar
from ..spec import Spec
from .groups import GroupCodes
from .runs import I64, Runs
from .scorekeys import pack

#: Rows × max(1, |score|)² × the largest weight below this: no sum can overflow.
SAFE = 1e300


def cuts_inside(spec: Spec) -> I64:
    """Ordered keys of the splits that fall inside a bucket (the others change nothing)."""
    keys = {float_to_key_scalar(s) for s in spec.splits}
    inside = [k for k in keys if bucket_floor_scalar(k, spec.precision) != k]
    return np.array(sorted(inside), np.int64)


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


def slot_keys(binade: I64, local: I64, spec: Spec) -> I64:
    """The bucket key (lowest ordered key) of filled cells given their binades and slots.

    A slot is a bucket's rank in its binade: in a binade with splits inside its buckets, the
    slots past a split are the split's buckets.

    >>> from streameval.bucketing import float_to_key_scalar as key
    >>> spec = Spec(kind="binary", keys=(), precision=1, splits=(0.3,))
    >>> top = key(0.25) >> 52  # the binade [0.25, 0.5): slots [0.25, 0.3), [0.3, 0.375), …
    >>> got = slot_keys(np.array([top, top, top]), np.array([0, 1, 2]), spec)
    >>> (got == [key(0.25), key(0.3), key(0.375)]).tolist()
    [True, True, True]
    """
    p = spec.precision
    bkey: I64 = ((binade << np.int64(p)) + local) << np.int64(EXACT_BITS - p)
    cuts = cuts_inside(spec)
    if cuts.size:
        _cut_buckets(bkey, binade, local, cuts, p)
    return bkey


def slot_runs(
    group: npt.NDArray[np.uint64],
    binade: I64,
    local: I64,
    sums: dict[str, npt.NDArray[np.generic]],
    groups: GroupCodes,
    spec: Spec,
) -> Runs | None:
    """Runs of filled cells given their group codes, binades and slots in their binade."""
    return as_runs(group, slot_keys(binade, local, spec), sums, groups, spec)


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


def as_runs(
    group: npt.NDArray[np.uint64],
    bucket: I64,
    sums: dict[str, npt.NDArray[np.generic]],
    groups: GroupCodes,
    spec: Spec,
) -> Runs | None:
    """The buckets as runs (group code and bucket key packed as the sort kernel packs them)."""
    if not bucket.size:
        return None
    packed = pack(group, bucket, groups.bits)
    if packed is None:
        return None
    field, value, low, high = packed
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
