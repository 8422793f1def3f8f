"""Bootstrap estimates of a model's error: out-of-bag, .632 and .632+ (Efron & Tibshirani 1997).

A model fitted on all the data and evaluated on it gives the *resubstitution* (apparent) error,
optimistic; models fitted on bootstrap replicates and evaluated on the rows each left out give
the *out-of-bag* error, pessimistic (a replicate holds about 63.2 % of the distinct rows). The
texts combine them:

- ``.632``  = 0.368 · resubstitution + 0.632 · out-of-bag;
- ``.632+`` moves the weight towards out-of-bag as the model overfits: with γ the
  no-information value (:mod:`streameval.noinfo`), Err¹' = min(Err¹, γ) and the relative
  overfitting rate R' = (Err¹' − err) / (γ − err) when Err¹ > err and γ > err, else 0,
  ``.632+`` = ``.632`` + (Err¹' − err) · 0.368 · 0.632 · R' / (1 − 0.368 · R')
  — all on the loss scale (1 − value for accuracies and AUCs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from .accumulate import accumulate
from .crossval import fold_metrics
from .errors import InputError
from .metrics.declare import Metric
from .metrics.registry import TABLES
from .noinfo import gamma_table
from .source import Engine, Source, require_columns, to_lazyframe
from .tasks.registry import offering, offers

ESTIMATES = pl.Enum(
    ["resubstitution", "oob", ".632", ".632+", "no_information", "overfitting_rate"]
)
OOB = ("loo", "mean", "pooled")
WEIGHT = "_se_oob_weight"


def bootstrap_estimate(
    resubstitution: Source,
    oob: Source,
    *,
    label: str,
    score: str | None = None,
    by: str | Sequence[str] | None = None,
    weight: str | None = None,
    task: str = "binary",
    prediction: str | None = None,
    scores: Sequence[str] | dict[Any, str] | None = None,
    classes: Sequence[Any] | None = None,
    positive: Any = None,
    replicate: str = "replicate",
    row_id: str | Sequence[str] | None = None,
    oob_estimate: Literal["loo", "mean", "pooled"] = "loo",
    threshold: float | Sequence[float] = 0.5,
    alpha: float = 0.5,
    beta: float = 1.0,
    precision: int | str | None = None,
    metrics: Sequence[str] | None = None,
    engine: Engine = "streaming",
) -> pl.DataFrame:
    """Resubstitution, out-of-bag, .632 and .632+ estimates of every metric, per group.

    Parameters
    ----------
    resubstitution : source
        Predictions of the model fitted on all the data, for all the data.
    oob : source
        Out-of-bag predictions: for each bootstrap replicate (column ``replicate``), the
        predictions of the model fitted on that replicate for the rows it left out — e.g. the
        rows with ``oob`` true from :func:`streameval.split.bootstrap`.
    label : str
        Label column, in both sources, as :func:`streameval.evaluate`.
    score : str, optional
        Binary task: the score column.
    by : str or list of str, optional
        Group key columns; the estimates are given per group.
    weight : str, optional
        Non-negative sample weights.
    task : {"binary", "multiclass", "regression"}
        What the predictions are (a paired task is refused: estimates are per model).
    prediction : str, optional
        Multiclass: the hard predicted class. Regression: the predicted value.
    scores : list of str or mapping class → column, optional
        Multiclass: per-class probability columns.
    classes : list, optional
        Multiclass: every class, in order. Default: the sorted values found in
        ``resubstitution``, also used for ``oob``.
    positive : optional
        Binary: the positive class value (default 1 / True).
    replicate : str
        The replicate column of ``oob``.
    row_id : str or list of str
        The row id of ``oob`` (needed by ``oob_estimate="loo"``).
    oob_estimate : {"loo", "mean", "pooled"}
        How the replicates' out-of-bag predictions make one error. ``"loo"`` (default) is
        Efron & Tibshirani's leave-one-out bootstrap Err¹: each row's loss averaged over the
        replicates that left it out, then averaged over rows — a weighted metric, each
        out-of-bag prediction weighted 1 / (the row's number of out-of-bag replicates), so it
        applies to every metric (AUC included). ``"mean"``: the mean over replicates of each
        replicate's out-of-bag metric (caret's ``boot632``). ``"pooled"``: all out-of-bag
        predictions as one sample.
    threshold : float or list of float
        Binary: predicted positive means ``score >= threshold``; a list gives rows per
        threshold.
    alpha : float
        Regression: the quantile of ``mean_pinball_loss`` and ``d2_pinball``.
    beta : float
        Binary and multiclass: the ``beta`` of the ``fbeta`` columns (default 1).
    precision : "exact" or int, optional
        Mantissa bits of score (and error) buckets, as :func:`streameval.evaluate`.
    metrics : list of str, optional
        Only these metric columns.
    engine : {"streaming", "in-memory"}
        Polars engine.

    Returns
    -------
    DataFrame
        Keys, ``estimate`` (``"resubstitution"``, ``"oob"``, ``".632"``, ``".632+"``,
        ``"no_information"`` — γ — and ``"overfitting_rate"`` — R'), then the metric columns
        (Float64). Counts (``n``, ``tp`` …) are given for the first two rows only; ``.632+``,
        γ and R' only for the metrics with a no-information value (error rate, accuracy,
        balanced accuracy, AUCs, binary Brier and log loss, regression MSE).

    Raises
    ------
    InputError
        An unknown ``oob_estimate`` or task, ``oob_estimate="loo"`` without ``row_id``, a
        missing replicate or row id column, or any input :func:`streameval.evaluate`
        refuses.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> resub = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.3, 0.8, 0.9]})
    >>> oob = pl.DataFrame({"replicate": [0, 0, 1, 1], "id": [0, 2, 1, 3],
    ...                     "y": [0, 1, 0, 1], "p": [0.6, 0.7, 0.2, 0.4]})
    >>> out = se.bootstrap_estimate(resub, oob, label="y", score="p", row_id="id")
    >>> out.select("estimate", "error_rate")
    shape: (6, 2)
    ┌──────────────────┬────────────┐
    │ estimate         ┆ error_rate │
    │ ---              ┆ ---        │
    │ enum             ┆ f64        │
    ╞══════════════════╪════════════╡
    │ resubstitution   ┆ 0.0        │
    │ oob              ┆ 0.5        │
    │ .632             ┆ 0.316      │
    │ .632+            ┆ 0.5        │
    │ no_information   ┆ 0.5        │
    │ overfitting_rate ┆ 1.0        │
    └──────────────────┴────────────┘

    """
    if oob_estimate not in OOB:
        raise InputError(
            f"expected oob_estimate to be one of {', '.join(OOB)}, got {oob_estimate!r}"
        )
    if not offers(task, "metrics"):
        raise InputError(
            f"expected task to be {', '.join(offering('metrics'))}, got {task!r}; hint: "
            "bootstrap estimates are per model: evaluate each model's predictions on its own"
        )
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    binary = offers(task, "thresholds")
    common: dict[str, Any] = {
        "label": label, "score": score, "weight": weight, "task": task,
        "prediction": prediction, "scores": scores, "classes": classes, "positive": positive,
        "precision": precision, "engine": engine,
    }  # fmt: skip
    if binary:
        common["thresholds"] = threshold
    options: dict[str, Any] = {"alpha": alpha, "beta": beta, "metrics": metrics}
    thresholds = threshold if binary else None
    resub_lf = to_lazyframe(resubstitution)
    resub = accumulate(resub_lf, by=keys, **common)
    if offers(task, "classes"):
        common["classes"] = list(resub.spec.classes)
    table = resub.metrics(thresholds, **options)
    oob_table = _oob_table(oob, keys, common, options, thresholds, replicate, row_id, oob_estimate)
    gammas = gamma_table(resub, table, resub_lf, engine)
    ids = [*keys, *(["threshold"] if binary else [])]
    return _combine(table, oob_table, gammas, ids, TABLES[task])


def _oob_table(
    oob: Source,
    keys: list[str],
    common: dict[str, Any],
    options: dict[str, Any],
    thresholds: float | Sequence[float] | None,
    replicate: str,
    row_id: str | Sequence[str] | None,
    how: str,
) -> pl.DataFrame:
    lf = to_lazyframe(oob)
    schema = lf.collect_schema()
    require_columns(schema, [replicate], role="replicate")
    if how == "mean":
        state = accumulate(lf, by=[*keys, replicate], **common)
        table = fold_metrics(state, replicate, threshold=thresholds, **options)
        return table.filter(pl.col("estimate") == "mean").drop(replicate, "estimate", "n_folds")
    if how == "pooled":
        return accumulate(lf, by=keys, **common).metrics(thresholds, **options)
    if row_id is None:
        raise InputError(
            "expected row_id= (the row id column of the out-of-bag predictions) for "
            "oob_estimate='loo', which averages each row's replicates; hint: row_id='id', or "
            "oob_estimate='mean'"
        )
    ids = [row_id] if isinstance(row_id, str) else list(row_id)
    require_columns(schema, ids, role="row id")
    counts = lf.group_by(ids).agg(pl.len().alias(WEIGHT))
    w = pl.col(common["weight"]).cast(pl.Float64) if common["weight"] else pl.lit(1.0)
    lf = lf.join(counts, on=ids, how="left", nulls_equal=True, maintain_order="left")
    lf = lf.with_columns((w / pl.col(WEIGHT)).alias(WEIGHT))
    state = accumulate(lf, by=keys, **{**common, "weight": WEIGHT})
    return state.metrics(thresholds, **options)


def _combine(
    resub: pl.DataFrame,
    oob: pl.DataFrame,
    gammas: pl.DataFrame,
    keys: list[str],
    declared: tuple[Metric, ...],
) -> pl.DataFrame:
    """The estimates' rows; ``declared``: the table's columns (counts get no estimate)."""
    facts = {m.name: m for m in declared}
    values = [c for c in resub.columns if c not in keys]
    resub = resub.with_columns(pl.col(values).cast(pl.Float64))
    oob = oob.select(*keys, *[pl.col(c).cast(pl.Float64).alias(f"_o_{c}") for c in values])
    g = gammas.select(*keys, *[pl.col(c).alias(f"_g_{c}") for c in values if c in gammas.columns])
    both = (
        resub.join(oob, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        if keys
        else resub.join(oob, how="cross", maintain_order="left_right")
    )
    both = (
        both.join(g, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        if keys
        else both.join(g, how="cross", maintain_order="left_right")
    )
    rows: dict[str, list[pl.Expr]] = {e: [] for e in ESTIMATES.categories}
    for c in values:
        count = c in facts and facts[c].role == "count"
        r, o = pl.col(c), pl.col(f"_o_{c}")
        none = pl.lit(None, pl.Float64)
        rows["resubstitution"].append(r.alias(c))
        rows["oob"].append(o.alias(c))
        rows[".632"].append((none if count else 0.368 * r + 0.632 * o).alias(c))
        if f"_g_{c}" not in g.columns or count:
            for e in (".632+", "no_information", "overfitting_rate"):
                rows[e].append(none.alias(c))
            continue
        flip = facts[c].direction == "higher"  # (on the loss scale: 1 − the metric)
        gamma = pl.col(f"_g_{c}")
        err, err1, gam = ((1 - x) if flip else x for x in (r, o, gamma))
        capped = pl.min_horizontal(err1, gam)
        unknown = err.is_null() | err1.is_null() | gam.is_null()
        rate = (
            pl.when(unknown)
            .then(None)
            .when((err1 > err) & (gam > err))
            .then((capped - err) / (gam - err))
            .otherwise(0.0)
        )
        plus = (
            0.368 * err
            + 0.632 * err1
            + (capped - err) * (0.368 * 0.632 * rate) / (1 - 0.368 * rate)
        )
        rows[".632+"].append(((1 - plus) if flip else plus).alias(c))
        rows["no_information"].append(gamma.alias(c))
        rows["overfitting_rate"].append(rate.alias(c))
    parts = [
        both.select(*keys, pl.lit(e, ESTIMATES).alias("estimate"), *exprs)
        for e, exprs in rows.items()
    ]
    out = pl.concat(parts, how="vertical")
    front = [k for k in keys if k != "threshold"]
    order = [*front, "estimate", *values] + (["threshold"] if "threshold" in keys else [])
    return out.select(order).sort([*keys, "estimate"], nulls_last=False, maintain_order=True)
