"""caret's confusion-matrix statistics, for every group (and threshold) at once.

- ``no_information_rate``: the largest actual class's share;
- ``accuracy_pvalue``: one-sided exact binomial test of accuracy > no-information rate
  (``binom.test(correct, n, p = NIR, alternative = "greater")``);
- ``mcnemar_pvalue``: McNemar's test of the 2×2 table with continuity correction (R's
  ``mcnemar.test``, which skips the correction when the off-diagonal cells are equal), and
  Bowker's test of symmetry for more classes (degrees of freedom r(r−1)/2 over the spec's r
  classes; null when a pair of classes has no off-diagonal weight, as R's NaN);
- ``cohen_kappa_se``: the large-sample standard error of Cohen's kappa (Fleiss, Cohen &
  Everitt 1969, as ``vcd::Kappa``'s ASE).

Weighted sums act as frequency weights: the binomial test uses its continuous (beta) form,
which equals the exact test on integer counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ..ordered import ORDERED
from ..spec import ALL
from ..tasks.multiclass.classes import confusion_rows

if TYPE_CHECKING:
    from ..states.data import StateData

STATISTICS = ["no_information_rate", "accuracy_pvalue", "mcnemar_pvalue", "cohen_kappa_se"]


def binomial_greater(x: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P[X ≥ x] for X ~ Binomial(n, p) (regularized incomplete beta; NaN where n is 0).

    >>> float(binomial_greater(np.array([8.0]), np.array([10.0]), np.array([0.5]))[0])
    0.0546875
    """
    from scipy import special  # (0.7 s to import: loaded when an interval needs it)

    x, n, p = (np.asarray(a, dtype=np.float64) for a in (x, n, p))
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = special.betainc(np.maximum(x, 1e-300), np.maximum(n - x + 1, 1e-300), p)
    out = np.where(x <= 0, 1.0, np.where(x > n, 0.0, tail))
    return np.where(n > 0, out, np.nan)


def chi2_pvalue(statistic: np.ndarray, df: np.ndarray | float) -> np.ndarray:
    """Upper tail of the chi-square distribution (NaN stays NaN)."""
    from scipy import special  # (not scipy.stats: 0.7 s to import; the same values)

    return np.asarray(special.chdtrc(df, statistic), dtype=np.float64)


def mcnemar_2x2(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """McNemar's p-value with R's continuity correction (none when b = c); NaN if b + c = 0.

    >>> [float(f"{v:.2g}") for v in mcnemar_2x2(np.array([4.0, 5.0]), np.array([31.0, 5.0]))]
    [1.1e-05, 1.0]
    """
    b, c = np.asarray(b, dtype=np.float64), np.asarray(c, dtype=np.float64)
    total = b + c
    diff = np.abs(b - c)
    diff = np.where(diff != 0, diff - 1.0, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        statistic = np.where(total > 0, diff * diff / np.where(total > 0, total, 1.0), np.nan)
    return chi2_pvalue(statistic, 1.0)


def kappa_se(cells: Sequence[tuple[pl.Expr, pl.Expr, pl.Expr, bool]], total: pl.Expr) -> pl.Expr:
    """Asymptotic standard error of Cohen's kappa from the cells of a confusion matrix.

    Each cell is (weight, actual-class weight of its predicted class, predicted-class weight
    of its actual class, on the diagonal). Null when chance agreement is 1.
    """
    diag = pl.sum_horizontal([w for w, _, _, d in cells if d]) / total
    chance = pl.sum_horizontal([a * b for _, a, b, d in cells if d]) / (total * total)
    kappa = (diag - chance) / (1 - chance)
    terms = []
    for w, a, b, on_diagonal in cells:
        term = (1.0 if on_diagonal else 0.0) - (1 - kappa) * (a + b) / total
        terms.append(w / total * term * term)
    variance = (pl.sum_horizontal(terms) - (kappa - chance * (1 - kappa)) ** 2) / (
        (1 - chance) ** 2 * total
    )
    return pl.when((total > 0) & (chance < 1)).then(variance.clip(0.0).sqrt())


def binary_statistics(table: pl.DataFrame) -> pl.DataFrame:
    """The statistics of a binary metric table (columns tp, fp, tn, fn, positives, negatives)."""
    tp, fp, tn, fn = (pl.col(c).cast(pl.Float64) for c in ("tp", "fp", "tn", "fn"))
    P, N = tp + fn, tn + fp
    pp, pn = tp + fp, tn + fn
    # A cell (predicted i, actual j) pairs the actual weight of i with the predicted of j.
    cells = [(tp, P, pp, True), (tn, N, pn, True), (fp, P, pn, False), (fn, N, pp, False)]
    base = table.select(
        (tp + tn).alias("x"),
        (P + N).alias("n"),
        (pl.max_horizontal(P, N) / (P + N)).alias("nir"),
        fp.alias("b"),
        fn.alias("c"),
        kappa_se(cells, P + N).alias("se"),
    )
    x, n, nir = (base[c].to_numpy() for c in ("x", "n", "nir"))
    return table.with_columns(
        base["nir"].fill_nan(None).alias("no_information_rate"),
        pl.Series("accuracy_pvalue", binomial_greater(x, n, nir)).fill_nan(None),
        pl.Series(
            "mcnemar_pvalue", mcnemar_2x2(base["b"].to_numpy(), base["c"].to_numpy())
        ).fill_nan(None),
        base["se"].alias("cohen_kappa_se"),
    )


def multiclass_statistics(state: StateData, *, with_counts: bool = False) -> pl.DataFrame:
    """Per group of a multiclass state: the statistics (keys, then :data:`STATISTICS`).

    ``with_counts`` keeps ``_x`` (correct weight) and ``_n`` (total weight).
    """
    rows, keys = confusion_rows(state)
    r = len(state.spec.classes)
    w, a, b, s = pl.col("w"), pl.col("a"), pl.col("b"), pl.col("s")
    cells = rows.group_by(*keys, "actual", "predicted", maintain_order=True).agg(
        pl.col("_w").sum().alias("w")
    )
    actual = cells.group_by(*keys, pl.col("actual").alias("k"), maintain_order=True).agg(
        w.sum().alias("a")
    )
    predicted = cells.group_by(*keys, pl.col("predicted").alias("k"), maintain_order=True).agg(
        w.sum().alias("b")
    )
    # Chance agreement Σ_k a_k·b_k / s² counts every class, also those never right.
    chance = (
        actual.join(predicted, on=[*keys, "k"], how="inner", maintain_order="left_right")
        .group_by(keys, maintain_order=True)
        .agg((a * b).sum().alias("_ab"))
    )
    diagonal = pl.col("actual") == pl.col("predicted")
    cells = (
        cells.join(
            actual,
            left_on=[*keys, "predicted"],
            right_on=[*keys, "k"],
            how="left",
            maintain_order="left_right",
        )
        .join(
            predicted,
            left_on=[*keys, "actual"],
            right_on=[*keys, "k"],
            how="left",
            maintain_order="left_right",
        )
        .join(chance, on=keys, how="left", maintain_order="left_right")
        .with_columns(pl.col("a", "b", "_ab").fill_null(0.0), w.sum().over(keys).alias("s"))
        .with_columns(
            (w.filter(diagonal).sum().over(keys) / s).alias("_po"),
            (pl.col("_ab") / (s * s)).alias("_pe"),
        )
        .with_columns(((pl.col("_po") - pl.col("_pe")) / (1 - pl.col("_pe"))).alias("_kappa"))
    )
    kappa, pe = pl.col("_kappa"), pl.col("_pe")
    term = diagonal.cast(pl.Float64) - (1 - kappa) * (a + b) / s
    variance = ((w / s * term * term).sum() - ((kappa - pe * (1 - kappa)) ** 2).first()) / (
        ((1 - pe) ** 2 * s).first()
    )
    grouped = cells.group_by(keys, maintain_order=True).agg(
        s.first().alias("_n"),
        w.filter(diagonal).sum().alias("_x"),
        (a.max() / s.first()).alias("no_information_rate"),
        pl.when((s.first() > 0) & (pe.first() < 1))
        .then(variance.clip(0.0).sqrt())
        .alias("cohen_kappa_se"),
    )
    out = grouped.join(
        _bowker(cells, keys, r), on=keys, how="left", maintain_order="left_right"
    ).collect(engine="in-memory", optimizations=ORDERED)
    n, x, nir = (out[c].to_numpy() for c in ("_n", "_x", "no_information_rate"))
    statistic = out["_statistic"].fill_null(np.nan).to_numpy()
    out = out.select(
        *keys,
        "no_information_rate",
        pl.Series("accuracy_pvalue", binomial_greater(x, n, nir)).fill_nan(None),
        pl.Series("mcnemar_pvalue", chi2_pvalue(statistic, r * (r - 1) / 2)).fill_nan(None),
        "cohen_kappa_se",
        *(["_x", "_n"] if with_counts else []),
    )
    return out.drop(ALL) if keys == [ALL] else out


def _bowker(cells: pl.LazyFrame, keys: list[str], r: int) -> pl.LazyFrame:
    """Per group, R's ``mcnemar.test`` statistic (``_statistic``; null as R's NaN).

    Over the pairs of classes i < j: Σ (x_ij − x_ji)² / (x_ij + x_ji), with the continuity
    correction for two classes when x_12 ≠ x_21. A pair without off-diagonal weight makes
    R's statistic NaN: null here.
    """
    w = pl.col("w")
    i = pl.min_horizontal("actual", "predicted")
    j = pl.max_horizontal("actual", "predicted")
    upper = pl.col("actual") < pl.col("predicted")
    u, low = pl.col("u"), pl.col("l")
    diff = (u - low).abs()
    if r == 2:
        diff = pl.when(diff != 0).then(diff - 1.0).otherwise(0.0)
    return (
        cells.filter(pl.col("actual") != pl.col("predicted"))
        .group_by(*keys, i.alias("i"), j.alias("j"), maintain_order=True)
        .agg(w.filter(upper).sum().alias("u"), w.filter(~upper).sum().alias("l"))
        .group_by(keys, maintain_order=True)
        .agg(
            pl.when((pl.len() == r * (r - 1) // 2) & ((u + low) > 0).all())
            .then((diff * diff / (u + low)).sum())
            .alias("_statistic")
        )
    )
