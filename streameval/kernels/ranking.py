"""Compiled per-query terms of the ranking task, from rows sorted by query and score.

Each query's items come in one run, by descending score; tied items (equal scores) take
their tie group's positions in a random order, every order equally likely, as
scikit-learn's ``dcg_score`` averages over ties. With discounts d(p) = 1/log2(p + 1) and
their prefix sums D, a tie group at positions f … l with mean gain ḡ adds ḡ·(D(min(l, k)) −
D(f − 1)) to DCG@k (scikit-learn's own construction), and its share of relevant items
(label > 0) times its positions within k to the expected relevant count in the top k.

The first relevant item lies in the first tie group holding one: after ``b`` items, in a
group of ``g`` items of which ``r`` are relevant, at the group's position X, with
P(X > j) = C(g − r, j) / C(g, j). At a cutoff k a query's expected hit (a relevant item in
the top k) is P(b + X ≤ k) and its expected reciprocal rank E[1/(b + X); b + X ≤ k].
Average precision takes a tied item's last position (scikit-learn's label ranking average
precision): each relevant item of a group ending at l ≤ k adds (relevant items through
l) / l.

>>> import numpy as np
>>> y, s = np.array([1.0, 0.0]), np.array([0.5, 0.5])  # two tied items, one relevant
>>> terms, _ = all_terms(np.array([0, 2]), y, s, np.array([1]))
>>> [float(v) for v in terms[:, 0, 0]]  # dcg, idcg, top, ap, hit, rr at k = 1
[0.5, 1.0, 0.5, 0.0, 0.5, 0.5]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import numpy.typing as npt

#: The rows of :func:`query_terms`' per-query terms at each cutoff.
TERMS = ("dcg", "idcg", "top", "ap", "hit", "rr")


def discounts(longest: int) -> npt.NDArray[np.float64]:
    """The discounts of positions 1 … ``longest`` then their prefix sums D(0 … longest).

    Each discount is 1/log2(p + 1) as scikit-learn computes it; one array of
    2·``longest`` + 1 values.

    >>> discounts(2).tolist()
    [1.0, 0.6309297535714574, 0.0, 1.0, 1.6309297535714573]
    """
    each = 1 / (np.log(np.arange(longest) + 2) / np.log(2))
    out = np.zeros(2 * longest + 1)
    out[:longest] = each
    np.cumsum(each, out=out[longest + 1 :])
    return out


def all_terms(
    bounds: npt.NDArray[np.int64],
    y: npt.NDArray[np.float64],
    s: npt.NDArray[np.float64],
    cutoffs: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """:func:`query_terms` of every query, its two halves on two threads."""
    counts = np.diff(bounds)
    table = discounts(int(counts.max()) if counts.size else 0)
    half = (bounds.size - 1) // 2
    with ThreadPoolExecutor(2) as pool:
        parts = [
            pool.submit(query_terms, part, y, s, cutoffs, table)
            for part in (bounds[: half + 1], bounds[half:])
        ]
        (first, seen), (second, more) = (p.result() for p in parts)
    return np.concatenate([first, second], axis=2), np.concatenate([seen, more])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def query_terms(bounds, y, s, cutoffs, table):  # type: ignore[no-untyped-def]
    """Per query (rows ``bounds[q] … bounds[q + 1] − 1``, in any order) and cutoff, its terms.

    ``cutoffs`` are the k (0: the query's whole list); ``table`` holds the discounts and
    their prefix sums (:func:`discounts`) up to the longest query. Each query's items are ordered
    by descending score, then label (so the sums do not depend on the rows' order).
    Returns the terms, an array (:data:`TERMS`, cutoff, query), and each query's relevant
    items.
    """
    nq = bounds.size - 1
    nk = cutoffs.size
    terms = np.zeros((6, nk, nq), np.float64)
    relevant = np.zeros(nq, np.int64)
    longest = (table.size - 1) // 2
    each, sums = table[:longest], table[longest:]
    order = np.empty(longest, np.int64)
    ideal = np.empty(longest, np.float64)
    for q in range(nq):
        a, z = bounds[q], bounds[q + 1]
        n = z - a
        _ranked(y, s, a, n, order, ideal)
        total = 0
        for i in range(n):
            if ideal[i] > 0:
                total += 1
        relevant[q] = total
        before, size, first = 0, 0, 0  # the first tie group with a relevant item
        through = 0  # relevant items through the current group
        i = 0
        while i < n:
            j = i + 1
            while j < n and s[order[j]] == s[order[i]]:
                j += 1
            g = j - i
            gain = 0.0
            hits = 0
            for t in range(i, j):
                gain += y[order[t]]
                if y[order[t]] > 0:
                    hits += 1
            lo, hi = i + 1, j  # the group's positions
            through += hits
            if hits and not first:
                before, size, first = lo - 1, g, hits
            for c in range(nk):
                k = n if cutoffs[c] == 0 else cutoffs[c]
                if lo > k:
                    continue
                end = min(hi, k)
                terms[0, c, q] += gain / g * (sums[end] - sums[lo - 1])
                terms[2, c, q] += hits / g * (end - lo + 1)
                if hits and hi <= k:
                    terms[3, c, q] += hits * (through / hi)
            i = j
        for c in range(nk):
            k = n if cutoffs[c] == 0 else cutoffs[c]
            idcg = 0.0
            for p in range(min(n, k)):
                idcg += ideal[n - 1 - p] * each[p]
            terms[1, c, q] = idcg
            hit, rr = _first_relevant(before, size, first, k)
            terms[4, c, q] = hit
            terms[5, c, q] = rr
    return terms, relevant


@numba.njit(cache=True, nogil=True, inline="always")
def _ranked(y, s, a, n, order, ideal):  # type: ignore[no-untyped-def]
    """Rows ``a … a + n − 1`` by descending (score, label), and their labels ascending.

    ``order`` takes the rows (by insertion for short lists, else by stable argsorts),
    ``ideal`` the labels.
    """
    if n <= 32:
        for i in range(n):
            r = a + i
            j = i
            while j > 0 and (
                s[order[j - 1]] < s[r] or (s[order[j - 1]] == s[r] and y[order[j - 1]] < y[r])
            ):
                order[j] = order[j - 1]
                j -= 1
            order[j] = r
        for i in range(n):  # (ascending: read from the end)
            v = y[a + i]
            j = i
            while j > 0 and ideal[j - 1] > v:
                ideal[j] = ideal[j - 1]
                j -= 1
            ideal[j] = v
        return
    ranks = np.argsort(-y[a : a + n], kind="mergesort")
    ranks = ranks[np.argsort(-s[a : a + n][ranks], kind="mergesort")]
    for i in range(n):
        order[i] = a + ranks[i]
    ideal[:n] = np.sort(y[a : a + n])


@numba.njit(cache=True, nogil=True, inline="always")
def _first_relevant(b, g, r, k):  # type: ignore[no-untyped-def]
    """P(b + X ≤ k) and E[1/(b + X); b + X ≤ k] for X the first relevant item's place."""
    hit = 0.0
    rr = 0.0
    if r <= 0 or b >= k:
        return hit, rr
    survive = 1.0  # P(X > j − 1)
    for j in range(1, min(g - r + 1, k - b) + 1):
        at = survive * r / (g - j + 1)  # P(X = j)
        hit += at
        rr += at / (b + j)
        survive *= (g - r - j + 1) / (g - j + 1)
    return hit, rr


@numba.njit(cache=True, nogil=True)
def weight_spread(bounds, w):  # type: ignore[no-untyped-def]
    """Per query, its first weight and whether its weights differ."""
    nq = bounds.size - 1
    first = np.empty(nq, np.float64)
    varies = np.zeros(nq, np.bool_)
    for q in range(nq):
        a = bounds[q]
        first[q] = w[a]
        for i in range(a + 1, bounds[q + 1]):
            if w[i] != w[a]:
                varies[q] = True
                break
    return first, varies
