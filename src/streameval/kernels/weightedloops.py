"""Compiled loop (numba) of the weighted binary metric table, straight from the placed rows.

:func:`weighted_metrics` is :func:`.loops.group_metrics` for weighted rows: each coarse cell's
rows are summed into a window of its slots (negative and positive weight, rows), and the
window's filled slots are the group's buckets from the lowest score up. Weights are floats,
so every sum is a float sum (each bucket's in row order, then the buckets in score order, as
the Polars finalize adds them up to rounding); the log-loss terms are summed a ``log`` each.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .loops import _ap_bound_terms, _coarse, _layout, _score, _slots

_LOW52 = (1 << 52) - 1
_TOP = 52


# (NumPy's error model: a float divided by 0 is inf or nan, as in the Polars finalize)
@numba.njit(cache=True, nogil=True, error_model="numpy")
def weighted_metrics(words, weights, bounds, starts, occupied, tops, p, cuts, cut_tops, eps, marks):  # type: ignore[no-untyped-def]
    """Each group's metric aggregates from its weighted rows placed by :func:`.loops.place`.

    Parameters are those of :func:`.loops.group_metrics`, and ``weights`` (the placed rows'
    weights, :func:`.loops.place`'s ``ordered``).

    Returns
    -------
    codes : ndarray of uint64
        Each group's code.
    rows : ndarray of int64
        A row each: the group's rows, then its rows below each mark.
    sums : ndarray of float64
        A row each: positive and negative weight; the AUC's pair sum
        2·Σ neg·(positive weight above) + Σ pos·neg and its tie part Σ pos·neg; Σ pos times
        the precision at or above the bucket; minus the log-loss terms' sum; the squared
        errors' sum; the AP bound's two sums; then per mark the positive and negative weight
        below it, and at or above it. The pair and AP sums are of scaled weights.
    scales : ndarray of float64
        Each group's scale: the power of two its pair and AP sums' weights were scaled by.

    """
    ntops = tops.size
    widest, groups, most, every, touched = _layout(bounds, starts, occupied, ntops)
    window = np.zeros((widest, 3), np.float64)
    nmarks = marks.shape[1]
    codes = np.empty(groups, np.uint64)
    rows = np.zeros((1 + nmarks, groups), np.int64)
    sums = np.zeros((9 + 4 * nmarks, groups), np.float64)
    scales = np.empty(groups, np.float64)
    kept = np.empty((most, 2), np.float64)
    crossed = np.empty(nmarks, np.int64)  # buckets below each mark
    shift = _TOP - p
    high = 1.0 - eps
    g = -1
    o = 0
    while o < occupied.size:
        g += 1
        code = occupied[o] // ntops
        codes[g] = code
        nkept = 0
        below_rows = 0
        heaviest = 0.0
        mark = 0
        loss = 0.0
        brier = 0.0
        while o < occupied.size and occupied[o] // ntops == code:
            top, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
            for r in range(bounds[o], bounds[o + 1]):
                word = words[r]
                key = floor | (word & _LOW52)
                c = (key >> shift) - first
                if cut:
                    c += np.searchsorted(cuts, key, side="right") - np.searchsorted(cuts, floor)
                touched[r - bounds[o]] = c
                label = (word >> _TOP) & 1
                w = weights[r]
                window[c, label] += w
                window[c, 2] += 1.0
                score = _score(key)
                q = min(max(score, eps), high)
                loss += w * np.log(abs(q - (1.0 - label)))
                d = score - label
                brier += w * (d * d)
            rows_in = bounds[o + 1] - bounds[o]
            for c in _slots(touched, rows_in, every, starts[o + 1] - starts[o]):
                count = window[c, 2]
                if count == 0.0:
                    continue
                cn = window[c, 0]
                cp = window[c, 1]
                window[c, 0] = 0.0
                window[c, 1] = 0.0
                window[c, 2] = 0.0
                while mark < nmarks and (
                    top > marks[0, mark] or (top == marks[0, mark] and c >= marks[1, mark])
                ):
                    rows[1 + mark, g] = below_rows
                    crossed[mark] = nkept
                    mark += 1
                heaviest = max(heaviest, cn, cp)
                below_rows += int(count)
                kept[nkept, 0] = cp
                kept[nkept, 1] = cn
                nkept += 1
            o += 1
        while mark < nmarks:
            rows[1 + mark, g] = below_rows
            crossed[mark] = nkept
            mark += 1
        # From the top bucket down (as the Polars finalize sums): the weight at or above each
        # bucket, so that no ratio is a difference of large sums, and the weight below and at
        # or above each mark, each summed apart (a mark below every bucket: the totals). The
        # pair and AP sums take weights scaled by a power of two that brings the group's
        # heaviest bucket near 1, so that no product underflows or overflows.
        scale = math.ldexp(1.0, min(-math.frexp(heaviest)[1], 1023)) if heaviest > 0 else 1.0
        pairs = 0.0
        ties = 0.0
        ap = 0.0
        over = 0.0
        under = 0.0
        above_pos = 0.0
        above_neg = 0.0
        scaled_pos = 0.0
        scaled_neg = 0.0
        mark = nmarks - 1
        for k in range(nkept - 1, -1, -1):
            while mark >= 0 and crossed[mark] > k:
                sums[11 + 4 * mark, g] = above_pos
                sums[12 + 4 * mark, g] = above_neg
                mark -= 1
            for m in range(mark + 1, nmarks):  # the marks above this bucket
                sums[9 + 4 * m, g] += kept[k, 0]
                sums[10 + 4 * m, g] += kept[k, 1]
            above_pos += kept[k, 0]
            above_neg += kept[k, 1]
            cp = kept[k, 0] * scale
            cn = kept[k, 1] * scale
            pairs += cn * (2.0 * scaled_pos + cp)
            ties += cp * cn
            scaled_pos += cp
            scaled_neg += cn
            if cp > 0.0:
                ap += cp * (scaled_pos / (scaled_pos + scaled_neg))
                up, down = _ap_bound_terms(cp, cn, scaled_pos, scaled_neg)
                over += up
                under += down
        while mark >= 0:
            sums[11 + 4 * mark, g] = above_pos
            sums[12 + 4 * mark, g] = above_neg
            mark -= 1
        rows[0, g] = below_rows
        sums[0, g] = above_pos
        sums[1, g] = above_neg
        sums[2, g] = pairs
        sums[3, g] = ties
        sums[4, g] = ap
        sums[5, g] = -loss
        sums[6, g] = brier
        sums[7, g] = over
        sums[8, g] = under
        scales[g] = scale
    return codes, rows, sums, scales
