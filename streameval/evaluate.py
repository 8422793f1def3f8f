"""evaluate = finalize(accumulate(...))."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from . import progress as bar
from . import resample_plan
from .accumulate import (
    Plan,
    combine,
    prepare,
    staged_table,
    unit_staged,
    units_staged,
)
from .errors import DomainWarning, caller_level
from .kernels.metrics import grouped_metrics
from .kernels.staged import Staged
from .metrics.binary import ALL, as_thresholds
from .options import check_options
from .source import Engine, Source, is_spark_frame
from .spec import Spec, parse_precision
from .state import State
from .tasks import Inputs


def evaluate(
    source: Source,
    *,
    label: str,
    score: str | None = None,
    by: str | Sequence[str] | None = None,
    folds: str | None = None,
    repeats: str | None = None,
    weight: str | None = None,
    task: str = "binary",
    prediction: str | None = None,
    scores: Sequence[str] | Mapping[Any, str] | None = None,
    classes: Sequence[Any] | None = None,
    positive: Any = None,
    threshold: float | Sequence[float] = 0.5,
    precision: int | str | None = None,
    top_k: int = 2,
    power: float = 1.5,
    alpha: float = 0.5,
    metrics: Sequence[str] | None = None,
    ci: str | None = None,
    level: float = 0.95,
    auc_method: str = "delong",
    bootstrap: int = 200,
    row_id: str | Sequence[str] | None = None,
    seed: int = 0,
    jackknife: str | None = None,
    drop_nulls: bool = False,
    engine: Engine = "streaming",
    progress: bool = False,
) -> pl.DataFrame:
    """Evaluate predictions: one metric row per group (and threshold, for a binary task).

    The parameters shared with :func:`streameval.accumulate` mean what they mean there; the
    rows are accumulated and finalized in one call.

    Parameters
    ----------
    source : path, glob, directory, list of paths, LazyFrame, DataFrame or pyarrow data
        The predictions. Hive partition columns (``day=2026-10-01/``) can be used in ``by``.
        A Spark DataFrame is evaluated on its executors (:func:`streameval.spark.evaluate`).
    label : str
        Label column. Binary: 0/1, booleans, or two values with ``positive=``. Multiclass:
        any type. Regression: numeric.
    score : str, optional
        Binary task: the score column, any numeric range (probabilities, logits, margins).
    by : str or list of str, optional
        Group key columns; one metric row per group.
    folds : str, optional
        The fold column of out-of-fold predictions: the table then has per-fold rows plus
        the mean, standard deviation and pooled metric per group, as
        :func:`streameval.fold_metrics`.
    repeats : str, optional
        With ``folds``: the repeat column of repeated cross-validation.
    weight : str, optional
        Non-negative sample weights (sklearn's ``sample_weight``).
    task : {"binary", "multiclass", "regression", "paired"}
        What the predictions are (``"paired"``: two or more models' scores of one binary
        label, in ``scores``).
    prediction : str, optional
        Multiclass: the hard predicted class. Regression: the predicted value.
    scores : list of str or mapping class → column, optional
        Multiclass: per-class probability columns, in ``classes`` order for a list. Paired:
        the models' score columns.
    classes : list, optional
        Multiclass: every class, in order. Default: the sorted values found.
    positive : optional
        Binary: the positive class value (default 1 / True).
    threshold : float or list of float
        Binary: one value or a list; predicted positive means ``score >= threshold``, kept
        exact in bucketed mode. A list gives one row per group and threshold.
    precision : "exact" or int, optional
        Mantissa bits of score (and error) buckets; ``"exact"`` keeps every distinct value.
        Default 11.
    top_k : int
        Multiclass: ``k`` of ``top_k_accuracy`` (sklearn's default 2).
    power : float
        Regression: Tweedie power of ``mean_tweedie_deviance`` (≤ 0 or ≥ 1; default 1.5).
    alpha : float
        Regression: the quantile of ``mean_pinball_loss``.
    metrics : list of str, optional
        Only these metric columns; one asked for by name whose domain the data violates
        raises instead of being null with a warning.
    ci : {None, "wilson", "clopper-pearson", "bootstrap", "jackknife"}
        Intervals and statistics, as :meth:`streameval.State.metrics`. ``"bootstrap"``
        accumulates ``bootstrap`` Poisson replicates (drawn from ``row_id`` and ``seed``,
        see :func:`streameval.accumulate`) and gives percentile intervals of every metric;
        ``"jackknife"`` leaves out each value of the group key ``jackknife`` in turn.
    level : float
        Confidence level of the intervals.
    auc_method : {"delong", "hanley-mcneil"}
        Variance of the AUC (binary), as :meth:`streameval.State.metrics`.
    bootstrap : int
        With ``ci="bootstrap"``: the number of replicates R.
    row_id : str or list of str, optional
        With ``ci="bootstrap"``: the columns identifying a row (or a cluster of rows drawn
        together), as :func:`streameval.accumulate`.
    seed : int
        With ``ci="bootstrap"``: the seed of the draws.
    jackknife : str, optional
        With ``ci="jackknife"``: the group key whose values are left out one at a time.
    drop_nulls : bool
        Drop rows with a null in a column read (with a warning giving the count) instead of
        raising.
    engine : {"streaming", "in-memory"}
        Polars engine; streaming keeps memory bounded.
    progress : bool
        Show a progress bar on stderr (partitions or shards read, rows, rate, time left),
        as the command line does at a terminal.

    Returns
    -------
    DataFrame
        The metric table: the group keys, ``n``, then the metric columns, one row per group
        (binary: per group and threshold, ``threshold`` last; paired: per group and
        ``model``). With ``ci``, the interval columns ``<metric>_lo`` / ``<metric>_hi``. With
        ``folds``, the table of :func:`streameval.fold_metrics`.

    Raises
    ------
    InputError
        A missing column, a wrong type or value of an option, or a label, score or weight
        the task does not accept (see :func:`streameval.accumulate`).

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> se.evaluate(df, label="y", score="p", threshold=[0.3, 0.5])[["threshold", "recall"]]
    shape: (2, 2)
    ┌───────────┬────────┐
    │ threshold ┆ recall │
    │ ---       ┆ ---    │
    │ f64       ┆ f64    │
    ╞═══════════╪════════╡
    │ 0.3       ┆ 1.0    │
    │ 0.5       ┆ 0.5    │
    └───────────┴────────┘
    >>> groups = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 1, 1, 0, 1, 0],
    ...                        "p": [0.2, 0.7, 0.4, 0.3, 0.9, 0.6]})
    >>> se.evaluate(groups, label="y", score="p", by="g", metrics=["roc_auc", "accuracy"])
    shape: (2, 5)
    ┌─────┬─────┬─────────┬──────────┬───────────┐
    │ g   ┆ n   ┆ roc_auc ┆ accuracy ┆ threshold │
    │ --- ┆ --- ┆ ---     ┆ ---      ┆ ---       │
    │ str ┆ i64 ┆ f64     ┆ f64      ┆ f64       │
    ╞═════╪═════╪═════════╪══════════╪═══════════╡
    │ a   ┆ 3   ┆ 1.0     ┆ 0.666667 ┆ 0.5       │
    │ b   ┆ 3   ┆ 1.0     ┆ 0.666667 ┆ 0.5       │
    └─────┴─────┴─────────┴──────────┴───────────┘
    >>> reg = pl.DataFrame({"y": [1.0, 2.0, 4.0], "yhat": [1.5, 2.0, 3.0]})
    >>> se.evaluate(reg, task="regression", label="y", prediction="yhat")["mae"].item()
    0.5

    """
    check_options(locals())
    if progress and not is_spark_frame(source):
        settings = {k: v for k, v in locals().items() if k not in ("source", "progress")}
        with bar.showing("evaluate", True):
            return evaluate(source, **settings)
    if is_spark_frame(source):
        from .spark import evaluate as on_spark

        return on_spark(
            source, label=label, score=score, by=by, folds=folds, repeats=repeats,
            weight=weight, task=task, prediction=prediction, scores=scores, classes=classes,
            positive=positive, threshold=threshold, precision=precision, top_k=top_k,
            power=power, alpha=alpha, metrics=metrics, ci=ci, level=level,
            auc_method=auc_method, bootstrap=bootstrap, row_id=row_id, seed=seed,
            jackknife=jackknife, drop_nulls=drop_nulls,
        )  # fmt: skip
    if folds is not None or repeats is not None:
        from .crossval import evaluate_folds

        return evaluate_folds(
            source, folds=folds, repeats=repeats, by=by, threshold=threshold, alpha=alpha,
            metrics=metrics, task=task, label=label, score=score, weight=weight,
            inference={"ci": ci, "level": level, "auc_method": auc_method},
            prediction=prediction, scores=scores, classes=classes, positive=positive,
            precision=precision, top_k=top_k, power=power, drop_nulls=drop_nulls, engine=engine,
        )  # fmt: skip
    thresholds = as_thresholds(threshold)
    inputs = Inputs(
        label=label,
        score=score,
        task=task,
        prediction=prediction,
        scores=scores,
        classes=classes,
        weight=weight,
        positive=positive,
        precision=parse_precision(precision),
        thresholds=tuple(thresholds),
        top_k=top_k,
        power=power,
    )
    if ci == "bootstrap" and task in resample_plan.DRAWN and metrics is None:
        drawn = replace(inputs, bootstrap=bootstrap, row_id=row_id, seed=seed)
        table = _drawn_bootstrap(source, drawn, by, (level, alpha), drop_nulls, engine)
        if table is not None:
            return table
    if ci in ("bootstrap", "jackknife"):
        from .accumulate import accumulate

        state = accumulate(
            source, label=label, score=score, by=by, weight=weight, task=task,
            prediction=prediction, scores=scores, classes=classes, positive=positive,
            precision=precision, thresholds=threshold, top_k=top_k, power=power,
            bootstrap=bootstrap if ci == "bootstrap" else None, row_id=row_id, seed=seed,
            drop_nulls=drop_nulls, engine=engine,
        )  # fmt: skip
        return state.metrics(
            threshold if task == "binary" else None, alpha=alpha, metrics=metrics, ci=ci,
            level=level, jackknife=jackknife,
        )  # fmt: skip
    plan = prepare(source, inputs, by=by, drop_nulls=drop_nulls, engine=engine, tables=True)
    options: dict[str, Any] = {"threshold": thresholds} if task == "binary" else {}
    options["metrics"] = metrics
    direct_ok = not metrics and ci is None
    if ci is not None:
        from .stats.proportions import METHODS
        from .stats.tables import check_ci

        check_ci(ci, level, auc_method)
        options.update(ci=ci, level=level, auc_method=auc_method)
        # (intervals of counts and of each group's AUC: the kernel's aggregates serve)
        direct_ok = not metrics and task == "binary" and ci in METHODS
    if task == "regression":
        options["alpha"] = alpha
    if task == "paired":  # each model's AUC interval, by DeLong's variance, at ``level``
        options["level"] = level
        direct_ok = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = _tables(plan, thresholds, options, direct_ok)
    _warn_once(caught)
    return table


#: Groups whose aggregates are finalized together at most: the metric formulas' columns of
#: a million groups at once took 0.6 GB more than the pass itself.
FINISH_ROWS = 1 << 18


def _tables(
    plan: Plan,
    thresholds: list[float],
    options: dict[str, Any],
    direct_ok: bool,
    replicates: int = 0,
) -> pl.DataFrame:
    """The metric table of a planned pass: per hive unit, or of the whole source at once.

    With ``replicates`` (a plan made with ``drawn=True``), the table of bootstrap replicates
    0 … ``replicates`` (key ``replicate`` last), drawn by the kernel where it can.
    """
    ci = options.get("ci")
    paired = plan.spec.kind == "paired"
    variance = paired or (ci is not None and options.get("auc_method") == "delong")

    def grouped_of(staged: Staged | None, spec: Spec) -> pl.DataFrame | None:
        if staged is None:
            return None
        if replicates:
            return staged.replicated(spec, thresholds, replicates)
        return staged.grouped(spec, thresholds, variance) if direct_ok else None

    def metrics_of(staged: Staged | None, spec: Spec) -> pl.DataFrame | None:
        """The kernel's metric table of a unit (of its replicates), where it gives one."""
        if staged is None:
            return None
        if replicates:
            return staged.replicated_metrics(spec, options, replicates)
        return staged.metrics(spec, options)

    def finished(grouped: pl.DataFrame, spec: Spec) -> pl.DataFrame:
        """The metric table of grouped frames, with the intervals ``options`` ask for."""
        if paired:
            from .stats.compare import grouped_model_table

            return grouped_model_table(grouped, spec, options["level"])
        if replicates:
            return _replicate_metrics(grouped, spec, thresholds)
        table = grouped_metrics(grouped, spec, thresholds)
        if ci is None:
            return table
        from .metrics.binary import COLUMNS
        from .stats.tables import binary_intervals

        keys = list(spec.keys)
        groups = keys or [ALL]
        var = grouped.lazy().select(*groups, pl.col("_var").fill_nan(None)) if variance else None
        names = [c for c in COLUMNS if c not in ("n", "threshold")]
        return binary_intervals(table, keys, names, var, ci, options["level"])

    if plan.units is None:
        staged = unit_staged(plan)
        grouped = grouped_of(staged, plan.spec)
        if grouped is not None:
            return finished(grouped, plan.spec)
        if staged is None:
            return combine(plan).metrics(**options)
        table = metrics_of(staged, plan.spec)
        if table is not None:
            return table
        return _state_metrics(State(plan.spec, staged_table(plan, None, staged)), options)
    # Hive units hold disjoint groups: each is finalized on its own (one unit in memory at a
    # time), grouped by its other keys only, and its fixed key added back. Units whose
    # aggregates come from the kernel are finalized together, FINISH_ROWS groups at most.
    keys = list(plan.spec.keys)
    tables, parts = [], []
    schema = plan.schema
    for unit, staged in units_staged(plan):
        fixed = unit.constants
        spec = replace(plan.spec, keys=tuple(k for k in keys if k not in fixed))
        fixed_columns = [pl.lit(v, schema[k]).alias(k) for k, v in fixed.items()]
        grouped = grouped_of(staged, spec)
        if grouped is not None:
            # (without any key, the whole source's one group keeps its ALL column)
            rest = [c for c in grouped.columns[len(spec.keys) :] if c != ALL or not keys]
            parts.append(grouped.with_columns(fixed_columns).select(*keys, *rest))
            if sum(p.height for p in parts) >= FINISH_ROWS:  # (each row's metrics its own)
                tables.append(finished(pl.concat(parts, how="vertical_relaxed"), plan.spec))
                parts = []
            continue
        table = metrics_of(staged, spec)
        if table is None:
            state = State(plan.spec, staged_table(plan, unit, staged))
            table = _state_metrics(State(spec, state.table.drop(list(fixed))), options)
        columns = [*keys, *table.columns[len(spec.keys) :]]
        tables.append(table.with_columns(fixed_columns).select(columns))
    if parts:
        grouped = pl.concat(parts, how="vertical_relaxed")
        tables.append(finished(grouped, plan.spec))
    out = pl.concat(tables, how="vertical_relaxed")
    order = [*keys] + (["threshold"] if "threshold" in out.columns else [])
    # (stable: a paired table's models stay in their order within each group)
    return out.sort(order, nulls_last=False, maintain_order=True) if order else out


def _replicate_metrics(grouped: pl.DataFrame, spec: Spec, thresholds: list[float]) -> pl.DataFrame:
    """The metric table of replicates' grouped frames (key ``replicate`` last).

    The warnings are those of replicate 0, the data itself: the replicates' would count
    replicate rows.
    """
    from .resample import data_warnings

    return data_warnings(lambda g: grouped_metrics(g, spec, thresholds), grouped)


def _state_metrics(state: State, options: dict[str, Any]) -> pl.DataFrame:
    """The metric table of a unit's state; of a replicated one, with the data's warnings only."""
    if not state.spec.replicates:
        return state.metrics(**options)
    from .resample import per_replicate

    return per_replicate(state, lambda s: s.metrics(**options))


def _drawn_bootstrap(
    source: Any,
    inputs: Inputs,
    by: str | Sequence[str] | None,
    levels: tuple[float, float],
    drop_nulls: bool,
    engine: Engine,
) -> pl.DataFrame | None:
    """Bootstrap intervals with the replicates drawn by the compiled kernel.

    Each unit is read once and its replicates are read off its placed rows
    (:meth:`streameval.kernels.staged.Staged.replicated`, or
    :meth:`~streameval.kernels.staged.Staged.replicated_metrics`): the same draws, replicate
    tables and intervals as the state's Polars passes (``State.metrics(ci="bootstrap")``),
    up to the order of float additions. ``levels`` are the intervals' level and a
    regression's ``alpha``. None where the kernel does not apply (exact mode, a precision
    above its windows, the compiled loops off): the caller takes the state.
    """
    from .kernels.compiled import MAX_WINDOW_BITS, loops
    from .resample import replicate_intervals

    if loops() is None or inputs.precision > MAX_WINDOW_BITS or inputs.bootstrap is None:
        return None
    level, alpha = levels
    thresholds = list(inputs.thresholds)
    plan = prepare(source, inputs, by=by, drop_nulls=drop_nulls, engine=engine, drawn=True)
    options: dict[str, Any] = {"metrics": None}
    if inputs.task == "binary":
        options["threshold"] = thresholds
    if inputs.task == "regression":
        options["alpha"] = alpha
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = _tables(plan, thresholds, options, False, inputs.bootstrap)
    _warn_once(caught)
    return replicate_intervals(table, plan.spec.keys[:-1], inputs.bootstrap, level)


#: The count in a unit's warning of multiclass rows whose scores do not sum to 1.
_UNNORMALIZED = re.compile(r"(?<=the scores of )(\d+)(?= row\(s\) do not sum to 1)")


def _warn_once(caught: list[warnings.WarningMessage]) -> None:
    """Re-issue the units' warnings: those that count rows once, summed; others as they were."""
    outside = [w for w in caught if "log_loss and brier are null" in str(w.message)]
    unnormalized = [m for w in caught if (m := _UNNORMALIZED.search(str(w.message)))]
    domains: dict[str, list[int]] = {}
    for w in caught:
        if _UNNORMALIZED.search(str(w.message)):
            continue
        if isinstance(w.message, DomainWarning):
            for what, (rows, groups) in w.message.problems.items():
                total = domains.setdefault(what, [0, 0])
                total[0], total[1] = total[0] + rows, total[1] + groups
        elif w not in outside:
            warnings.warn(w.message, stacklevel=caller_level())
    if domains:
        warnings.warn(DomainWarning(domains), stacklevel=caller_level())
    if unnormalized:
        rows = sum(int(m.group(1)) for m in unnormalized)
        warnings.warn(
            _UNNORMALIZED.sub(str(rows), unnormalized[0].string, count=1), stacklevel=caller_level()
        )
    if outside:
        counts = [re.search(r"null for (\d+)", str(w.message)) for w in outside]
        nulls = sum(int(m.group(1)) for m in counts if m)
        warnings.warn(
            f"log_loss and brier are null for {nulls} group row(s) whose scores fall outside "
            "[0, 1]; they need probabilities (other metrics are computed)",
            stacklevel=caller_level(),
        )
