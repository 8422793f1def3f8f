"""Compiled loops (numba) of the regression kernel (:mod:`.regression`).

:func:`histogram_cells` sums a value's rows, placed by (group, binade) as the binary kernel
places them (:func:`.loops.place`), into their buckets: rows, Σw, and the sums centred on the
bucket's lowest value d1 = Σw·(x − lo), d2 = Σw·(x − lo)². In exact mode the rows are
summed by distinct value instead: ordered by group (:func:`by_group`), each group's values
sorted by NumPy (numba's in-place sorts crashed the process in a test run, two threads
sorting at once), and their runs summed (:func:`value_runs`; d1 = d2 = 0).
:func:`row_totals` sums each group's losses that need the label and the prediction
together, as :func:`streameval.tasks.regression.state.state_query` defines them.

Bootstrap replicates (:func:`replicate_aggregates`, :func:`replicate_totals`) read the same
placed rows once for a batch of replicates, each row weighed by its Poisson count drawn from
its key, and aggregate each group's buckets per replicate as :func:`part_aggregates` does.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .loops import _key, _score
from .weightedloops import drawn

_LOW52 = (1 << 52) - 1
_TOP = 52

jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@jit
def histogram_cells(words, weights, bounds, occupied, tops, p):  # type: ignore[no-untyped-def]
    """The filled buckets of the placed rows: group code, bucket key, and their sums.

    Returns the group codes (int64), bucket keys (the lowest ordered key of each bucket),
    row counts, and a row each of Σw, d1 and d2 (Σw is the row count when ``weights`` is
    empty), in (group, bucket) order. Each bucket's sums are added in row order.
    """
    ntops = tops.size
    shift = _TOP - p
    width = 1 << p
    window = np.zeros((width, 4), np.float64)
    most = min(words.size, occupied.size * width)
    group = np.empty(most, np.int64)
    bucket = np.empty(most, np.int64)
    count = np.empty(most, np.int64)
    sums = np.empty((3, most), np.float64)
    weighted = weights.size > 0
    emitted = 0
    for o in range(occupied.size):
        first = (tops[occupied[o] % ntops] << _TOP) >> shift
        floor = first << shift
        for r in range(bounds[o], bounds[o + 1]):
            key = floor | (words[r] & _LOW52)
            c = (key >> shift) - first
            low = _score((key >> shift) << shift)
            dev = _score(key) - low
            w = weights[r] if weighted else 1.0
            wd = w * dev
            window[c, 0] += 1.0
            window[c, 1] += w
            window[c, 2] += wd
            window[c, 3] += wd * dev
        code = occupied[o] // ntops
        for c in range(width):
            if window[c, 0] == 0.0:
                continue
            group[emitted] = code
            bucket[emitted] = (first + c) << shift
            count[emitted] = np.int64(window[c, 0])
            for j in range(3):
                sums[j, emitted] = window[c, j + 1]
            window[c, :] = 0.0
            emitted += 1
    return group[:emitted], bucket[:emitted], count[:emitted], sums[:, :emitted]


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _deviance(y, f, power):  # type: ignore[no-untyped-def]
    """The unit Tweedie deviance of one row, and whether the row is outside its domain."""
    if power == 0.0:
        return (y - f) * (y - f), False
    if power == 1.0:
        head = y * math.log(y / f) if y > 0 else 0.0
        return 2.0 * (head - y + f), y < 0 or f <= 0
    if power == 2.0:
        return 2.0 * (math.log(f / y) + y / f - 1.0), y <= 0 or f <= 0
    p = power
    base = max(y, 0.0) if p < 0 else y
    if p == 1.5:  # the default power: square roots rather than powers (same values)
        root = math.sqrt(f)
        head = math.sqrt(base) / ((1.0 - p) * (2.0 - p))
        dev = 2.0 * (head - y * (1.0 / root) / (1.0 - p) + root / (2.0 - p))
    else:
        head = base ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
        dev = 2.0 * (head - y * f ** (1.0 - p) / (1.0 - p) + f ** (2.0 - p) / (2.0 - p))
    if p < 0:
        return dev, f <= 0
    return dev, (y < 0 if p < 2 else y <= 0) or f <= 0


#: Rows whose loss terms are computed at a time (their scratch stays in cache).
BLOCK = 4096


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _scratch():  # type: ignore[no-untyped-def]
    """Room for a block's loss terms (6 a row), domain flags (5 a row) and |ŷ − y|."""
    return np.empty((BLOCK, 6)), np.empty((BLOCK, 5), np.int64), np.empty(BLOCK)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _terms(lo, hi, y, f, power, eps, terms, outside, errors):  # type: ignore[no-untyped-def]
    """Rows ``lo … hi − 1``'s loss terms and domain flags (see :func:`row_totals`), and |e|.

    Row ``lo + r`` gets its terms in ``terms[r]``, its flags in ``outside[r]`` and |ŷ − y|
    in ``errors[r]``; a loss the row is outside the domain of gets term 0 and its flag set.
    The Poisson and gamma deviances share y / ŷ and its log.
    """
    for i in range(lo, hi):
        r = i - lo
        yi = y[i]
        fi = f[i]
        e = abs(fi - yi)
        errors[r] = e
        bad = yi <= -1.0 or fi <= -1.0
        outside[r, 0] = bad
        if bad:
            terms[r, 0] = 0.0
        else:
            d = math.log1p(fi) - math.log1p(yi)
            terms[r, 0] = d * d
        bad = abs(yi) < eps
        outside[r, 1] = bad
        terms[r, 1] = 0.0 if bad else e / max(abs(yi), eps)
        denom = abs(yi) + abs(fi)
        terms[r, 2] = 2.0 * e / denom if denom > 0 else 0.0
        ratio = yi / fi
        log_ratio = math.log(ratio) if yi > 0 and fi > 0 else 0.0
        bad = yi < 0 or fi <= 0
        outside[r, 2] = bad
        terms[r, 3] = 0.0 if bad else 2.0 * ((yi * log_ratio if yi > 0 else 0.0) - yi + fi)
        bad = yi <= 0 or fi <= 0
        outside[r, 3] = bad
        terms[r, 4] = 0.0 if bad else 2.0 * (ratio - log_ratio - 1.0)
        dev, bad = _deviance(yi, fi, power)
        outside[r, 4] = bad
        terms[r, 5] = 0.0 if bad else dev


@jit
def row_totals(codes, y, f, weights, power, eps, groups):  # type: ignore[no-untyped-def]
    """Per group: Σw·term of each loss, the rows outside each one's domain, and max |e|.

    ``sums`` rows: squared log error, absolute percentage error, symmetric percentage error,
    Poisson, gamma and Tweedie (at ``power``) deviance; a row outside a loss's domain adds 0
    to it and 1 to its count. ``bad`` rows: the counts of the squared log error, the
    percentage error, Poisson, gamma and Tweedie.
    """
    # a group's sums side by side: a row touches two or three cache lines, not twelve
    sums = np.zeros((groups, 6), np.float64)
    bad = np.zeros((groups, 5), np.int64)
    amax = np.zeros(groups, np.float64)
    terms, outside, errors = _scratch()
    weighted = weights.size > 0
    for lo in range(0, codes.size, BLOCK):
        hi = min(lo + BLOCK, codes.size)
        _terms(lo, hi, y, f, power, eps, terms, outside, errors)
        for r in range(hi - lo):
            g = codes[lo + r]
            amax[g] = max(amax[g], errors[r])
            w = weights[lo + r] if weighted else 1.0
            for j in range(6):
                sums[g, j] += w * terms[r, j] if weighted else terms[r, j]
            for j in range(5):
                bad[g, j] += outside[r, j]
    return sums.T.copy(), bad.T.copy(), amax


@jit
def replicate_totals(codes, y, f, weights, keys, power, eps, groups, salts, limits):  # type: ignore[no-untyped-def]
    """:func:`row_totals` of bootstrap replicates, one per salt (leading axis of each output).

    A row counts ``drawn(key, salt)`` times in a replicate (:func:`.weightedloops.drawn`;
    every row once when ``keys`` is empty): its weight is multiplied by the count, and a row
    drawn 0 times is left out (of the domain counts and max |e| too).
    """
    reps = salts.size
    sums = np.zeros((groups, reps, 6), np.float64)
    bad = np.zeros((groups, reps, 5), np.int64)
    amax = np.zeros((groups, reps), np.float64)
    terms, outside, errors = _scratch()
    weighted = weights.size > 0
    keyed = keys.size > 0
    for lo in range(0, codes.size, BLOCK):
        hi = min(lo + BLOCK, codes.size)
        _terms(lo, hi, y, f, power, eps, terms, outside, errors)
        for r in range(hi - lo):
            i = lo + r
            g = codes[i]
            base = weights[i] if weighted else 1.0
            flagged = outside[r].any()
            for b in range(reps):  # (no branch on the count: 37% of draws are 0)
                times = drawn(keys[i], salts[b], limits) if keyed else 1
                w = base * times
                amax[g, b] = max(amax[g, b], errors[r] if times > 0 else 0.0)
                for j in range(6):
                    sums[g, b, j] += w * terms[r, j]
                if flagged and times > 0:
                    for j in range(5):
                        bad[g, b, j] += outside[r, j]
    return sums.transpose(1, 2, 0), bad.transpose(1, 2, 0), amax.T


@jit
def by_group(codes, values, weights, groups):  # type: ignore[no-untyped-def]
    """The rows' ordered keys (and weights) ordered by group, and each group's bounds.

    A counting sort of the group codes (all below ``groups``): the keys of group ``g`` are
    ``keys[bounds[g]:bounds[g + 1]]``, in row order.
    """
    rows = codes.size
    weighted = weights.size > 0
    bounds = np.zeros(groups + 1, np.int64)
    for i in range(rows):
        bounds[codes[i] + 1] += 1
    for g in range(groups):
        bounds[g + 1] += bounds[g]
    at = bounds[:-1].copy()
    keys = np.empty(rows, np.int64)
    ws = np.empty(rows if weighted else 0, np.float64)
    bits = values.view(np.int64)
    for i in range(rows):
        g = codes[i]
        k = at[g]
        at[g] += 1
        keys[k] = _key(bits[i])
        if weighted:
            ws[k] = weights[i]
    return keys, ws, bounds


@jit
def value_runs(keys, ws, bounds):  # type: ignore[no-untyped-def]
    """The distinct values of each group's sorted keys, as :func:`histogram_cells` gives buckets.

    Group codes, ordered keys, row counts, and a row each of Σw (the row count when ``ws`` is
    empty), d1 and d2 (zeros), in (group, value) order.
    """
    weighted = ws.size > 0
    cells = 0
    for g in range(bounds.size - 1):
        for r in range(bounds[g], bounds[g + 1]):
            if r == bounds[g] or keys[r] != keys[r - 1]:
                cells += 1
    group = np.empty(cells, np.int64)
    bucket = np.empty(cells, np.int64)
    count = np.zeros(cells, np.int64)
    sums = np.zeros((3, cells), np.float64)
    c = -1
    for g in range(bounds.size - 1):
        for r in range(bounds[g], bounds[g + 1]):
            if r == bounds[g] or keys[r] != keys[r - 1]:
                c += 1
                group[c] = g
                bucket[c] = keys[r]
            count[c] += 1
            sums[0, c] += ws[r] if weighted else 1.0
    return group, bucket, count, sums


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _next(means, start, i, j, stop, absolute):  # type: ignore[no-untyped-def]
    """The next bucket in value order (|value| order when ``absolute``) and the cursors after.

    In |value| order the negative buckets are read from ``i`` down to ``start``, the others
    from ``j`` up, the smaller |mean| first; else all from ``j`` up.
    """
    if absolute and i >= start and (j >= stop or abs(means[i]) <= abs(means[j])):
        return i, i - 1, j
    return j, i, j + 1


#: The first row of :func:`part_aggregates`' floats that holds a quantile.
QUANTILE_ROW = 11


@jit
def part_aggregates(group, bucket, count, sums, groups, options):  # type: ignore[no-untyped-def]
    """Per group, the aggregates of one value's buckets (:func:`histogram_cells`' output).

    As :func:`streameval.tasks.regression.histograms.aggregates` computes them from a state: each
    bucket's weight W_b, sum s_b = W_b·lo + d1, mean m_b = lo + d1/W_b and centred M2_b =
    max(d2 − d1²/W_b, 0); per group, rows, ΣW_b, Σs_b, M2 (Chan's formula over the buckets),
    Σ squares, Σ|s_b|, the pinball sum at ``alpha``, max |lo| and Σd2; the ``quantiles``
    (percentages, the first the median) of the bucket means (of their absolute values when
    ``absolute``), as sklearn's averaged weighted percentile; and the deviations of the
    label (not ``absolute``) from its fits as a constant: Σ|s_b − median·W_b|, the pinball
    sum of s_b − q·W_b at ``alpha`` (q the second quantile, the ``alpha`` one), and the
    Tweedie deviance at ``power`` from the mean μ, Σ W_b·d(m_b, μ) + M2_b·m_b^(−power) (the
    within-bucket spread to second order; exact for power 0, and in exact mode).

    ``options`` holds ``alpha``, ``absolute``, ``eps``, the quantiles and ``power``. Returns
    the row counts, whether each group has weight (else its quantiles are undefined), and
    the floats: a row each of ΣW_b, Σs_b, M2, Σ squares, Σ|s_b|, pinball, max |lo|, Σd2,
    the three deviations (0 for ``absolute``), then one per quantile (:data:`QUANTILE_ROW`).
    """
    quantiles = options[3]
    rows = np.zeros(groups, np.int64)
    has = np.zeros(groups, np.bool_)
    out = np.zeros((QUANTILE_ROW + quantiles.size, groups), np.float64)
    size = group.size
    scratch = np.empty((2, size), np.float64)
    start = 0
    while start < size:
        g = group[start]
        stop = start
        while stop < size and group[stop] == g:
            stop += 1
        cells = (bucket, count, sums, start, stop)
        rows[g], has[g] = _aggregate(cells, scratch, options, out[:, g])
        start = stop
    return rows, has, out


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _aggregate(cells, scratch, options, out):  # type: ignore[no-untyped-def]
    """One group's aggregates (:func:`part_aggregates`) of its buckets ``start … stop − 1``.

    ``cells`` holds the bucket keys, counts and sums and the span; ``scratch`` two rows of
    room for the buckets' lows and means; ``options`` those of :func:`part_aggregates`;
    ``out`` is the group's column. Returns the group's rows and whether it has weight.
    """
    alpha, absolute, eps, quantiles, power = options
    bucket, count, sums, start, stop = cells
    lows = scratch[0]
    mean_b = scratch[1]
    total_w = 0.0
    total_s = 0.0
    occupied = 0
    sq = 0.0
    sabs = 0.0
    pin = 0.0
    vmax = 0.0
    d2sum = 0.0
    n = 0
    for c in range(start, stop):
        wb = sums[0, c]
        d1 = sums[1, c]
        d2 = sums[2, c]
        lo = _score(bucket[c])
        lows[c] = lo
        s = wb * lo + d1
        n += count[c]
        total_w += wb
        total_s += s
        sq += wb * lo * lo + 2 * lo * d1 + d2
        sabs += abs(s)
        pin += -alpha * s if s < 0 else (1 - alpha) * s
        vmax = max(vmax, abs(lo))
        d2sum += d2
        mean_b[c] = lo  # (a bucket without weight: only ordered, never read)
        if wb > 0:
            occupied += 1
            mean_b[c] = lo + d1 / wb
    mean = total_s / total_w
    m2 = 0.0
    spread = 0.0
    for c in range(start, stop):
        wb = sums[0, c]
        if wb > 0:
            m2 += max(sums[2, c] - sums[1, c] * sums[1, c] / wb, 0.0)
            if occupied > 1:
                spread += wb * (mean_b[c] - mean) ** 2
    out[0] = total_w
    out[1] = total_s
    out[2] = m2 + spread
    out[3] = sq
    out[4] = sabs
    out[5] = pin
    out[6] = vmax
    out[7] = d2sum
    if occupied:
        _quantiles(sums, mean_b, (start, stop), bucket, absolute, eps, quantiles, out)
        if not absolute:
            _deviations(sums, mean_b, lows, (start, stop), (alpha, power, mean), out)
    return n, occupied > 0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _deviations(sums, mean_b, lows, span, fits, out):  # type: ignore[no-untyped-def]
    """The label's deviations from its median, ``alpha`` quantile and mean (``out[8:11]``).

    ``fits`` holds ``alpha``, ``power`` and the mean μ; the quantiles are in place.
    """
    start, stop = span
    alpha, power, mean = fits
    median = out[QUANTILE_ROW]
    q = out[QUANTILE_ROW + 1]
    absolute = 0.0
    pinball = 0.0
    tweedie = 0.0
    for c in range(start, stop):
        wb = sums[0, c]
        s = sums[0, c] * lows[c] + sums[1, c]
        absolute += abs(s - median * wb)
        below = s - q * wb
        pinball += alpha * below if below >= 0 else (alpha - 1) * below
        if wb > 0:
            m = mean_b[c]
            m2 = max(sums[2, c] - sums[1, c] * sums[1, c] / wb, 0.0)
            tweedie += wb * _deviance(m, mean, power)[0]
            if m2 > 0 and (power == 0.0 or m > 0):
                tweedie += m2 * (1.0 if power == 0.0 else m ** (-power))
    out[8] = absolute
    out[9] = pinball
    out[10] = tweedie


@jit
def replicate_aggregates(  # type: ignore[no-untyped-def]
    words, keys, weights, bounds, occupied, tops, p, salts, limits, groups, options
):
    """:func:`part_aggregates` of one value's placed rows in bootstrap replicates, one per salt.

    The rows are placed as for :func:`histogram_cells`, ``keys`` and ``weights`` in the
    same order (``keys`` empty: every row once; ``weights`` empty: weight 1). A row counts
    ``drawn(key, salt)`` times in a replicate (:func:`.weightedloops.drawn`): its weight
    is multiplied by the count, and a row drawn 0 times is left out. Each coarse cell is
    read once for all the replicates; a group's buckets of each replicate are kept until
    its last coarse cell, then aggregated. ``options`` holds ``alpha``, ``absolute``,
    ``eps`` and the quantiles. Returns :func:`part_aggregates`' arrays with a leading
    replicate axis.
    """
    quantiles = options[3]
    reps = salts.size
    ntops = tops.size
    shift = _TOP - p
    width = 1 << p
    weighted = weights.size > 0
    keyed = keys.size > 0
    window = np.zeros((width, reps, 4), np.float64)
    touched = np.zeros(width, np.bool_)
    most = 0  # a group's buckets at most: over its coarse cells, rows or buckets if fewer
    o = 0
    while o < occupied.size:
        g = occupied[o] // ntops
        cells = 0
        while o < occupied.size and occupied[o] // ntops == g:
            cells += min(bounds[o + 1] - bounds[o], width)
            o += 1
        most = max(most, cells)
    bucket = np.empty((reps, most), np.int64)
    count = np.empty((reps, most), np.int64)
    sums = np.empty((reps, 3, most), np.float64)
    filled = np.zeros(reps, np.int64)
    scratch = np.empty((2, most), np.float64)
    rows = np.zeros((reps, groups), np.int64)
    has = np.zeros((reps, groups), np.bool_)
    out = np.zeros((reps, QUANTILE_ROW + quantiles.size, groups), np.float64)
    o = 0
    while o < occupied.size:
        g = occupied[o] // ntops
        filled[:] = 0
        while o < occupied.size and occupied[o] // ntops == g:
            first = (tops[occupied[o] % ntops] << _TOP) >> shift
            floor = first << shift
            for r in range(bounds[o], bounds[o + 1]):
                key = floor | (words[r] & _LOW52)
                c = (key >> shift) - first
                dev = _score(key) - _score((key >> shift) << shift)
                base = weights[r] if weighted else 1.0
                touched[c] = True
                for b in range(reps):  # (no branch on the count: 37% of draws are 0)
                    times = drawn(keys[r], salts[b], limits) if keyed else 1
                    w = base * times
                    wd = w * dev
                    window[c, b, 0] += 1.0 if times > 0 else 0.0
                    window[c, b, 1] += w
                    window[c, b, 2] += wd
                    window[c, b, 3] += wd * dev
            for c in range(width):  # the buckets in order, each replicate's filled ones
                if not touched[c]:
                    continue
                touched[c] = False
                for b in range(reps):
                    if window[c, b, 0] == 0.0:
                        continue
                    k = filled[b]
                    bucket[b, k] = (first + c) << shift
                    count[b, k] = np.int64(window[c, b, 0])
                    for j in range(3):
                        sums[b, j, k] = window[c, b, j + 1]
                    window[c, b, :] = 0.0
                    filled[b] = k + 1
            o += 1
        for b in range(reps):
            if filled[b]:
                kept = (bucket[b], count[b], sums[b], 0, filled[b])
                got = _aggregate(kept, scratch, options, out[b, :, g])
                rows[b, g], has[b, g] = got
    return rows, has, out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _quantiles(sums, mean_b, span, bucket, absolute, eps, quantiles, out):  # type: ignore[no-untyped-def]
    """A group's quantiles, in the order given, from ``out[QUANTILE_ROW]`` on."""
    start, stop = span
    nq = quantiles.size
    # the occupied buckets in value order: |value| order reads the negative ones down
    mid = start
    if absolute:
        while mid < stop and bucket[mid] < 0:
            mid += 1
    cdf_total = 0.0
    i, j = mid - 1, (mid if absolute else start)
    for _ in range(stop - start):
        c, i, j = _next(mean_b, start, i, j, stop, absolute)
        if sums[0, c] > 0:
            cdf_total += sums[0, c]
    # one pass for every quantile (in ascending order): each takes the first bucket whose
    # cumulative weight reaches its rank, and the next bucket's value
    order = np.argsort(quantiles, kind="mergesort")
    ranks = np.empty(nq, np.float64)
    for q in range(nq):
        ranks[q] = quantiles[order[q]] / 100.0 * cdf_total
    first = np.full(nq, np.nan)
    after = np.full(nq, np.nan)
    above = np.zeros(nq, np.float64)
    waiting = 0  # quantiles whose first bucket was found, waiting for the next value
    q = 0
    cdf = 0.0
    last = np.nan
    i, j = mid - 1, (mid if absolute else start)
    for _ in range(stop - start):
        c, i, j = _next(mean_b, start, i, j, stop, absolute)
        if sums[0, c] <= 0:
            continue
        v = abs(mean_b[c]) if absolute else mean_b[c]
        last = v
        cdf += sums[0, c]
        while waiting < q:
            after[waiting] = v
            waiting += 1
        while q < nq and cdf >= ranks[q]:
            first[q] = v
            above[q] = cdf - ranks[q]
            q += 1
        if waiting == nq:
            break
    for k in range(nq):
        if k >= q:  # (rounding left the rank above the total)
            value = last
        elif above[k] > eps:
            value = first[k]
        else:
            value = (first[k] + (first[k] if np.isnan(after[k]) else after[k])) / 2
        out[QUANTILE_ROW + order[k]] = value
