"""A bucket's share of the AUC's pair sum and of the AP bound: one definition for every engine.

Both are plain arithmetic on their arguments, so the one definition serves Python numbers,
NumPy arrays and Polars expressions as they are, and the compiled loops through
``numba.njit(inline="always")`` (:mod:`streameval.kernels.sums`): every path computes the
same sums, in the same order of operations.

The AUC of a group is Σ over its buckets of :func:`twice_pairs` / (2·P·N): each bucket's
negatives against the positives above it, its own positives counted half (ties ½, as
scikit-learn). The same function read the other way round (positives against the negatives
below) gives the same sum.

>>> twice_pairs(2, 1, 3)  # 1 negative: 3 positives above it, 2 tied with it
8
>>> import polars as pl
>>> pl.select(twice_pairs(pl.lit(2.0), pl.lit(1.0), pl.lit(3.0))).item()
8.0
"""

from __future__ import annotations

from typing import Any


def twice_pairs(other: Any, own: Any, beyond: Any) -> Any:
    """Twice the pairs of a bucket's ``own`` weight with the ``other`` class, ties once.

    Parameters
    ----------
    other : number, array or expression
        The other class's weight in the bucket (its ties with ``own``).
    own : number, array or expression
        The bucket's weight of the class whose pairs are counted.
    beyond : number, array or expression
        The other class's weight on the far side of the bucket (positives above a bucket's
        negatives, or negatives below its positives).

    Returns
    -------
    number, array or expression
        ``own · (2·beyond + other)``.

    Examples
    --------
    >>> import numpy as np
    >>> twice_pairs(np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([0.0, 4.0])).tolist()
    [2.0, 8.0]

    """
    return own * (2 * beyond + other)


def ap_bound_terms(p: Any, n: Any, cpos: Any, cneg: Any) -> tuple[Any, Any]:
    """A bucket with positives: how far its AP term may lie above and below the exact one.

    ``p``, ``n``: the bucket's positive and negative weight; ``cpos``, ``cneg``: those from
    the top score down to the bucket's end (floats). With A, B the weights above the bucket,
    the bucketed term is T = p·cpos/(cpos + cneg). Any order inside the bucket puts a
    positive at cumulative positive weight a ∈ (0, p] at precision ≤ (A + p)/(A + B + p),
    so the exact term is at most U = p·cpos/(cpos + cneg − n): ``over`` = U − T. Its
    precision is at least f(a) = (A + a)/(A + B + n + a), increasing in a, so the exact term
    is at least ∫₀ᵖ f = T − cneg·h(u), u = p/(cpos + cneg), h(u) = −ln(1 − u) − u
    = Σ_{k≥2} uᵏ/k ≤ u²/(2(1 − u)): ``under`` = cneg·p²/(2·(cpos + cneg)·(cpos + cneg − p)),
    no log. A bucket with no negative down to it has ``under`` 0: its denominator gets 1
    added where ``cneg`` is 0 (a comparison each engine adds as 0 or 1), so that no engine
    divides 0 by 0.

    Examples
    --------
    >>> ap_bound_terms(1.0, 1.0, 1.0, 1.0)  # U − T = 1 − ½; T − ∫₀¹ x/(1 + x) = 0.193… ≤ ¼
    (0.5, 0.25)
    >>> ap_bound_terms(1.0, 0.0, 1.0, 0.0)
    (0.0, 0.0)

    """
    total = cpos + cneg
    over = p * cpos * n / ((total - n) * total)
    under = cneg * p * p / (2.0 * total * (total - p + (cneg == 0)))
    return over, under
