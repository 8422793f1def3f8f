"""The no-information value γ of a metric: its value were predictions independent of the labels.

Efron & Tibshirani (1997) define the no-information error rate as the loss averaged over every
pairing of a label with a prediction of the same (resubstitution) model,
γ = Σᵢ Σⱼ Q(yᵢ, ŷⱼ) / n². It has a closed form for the metrics below, computed per group from
the resubstitution state and, for the score moments, one more streaming pass over the
resubstitution predictions:

- error rate and zero-one loss (binary at a threshold, multiclass): γ = Σₗ pₗ (1 − qₗ),
  pₗ the share of class ``l`` among labels and qₗ among predictions; accuracy 1 − γ;
- balanced accuracy: the mean over the classes present of qₗ (½ for two classes);
- any ROC AUC: ½;
- binary Brier score: π·E[(1 − p)²] + (1 − π)·E[p²], π the positive share;
- binary log loss: −π·E[log p] − (1 − π)·E[log(1 − p)], p clipped as the metric clips it;
- regression mean squared error: Var(y) + Var(ŷ) + (ȳ − mean ŷ)².

Every other metric has no γ here (null).
"""

from __future__ import annotations

import polars as pl

from .bucketing import EPS
from .metrics.registry import TABLES
from .ordered import ORDERED
from .source import BATCH_ROWS, Engine, collect_batches
from .state import State
from .tasks.registry import offers


def _moments(
    lf: pl.LazyFrame,
    keys: list[str],
    w: pl.Expr | None,
    values: dict[str, pl.Expr],
    engine: Engine,
) -> pl.DataFrame:
    """Per group: the total weight, and each value's weighted mean and squared deviations.

    The columns are ``_w``, then per name of ``values`` its mean (``<name>``) and the
    weighted sum of its squared deviations from that mean (``<name>_ss``).

    Streaming, the rows come in batches (:data:`streameval.source.BATCH_ROWS`) whose moments
    are computed in memory and then combined in the batches' order: the means weighted by
    the batches' weights, the squares as the batches' own plus each batch's weight times its
    mean's squared offset from the whole mean (Chan, Golub & LeVeque). The streaming engine's
    own group-by would add the rows in an order that changes from run to run
    (:mod:`streameval.ordered`).

    >>> lf = pl.LazyFrame({"g": [1, 1, 1, 2], "x": [1.0, 2.0, 6.0, 5.0]})
    >>> _moments(lf, ["g"], None, {"x": pl.col("x")}, "in-memory").rows()
    [(1, 3.0, 3.0, 14.0), (2, 1.0, 5.0, 0.0)]
    """
    groups = keys or ["_all"]
    weight = (pl.lit(1.0) if w is None else w).alias("_w")
    squares = [pl.lit(0.0).alias(f"{n}_ss") for n in values]  # (a row: its own mean)
    rows = lf.select(
        *keys, *([] if keys else [pl.lit(0).alias("_all")]), weight, *squares, **values
    )

    def combined(parts: pl.LazyFrame) -> pl.DataFrame:
        """Parts (rows, or batches' moments) of each group combined, in their order."""
        total = pl.col("_w").sum()
        mean = {n: (pl.col("_w") * pl.col(n)).sum() / total for n in values}  # (per group)
        offset = {n: pl.col("_w") * (pl.col(n) - mean[n]) ** 2 for n in values}
        return (
            parts.group_by(groups, maintain_order=True)
            .agg(
                total,
                *(mean[n].alias(n) for n in values),
                *((pl.col(f"{n}_ss") + offset[n]).sum().alias(f"{n}_ss") for n in values),
            )
            .collect(engine="in-memory", optimizations=ORDERED)
        )

    if engine == "streaming":
        parts = [combined(b.lazy()) for b in collect_batches(rows, None, rows=BATCH_ROWS)]
    else:
        parts = [combined(rows)]
    if not parts:
        parts = [combined(rows.clear())]
    out = combined(pl.concat(parts).lazy()) if len(parts) > 1 else parts[0]
    return out if keys else out.drop("_all")


def _join(left: pl.DataFrame, right: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    if not keys:
        return left.join(right, how="cross", maintain_order="left_right")
    return left.join(right, on=keys, how="left", nulls_equal=True, maintain_order="left_right")


def gamma_table(
    state: State, table: pl.DataFrame, lf: pl.LazyFrame, engine: Engine = "streaming"
) -> pl.DataFrame:
    """Per row of the resubstitution metric ``table``: its keys and γ of each metric column.

    ``lf`` holds the resubstitution predictions the ``state`` was accumulated from.
    """
    spec, keys = state.spec, state.keys
    extra = ["threshold"] if "threshold" in table.columns else []
    w = pl.col(spec.weight).cast(pl.Float64) if spec.weight else None
    declared = {m.name: m.noinfo for m in TABLES[spec.kind]}
    auc = [c for c in table.columns if declared.get(c) == "half"]
    # a row index keeps a table without keys one row per metric row (a frame of no columns
    # has no rows)
    out = table.with_row_index("_row").select(
        "_row", *keys, *extra, *[pl.lit(0.5).alias(c) for c in auc]
    )
    if offers(spec.kind, "thresholds"):
        total = pl.col("positives") + pl.col("negatives")
        p1, q1 = pl.col("positives") / total, (pl.col("tp") + pl.col("fp")) / total
        err = p1 * (1 - q1) + (1 - p1) * q1
        p = pl.col(str(spec.score)).cast(pl.Float64)
        clipped = p.clip(EPS, 1 - EPS)
        terms = {
            "_p2": p**2,
            "_q2": (1 - p) ** 2,
            "_lp": clipped.log(),
            "_lq": (1 - clipped).log(),
        }
        moments = _moments(lf, keys, w, terms, engine)
        with_pi = _join(
            table.select(*keys, *extra, p1.alias("_pi"), err.alias("_err")), moments, keys
        )
        pi = pl.col("_pi")
        gammas = with_pi.select(
            *keys,
            *extra,
            pl.col("_err").alias("error_rate"),
            pl.col("_err").alias("zero_one_loss"),
            (1 - pl.col("_err")).alias("accuracy"),
            pl.lit(0.5).alias("balanced_accuracy"),
            (pi * pl.col("_q2") + (1 - pi) * pl.col("_p2")).alias("brier"),
            (-pi * pl.col("_lp") - (1 - pi) * pl.col("_lq")).alias("log_loss"),
        )
    elif offers(spec.kind, "classes"):
        cells = state.confusion_matrix()
        actual = cells.group_by(*keys, "actual", maintain_order=True).agg(
            pl.col("count").sum().alias("_p")
        )
        predicted = cells.group_by(*keys, "predicted", maintain_order=True).agg(
            pl.col("count").sum().alias("_q")
        )
        margins = actual.join(
            predicted.rename({"predicted": "actual"}),
            on=[*keys, "actual"],
            how="left",
            nulls_equal=True,
            maintain_order="left_right",
        ).with_columns(pl.col("_q").fill_null(0.0))
        total = pl.col("_p").sum()
        share = (pl.col("_p") * pl.col("_q")).sum() / total**2
        present = pl.col("_q").filter(pl.col("_p") > 0)
        agg = [
            (1 - share).alias("error_rate"),
            (1 - share).alias("zero_one_loss"),
            share.alias("accuracy"),
            (present.sum() / present.len() / total).alias("balanced_accuracy"),
        ]
        gammas = (
            margins.group_by(keys, maintain_order=True).agg(agg) if keys else margins.select(agg)
        )
    else:
        y = pl.col(spec.label).cast(pl.Float64)
        f = pl.col(str(spec.prediction)).cast(pl.Float64)
        moments = _moments(lf, keys, w, {"_y": y, "_f": f}, engine)
        total = pl.col("_w")
        mse = pl.col("_y_ss") / total + pl.col("_f_ss") / total + (pl.col("_y") - pl.col("_f")) ** 2
        gammas = moments.select(*keys, mse.alias("mse"))
    shared = [c for c in gammas.columns if c in table.columns and c not in (*keys, *extra)]
    on = [*keys, *(extra if set(extra) <= set(gammas.columns) else [])]
    return _join(out, gammas.select(*on, *shared), on).drop("_row")
