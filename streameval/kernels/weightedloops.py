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

from .loops import _ap_terms, _coarse, _layout, _placement_terms, _row, _score, _slots
from .sums import mix64, twice_pairs

_LOW52 = (1 << 52) - 1
_TOP = 52


@numba.njit(cache=True, nogil=True, inline="always")
def drawn(key, salt, limits):  # type: ignore[no-untyped-def]
    """A row's count in a bootstrap replicate: the limits (ascending) its draw reaches.

    The draw is splitmix64's finalizer of ``key ^ salt`` (:func:`streameval.split.keys.rehash`
    with ``salt`` the replicate's mix), as :func:`streameval.resample_draw.with_counts`.
    """
    x = mix64(key ^ salt)
    # (no branch for the likely counts: 0 to 3 hold 98% of rows)
    times = np.int64(x >= limits[0]) + np.int64(x >= limits[1]) + np.int64(x >= limits[2])
    if x >= limits[3]:
        times = np.int64(4)
        while times < limits.size and x >= limits[times]:
            times += 1
    return times


@numba.njit(cache=True, nogil=True, inline="always")
def _keep(window, c, top, marks, rows, crossed, kept, g, at):  # type: ignore[no-untyped-def]
    """Move slot ``c``'s sums (if it has rows) to the group's buckets ``kept``, from the lowest.

    ``at`` holds the next mark, the buckets kept, the rows below and the heaviest bucket's
    weight so far; the updated values are returned. A mark the bucket is at or above gets
    the rows and the buckets below it.
    """
    mark, nkept, below_rows, heaviest = at
    count = window[c, 2]
    if count == 0.0:
        return at
    cn = window[c, 0]
    cp = window[c, 1]
    window[c, 0] = 0.0
    window[c, 1] = 0.0
    window[c, 2] = 0.0
    nmarks = marks.shape[1]
    while mark < nmarks and (
        top > marks[0, mark] or (top == marks[0, mark] and c >= marks[1, mark])
    ):
        rows[1 + mark, g] = below_rows
        crossed[mark] = nkept
        mark += 1
    kept[nkept, 0] = cp
    kept[nkept, 1] = cn
    return mark, nkept + 1, below_rows + int(count), max(heaviest, cn, cp)


@numba.njit(cache=True, nogil=True, inline="always")
def _finish(kept, crossed, rows, sums, scales, g, at, losses, delong):  # type: ignore[no-untyped-def]
    """Group ``g``'s sums from its buckets ``kept`` (``at`` as :func:`_keep` leaves it).

    From the top bucket down (as the Polars finalize sums): the weight at or above each
    bucket, so that no ratio is a difference of large sums, and the weight below and at or
    above each mark, each summed apart (a mark below every bucket: the totals). The pair and
    AP sums take weights scaled by a power of two that brings the group's heaviest bucket
    near 1, so that no product underflows or overflows. ``losses`` are the group's log-loss
    terms', squared errors' and hinge losses' sums. With ``delong``, the sums behind
    DeLong's variance (:func:`.loops._placement_terms`, of unscaled weights) follow the
    marks' sums.
    """
    mark, nkept, below_rows, heaviest = at
    nmarks = crossed.size
    while mark < nmarks:
        rows[1 + mark, g] = below_rows
        crossed[mark] = nkept
        mark += 1
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
            sums[12 + 4 * mark, g] = above_pos
            sums[13 + 4 * mark, g] = above_neg
            mark -= 1
        for m in range(mark + 1, nmarks):  # the marks above this bucket
            sums[10 + 4 * m, g] += kept[k, 0]
            sums[11 + 4 * m, g] += kept[k, 1]
        above_pos += kept[k, 0]
        above_neg += kept[k, 1]
        cp = kept[k, 0] * scale
        cn = kept[k, 1] * scale
        pairs += twice_pairs(cp, cn, scaled_pos)
        ties += cp * cn
        scaled_pos += cp
        scaled_neg += cn
        if cp > 0.0:
            ap += cp * (scaled_pos / (scaled_pos + scaled_neg))
            up, down = _ap_terms(cp, cn, scaled_pos, scaled_neg)
            over += up
            under += down
    while mark >= 0:
        sums[12 + 4 * mark, g] = above_pos
        sums[13 + 4 * mark, g] = above_neg
        mark -= 1
    rows[0, g] = below_rows
    sums[0, g] = above_pos
    sums[1, g] = above_neg
    sums[2, g] = pairs
    sums[3, g] = ties
    sums[4, g] = ap
    sums[5, g] = -losses[0]
    sums[6, g] = losses[1]
    sums[7, g] = over
    sums[8, g] = under
    sums[9, g] = losses[2]
    scales[g] = scale
    if delong and scaled_pos > 0.0 and scaled_neg > 0.0:
        auc = pairs / (2.0 * scaled_pos * scaled_neg)
        s10 = 0.0
        s01 = 0.0
        cpos = 0.0
        cneg = 0.0
        for k in range(nkept - 1, -1, -1):
            cpos += kept[k, 0]
            cneg += kept[k, 1]
            d10, d01 = _placement_terms(
                kept[k, 0], kept[k, 1], cpos, cneg, above_pos, above_neg, auc
            )
            s10 += d10
            s01 += d01
        sums[10 + 4 * nmarks, g] = s10
        sums[11 + 4 * nmarks, g] = s01


# (NumPy's error model: a float divided by 0 is inf or nan, as in the Polars finalize)
@numba.njit(cache=True, nogil=True, error_model="numpy")
def run_metrics(keys, pos, neg, n, firsts, ends, mark_keys, eps, delong):  # type: ignore[no-untyped-def]
    """Each group's metric aggregates from its weighted exact runs (a bucket a score).

    ``keys`` are the runs' ordered score keys, ascending within each group (runs
    ``firsts[g]`` to ``ends[g]``), ``pos``, ``neg`` their positive and negative weight and
    ``n`` their rows; ``mark_keys`` the marks' keys, ascending (a run is at or above a mark
    whose key is at most its own). Returns :func:`weighted_metrics`' ``rows``, ``sums`` and
    ``scales``, from :func:`_finish` as there.
    """
    groups = firsts.size
    nmarks = mark_keys.size
    rows = np.zeros((1 + nmarks, groups), np.int64)
    sums = np.zeros((12 + 4 * nmarks, groups), np.float64)
    scales = np.empty(groups, np.float64)
    most = 0
    for g in range(groups):
        most = max(most, ends[g] - firsts[g])
    kept = np.empty((most, 2), np.float64)
    crossed = np.empty(nmarks, np.int64)
    high = 1.0 - eps
    for g in range(groups):
        mark = 0
        nkept = 0
        below = 0
        heaviest = 0.0
        loss = 0.0
        brier = 0.0
        hinge = 0.0
        for r in range(firsts[g], ends[g]):
            while mark < nmarks and keys[r] >= mark_keys[mark]:
                rows[1 + mark, g] = below
                crossed[mark] = nkept
                mark += 1
            cp = pos[r]
            cn = neg[r]
            kept[nkept, 0] = cp
            kept[nkept, 1] = cn
            nkept += 1
            below += n[r]
            heaviest = max(heaviest, cn, cp)
            score = _score(keys[r])
            q = min(max(score, eps), high)
            loss += cp * np.log(q) + cn * np.log(1.0 - q)
            brier += cp * (score - 1.0) ** 2 + cn * (score * score)
            hinge += cp * max(0.0, 1.0 - score) + cn * max(0.0, 1.0 + score)
        _finish(
            kept,
            crossed,
            rows,
            sums,
            scales,
            g,
            (mark, nkept, below, heaviest),
            (loss, brier, hinge),
            delong,
        )
    return rows, sums, scales


# (NumPy's error model: a float divided by 0 is inf or nan, as in the Polars finalize)
@numba.njit(cache=True, nogil=True, error_model="numpy")
def weighted_metrics(  # type: ignore[no-untyped-def]
    words, weights, bounds, starts, occupied, tops, p, cuts, cut_tops, eps, marks, delong
):
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
        errors' sum; the AP bound's two sums; the hinge losses' sum; then per mark the
        positive and negative weight below it, and at or above it; then DeLong's two sums (0
        without ``delong``). The pair and AP sums are of scaled weights.
    scales : ndarray of float64
        Each group's scale: the power of two its pair and AP sums' weights were scaled by.

    """
    ntops = tops.size
    widest, groups, most, every, touched = _layout(bounds, starts, occupied, ntops)
    window = np.zeros((widest, 3), np.float64)
    nmarks = marks.shape[1]
    codes = np.empty(groups, np.uint64)
    rows = np.zeros((1 + nmarks, groups), np.int64)
    sums = np.zeros((12 + 4 * nmarks, groups), np.float64)
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
        at = (0, 0, 0, 0.0)
        loss = 0.0
        brier = 0.0
        hinge = 0.0
        while o < occupied.size and occupied[o] // ntops == code:
            top, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
            # (the row decoded here, not by loops._row: through it this loop took 45% longer)
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
                hinge += w * max(0.0, 1.0 - (2 * label - 1) * score)
            rows_in = bounds[o + 1] - bounds[o]
            for c in _slots(touched, rows_in, every, starts[o + 1] - starts[o]):
                at = _keep(window, c, top, marks, rows, crossed, kept, g, at)
            o += 1
        _finish(kept, crossed, rows, sums, scales, g, at, (loss, brier, hinge), delong)
    return codes, rows, sums, scales


@numba.njit(cache=True, nogil=True)
def replicate_rows(words, bounds, starts, occupied, tops, p, cuts, cut_tops, eps):  # type: ignore[no-untyped-def]
    """What every bootstrap replicate reads of the placed rows (:func:`replicate_metrics`).

    Returns each row's slot in its coarse cell's window times 2 plus its label (int32); its
    log-loss term (the log of its label's clipped probability), squared error and hinge
    loss, a row each; and each coarse cell's filled slots in ascending order (``filled``, the cell's
    from ``ends[o]`` to ``ends[o + 1]``).
    """
    ntops = tops.size
    widest, _, _, _, touched = _layout(bounds, starts, occupied, ntops)
    seen = np.zeros(widest, np.bool_)
    slot = np.empty(words.size, np.int32)
    terms = np.empty((words.size, 3), np.float64)
    filled = np.empty(words.size, np.int32)
    ends = np.zeros(occupied.size + 1, np.int64)
    shift = _TOP - p
    high = 1.0 - eps
    k = 0
    for o in range(occupied.size):
        _, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
        distinct = 0
        for r in range(bounds[o], bounds[o + 1]):
            key, c, label = _row(words[r], floor, first, shift, cut, cuts)
            slot[r] = c * 2 + label
            score = _score(key)
            q = min(max(score, eps), high)
            terms[r, 0] = np.log(abs(q - (1.0 - label)))
            d = score - label
            terms[r, 1] = d * d
            terms[r, 2] = max(0.0, 1.0 - (2 * label - 1) * score)
            if not seen[c]:
                seen[c] = True
                touched[distinct] = c
                distinct += 1
        for c in np.sort(touched[:distinct]):
            seen[c] = False
            filled[k] = c
            k += 1
        ends[o + 1] = k
    return slot, terms, filled[:k].copy(), ends


@numba.njit(cache=True, nogil=True, error_model="numpy")
def replicate_metrics(  # type: ignore[no-untyped-def]
    slot, terms, keys, weights, bounds, filled, ends, occupied, tops, marks, salts, limits
):
    """:func:`weighted_metrics` of bootstrap replicates, one per salt, from :func:`replicate_rows`.

    In the replicate of ``salts[b]``, each row's weight is multiplied by its count,
    :func:`drawn` of its key (``keys``, placed as the rows), the salt and ``limits``; rows
    drawn 0 times are left out, and a group with none drawn has no rows. Empty ``keys``:
    the rows as they are (replicate 0; one salt). Each coarse cell's rows are read for every
    replicate in turn while they are in cache. Returns what :func:`weighted_metrics` returns,
    each array but the codes with the replicates as its first axis.
    """
    ntops = tops.size
    widest = 0
    for o in range(occupied.size):
        if ends[o + 1] > ends[o]:
            widest = max(widest, filled[ends[o + 1] - 1] + 1)
    _, groups, most, _, _ = _layout(bounds, ends, occupied, ntops)
    window = np.zeros((widest, 3), np.float64)
    nmarks = marks.shape[1]
    count = salts.size
    codes = np.empty(groups, np.uint64)
    rows = np.zeros((count, 1 + nmarks, groups), np.int64)
    sums = np.zeros((count, 12 + 4 * nmarks, groups), np.float64)
    scales = np.empty((count, groups), np.float64)
    kept = np.empty((count, most, 2), np.float64)
    crossed = np.empty((count, nmarks), np.int64)
    at = np.zeros((count, 3), np.int64)  # per replicate: next mark, buckets kept, rows below
    heaviest = np.zeros(count, np.float64)
    loss = np.zeros(count, np.float64)
    brier = np.zeros(count, np.float64)
    hinge = np.zeros(count, np.float64)
    draw = keys.size > 0
    g = -1
    o = 0
    while o < occupied.size:
        g += 1
        code = occupied[o] // ntops
        codes[g] = code
        at[:] = 0
        heaviest[:] = 0.0
        loss[:] = 0.0
        brier[:] = 0.0
        hinge[:] = 0.0
        while o < occupied.size and occupied[o] // ntops == code:
            top = tops[occupied[o] % ntops]
            for b in range(count):
                salt = salts[b]
                lost = 0.0
                squared = 0.0
                margin = 0.0
                for r in range(bounds[o], bounds[o + 1]):
                    w = weights[r]
                    row = 1.0
                    if draw:  # (a row drawn 0 times adds 0 and is not counted: no branch)
                        times = drawn(keys[r], salt, limits)
                        w *= times
                        row = np.float64(times > 0)
                    s = slot[r]
                    window[s >> 1, s & 1] += w
                    window[s >> 1, 2] += row
                    lost += w * terms[r, 0]
                    squared += w * terms[r, 1]
                    margin += w * terms[r, 2]
                loss[b] += lost
                brier[b] += squared
                hinge[b] += margin
                state = (at[b, 0], at[b, 1], at[b, 2], heaviest[b])
                below, cross, keep = rows[b], crossed[b], kept[b]
                for i in range(ends[o], ends[o + 1]):
                    state = _keep(window, filled[i], top, marks, below, cross, keep, g, state)
                at[b, 0], at[b, 1], at[b, 2], heaviest[b] = state
            o += 1
        for b in range(count):
            state = (at[b, 0], at[b, 1], at[b, 2], heaviest[b])
            _finish(
                kept[b],
                crossed[b],
                rows[b],
                sums[b],
                scales[b],
                g,
                state,
                (loss[b], brier[b], hinge[b]),
                False,
            )
    return codes, rows, sums, scales
