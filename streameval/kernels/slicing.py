"""Compiled loops of slice discovery: every slice's score histogram from one read of the rows.

A slice is a value of one feature, or a pair of values of two features (a *grouping set*
is the features a slice fixes). Every slice of every grouping set is counted in one pass:
each row adds its weight to one cell per grouping set, the cell of (its bucket, its slice).

The cells are dense, laid out ``[bucket][slice]``: a grouping set of two features with
``c1`` and ``c2`` codes holds ``c1 · c2`` slices from its offset, the slice of codes
``(a, b)`` at ``offset + a · c2 + b`` (a one-feature set: ``offset + a``). A unit's rows are
ordered by (bucket, label) first (a counting sort), so that a grouping set's cells of one
bucket stay in cache while that bucket's rows are added to them; the rows of two halves of
the buckets are added by two threads, into disjoint cells.

>>> import numpy as np
>>> bucket = np.array([1, 0, 1, 0], np.int64)
>>> order, starts = bucket_order(bucket, 2)
>>> order.tolist(), starts.tolist()
([1, 3, 0, 2], [0, 2, 4])
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from .sums import mix64

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]

jit = numba.njit(cache=True, nogil=True)


@jit
def bucket_order(bucket, buckets):  # type: ignore[no-untyped-def]
    """The rows ordered by bucket (a stable counting sort), and each bucket's first row."""
    starts = np.zeros(buckets + 1, np.int64)
    for i in range(bucket.size):
        starts[bucket[i] + 1] += 1
    for b in range(buckets):
        starts[b + 1] += starts[b]
    at = starts[:-1].copy()
    order = np.empty(bucket.size, np.int64)
    for i in range(bucket.size):
        b = bucket[i]
        order[at[b]] = i
        at[b] += 1
    return order, starts


@jit
def direct_codes(values, low, valid, codes, start, table):  # type: ignore[no-untyped-def]
    """Number the values of a type of at most 16 bits (1, 2, … by first appearance; 0: null).

    ``table`` (:func:`direct_table`, returned updated) holds each value's code at the value
    less ``low`` (the type's least), each code's first row and the count of codes; rows
    ``start`` … of ``codes`` are numbered, ``valid`` marks the rows that are not null (empty:
    none is).

    >>> codes = np.zeros(4, np.int32)
    >>> table = direct_codes(np.array([7, -2, 7, 0], np.int16), -(2**15),
    ...                      np.array([1, 1, 1, 0], np.bool_), codes, 0, direct_table())
    >>> codes.tolist(), table[1][:2].tolist(), int(table[2][0])
    ([1, 2, 1, 0], [0, 1], 2)
    """
    slots, firsts, state = table
    count = state[0]
    need = min(count + values.size, slots.size)
    if firsts.size < need:  # (room for every new value, made before the loop: growing
        # inside it costs a reference count a row)
        grown = np.zeros(max(need, 2 * firsts.size), np.int64)
        grown[:count] = firsts[:count]
        firsts = grown
    for i in range(values.size):
        if valid.size and not valid[i]:
            codes[start + i] = 0
            continue
        at = np.int64(values[i]) - low
        code = slots[at]
        if code == 0:
            count += 1
            firsts[count - 1] = start + i
            slots[at] = count
            code = count
        codes[start + i] = code
    state[0] = count
    return slots, firsts, state


def direct_table() -> tuple[I32, I64, I64]:
    """An empty table for :func:`direct_codes`: a slot per 16-bit value, first rows, count."""
    return np.zeros(1 << 16, np.int32), np.zeros(64, np.int64), np.zeros(1, np.int64)


@jit
def value_hashes(values, valid):  # type: ignore[no-untyped-def]
    """The two hashes :func:`~.loops.hashed_codes` numbers an integer by: its mix, itself.

    The mix is splitmix64's finalizer (:func:`streameval.split.keys.mix_array`), a bijection
    of the 64 bits: no two values share it, and it is not 0 for 0, so that only a null row
    (``valid`` false; empty ``valid``: none is) is 0 and 0.

    >>> from streameval.split.keys import mix_array
    >>> values = np.array([0, -1, 2**63 - 1], np.int64)
    >>> first, second = value_hashes(values, np.array([1, 1, 0], np.bool_))
    >>> first[:2].tolist() == mix_array(values)[:2].tolist(), second.tolist(), int(first[2])
    (True, [0, -1, 0], 0)
    """
    first = np.empty(values.size, np.int64)
    second = np.empty(values.size, np.int64)
    for i in range(values.size):
        if valid.size and not valid[i]:
            first[i] = 0
            second[i] = 0
            continue
        v = np.int64(values[i])
        first[i] = np.int64(mix64(np.uint64(v)))
        second[i] = v
    return first, second


@jit
def gather_codes(codes, order, features, out):  # type: ignore[no-untyped-def]
    """Copy the codes (features × rows) of ``features`` into ``out`` in ``order``."""
    for f in features:
        src = codes[f]
        dst = out[f]
        for i in range(order.size):
            dst[i] = src[order[i]]


@jit
def _weigh(target, counted, w, c0, c1, c2, c3):  # type: ignore[no-untyped-def]
    """Add a row's weight and one row to four cells (inlined in :func:`add_runs`)."""
    target[c0] += w
    target[c1] += w
    target[c2] += w
    target[c3] += w
    counted[c0] += 1.0
    counted[c1] += 1.0
    counted[c2] += 1.0
    counted[c3] += 1.0


@jit
def add_runs(  # type: ignore[no-untyped-def]
    codes,
    weight,
    starts,
    first,
    second,
    offset,
    stride,
    slices,
    pos,
    neg,
    pos_rows,
    neg_rows,
    lo,
    hi,
):
    """Add the rows of runs ``lo`` … ``hi`` to their cells (one per grouping set).

    The rows are ordered by run: run ``r`` holds the negatives (``r`` even) or positives
    (odd) of bucket ``r // 2``, rows ``starts[r]`` … ``starts[r + 1]`` of ``codes``
    (:func:`gather_codes`'s; its last row 0) and ``weight`` (empty: each row weighs 1).
    Grouping set ``k`` is features ``first[k]`` and ``second[k]``; its slice of codes
    ``(a, b)`` is ``offset[k] + a · stride[k] + b``. ``pos`` and ``neg`` are the cells'
    sums of weights, ``pos_rows`` and ``neg_rows`` (weighted only; else empty) their rows
    (that a rest is empty is known exactly, not from a difference of sums). A set's cells of a
    bucket stay in cache while the run is added; four sets are added in one pass over the
    run's rows (independent additions, in flight together).
    """
    sets = first.size
    for run in range(lo, hi):
        start = starts[run]
        end = starts[run + 1]
        if start == end:
            continue
        target = pos if run & 1 else neg
        counted = pos_rows if run & 1 else neg_rows
        base = (run >> 1) * slices
        k = 0
        while k + 4 <= sets:
            a0, b0 = codes[first[k]], codes[second[k]]
            a1, b1 = codes[first[k + 1]], codes[second[k + 1]]
            a2, b2 = codes[first[k + 2]], codes[second[k + 2]]
            a3, b3 = codes[first[k + 3]], codes[second[k + 3]]
            o0, o1 = base + offset[k], base + offset[k + 1]
            o2, o3 = base + offset[k + 2], base + offset[k + 3]
            s0, s1, s2, s3 = stride[k], stride[k + 1], stride[k + 2], stride[k + 3]
            shared = first[k] == first[k + 3]  # (the sets are in order: all four share it)
            if weight.size and shared:
                for i in range(start, end):
                    w = weight[i]
                    a = a0[i]
                    c0, c1 = o0 + a * s0 + b0[i], o1 + a * s1 + b1[i]
                    c2, c3 = o2 + a * s2 + b2[i], o3 + a * s3 + b3[i]
                    _weigh(target, counted, w, c0, c1, c2, c3)
            elif shared:
                for i in range(start, end):
                    a = a0[i]
                    target[o0 + a * s0 + b0[i]] += 1.0
                    target[o1 + a * s1 + b1[i]] += 1.0
                    target[o2 + a * s2 + b2[i]] += 1.0
                    target[o3 + a * s3 + b3[i]] += 1.0
            elif weight.size:
                for i in range(start, end):
                    w = weight[i]
                    c0, c1 = o0 + a0[i] * s0 + b0[i], o1 + a1[i] * s1 + b1[i]
                    c2, c3 = o2 + a2[i] * s2 + b2[i], o3 + a3[i] * s3 + b3[i]
                    _weigh(target, counted, w, c0, c1, c2, c3)
            else:
                for i in range(start, end):
                    target[o0 + a0[i] * s0 + b0[i]] += 1.0
                    target[o1 + a1[i] * s1 + b1[i]] += 1.0
                    target[o2 + a2[i] * s2 + b2[i]] += 1.0
                    target[o3 + a3[i] * s3 + b3[i]] += 1.0
            k += 4
        for rest in range(k, sets):
            a = codes[first[rest]]
            b = codes[second[rest]]
            at = base + offset[rest]
            step = stride[rest]
            if weight.size:
                for i in range(start, end):
                    cell = at + a[i] * step + b[i]
                    target[cell] += weight[i]
                    counted[cell] += 1.0
            else:
                for i in range(start, end):
                    target[at + a[i] * step + b[i]] += 1.0


@jit
def auc_columns(pos, neg, order, out):  # type: ignore[no-untyped-def]
    """Per column of ``pos``/``neg`` (buckets × slices): P, N, the AUC, its variance, bound.

    Buckets are visited in ``order`` (highest score first). ``out[j]`` receives P, N, the
    AUC, DeLong's variance and the ``roc_auc_error`` bound ``½ Σ pos_b · neg_b / (P · N)``,
    as :func:`streameval.stats.delong.delong` (NaN where undefined: the AUC without
    positives or negatives, the variance with fewer than two of either).

    >>> pos, neg = np.array([[1.0], [1.0], [0.0], [1.0]]), np.array([[0.0], [1.0], [1.0], [1.0]])
    >>> out = np.zeros((1, 5))
    >>> auc_columns(pos, neg, np.arange(4), out)
    >>> out[0].round(6).tolist()  # P, N, AUC, variance, bound
    [3.0, 3.0, 0.666667, 0.074074, 0.111111]
    """
    columns = pos.shape[1]
    P = np.zeros(columns)
    N = np.zeros(columns)
    ties = np.zeros(columns)
    for t in range(order.size):
        b = order[t]
        for j in range(columns):
            P[j] += pos[b, j]
            N[j] += neg[b, j]
            ties[j] += pos[b, j] * neg[b, j]
    area = np.zeros(columns)
    above_n = np.zeros(columns)
    for t in range(order.size):
        b = order[t]
        for j in range(columns):
            q = neg[b, j]
            above_n[j] += q
            if P[j] > 0 and N[j] > 0:
                area[j] += pos[b, j] * (N[j] - above_n[j] + 0.5 * q) / N[j]
    auc = np.full(columns, np.nan)
    for j in range(columns):
        if P[j] > 0 and N[j] > 0:
            auc[j] = area[j] / P[j]
    s10 = np.zeros(columns)
    s01 = np.zeros(columns)
    above_p = np.zeros(columns)
    above_n[:] = 0.0
    for t in range(order.size):
        b = order[t]
        for j in range(columns):
            p = pos[b, j]
            q = neg[b, j]
            above_p[j] += p
            above_n[j] += q
            if P[j] > 0 and N[j] > 0:
                v10 = (N[j] - above_n[j] + 0.5 * q) / N[j] - auc[j]
                v01 = (above_p[j] - 0.5 * p) / P[j] - auc[j]
                s10[j] += p * v10 * v10
                s01[j] += q * v01 * v01
    for j in range(columns):
        out[j, 0] = P[j]
        out[j, 1] = N[j]
        out[j, 2] = auc[j]
        defined = P[j] > 0 and N[j] > 0
        out[j, 4] = 0.5 * ties[j] / (P[j] * N[j]) if defined else np.nan
        if P[j] > 1 and N[j] > 1:
            out[j, 3] = s10[j] / ((P[j] - 1) * P[j]) + s01[j] / ((N[j] - 1) * N[j])
        else:
            out[j, 3] = np.nan
