"""Compiled loops of the dense bucketed kernel (:mod:`.dense`): numba, the ``fast`` extra.

NumPy places and sums a unit's rows in a dozen passes, five of them scattered adds into
arrays of millions of cells, bound by memory latency. These loops give the same cells and
the same sums (each cell's terms added in row order, as ``np.bincount`` adds them) in four:

1. :func:`binades` finds the binary exponents (binades) the scores occupy;
2. :func:`occupied` counts the rows of each (group, binade) pair, a "coarse cell";
3. :func:`place` orders the rows by coarse cell, each as one word (its score key's low 52
   bits and its label: the coarse cell holds the rest);
4. :func:`block_sums` sums each coarse cell's rows into a window of its 2**precision cells,
   small enough to stay in cache (counts, log-loss term, squared error, score), and emits
   the filled cells.

:func:`hashed_codes` numbers a String key's values from two hashes per row
(:mod:`.hashcodes`). A row's ordered score key is computed from the score's bits on the fly
(as :func:`.runs.ordered_keys`). The functions are compiled on first use and cached on disk.

>>> import numpy as np
>>> bits = np.array([0.25, 0.5, 0.75]).view(np.int64)
>>> seen, low, high = binades(bits)
>>> (np.flatnonzero(seen) - OFFSET).tolist()  # 0.25 is 2**-2, 0.5 and 0.75 in 2**-1
[1021, 1022]
"""

from __future__ import annotations

import numba
import numpy as np

#: Added to a key's top 12 bits (sign and exponent, -2048 … 2047) to index a binade table.
OFFSET = 2048
_LOW63 = 0x7FFF_FFFF_FFFF_FFFF
_LOW52 = (1 << 52) - 1
_TOP = 52

jit = numba.njit(cache=True, nogil=True)


@numba.njit(cache=True, nogil=True, inline="always")
def _key(bits: np.int64) -> np.int64:
    """Ordered key of a score from its bits (-0.0 becomes 0.0)."""
    if bits < 0:
        key = bits ^ _LOW63
        return np.int64(0) if key == -1 else key
    return bits


@numba.njit(cache=True, nogil=True, inline="always")
def _score(key: np.int64) -> np.float64:
    """The score of an ordered key (-0.0 comes back as 0.0)."""
    if key < 0:
        flipped = np.int64(key ^ _LOW63)
        return flipped.view(np.float64)
    same = np.int64(key)
    return same.view(np.float64)


@jit
def binades(bits):  # type: ignore[no-untyped-def]
    """Which binades occur (a table of 4096, at ``top + OFFSET``), and the least and largest key.

    Parameters
    ----------
    bits : ndarray of int64
        The scores' bits (a float64 array viewed as int64).

    """
    seen = np.zeros(2 * OFFSET, np.bool_)
    low = np.int64(_LOW63)
    high = -low - 1
    for i in range(bits.size):
        key = _key(bits[i])
        seen[(key >> _TOP) + OFFSET] = True
        low = min(low, key)
        high = max(high, key)
    return seen, low, high


@jit
def occupied(codes, bits, rank, ntops, space):  # type: ignore[no-untyped-def]
    """The rows of each coarse cell ``code * ntops + rank[binade]``.

    ``codes`` are the rows' group codes (int64), ``rank`` each binade's rank among those
    kept, ``space`` the number of group codes.
    """
    out = np.zeros(space * ntops, np.int64)
    for i in range(bits.size):
        out[codes[i] * ntops + rank[(_key(bits[i]) >> _TOP) + OFFSET]] += 1
    return out


@jit
def place(codes, bits, y, weights, rank, ntops, ordinal, bounds, words, ordered):  # type: ignore[no-untyped-def]
    """Order the rows by coarse cell, stably, each as one word: key's low 52 bits | y << 52.

    A row goes to the next place of its coarse cell ``code * ntops + rank[binade]`` (at
    ``bounds[ordinal[coarse]]``, consumed); its weight (if ``weights``) into ``ordered``.
    The coarse cell's binade gives the key's top bits back.
    """
    for i in range(bits.size):
        key = _key(bits[i])
        o = ordinal[codes[i] * ntops + rank[(key >> _TOP) + OFFSET]]
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

    Unweighted sums (``weights`` empty): negatives, positives, Σterm, Σ(p − y)², Σp;
    weighted: rows, Σw·y, Σw·(1 − y), Σw·term, Σw·(p − y)², Σw·p. The log-loss term is
    the log of the probability of the row's label, clipped to [eps, 1 − eps] (sklearn's).
    Counts are float64: exact below 2**53 rows. Each cell's sums are added in row order, as
    ``np.bincount`` adds them.
    """
    weighted = weights.size > 0
    width = 6 if weighted else 5
    widest = 0
    for o in range(occupied.size):
        widest = max(widest, starts[o + 1] - starts[o])
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
        top = tops[occupied[o] % ntops]
        floor = top << _TOP
        first = floor >> shift
        cut = cut_tops[top + OFFSET]
        for r in range(bounds[o], bounds[o + 1]):
            word = words[r]
            key = floor | (word & _LOW52)
            c = (key >> shift) - first
            if cut:
                c += np.searchsorted(cuts, key, side="right") - np.searchsorted(cuts, floor)
            score = _score(key)
            q = min(max(score, eps), high)
            if (word >> _TOP) & 1:
                term = np.log(q)
                d = score - 1.0
                at = 1
            else:
                term = np.log(abs(q - 1.0))
                d = score
                at = 0 if not weighted else 2
            if weighted:
                w = weights[r]
                window[c, 0] += 1.0
                window[c, at] += w
                window[c, 3] += term * w
                window[c, 4] += d * d * w
                window[c, 5] += score * w
            else:
                window[c, at] += 1.0
                window[c, 2] += term
                window[c, 3] += d * d
                window[c, 4] += score
        code = occupied[o] // ntops
        for c in range(starts[o + 1] - starts[o]):
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
def hashed_codes(first, second):  # type: ignore[no-untyped-def]
    """Number the distinct values of a key from two int64 hashes of each.

    Codes are 1, 2, … in order of first appearance (0 where both hashes are 0: null); each
    code's first row comes with them. ``ok`` is False when two rows agree on the first hash
    but not on the second (a collision of the first hash: the caller codes the key another
    way).
    """
    size = 1024
    slots = np.zeros(size, np.int64)  # a code, 0 = empty
    keys = np.zeros(size, np.int64)
    seconds = np.zeros(64, np.int64)
    firsts = np.zeros(64, np.int64)
    codes = np.empty(first.size, np.int64)
    count = 0
    for i in range(first.size):
        h = first[i]
        g = second[i]
        if h == 0 and g == 0:
            codes[i] = 0
            continue
        at = h & (size - 1)
        while slots[at] != 0 and keys[at] != h:
            at = (at + 1) & (size - 1)
        code = slots[at]
        if code != 0:
            if seconds[code - 1] != g:
                return codes, firsts[:count], False
            codes[i] = code
            continue
        count += 1
        if count > seconds.size:
            seconds = np.concatenate((seconds, np.zeros(seconds.size, np.int64)))
            firsts = np.concatenate((firsts, np.zeros(firsts.size, np.int64)))
        seconds[count - 1] = g
        firsts[count - 1] = i
        slots[at] = count
        keys[at] = h
        codes[i] = count
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
    return codes, firsts[:count], True
