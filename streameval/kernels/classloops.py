"""Compiled loops (numba) of the multiclass kernel (:mod:`.classes`).

:func:`row_cells` sums each row into its (group, actual, predicted) confusion cell, with the
row's loss terms (the scores of its own class) and its score checks. :func:`pair_sums` reads
one score column's rows, placed by (group, binade) as the binary kernel places them
(:func:`.loops.place`, the row's actual class where the binary label goes), and sums every
AUC's pairs: for column a and each other class b, Σ over class-b rows of w·(class-a weight
in higher buckets + ½ in the row's own bucket), and w·(class-a weight in the row's bucket).
Counts are float64 sums (exact below 2**53), as the Polars path's.

Bootstrap replicates (:func:`replicate_cells`, :func:`replicate_pairs`) read the rows once
for a batch of replicates, each row weighed by its Poisson count drawn from its key.
"""

from __future__ import annotations

import numba
import numpy as np

from .sums import twice_pairs
from .weightedloops import drawn

_LOW52 = (1 << 52) - 1
_TOP = 52

jit = numba.njit(cache=True, nogil=True)


#: Rows whose terms are computed at a time (their scratch stays in cache).
BLOCK = 4096


@jit
def row_cells(codes, actual, predicted, scores, weights, top_k, eps, tolerance, shape):  # type: ignore[no-untyped-def]
    """Each (group, actual, predicted) cell's rows and sums, flattened in that order.

    Parameters
    ----------
    codes : ndarray of int64
        Each row's group, 0 … groups − 1.
    actual, predicted : ndarray of int32
        Each row's class index, and its predicted class (empty: the first score column of
        the highest score, numpy's argmax).
    scores : 2-d ndarray of float64
        The score columns (columns × rows; no rows without scores).
    weights : ndarray of float64
        Each row's weight (empty: unweighted).
    top_k : int
        A row is a top-k hit when fewer than ``top_k`` other columns score above its own
        class's (a later column tied with it counts as above: sklearn's stable sort).
    eps, tolerance : float
        The log loss clips to [eps, 1 − eps]; scores whose sum is farther than ``tolerance``
        from 1 are unnormalized.
    shape : tuple of int
        Groups, classes and predicted classes (the cells' dimensions).

    Returns
    -------
    counts : ndarray of int64
        Rows, rows with a score outside [0, 1], and rows whose scores do not sum to 1 (a row
        per sum, a column per cell).
    sums : ndarray of float64
        Σw, and Σw·term of the log loss, the Brier score, the top-k hits and the hinge loss
        (a row each).

    """
    groups, classes, guesses = shape
    cells = groups * classes * guesses
    # a cell's sums side by side: a row touches one or two cache lines, not seven
    counts = np.zeros((cells, 3), np.int64)
    sums = np.zeros((cells, 5), np.float64)
    weighted = weights.size > 0
    cell, flags, terms = _scratch()
    for lo in range(0, codes.size, BLOCK):
        hi = min(lo + BLOCK, codes.size)
        rows = (codes, actual, predicted, scores)
        _terms(lo, hi, rows, (top_k, eps, tolerance), shape, cell, flags, terms)
        for r in range(hi - lo):
            c = cell[r]
            w = weights[lo + r] if weighted else 1.0
            counts[c, 0] += 1
            counts[c, 1] += flags[r, 0]
            counts[c, 2] += flags[r, 1]
            sums[c, 0] += w
            if weighted:
                sums[c, 1] += w * terms[r, 0]
                sums[c, 2] += w * terms[r, 1]
                sums[c, 3] += w * terms[r, 2]
                sums[c, 4] += w * terms[r, 3]
            else:
                sums[c, 1] += terms[r, 0]
                sums[c, 2] += terms[r, 1]
                sums[c, 3] += terms[r, 2]
                sums[c, 4] += terms[r, 3]
    return counts.T.copy(), sums.T.copy()


@numba.njit(cache=True, nogil=True, inline="always")
def _scratch():  # type: ignore[no-untyped-def]
    """Room for a block's cells, flags (2 a row) and loss terms (4 a row): :func:`_terms`."""
    return np.empty(BLOCK, np.int64), np.empty((BLOCK, 2), np.int64), np.empty((BLOCK, 4))


@numba.njit(cache=True, nogil=True, inline="always")
def first_max(row):  # type: ignore[no-untyped-def]
    """The first column of the row's highest score (numpy's argmax; the predicted class)."""
    q = 0
    for j in range(1, row.size):
        if row[j] > row[q]:
            q = j
    return q


@numba.njit(cache=True, nogil=True, inline="always")
def score_checks(row, tolerance):  # type: ignore[no-untyped-def]
    """Whether a score of the row is outside [0, 1], and whether its scores do not sum to 1.

    They do not when their sum is farther than ``tolerance`` from 1 (never without scores).
    """
    total = 0.0
    outside = False
    for j in range(row.size):
        total += row[j]
        outside = outside or row[j] < 0.0 or row[j] > 1.0
    return outside, row.size > 0 and abs(total - 1.0) > tolerance


@numba.njit(cache=True, nogil=True, inline="always")
def class_terms(row, k, top_k, eps):  # type: ignore[no-untyped-def]
    """A row's log loss, Brier, top-k hit and hinge terms were its class column ``k``'s.

    ``row`` holds the row's scores. A later column tied with column k counts as above it
    (sklearn's stable sort); the log loss clips p_k to [eps, 1 − eps]; the hinge loss is
    Crammer and Singer's, max(0, 1 − (p_k − the highest other score)).
    """
    p = row[k]
    others = 0.0
    above = 0
    rival = -np.inf
    for j in range(row.size):
        if j != k:
            s = row[j]
            others += s * s
            above += (s >= p) if j > k else (s > p)
            rival = max(rival, s)
    loss = -np.log(min(max(p, eps), 1.0 - eps))
    hinge = max(0.0, 1.0 - (p - rival))
    return loss, others + (1.0 - p) * (1.0 - p), 1.0 if above < top_k else 0.0, hinge


@jit
def _terms(lo, hi, rows, options, shape, cell, flags, terms):  # type: ignore[no-untyped-def]
    """Rows ``lo … hi − 1``'s confusion cells, checks and loss terms (see :func:`row_cells`).

    ``rows`` holds the group codes, actual and predicted classes and scores; ``options``
    ``top_k``, ``eps`` and ``tolerance``. Row ``lo + r`` gets its cell in ``cell[r]``, whether
    a score is outside [0, 1] and whether its scores do not sum to 1 in ``flags[r]``, and its
    log loss, Brier, top-k hit and hinge terms (unweighted; 0 without score columns, or for a
    class without one) in ``terms[r]``.
    """
    codes, actual, predicted, scores = rows
    top_k, eps, tolerance = options
    _, classes, guesses = shape
    columns = scores.shape[0]
    for i in range(lo, hi):
        r = i - lo
        a = actual[i]
        row = scores[:, i]
        q = predicted[i] if predicted.size else first_max(row)
        cell[r] = (codes[i] * classes + a) * guesses + q
        flags[r, 0], flags[r, 1] = score_checks(row, tolerance)
        terms[r, :] = 0.0
        if a >= columns:  # (a class without a score column: refused at finalize)
            continue
        terms[r, 0], terms[r, 1], terms[r, 2], terms[r, 3] = class_terms(
            scores[:, i], a, top_k, eps
        )


@jit
def replicate_cells(codes, actual, predicted, scores, weights, keys, options, shape, salts, limits):  # type: ignore[no-untyped-def]
    """:func:`row_cells` of bootstrap replicates, one per salt (leading axis of each output).

    A row counts ``drawn(key, salt)`` times in a replicate (:func:`.weightedloops.drawn`;
    every row once when ``keys`` is empty): its weight is multiplied by the count, and a
    row drawn 0 times is left out. ``options`` holds ``top_k``, ``eps`` and ``tolerance``.
    """
    groups, classes, guesses = shape
    cells = groups * classes * guesses
    reps = salts.size
    counts = np.zeros((cells, reps, 3), np.int64)
    sums = np.zeros((cells, reps, 5), np.float64)
    keyed = keys.size > 0
    cell, flags, terms = _scratch()
    for lo in range(0, codes.size, BLOCK):
        hi = min(lo + BLOCK, codes.size)
        _terms(lo, hi, (codes, actual, predicted, scores), options, shape, cell, flags, terms)
        for r in range(hi - lo):
            c = cell[r]
            i = lo + r
            base = weights[i] if weights.size else 1.0
            for b in range(reps):
                times = drawn(keys[i], salts[b], limits) if keyed else 1
                if times == 0:
                    continue
                w = base * times
                counts[c, b, 0] += 1
                counts[c, b, 1] += flags[r, 0]
                counts[c, b, 2] += flags[r, 1]
                sums[c, b, 0] += w
                sums[c, b, 1] += w * terms[r, 0]
                sums[c, b, 2] += w * terms[r, 1]
                sums[c, b, 3] += w * terms[r, 2]
                sums[c, b, 4] += w * terms[r, 3]
    return counts.transpose(1, 2, 0).copy(), sums.transpose(1, 2, 0).copy()


@jit
def replicate_pairs(  # type: ignore[no-untyped-def]
    words, keys, weights, bounds, occupied, tops, p, column, salts, limits, num, ties
):
    """:func:`pair_sums` of bootstrap replicates, one per salt (``num[b]``, ``ties[b]``).

    The rows are placed as for :func:`pair_sums`, ``keys`` and ``weights`` in the same
    order; a row counts ``drawn(key, salt)`` times in a replicate (every row once when
    ``keys`` is empty). Each coarse cell is read once for all the replicates, through a
    window of its buckets (the buckets its rows touch, in order).
    """
    ntops = tops.size
    shift = _TOP - p
    width = 1 << p
    reps = salts.size
    window = np.zeros((width, reps), np.float64)
    higher = np.zeros((width, reps), np.float64)
    touched = np.zeros(width, np.bool_)
    above = np.zeros(reps, np.float64)
    times = np.zeros(reps, np.float64)
    weighted = weights.size > 0
    keyed = keys.size > 0
    o = occupied.size
    while o > 0:
        group = occupied[o - 1] // ntops
        stop = o
        while o > 0 and occupied[o - 1] // ntops == group:
            o -= 1
        above[:] = 0.0
        for cell in range(stop - 1, o - 1, -1):  # the group's binades, highest first
            begin, end = bounds[cell], bounds[cell + 1]
            for r in range(begin, end):
                word = words[r]
                c = (word & _LOW52) >> shift
                touched[c] = True
                if word >> _TOP == column:
                    base = weights[r] if weighted else 1.0
                    for b in range(reps):
                        t = drawn(keys[r], salts[b], limits) if keyed else 1
                        window[c, b] += base * t
            for c in range(width - 1, -1, -1):
                if touched[c]:
                    for b in range(reps):
                        higher[c, b] = above[b]
                        above[b] += window[c, b]
            for r in range(begin, end):
                word = words[r]
                k = word >> _TOP
                if k == column:
                    continue
                c = (word & _LOW52) >> shift
                base = weights[r] if weighted else 1.0
                for b in range(reps):
                    t = drawn(keys[r], salts[b], limits) if keyed else 1
                    times[b] = base * t
                for b in range(reps):
                    w = times[b]
                    num[b, group, k] += twice_pairs(window[c, b], w, higher[c, b])
                    ties[b, group, k] += w * window[c, b]
            for r in range(begin, end):
                c = (words[r] & _LOW52) >> shift
                if touched[c]:
                    touched[c] = False
                    window[c, :] = 0.0


@jit
def pair_sums(words, weights, bounds, occupied, tops, p, column, num, ties):  # type: ignore[no-untyped-def]
    """Add column ``column``'s pair sums of each group and other class into ``num`` and ``ties``.

    ``words`` are the column's rows placed by (group, binade) (:func:`.loops.place`: the
    key's low 52 bits, the actual class above them), ``bounds`` each coarse cell's first row
    (and the end), ``occupied`` the coarse cells (``group * ntops + binade rank``) in order.
    A group's coarse cells are read from the highest binade down; in each, the column's class
    weight per bucket is counted in a window of its 2**p buckets when the cell has at least
    2**p / 8 rows, else from its rows sorted by bucket. ``num[g, b]`` gets Σ over the class-b
    rows (b ≠ column) of w·(2·above + own), ``ties[g, b]`` Σ w·own, where ``above`` is the
    column's class weight in higher buckets of the group and ``own`` in the row's bucket.
    """
    ntops = tops.size
    shift = _TOP - p
    width = 1 << p
    window = np.zeros(width, np.float64)
    higher = np.zeros(width, np.float64)
    widest = 0
    for o in range(occupied.size):
        widest = max(widest, bounds[o + 1] - bounds[o])
    slots = np.empty(widest, np.int64)
    mass = np.empty(widest, np.float64)
    weighted = weights.size > 0
    o = occupied.size
    while o > 0:
        group = occupied[o - 1] // ntops
        stop = o
        while o > 0 and occupied[o - 1] // ntops == group:
            o -= 1
        above = 0.0
        for cell in range(stop - 1, o - 1, -1):  # the group's binades, highest first
            begin, end = bounds[cell], bounds[cell + 1]
            if (end - begin) * 8 >= width:
                for r in range(begin, end):
                    word = words[r]
                    if word >> _TOP == column:
                        window[(word & _LOW52) >> shift] += weights[r] if weighted else 1.0
                for c in range(width - 1, -1, -1):
                    higher[c] = above
                    above += window[c]
                for r in range(begin, end):
                    word = words[r]
                    b = word >> _TOP
                    if b != column:
                        c = (word & _LOW52) >> shift
                        w = weights[r] if weighted else 1.0
                        num[group, b] += twice_pairs(window[c], w, higher[c])
                        ties[group, b] += w * window[c]
                window[:] = 0.0
                continue
            m = 0  # a sparse cell: the column's class rows sorted by bucket
            for r in range(begin, end):
                word = words[r]
                if word >> _TOP == column:
                    slots[m] = (word & _LOW52) >> shift
                    mass[m] = weights[r] if weighted else 1.0
                    m += 1
            order = np.argsort(slots[:m], kind="mergesort")
            sorted_slots = slots[:m][order]
            suffix = np.zeros(m + 1, np.float64)  # class weight from each sorted row up
            for k in range(m - 1, -1, -1):
                suffix[k] = suffix[k + 1] + mass[order[k]]
            for r in range(begin, end):
                word = words[r]
                b = word >> _TOP
                if b != column:
                    c = (word & _LOW52) >> shift
                    low = np.searchsorted(sorted_slots, c, side="left")
                    up = np.searchsorted(sorted_slots, c, side="right")
                    own = suffix[low] - suffix[up]
                    w = weights[r] if weighted else 1.0
                    num[group, b] += twice_pairs(own, w, above + suffix[up])
                    ties[group, b] += w * own
            above += suffix[0]
