"""Compiled loops (numba) of the regression kernel (:mod:`.regression`).

:func:`histogram_cells` sums a value's rows, placed by (group, binade) as the binary kernel
places them (:func:`.loops.place`), into their buckets: rows, Σw, and the sums centred on the
bucket's lowest value d1 = Σw·(x − lo), d2 = Σw·(x − lo)². :func:`row_totals` sums each
group's losses that need the label and the prediction together, as
:func:`streameval.states.regression.state_query` defines them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .loops import _score

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
    head = base ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
    dev = 2.0 * (head - y * f ** (1.0 - p) / (1.0 - p) + f ** (2.0 - p) / (2.0 - p))
    if p < 0:
        return dev, f <= 0
    return dev, (y < 0 if p < 2 else y <= 0) or f <= 0


@jit
def row_totals(codes, y, f, weights, power, eps, groups):  # type: ignore[no-untyped-def]
    """Per group: Σw·term of each loss, the rows outside each one's domain, and max |e|.

    ``sums`` rows: squared log error, absolute percentage error, symmetric percentage error,
    Poisson, gamma and Tweedie (at ``power``) deviance; a row outside a loss's domain adds 0
    to it and 1 to its count. ``bad`` rows: the counts of the squared log error, the
    percentage error, Poisson, gamma and Tweedie.
    """
    sums = np.zeros((6, groups), np.float64)
    bad = np.zeros((5, groups), np.int64)
    amax = np.zeros(groups, np.float64)
    weighted = weights.size > 0
    for i in range(codes.size):
        g = codes[i]
        yi = y[i]
        fi = f[i]
        w = weights[i] if weighted else 1.0
        e = abs(fi - yi)
        amax[g] = max(amax[g], e)
        if yi <= -1.0 or fi <= -1.0:
            bad[0, g] += 1
        else:
            d = math.log1p(fi) - math.log1p(yi)
            sums[0, g] += w * (d * d) if weighted else d * d
        if abs(yi) < eps:
            bad[1, g] += 1
        else:
            term = e / max(abs(yi), eps)
            sums[1, g] += w * term if weighted else term
        denom = abs(yi) + abs(fi)
        term = 2.0 * e / denom if denom > 0 else 0.0
        sums[2, g] += w * term if weighted else term
        for j in range(3):
            dev, outside = _deviance(yi, fi, 1.0 if j == 0 else 2.0 if j == 1 else power)
            if outside:
                bad[2 + j, g] += 1
            else:
                sums[3 + j, g] += w * dev if weighted else dev
    return sums, bad, amax
