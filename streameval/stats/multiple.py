"""Adjusted p-values of a family of tests: Benjamini–Hochberg's, Benjamini–Yekutieli's, Holm's.

A family is the tests judged together (a job's checks of one day, the slices of a search).
An adjusted p-value is compared with the level directly: rejecting where it is at most
``q`` is Benjamini and Hochberg's step-up procedure at false-discovery rate ``q``
(``method="bh"``: for independent or positively dependent tests), Benjamini and
Yekutieli's (``"by"``: the same, its p-values scaled by ``Σ 1/k``, for tests of any
dependence), or Holm's step-down procedure at family-wise error rate ``q`` (``"holm"``: any
dependence), as statsmodels' ``multipletests(method="fdr_bh" | "fdr_by" | "holm")``.
Missing p-values (NaN) are not in the family.

>>> adjust([0.01, 0.04, 0.03, float("nan")], "bh").tolist()
[0.03, 0.04, 0.04, nan]
>>> adjust([0.01, 0.04, 0.03], "holm").tolist()
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError

METHODS = ("bh", "by", "holm", "none")


def adjust(p_values: Sequence[float] | np.ndarray, method: str) -> np.ndarray:
    """The family's adjusted p-values (NaN where the p-value is NaN).

    Parameters
    ----------
    p_values : sequence of float
        One p-value per test, NaN for a test not in the family.
    method : {"bh", "by", "holm", "none"}
        Benjamini–Hochberg or Benjamini–Yekutieli (false-discovery rate), Holm (family-wise
        error rate) or none (the p-values as they are).

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the input's order, at most 1.

    Raises
    ------
    InputError
        An unknown method, or a p-value outside [0, 1].

    Examples
    --------
    >>> adjust([0.2, 0.01], "none").tolist()
    [0.2, 0.01]

    """
    if method not in METHODS:
        raise InputError(
            f"expected a correction among {list(METHODS)}, got {method!r}; hint: 'bh' controls "
            "the false-discovery rate ('by' under any dependence), 'holm' the family-wise "
            "error rate"
        )
    p = np.asarray(p_values, dtype=np.float64)
    present = ~np.isnan(p)
    if np.any((p[present] < 0) | (p[present] > 1)):
        raise InputError(f"expected p-values in [0, 1], got {p[present].tolist()}")
    out = np.full(p.shape, np.nan)
    values = p[present]
    m = values.size
    if m == 0 or method == "none":
        out[present] = values
        return out
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    if method in ("bh", "by"):  # p(i)·m/i (BY: times Σ 1/k), the running minimum from the top
        scaled = ranked * m / np.arange(1, m + 1)
        if method == "by":
            scaled *= np.sum(1.0 / np.arange(1, m + 1))
        adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    else:  # Holm: p(i)·(m − i + 1), then the running maximum from the smallest up
        adjusted = np.maximum.accumulate(ranked * (m - np.arange(m)))
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    out[present] = result
    return out
