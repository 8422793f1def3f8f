"""The dense bucketed kernel with compiled loops, when numba is installed (the ``fast`` extra).

:func:`compiled_cells` lays a unit's rows out in the cells of :mod:`.dense` (same cells, same
order, each cell's terms added in the same order) with the loops of :mod:`.loops`: the reading
thread orders the rows by (group, binade); the summing thread sums each such block in a window
that stays in cache. Without numba, or with the environment variable
``STREAMEVAL_COMPILED=0``, :mod:`.dense` uses NumPy alone; the results are the same.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EXACT_BITS, key_to_float_scalar
from ..spec import Spec
from . import buffer, column, give_back, small_pages
from .groups import GroupCodes

if TYPE_CHECKING:
    from .runs import Runs

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: Whether the compiled loops may run at all (tests switch it to compare both paths).
ENABLED = True
_EPS = float(np.finfo(np.float64).eps)
#: Rows are summed by blocks of 2**BLOCK cells (5 or 6 float64 each: fits a core's L2 cache).
BLOCK = 12


@cache
def _import_loops() -> ModuleType | None:
    if os.environ.get("STREAMEVAL_COMPILED", "1").strip() == "0":
        return None
    try:
        from . import loops
    except ImportError:  # numba not installed
        return None
    return loops


def loops() -> ModuleType | None:
    """The compiled loops, or None (numba missing, or switched off)."""
    return _import_loops() if ENABLED else None


def warm() -> float:
    """Load numba and the compiled loops now (about a second, once per process); the seconds.

    Their machine code comes from numba's on-disk cache (compiled there on first use ever), but
    loading it costs about a second in each new process: call this at start-up to keep that
    out of the first evaluation. Without numba it does nothing.

    >>> warm() >= 0.0
    True
    """
    started = time.perf_counter()
    if loops() is not None:
        from ..accumulate import accumulate

        frame = pl.DataFrame({"g": ["a", "b"], "y": [True, False], "p": [0.75, 0.25]})
        accumulate(frame, label="y", score="p", by="g", precision=2)
    return time.perf_counter() - started


@dataclass
class CompiledCells:
    """A unit's rows placed in their cells, with their log-loss terms; :meth:`runs` sums them.

    The two steps run in different threads: placing with the reading of the unit, summing
    while the next unit is read.
    """

    groups: GroupCodes
    spec: Spec
    loops: ModuleType
    words: I64
    weights: F64
    bounds: I64
    starts: I64
    occupied: I64
    tops: I64

    def runs(self) -> Runs | None:
        """The buckets as runs with their sums (None, for the Polars path, if a sum overflows).

        Call it once: it gives its buffers back.
        """
        from .dense import cuts_inside, slot_runs

        words, weights = self.words, self.weights
        del self.words, self.weights
        cuts = cuts_inside(self.spec)
        cut_tops = np.zeros(2 * self.loops.OFFSET, np.bool_)
        cut_tops[(cuts >> np.int64(EXACT_BITS)) + self.loops.OFFSET] = True
        with small_pages():
            got, group, binade, local = self.loops.block_sums(
                words, weights, self.bounds, self.starts, self.occupied, self.tops,
                self.spec.precision, cuts, cut_tops, _EPS,
            )  # fmt: skip
            give_back(words)
            give_back(weights)
            sums = _sums(got, weights.size > 0)
            if sums is None:
                return None
            return slot_runs(group, binade, local, sums, self.groups, self.spec)


def _sums(got: F64, weighted: bool) -> dict[str, npt.NDArray[np.generic]] | None:
    """The filled cells' sums by name (None if a float sum overflowed); a row of ``got`` each."""
    floats = got[-3:]
    # a squared error that overflows makes its cell's sum inf (or nan, times a zero weight)
    if not np.isfinite(floats).all():
        return None
    out: dict[str, npt.NDArray[np.generic]] = {
        "log_loss": np.negative(floats[0]) + 0.0,  # +0.0: -0.0 becomes 0.0, as in Polars
        "brier": floats[1] + 0.0,
        "psum": floats[2] + 0.0,
    }
    if weighted:
        out["n"] = got[0].astype(np.int64)
        out["pos"] = got[1] + 0.0
        out["neg"] = got[2] + 0.0
    else:
        out["neg"] = got[0].astype(np.int64)
        out["pos"] = got[1].astype(np.int64)
    return out


def compiled_cells(
    frame: pl.DataFrame, groups: GroupCodes, spec: Spec, weighted: bool, loops: ModuleType
) -> CompiledCells | None:
    """Each row's cell, as :func:`.dense.dense_cells` places it; None: use the sort.

    Parameters
    ----------
    frame, groups, spec, weighted
        As for :func:`.dense.dense_cells`.
    loops : module
        The compiled loops (:func:`loops`).

    Returns
    -------
    CompiledCells or None

    """
    from .dense import SAFE, cell_limit, coarse_starts, cuts_inside

    rows = frame.height
    limit = cell_limit(rows)
    p = spec.precision
    bits = column(frame["_p"], np.float64).view(np.int64)
    seen, low, high = loops.binades(bits)
    largest = max(1.0, abs(key_to_float_scalar(int(low))), abs(key_to_float_scalar(int(high))))
    heaviest = max(1.0, float(frame["_w"].max())) if weighted else 1.0  # type: ignore[arg-type]
    if not largest * largest * heaviest * rows < SAFE:
        return None
    space = 1 << groups.bits
    offset = loops.OFFSET
    tops: I64 = np.flatnonzero(seen) - offset
    ntops = tops.size
    if space * ntops > limit:
        return None
    rank = np.zeros(seen.size, np.int64)
    rank[tops + offset] = np.arange(ntops)
    codes = groups.codes.view(np.int64)
    sizes = loops.occupied(codes, bits, rank, ntops, space)
    occupied = np.flatnonzero(sizes)
    occ_tops = tops[occupied % ntops]
    cuts = cuts_inside(spec)
    starts = coarse_starts(occ_tops, cuts, p)
    cells = int(starts[-1])
    if cells > limit:
        return None
    ordinal = np.zeros(space * ntops, np.int64)
    ordinal[occupied] = np.arange(occupied.size)
    bounds = np.zeros(occupied.size + 1, np.int64)
    np.cumsum(sizes[occupied], out=bounds[1:])
    # the rows by coarse cell, as words (and weights)
    y = column(frame["_y"], np.uint8)
    weights = column(frame["_w"], np.float64) if weighted else np.zeros(0)
    words = buffer(rows, np.int64)
    ordered = buffer(rows, np.float64) if weighted else np.zeros(0)
    loops.place(codes, bits, y, weights, rank, ntops, ordinal, bounds[:-1].copy(), words, ordered)
    for array in (codes, bits, y, weights):
        give_back(array)
    # the group codes are decoded from the cells: let the rows' codes go
    groups = replace(groups, codes=np.zeros(0, np.uint64))
    return CompiledCells(groups, spec, loops, words, ordered, bounds, starts, occupied, tops)
