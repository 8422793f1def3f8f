"""Compiled loops (numba) of the bucketed binary kernel (:mod:`.dense`, :mod:`.compiled`).

A unit's rows are placed and summed in four passes, each cell's terms added in row order:

1. :func:`binades` finds the binary exponents (binades) the scores occupy;
2. :func:`occupied` counts the rows of each (group, binade) pair, a "coarse cell";
3. :func:`place` orders the rows by coarse cell, each as one word (its score key's low 52
   bits and its label: the coarse cell holds the rest);
4. :func:`block_sums` sums each coarse cell's rows into a window of its 2**precision cells,
   small enough to stay in cache (counts, log-loss term, squared error, score), and emits
   the filled cells: the state's buckets.

For a metric table, :func:`group_metrics` replaces the last step: it counts each coarse
cell's rows in its window and reads the group's metric aggregates off the filled slots
directly, with no cells emitted. A unit's rows may come in chunks (as Polars reads them):
the first three loops take one chunk at a time.

:func:`hashed_codes` numbers a String key's values from two hashes per row
(:mod:`.hashcodes`). A row's ordered score key is computed from the score's bits on the fly
(as :func:`streameval.bucketing.ordered_keys`). The functions are compiled on first use and
cached on disk.

>>> import numpy as np
>>> bits = np.array([0.25, 0.5, 0.75]).view(np.int64)
>>> seen, extremes = np.zeros(2 * OFFSET, np.bool_), np.array([2**63 - 1, -(2**63)])
>>> binades(bits, seen, extremes)
>>> (np.flatnonzero(seen) - OFFSET).tolist()  # 0.25 is 2**-2, 0.5 and 0.75 in 2**-1
[1021, 1022]
"""

from __future__ import annotations

import numba
import numpy as np

from ..bucketing import KEY_FLIP
from .sums import ap_bound_terms, twice_pairs

#: Added to a key's top 12 bits (sign and exponent, -2048 … 2047) to index a binade table.
OFFSET = 2048
_LOW52 = (1 << 52) - 1
_TOP = 52
_ONE = 1023 << 52  # the exponent bits of 1.0
# ln 2 in two parts (as fdlibm does): power × the first is exact for |power| < 2**20, and
# within an ulp of the log loss beyond
_LN2_HIGH = 6.93147180369123816490e-01
_LN2_LOW = 1.90821492927058770002e-10
#: A multiply's rounding (relative), and so its most in the log of a product of factors.
_ROUNDING = 2.0**-53
#: The log loss as a product's log is kept when its rounding (a row's at most
#: :data:`_ROUNDING`, absolute) is at most this relative to it; else (a confident model: mean
#: loss below about 1e-3 a row) the group's terms are summed a ``log`` each.
_PRODUCT_TOLERANCE = 1e-13

jit = numba.njit(cache=True, nogil=True)


@numba.njit(cache=True, nogil=True, inline="always")
def _key(bits: np.int64) -> np.int64:
    """Ordered key of a score from its bits (-0.0 becomes 0.0)."""
    if bits < 0:
        key = bits ^ KEY_FLIP
        return np.int64(0) if key == -1 else key
    return bits


@numba.njit(cache=True, nogil=True, inline="always")
def _score(key: np.int64) -> np.float64:
    """The score of an ordered key (-0.0 comes back as 0.0)."""
    if key < 0:
        flipped = np.int64(key ^ KEY_FLIP)
        return flipped.view(np.float64)
    same = np.int64(key)
    return same.view(np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _coarse(cell, tops, ntops, shift, cut_tops):  # type: ignore[no-untyped-def]
    """A coarse cell's binade, its first key, its first bucket index, and if it has splits."""
    top = tops[cell % ntops]
    floor = top << _TOP
    return top, floor, floor >> shift, cut_tops[top + OFFSET]


@numba.njit(cache=True, nogil=True, inline="always")
def _row(word, floor, first, shift, cut, cuts):  # type: ignore[no-untyped-def]
    """A placed row's ordered key and its slot in its coarse cell's window, and its label."""
    key = floor | (word & _LOW52)
    c = (key >> shift) - first
    if cut:
        c += np.searchsorted(cuts, key, side="right") - np.searchsorted(cuts, floor)
    return key, c, (word >> _TOP) & 1


@numba.njit(cache=True, nogil=True, inline="always")
def _slots(touched, rows, every, width):  # type: ignore[no-untyped-def]
    """The slots a coarse cell's rows filled, in order (repeated), or all of a dense cell's.

    A cell with fewer rows than an eighth of its slots has its rows' slots sorted rather
    than every slot of its window scanned (a million groups: a few rows per cell).
    """
    if rows * 8 < width:
        return np.sort(touched[:rows])
    return every[:width]


@jit
def binades(bits, seen, extremes):  # type: ignore[no-untyped-def]
    """Mark the binades that occur in ``seen`` (at ``top + OFFSET``); widen ``extremes``.

    Parameters
    ----------
    bits : ndarray of int64
        The scores' bits (a float64 array viewed as int64).
    seen : ndarray of bool
        4096 flags, updated.
    extremes : ndarray of int64
        The least and largest key so far, updated.

    """
    low = extremes[0]
    high = extremes[1]
    for i in range(bits.size):
        key = _key(bits[i])
        seen[(key >> _TOP) + OFFSET] = True
        low = min(low, key)
        high = max(high, key)
    extremes[0] = low
    extremes[1] = high


@jit
def _layout(bounds, starts, occupied, ntops):  # type: ignore[no-untyped-def]
    """What the summing loops allocate from the placed rows' coarse cells.

    The most slots of a coarse cell, the groups, the most slots of a group, every slot index
    of the widest window (:func:`_slots`), and room for the slots of the largest cell's rows.
    """
    widest = 0
    rows = 0
    for o in range(occupied.size):
        widest = max(widest, starts[o + 1] - starts[o])
        rows = max(rows, bounds[o + 1] - bounds[o])
    groups = 0
    most = 0
    begin = 0
    for o in range(occupied.size + 1):
        if o == occupied.size or (o > 0 and occupied[o] // ntops != occupied[o - 1] // ntops):
            groups += 1
            most = max(most, starts[o] - starts[begin])
            begin = o
    groups = groups if occupied.size else 0
    return widest, groups, most, np.arange(widest), np.empty(rows, np.int64)


@jit
def occupied(codes, start, bits, rank, ntops, out):  # type: ignore[no-untyped-def]
    """Add each row to its coarse cell's count in ``out``: ``code * ntops + rank[binade]``.

    ``codes`` are the group codes (int64) of all rows, those of these rows from ``start``;
    ``rank`` is each binade's rank among those kept.
    """
    for i in range(bits.size):
        out[codes[start + i] * ntops + rank[(_key(bits[i]) >> _TOP) + OFFSET]] += 1


@jit
def coarse_ids(codes, start, bits, rank, ntops, out):  # type: ignore[no-untyped-def]
    """Each row's coarse cell ``code * ntops + rank[binade]`` into ``out`` (from ``start``)."""
    for i in range(bits.size):
        out[start + i] = codes[start + i] * ntops + rank[(_key(bits[i]) >> _TOP) + OFFSET]


@jit
def place(codes, start, bits, y, weights, rank, ntops, ordinal, bounds, words, ordered):  # type: ignore[no-untyped-def]
    """Order the rows by coarse cell, stably, each as one word: key's low 52 bits | y << 52.

    A row goes to the next place of its coarse cell ``code * ntops + rank[binade]`` (at
    ``bounds[ordinal[coarse]]``, consumed); its weight (if ``weights``) into ``ordered``.
    The coarse cell's binade gives the key's top bits back. As :func:`occupied`, ``codes``
    are those of all rows, these rows' from ``start``.
    """
    for i in range(bits.size):
        key = _key(bits[i])
        o = ordinal[codes[start + i] * ntops + rank[(key >> _TOP) + OFFSET]]
        at = bounds[o]
        bounds[o] = at + 1
        words[at] = (key & _LOW52) | (np.int64(y[i]) << _TOP)
        if weights.size:
            ordered[at] = weights[i]


@jit
def block_sums(words, weights, bounds, starts, occupied, tops, p, cuts, cut_tops, eps):  # type: ignore[no-untyped-def]
    """Sum each coarse cell's rows (:func:`place`) in a window that stays in cache.

    The filled cells are emitted in cell order: their sums (a row per sum), group code,
    binade and slot in the binade. A row's slot is its bucket index in the binade
    (``key >> (52 − p)``, less the binade's first), moved up in a binade with splits inside
    its buckets (``cut_tops``) by the splits (sorted ``cuts``) at or below its key.

    Unweighted sums (``weights`` empty): negatives, positives, Σterm, Σ(p − y)², Σp,
    Σ hinge; weighted: rows, Σw·y, Σw·(1 − y), Σw·term, Σw·(p − y)², Σw·p, Σw·hinge. The
    log-loss term is the log of the probability of the row's label, clipped to
    [eps, 1 − eps] (sklearn's); the hinge term max(0, 1 − p) for a positive, max(0, 1 + p)
    for a negative.
    Counts are float64: exact below 2**53 rows. Each cell's sums are added in row order, as
    ``np.bincount`` adds them.
    """
    weighted = weights.size > 0
    width = 7 if weighted else 6
    widest, _, _, every, touched = _layout(bounds, starts, occupied, tops.size)
    window = np.zeros((widest, width), np.float64)
    most = min(words.size, starts[-1])
    got = np.empty((width, most), np.float64)  # a row per sum: contiguous columns
    group = np.empty(most, np.uint64)
    binade = np.empty(most, np.int64)
    local = np.empty(most, np.int64)
    ntops = tops.size
    shift = _TOP - p
    high = 1.0 - eps
    emitted = 0
    for o in range(occupied.size):
        top, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
        for r in range(bounds[o], bounds[o + 1]):
            word = words[r]
            key = floor | (word & _LOW52)
            c = (key >> shift) - first
            if cut:
                c += np.searchsorted(cuts, key, side="right") - np.searchsorted(cuts, floor)
            touched[r - bounds[o]] = c
            score = _score(key)
            q = min(max(score, eps), high)
            if (word >> _TOP) & 1:
                term = np.log(q)
                d = score - 1.0
                hinge = max(0.0, 1.0 - score)
                at = 1
            else:
                term = np.log(abs(q - 1.0))
                d = score
                hinge = max(0.0, 1.0 + score)
                at = 0 if not weighted else 2
            if weighted:
                w = weights[r]
                window[c, 0] += 1.0
                window[c, at] += w
                window[c, 3] += term * w
                window[c, 4] += d * d * w
                window[c, 5] += score * w
                window[c, 6] += hinge * w
            else:
                window[c, at] += 1.0
                window[c, 2] += term
                window[c, 3] += d * d
                window[c, 4] += score
                window[c, 5] += hinge
        code = occupied[o] // ntops
        rows = bounds[o + 1] - bounds[o]
        for c in _slots(touched, rows, every, starts[o + 1] - starts[o]):
            if window[c, 0] == 0.0 and (weighted or window[c, 1] == 0.0):
                continue
            for j in range(width):
                got[j, emitted] = window[c, j]
                window[c, j] = 0.0
            group[emitted] = code
            binade[emitted] = top
            local[emitted] = c
            emitted += 1
    return got[:, :emitted], group[:emitted], binade[:emitted], local[:emitted]


@jit
def group_metrics(words, bounds, starts, occupied, tops, p, cuts, cut_tops, eps, marks, delong):  # type: ignore[no-untyped-def]
    """Each group's metric aggregates from its unweighted rows placed by :func:`place`.

    Each coarse cell's rows are counted into a window of its slots (as :func:`block_sums`
    counts them); the window's filled slots are then the group's buckets, from the lowest
    score up. Per group this gives, exactly in int64, a row each of ``counts``: positives,
    negatives, the AUC's pair sum 2·Σ pos·(negatives below) + Σ pos·neg and its tie part
    Σ pos·neg, then the positives and negatives below each mark (``marks``: binade and slot
    columns, in ascending order). In float64, a row each of ``sums``: Σ pos times the
    precision at or above the bucket (a second pass over the group's buckets, kept aside),
    minus the log-loss terms' sum, the squared errors' sum, and the AP bound's two sums
    (:func:`_ap_terms`, in that second pass); with ``delong``, also the sums behind
    DeLong's variance of the AUC, Σ pos·(V₁₀ − A)² and Σ neg·(V₀₁ − A)² over the buckets
    (:func:`_placement_terms`; 0 without ``delong`` or without both classes); last, the
    hinge losses' sum (:func:`block_sums`' terms).

    The terms' sum is the log of their product, kept as a float in [1, 2) times a power of
    two counted apart (renormalized every 16 rows: a clipped probability is at least eps),
    so a row costs a multiply rather than a ``log``. Each multiply may round by 2**-53: where
    that could be more than ``_PRODUCT_TOLERANCE`` of the group's loss (probabilities near
    the labels), the group's terms are summed a ``log`` each instead (:func:`_log_sum`).
    Also returned: the largest bucket count.
    """
    ntops = tops.size
    widest, groups, most, every, touched = _layout(bounds, starts, occupied, ntops)
    window = np.zeros((widest, 2), np.int64)
    nmarks = marks.shape[1]
    codes = np.empty(groups, np.uint64)
    counts = np.zeros((4 + 2 * nmarks, groups), np.int64)
    sums = np.zeros((8, groups), np.float64)
    kept = np.empty((most, 2), np.int64)  # a group's buckets, for the second pass
    shift = _TOP - p
    high = 1.0 - eps
    largest = 0
    g = -1
    o = 0
    while o < occupied.size:
        g += 1
        code = occupied[o] // ntops
        codes[g] = code
        nkept = 0
        below_pos = 0
        below_neg = 0
        pairs = 0  # twice the pairs, ties once (twice_pairs)
        ties = 0
        mark = 0
        product = 1.0
        power = np.int64(0)
        since = 0
        brier = 0.0
        hinge = 0.0
        first_cell = o
        while o < occupied.size and occupied[o] // ntops == code:
            top, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
            for r in range(bounds[o], bounds[o + 1]):
                word = words[r]
                key = floor | (word & _LOW52)
                c = (key >> shift) - first
                if cut:  # (written out: an inlined helper here measured 60% slower)
                    c += np.searchsorted(cuts, key, side="right") - np.searchsorted(cuts, floor)
                touched[r - bounds[o]] = c
                label = (word >> _TOP) & 1
                window[c, label] += 1
                score = _score(key)
                q = min(max(score, eps), high)
                product *= abs(q - (1.0 - label))
                d = score - label
                brier += d * d
                hinge += max(0.0, 1.0 - (2 * label - 1) * score)
                since += 1
                if since == 16:  # keep the product in [1, 2): its exponent goes to power
                    bits = np.float64(product).view(np.int64)
                    power += ((bits >> _TOP) & 0x7FF) - 1023
                    product = np.int64((bits & _LOW52) | _ONE).view(np.float64)
                    since = 0
            rows = bounds[o + 1] - bounds[o]
            for c in _slots(touched, rows, every, starts[o + 1] - starts[o]):
                cn = window[c, 0]
                cp = window[c, 1]
                if cn == 0 and cp == 0:
                    continue
                window[c, 0] = 0
                window[c, 1] = 0
                while mark < nmarks and (
                    top > marks[0, mark] or (top == marks[0, mark] and c >= marks[1, mark])
                ):
                    counts[4 + 2 * mark, g] = below_pos
                    counts[5 + 2 * mark, g] = below_neg
                    mark += 1
                largest = max(largest, cn, cp)
                ties += cp * cn
                pairs += twice_pairs(cn, cp, below_neg)
                below_pos += cp
                below_neg += cn
                kept[nkept, 0] = cp
                kept[nkept, 1] = cn
                nkept += 1
            o += 1
        while mark < nmarks:
            counts[4 + 2 * mark, g] = below_pos
            counts[5 + 2 * mark, g] = below_neg
            mark += 1
        ap, over, under, s10, s01 = _upper_sums(
            kept[:nkept, 0], kept[:nkept, 1], below_pos, below_neg, pairs, delong
        )
        counts[0, g] = below_pos
        counts[1, g] = below_neg
        counts[2, g] = pairs
        counts[3, g] = ties
        sums[0, g] = ap
        loss = -(np.log(product) + power * _LN2_HIGH + power * _LN2_LOW)
        if (bounds[o] - bounds[first_cell]) * _ROUNDING > _PRODUCT_TOLERANCE * loss:
            cells = (first_cell, o)  # a confident model's: the product's rounding would show
            loss = -_log_sum(words, bounds, occupied, tops, shift, cut_tops, cuts, eps, cells)
        sums[1, g] = loss
        sums[2, g] = brier
        sums[3, g] = over
        sums[4, g] = under
        sums[5, g] = s10
        sums[6, g] = s01
        sums[7, g] = hinge
    return codes, counts, sums, largest


@numba.njit(cache=True, nogil=True, inline="always")
def _upper_sums(cps, cns, P, N, pairs, delong):  # type: ignore[no-untyped-def]
    """A group's sums read from the counts at or above each bucket, lowest bucket first.

    ``cps`` and ``cns`` are the group's buckets' positives and negatives (score ascending),
    ``P`` and ``N`` its totals and ``pairs`` its AUC pair sum. Returns Σ pos times the
    precision at or above the bucket (the AP numerator), the AP bound's two sums
    (:func:`_ap_terms`), and with ``delong`` DeLong's two sums (:func:`_placement_terms`; 0
    without ``delong`` or without both classes).
    """
    ap = 0.0
    over = 0.0
    under = 0.0
    s10 = 0.0
    s01 = 0.0
    above_pos = P
    above_neg = N
    fP = np.float64(P)
    fN = np.float64(N)
    placed = delong and P > 0 and N > 0
    auc = np.float64(pairs) / (2.0 * fP * fN) if placed else 0.0
    for k in range(cps.size):
        cp = cps[k]
        cn = cns[k]
        if cp > 0:
            ap += cp * (np.float64(above_pos) / np.float64(above_pos + above_neg))
            up, down = _ap_terms(cp, cn, above_pos, above_neg)
            over += up
            under += down
        if placed:
            d10, d01 = _placement_terms(cp, cn, above_pos, above_neg, fP, fN, auc)
            s10 += d10
            s01 += d01
        above_pos -= cp
        above_neg -= cn
    return ap, over, under, s10, s01


@numba.njit(cache=True, nogil=True, inline="always")
def _range_sum(x, start, stop):  # type: ignore[no-untyped-def]
    """Σ x[start:stop] in order (0 for an empty ``x``: not given)."""
    total = 0.0
    if x.size:
        for r in range(start, stop):
            total += x[r]
    return total


@jit
def run_groups(pos, neg, firsts, ends, marks, log_loss, brier, hinge, delong):  # type: ignore[no-untyped-def]
    """Each group's metric aggregates from its sorted unweighted runs, as :func:`group_metrics`.

    ``pos`` and ``neg`` are each run's counts, in (group, score ascending) order; group ``g``
    holds runs ``firsts[g]`` to ``ends[g]``. ``marks[m, g]`` is the group's first run at or
    above threshold ``m`` (ascending in ``m``); ``log_loss``, ``brier`` and ``hinge`` are
    each run's loss sums (each empty when not given). Returns :func:`group_metrics`'
    ``counts`` (positives and negatives below each mark) and ``sums`` (the log-loss, Brier
    and hinge sums are the runs' own, summed in order; 0 without them) and the largest
    count.
    """
    groups = firsts.size
    nmarks = marks.shape[0]
    counts = np.zeros((4 + 2 * nmarks, groups), np.int64)
    sums = np.zeros((8, groups), np.float64)
    largest = 0
    for g in range(groups):
        below_pos = 0
        below_neg = 0
        pairs = 0
        ties = 0
        mark = 0
        for r in range(firsts[g], ends[g]):
            while mark < nmarks and marks[mark, g] <= r:
                counts[4 + 2 * mark, g] = below_pos
                counts[5 + 2 * mark, g] = below_neg
                mark += 1
            cp = pos[r]
            cn = neg[r]
            largest = max(largest, cp, cn)
            ties += cp * cn
            pairs += twice_pairs(cn, cp, below_neg)
            below_pos += cp
            below_neg += cn
        while mark < nmarks:
            counts[4 + 2 * mark, g] = below_pos
            counts[5 + 2 * mark, g] = below_neg
            mark += 1
        counts[0, g] = below_pos
        counts[1, g] = below_neg
        counts[2, g] = pairs
        counts[3, g] = ties
        ap, over, under, s10, s01 = _upper_sums(
            pos[firsts[g] : ends[g]], neg[firsts[g] : ends[g]], below_pos, below_neg, pairs, delong
        )
        sums[0, g] = ap
        sums[3, g] = over
        sums[4, g] = under
        sums[5, g] = s10
        sums[6, g] = s01
        sums[1, g] = _range_sum(log_loss, firsts[g], ends[g])
        sums[2, g] = _range_sum(brier, firsts[g], ends[g])
        sums[7, g] = _range_sum(hinge, firsts[g], ends[g])
    return counts, sums, largest


@numba.njit(cache=True, nogil=True, inline="always")
def _placement_terms(cp, cn, cpos, cneg, P, N, auc):  # type: ignore[no-untyped-def]
    """A bucket's terms of DeLong's sums: pos·(V₁₀ − A)², neg·(V₀₁ − A)².

    ``cp`` and ``cn`` are the bucket's positive and negative weight, ``cpos`` and ``cneg``
    the weight at or above it (the bucket included), ``P`` and ``N`` the group's totals and
    ``auc`` its AUC: a positive's placement V₁₀ is the share of negatives below it (ties ½),
    a negative's V₀₁ the share of positives above it, as :func:`streameval.stats.delong.placements`.
    """
    p = np.float64(cp)
    n = np.float64(cn)
    v10 = (N - np.float64(cneg) + 0.5 * n) / N - auc
    v01 = (np.float64(cpos) - 0.5 * p) / P - auc
    return p * v10 * v10, n * v01 * v01


@numba.njit(cache=True, nogil=True, inline="always")
def _ap_terms(cp, cn, cpos, cneg):  # type: ignore[no-untyped-def]
    """A bucket's AP bound terms (over, under) of counts: :func:`.sums.ap_bound_terms`."""
    return ap_bound_terms(np.float64(cp), np.float64(cn), np.float64(cpos), np.float64(cneg))


@jit
def run_hinges(pos, neg, score, firsts):  # type: ignore[no-untyped-def]
    """Each run's hinge loss sum, pos·max(0, 1 − s) + neg·max(0, 1 + s), or each group's.

    With ``firsts`` (each group's first run, ascending), each group's sum of its runs'
    terms. One pass, no temporaries (the NumPy form took six arrays of the runs' size). A run of
    one row (``neg`` empty: ``pos`` is its label) keeps its one term.
    """
    single = neg.size == 0
    grouped = firsts.size > 0
    out = np.zeros(firsts.size if grouped else score.size, np.float64)
    g = -1
    for r in range(score.size):
        if grouped:
            while g + 1 < firsts.size and firsts[g + 1] <= r:
                g += 1
        s = score[r]
        up = max(0.0, 1.0 - s)
        down = max(0.0, 1.0 + s)
        term = (up if pos[r] else down) if single else pos[r] * up + neg[r] * down
        if grouped:
            out[g] += term
        else:
            out[r] = term
    return out


@jit
def _log_sum(words, bounds, occupied, tops, shift, cut_tops, cuts, eps, cells):  # type: ignore[no-untyped-def]
    """Σ of the log-loss terms of the coarse cells in range ``cells``, a ``log`` per row."""
    start, stop = cells
    ntops = tops.size
    high = 1.0 - eps
    total = 0.0
    for o in range(start, stop):
        _, floor, first, cut = _coarse(occupied[o], tops, ntops, shift, cut_tops)
        for r in range(bounds[o], bounds[o + 1]):
            key, _, label = _row(words[r], floor, first, shift, cut, cuts)
            q = min(max(_score(key), eps), high)
            total += np.log(abs(q - (1.0 - label)))
    return total


@jit
def code_range(values, extremes):  # type: ignore[no-untyped-def]
    """Narrow ``extremes`` to the least positive and the largest of ``values`` (codes, 0: null)."""
    low = extremes[0]
    high = extremes[1]
    for i in range(values.size):
        v = np.int64(values[i])
        if 0 < v < low:
            low = v
        high = max(high, v)
    extremes[0] = low
    extremes[1] = high


@jit
def add_codes(codes, start, values, low, width, first):  # type: ignore[no-untyped-def]
    """Append a key's field to the combined codes of rows ``start`` …: ``code << width | field``.

    A row's field is its key's code less ``low`` (0, null, stays 0); ``first``: the codes are
    set (the buffer holds nothing yet).
    """
    for i in range(values.size):
        v = np.int64(values[i])
        f = v - low if v > 0 else np.int64(0)
        codes[start + i] = f if first else (codes[start + i] << width) | f


def hash_table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An empty table for :func:`hashed_codes`.

    Its slots, their first hashes, each code's second hash and first row, and the count of
    codes with the ok flag.
    """
    size = 1024
    return (
        np.zeros(size, np.int64),  # a code, 0 = empty
        np.zeros(size, np.int64),
        np.zeros(64, np.int64),
        np.zeros(64, np.int64),
        np.array([0, 1], np.int64),
    )


@jit
def hashed_codes(first, second, codes, start, table):  # type: ignore[no-untyped-def]
    """Number the distinct values of a key from two int64 hashes of each, into ``codes``.

    Codes are 1, 2, … in order of first appearance (0 where both hashes are 0: null); each
    code's first row is kept. The rows may come in chunks: these are rows ``start`` … of
    ``codes``, and ``table`` (:func:`hash_table`, returned updated) carries on from chunk to
    chunk. Its ok flag turns 0 when two rows agree on the first hash but not on the second
    (a collision of the first hash: the caller codes the key another way).
    """
    slots, keys, seconds, firsts, state = table
    size = slots.size
    count = state[0]
    for i in range(first.size):
        h = first[i]
        g = second[i]
        if h == 0 and g == 0:
            codes[start + i] = 0
            continue
        at = h & (size - 1)
        while slots[at] != 0 and keys[at] != h:
            at = (at + 1) & (size - 1)
        code = slots[at]
        if code != 0:
            if seconds[code - 1] != g:
                state[1] = 0
                break
            codes[start + i] = code
            continue
        count += 1
        if count > seconds.size:
            seconds = np.concatenate((seconds, np.zeros(seconds.size, np.int64)))
            firsts = np.concatenate((firsts, np.zeros(firsts.size, np.int64)))
        seconds[count - 1] = g
        firsts[count - 1] = start + i
        slots[at] = count
        keys[at] = h
        codes[start + i] = count
        if 2 * count > size:  # grow and re-insert: keep the table at most half full
            size *= 2
            old_slots, old_keys = slots, keys
            slots = np.zeros(size, np.int64)
            keys = np.zeros(size, np.int64)
            for j in range(old_slots.size):
                if old_slots[j] != 0:
                    at = old_keys[j] & (size - 1)
                    while slots[at] != 0:
                        at = (at + 1) & (size - 1)
                    slots[at] = old_slots[j]
                    keys[at] = old_keys[j]
    state[0] = count
    return slots, keys, seconds, firsts, state
