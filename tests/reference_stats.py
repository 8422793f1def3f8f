"""Reference values of intervals and tests, computed row by row (no histograms).

DeLong's placements are computed pairwise from the rows (weights as frequency weights),
proportions' intervals and the binomial test with SciPy's ``binomtest`` where counts are
integers (beta and regularized-beta definitions otherwise), kappa's standard error from
the full confusion matrix (vcd's matrix formula), McNemar's test by its definition.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats
from sklearn import metrics as skm


def _placements(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    pos, neg = y == 1, y == 0
    P, N = w[pos].sum(), w[neg].sum()
    below = (p[neg][None, :] < p[pos][:, None]) + 0.5 * (p[neg][None, :] == p[pos][:, None])
    above = (p[pos][None, :] > p[neg][:, None]) + 0.5 * (p[pos][None, :] == p[neg][:, None])
    v10 = below @ w[neg] / N
    v01 = above @ w[pos] / P
    return v10, v01, w[pos], w[neg], P, N


def delong(y: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> tuple[Any, Any]:
    """(AUC, DeLong variance) of one group; None where undefined."""
    w = np.ones_like(p) if w is None else w
    P, N = w[y == 1].sum(), w[y == 0].sum()
    if P <= 0 or N <= 0:
        return None, None
    v10, v01, wp, wn, P, N = _placements(y, p, w)
    auc = float(wp @ v10 / P)
    assert math.isclose(auc, skm.roc_auc_score(y, p, sample_weight=w), abs_tol=1e-12)
    if P <= 1 or N <= 1:
        return auc, None
    s10 = wp @ (v10 - auc) ** 2 / (P - 1)
    s01 = wn @ (v01 - auc) ** 2 / (N - 1)
    return auc, float(s10 / P + s01 / N)


def delong_covariance(y: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> Any:
    """Covariance of two models' AUCs on the same rows (None where undefined)."""
    w = np.ones_like(a) if w is None else w
    P, N = w[y == 1].sum(), w[y == 0].sum()
    if P <= 1 or N <= 1:
        return None
    ta, tb = _placements(y, a, w), _placements(y, b, w)
    auc_a, auc_b = ta[2] @ ta[0] / P, tb[2] @ tb[0] / P
    s10 = ta[2] @ ((ta[0] - auc_a) * (tb[0] - auc_b)) / (P - 1)
    s01 = ta[3] @ ((ta[1] - auc_a) * (tb[1] - auc_b)) / (N - 1)
    return float(s10 / P + s01 / N)


def proportion_interval(x: float, n: float, method: str, level: float) -> tuple[Any, Any]:
    """SciPy's Wilson interval for integer counts; the beta / score formulas otherwise."""
    if n <= 0:
        return None, None
    if method == "wilson" and float(x).is_integer() and float(n).is_integer():
        ci = stats.binomtest(int(x), int(n)).proportion_ci(level, method="wilson")
        return float(ci.low), float(ci.high)
    a = 1 - level
    if method == "clopper-pearson":
        lo = 0.0 if x == 0 else stats.beta.ppf(a / 2, x, n - x + 1)
        hi = 1.0 if x == n else stats.beta.ppf(1 - a / 2, x + 1, n - x)
        return float(lo), float(hi)
    z = stats.norm.ppf(1 - a / 2)
    centre = (x + z * z / 2) / (n + z * z)
    half = z * math.sqrt(x * (n - x) / n + z * z / 4) / (n + z * z)
    return max(0.0, centre - half), min(1.0, centre + half)


def binomial_greater(x: float, n: float, p: float) -> Any:
    if n <= 0:
        return None
    if float(x).is_integer() and float(n).is_integer():
        return float(stats.binomtest(int(x), int(n), p, alternative="greater").pvalue)
    return 1.0 if x <= 0 else float(special.betainc(x, n - x + 1, p))


def kappa_se(matrix: np.ndarray) -> Any:
    """vcd's ASE of unweighted kappa; ``matrix[i, j]``: predicted i, actual j."""
    n = matrix.sum()
    if n <= 0:
        return None
    p = matrix / n
    cols, rows = p.sum(axis=0), p.sum(axis=1)
    po, pc = np.trace(p), float(cols @ rows)
    if pc >= 1:
        return None
    kappa = (po - pc) / (1 - pc)
    term = np.eye(len(p)) - (1 - kappa) * (cols[:, None] + rows[None, :])
    var = ((p * term**2).sum() - (kappa - pc * (1 - kappa)) ** 2) / (1 - pc) ** 2 / n
    return math.sqrt(max(var, 0.0))


def mcnemar(b: float, c: float) -> Any:
    if b + c <= 0:
        return None
    d = abs(b - c)
    statistic = (d - 1) ** 2 / (b + c) if d else 0.0
    return float(stats.chi2.sf(statistic, 1))
