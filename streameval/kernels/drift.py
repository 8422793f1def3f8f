"""Compiled loop of score drift: each group's histogram walked beside its baseline's.

The histograms come sorted by (group, bucket) (rows of one bucket are summed), each group's
rows from ``starts[g]`` to ``starts[g + 1]``; ``baseline[g]`` is the baseline group of
current group ``g`` (−1: none).
One walk over a group's buckets and its baseline's, in bucket order, gives the baseline's
bins (``⌊bins · F(x−)⌋`` of each baseline bucket), the group's weight in each bin, and the
two cumulative distributions at each of the group's buckets: the PSI and JS distance over
the bins, the KS statistic and its bound (see :mod:`streameval.stats.drift`). A baseline of
counts on an index (a pool's) is walked position by position only near a bin's edge: elsewhere
its positions up to the next bucket of the group are summed at once (a loop the compiler
vectorizes), the same integer sums in the same bins.

>>> import numpy as np
>>> starts = np.array([0, 3]); buckets = np.array([1, 2, 3])
>>> out = group_drift(starts, buckets, np.array([1.0, 1.0, 2.0]), np.array([0]),
...                   starts, buckets, np.array([2.0, 1.0, 1.0]), 2, True, 1e-4)
>>> [round(float(v[0]), 6) for v in out]
[0.274653, 0.220896, 0.25, 0.0, 2.0]
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from . import each

Array = npt.NDArray[Any]

jit = numba.njit(cache=True, nogil=True)

#: The most positions of a counted baseline summed at once (within one bin).
RUN = 256
#: The positions of a counted baseline a short gap is summed over (masked past its end).
BLOCK = 48


def group_drift(
    starts: Array,
    buckets: Array,
    mass: Array,
    baseline: Array,
    base_starts: Array,
    base_buckets: Array,
    base_mass: Array,
    bins: int,
    exact: bool,
    floor: float,
    base_more: Array | None = None,
    base_rows: Array | None = None,
) -> tuple[Array, Array, Array, Array, Array]:
    """Per current group: PSI, JS distance, KS statistic, KS bound and bins formed (NaN: none).

    ``mass`` and ``base_mass`` are each bucket's weight (rows of weight 0 left out). With
    ``base_more`` and ``base_rows``, the baseline is counts read in place on an index: its
    entry ``j`` is the index's position ``j`` (``base_buckets`` unused; the current buckets
    are positions on the same index), of weight ``base_mass[j] + base_more[j]`` (positions
    of weight 0 are no bucket), and ``base_rows`` holds each baseline group's weight. Two
    threads walk half of the current buckets each (their groups apart). ``bins`` 0: no bins
    formed (the KS statistic alone; PSI, JS distance and bins NaN), a walk with no bin edge.
    """
    groups = starts.size - 1
    out = np.full((5, groups), np.nan)
    middle = int(np.searchsorted(starts, starts[-1] // 2)) if groups > 1 else groups
    halves = [(0, min(middle, groups)), (min(middle, groups), groups)]
    if (base_more is None) != (base_rows is None):
        raise ValueError("expected a baseline's two counts with its groups' rows, or neither")
    args = (starts, buckets, mass, baseline, base_starts, base_buckets, base_mass, base_more)
    each(
        lambda half: _group_drift(*args, base_rows, bins, exact, floor, *half, out),
        [h for h in halves if h[1] > h[0]],
    )
    return out[0], out[1], out[2], out[3], out[4]


@jit
def _weight(base_mass, base_more, j):  # type: ignore[no-untyped-def]
    """The weight of baseline entry ``j`` (counted: its two counts added).

    (Whether ``base_more`` is None is known as the loop compiles: one branch is kept.)
    """
    if base_more is None:
        return float(base_mass[j])
    return float(base_mass[j] + base_more[j])


@jit
def _before(base_buckets, base_more, j, x, equal):  # type: ignore[no-untyped-def]
    """Whether baseline entry ``j``'s bucket is below bucket ``x`` (``equal``: is ``x``).

    (Counted, with ``base_more``: the bucket is the position ``j``.)
    """
    if base_more is None:
        return base_buckets[j] == x if equal else base_buckets[j] < x
    return j == x if equal else j < x


@jit
def _bin(cum, bins, total):  # type: ignore[no-untyped-def]
    """The bin ``⌊bins · cum / total⌋`` (at most the last) and a weight below which it stays.

    Below the returned edge (a relative 1e-9 under the next bin's start), the bin is
    certainly the same, so a walk computes it again only near an edge: the same bins as
    computing each one, without a division per bucket.
    """
    at = min(math.floor(cum * bins / total), bins - 1)
    edge = math.inf if at == bins - 1 else (at + 1) * total / bins * (1.0 - 1e-9)
    return at, edge


@jit
def _positions(base_mass, base_more, j, stop):  # type: ignore[no-untyped-def]
    """The weight of counted positions ``j`` … ``stop`` − 1 (an integer).

    (Over slices, whose indices cannot be negative: the loop is vectorized.)
    """
    mass, more = base_mass[j:stop], base_more[j:stop]
    total = 0
    for k in range(mass.size):
        total += mass[k] + more[k]
    return total


@jit
def _block(base_mass, base_more, j, n):  # type: ignore[no-untyped-def]
    """The weight of counted positions ``j`` … ``j + n`` − 1, ``n`` at most :data:`BLOCK`.

    A block of :data:`BLOCK` positions is read whatever ``n`` (those past it masked): a loop
    of one length, without the branches a loop of ``n`` takes (most gaps between a group's
    buckets are short, and of every length). Positions ``j`` … ``j + BLOCK`` − 1 exist.
    """
    mass, more = base_mass[j : j + BLOCK], base_more[j : j + BLOCK]
    total = 0
    for k in range(BLOCK):
        total += (mass[k] + more[k]) if k < n else 0
    return total


@jit
def _take_counted(  # type: ignore[no-untyped-def]
    base_mass, base_more, j, stop, cum_b, at, edge, bins, b_total, b_bin
):
    """Counted positions ``j`` … ``stop`` − 1 added to their bins; the new ``cum_b, at, edge``.

    A run of positions that ends below the bin's edge is summed at once: every position in
    it is then of bin ``at`` (none reaches the edge), and its integer weights add up to what
    adding them one by one gives. A run that reaches the edge is halved until its runs stay
    below it, down to the one position that reaches it (of bin ``at`` still); the next
    position of weight starts the next bin, as :func:`_group_drift` walks a histogram.
    """
    size = RUN
    while j < stop:
        if cum_b >= edge:  # (the next position of weight starts a bin)
            m = float(base_mass[j] + base_more[j])
            if m > 0:
                at, edge = _bin(cum_b, bins, b_total)
                b_bin[at] += m
                cum_b += m
            j += 1
            continue
        end = min(stop, j + size)
        run = float(_positions(base_mass, base_more, j, end))
        if cum_b + run < edge or end - j == 1:
            b_bin[at] += run
            cum_b += run
            j, size = end, RUN
        else:
            size = (end - j) // 2
    return cum_b, at, edge


@jit
def _group_drift(  # type: ignore[no-untyped-def]
    starts, buckets, mass, baseline, base_starts, base_buckets, base_mass, base_more, base_rows,
    bins, exact, floor, first, last, out,
):  # fmt: skip
    """:func:`group_drift` of groups ``first`` … ``last`` − 1, into the rows of ``out``."""
    psi, js, ks, bound, formed = out[0], out[1], out[2], out[3], out[4]
    c_bin = np.zeros(max(bins, 1))
    b_bin = np.zeros(max(bins, 1))
    for g in range(first, last):
        b = baseline[g]
        if b < 0:
            continue
        lo, hi = starts[g], starts[g + 1]
        b_lo, b_hi = base_starts[b], base_starts[b + 1]
        total = 0.0
        for i in range(lo, hi):
            total += mass[i]
        b_total = 0.0
        if base_rows is None:
            for j in range(b_lo, b_hi):
                b_total += base_mass[j]
        else:  # (counted: the group's rows, an integer, as summed bucket by bucket)
            b_total = float(base_rows[b])
        if not (total > 0 and b_total > 0):
            continue
        c_bin[:] = 0.0
        b_bin[:] = 0.0
        j = b_lo
        # (the first bin, up to its edge; no bins: one without an edge)
        at, edge = _bin(0.0, bins, b_total) if bins else (0, math.inf)
        cum_b, cum_c = 0.0, 0.0
        widest, gap_max = 0.0, 0.0
        i = lo
        while i < hi:
            x = buckets[i]
            if base_more is not None:  # (counted: positions, summed in runs)
                stop = max(j, min(x, b_hi))
                # (most gaps: one run, summed here; through _take_counted alone the walk
                # took 1.7–2.2× as long, measured)
                if cum_b < edge and stop - j <= RUN:
                    if stop - j <= BLOCK and j + BLOCK <= base_mass.size:
                        run = _block(base_mass, base_more, j, stop - j)
                    else:
                        run = _positions(base_mass, base_more, j, stop)
                    if cum_b + run < edge:
                        b_bin[at] += run
                        cum_b += run
                        j = stop
                if j < stop:
                    cum_b, at, edge = _take_counted(
                        base_mass, base_more, j, stop, cum_b, at, edge, bins, b_total, b_bin
                    )
                    j = stop
            while j < b_hi and _before(base_buckets, base_more, j, x, False):
                m = _weight(base_mass, base_more, j)
                if m > 0:  # (a counted position without rows is no bucket)
                    if cum_b >= edge:
                        at, edge = _bin(cum_b, bins, b_total)
                    b_bin[at] += m
                    cum_b += m
                j += 1
            fb_lt = cum_b / b_total
            if (
                j < b_hi
                and _before(base_buckets, base_more, j, x, True)
                and _weight(base_mass, base_more, j) > 0
            ):
                if cum_b >= edge:
                    at, edge = _bin(cum_b, bins, b_total)
                while j < b_hi and _before(base_buckets, base_more, j, x, True):  # (summed)
                    m = _weight(base_mass, base_more, j)
                    b_bin[at] += m
                    cum_b += m
                    j += 1
            fb = cum_b / b_total
            fc_lt = cum_c / total
            here = 0.0
            while i < hi and buckets[i] == x:
                here += mass[i]
                i += 1
            cum_c += here
            fc = cum_c / total
            c_bin[at] += here
            gap = max(abs(fc - fb), abs(fc_lt - fb_lt))
            gap_max = max(gap_max, gap)
            widest = max(widest, gap, fc - fb_lt, fb - fc_lt)
        if base_more is not None:  # the baseline's positions above the group's last
            cum_b, at, edge = _take_counted(
                base_mass, base_more, j, b_hi, cum_b, at, edge, bins, b_total, b_bin
            )
            j = b_hi
        while j < b_hi:  # the baseline's buckets above the group's last
            m = _weight(base_mass, base_more, j)
            if m > 0:
                if cum_b >= edge:
                    at, edge = _bin(cum_b, bins, b_total)
                b_bin[at] += m
                cum_b += m
            j += 1
        p, half, count = 0.0, 0.0, 0
        for k in range(bins):
            if b_bin[k] <= 0:
                continue  # (no baseline bucket starts this bin: it is not formed)
            count += 1
            c, s = c_bin[k] / total, b_bin[k] / b_total
            cf = c if c > 0 else floor
            sf = s if s > 0 else floor
            p += (cf - sf) * math.log(cf / sf)
            m = (c + s) / 2
            if c > 0:
                half += c * math.log2(c / m)
            if s > 0:
                half += s * math.log2(s / m)
        if bins:
            psi[g] = p
            js[g] = math.sqrt(max(half / 2, 0.0))
            formed[g] = count
        ks[g] = gap_max
        bound[g] = 0.0 if exact else widest - gap_max


@jit
def weighed_runs(value, pos, neg, bits):  # type: ignore[no-untyped-def]
    """Sorted unweighted runs as a histogram: the runs of rows only, each group's bounds.

    ``value`` holds each run's ``group << bits | field`` (sorted), ``pos`` and ``neg`` its
    counts. Returns the score field and the weight (pos + neg, as a float) of each run of
    weight, each group's first such run (and their count, last), and each group's code and
    rows: the parts of :class:`streameval.stats.drift.Sorted`, in one pass to count and one
    to copy (:func:`weigh_range`).
    """
    n = value.size
    shift = np.uint64(bits)
    kept = 0
    groups = 0
    last = np.uint64(0)
    for r in range(n):
        if pos[r] + neg[r] != 0:
            group = value[r] >> shift
            if kept == 0 or group != last:
                groups += 1
                last = group
            kept += 1
    fields = np.empty(kept, np.uint64)
    mass = np.empty(kept, np.float64)
    starts, codes, totals, _ = weigh_range(value, pos, neg, bits, 0, n, 0, fields, mass, groups)
    starts = np.append(starts, np.int64(kept))
    return fields, mass, starts, codes, totals


@jit
def weigh_range(  # type: ignore[no-untyped-def]
    value, pos, neg, bits, lo, hi, k, fields, mass, groups, positions=False
):  # pragma: no cover - compiled
    """Runs ``lo`` … ``hi`` − 1 of weight into ``fields`` and ``mass`` from ``k`` on.

    ``value``, ``pos`` and ``neg`` as :func:`weighed_runs`' (a pool's positions: their words
    and counts, none without rows); with ``positions``, a run's bucket is its position ``r``
    (on the pool's index), not its score field. The runs of weight fit the arrays exactly (an error
    otherwise); each group's first bucket, code and rows are returned (at most ``groups``
    groups), and where the next range's runs go.
    """
    shift = np.uint64(bits)
    mask = (np.uint64(1) << shift) - np.uint64(1)
    starts = np.empty(groups, np.int64)
    codes = np.empty(groups, np.uint64)
    totals = np.zeros(groups, np.int64)
    g = -1
    for r in range(lo, hi):
        rows = pos[r] + neg[r]
        if rows != 0:
            if k == fields.size:
                raise ValueError("more runs of weight than counted")
            group = value[r] >> shift
            if g < 0 or group != codes[g]:
                g += 1
                codes[g] = group
                starts[g] = k
            fields[k] = np.uint64(r) if positions else value[r] & mask
            mass[k] = rows
            totals[g] += rows
            k += 1
    return starts[: g + 1].copy(), codes[: g + 1].copy(), totals[: g + 1].copy(), k
