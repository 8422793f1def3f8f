"""Regression task: a numeric label and a numeric prediction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ...errors import InputError
from ...kernels.regression import collect_regression
from ...resample import data_warnings
from ...resample_draw import ROW_KEY
from ...spec import Spec
from ...states.data import StateData
from ..common import (
    Check,
    Inputs,
    MetricOptions,
    Opened,
    TaskPlan,
    finite_checks,
    first_problem,
    refuse_threshold,
    task_spec,
    unit_reader,
    weight_expr,
)
from . import state as regression
from .metrics import COLUMNS, grouped_table
from .metrics import metric_table as regression_metrics

RESERVED = {*regression.ALL_COLUMNS, *COLUMNS}
#: What a regression state offers: a metric table of declared metrics, which takes the
#: pinball loss's quantile; its label and prediction may be one column; on Spark, a state
#: Spark's SQL builds.
CAPABILITIES = frozenset({"replicates", "metrics", "alpha", "one_column", "spark_sql"})
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset({"prediction", "power", "alpha", "metrics"})
#: The options of which it needs one (the columns it scores).
REQUIRED = ("prediction",)


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    if inputs.prediction is None:
        raise InputError(
            "expected prediction= naming the predicted value column of a regression task, "
            "got none; hint: task='regression', label='y', prediction='y_hat'"
        )
    return [(inputs.label, "label"), (inputs.prediction, "prediction")]


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return roles(inputs)


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a regression task."""
    power = inputs.power
    if isinstance(power, bool) or not isinstance(power, int | float) or 0 < power < 1:
        raise InputError(
            f"expected a Tweedie power ≤ 0 or ≥ 1, got {power!r}; hint: 0 is the normal "
            "distribution, 1 Poisson, 2 gamma, between 1 and 2 compound Poisson–gamma"
        )
    label, prediction = inputs.label, str(inputs.prediction)
    y, f = pl.col(label).cast(pl.Float64), pl.col(prediction).cast(pl.Float64)
    w, bad_weight, weight_checks = weight_expr(inputs.weight)
    bad = (~y.is_finite()).fill_null(True) | (~f.is_finite()).fill_null(True) | bad_weight
    spec = task_spec(
        "regression",
        opened,
        inputs,
        label=label,
        score=None,
        positive=None,
        prediction=prediction,
        power=float(power),
    )
    checks: list[Check] = [
        *finite_checks(label, "label"),
        *finite_checks(prediction, "prediction"),
        *weight_checks,
    ]

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        return regression.state_query(unit, spec, opened.schema, y, f, w, bad, constants)

    def invalid(table: pl.DataFrame) -> bool:
        return bool(table["bucket"].null_count())

    def diagnose() -> Exception:
        return first_problem(opened.lf, checks, opened.engine, opened.files)

    columns = [label, prediction, *opened.keys, *([inputs.weight] if inputs.weight else [])]
    key = pl.col(ROW_KEY) if inputs.bootstrap else None  # (added by the replicates' reader)
    runs = unit_reader(opened, columns, collect_regression, (y, f, w, bad, key), diagnose)
    return TaskPlan(
        spec, build, invalid, diagnose, runs, finish=finish, finish_replicated=replicated
    )


def finish(grouped: pl.DataFrame, spec: Spec, options: Mapping[str, Any]) -> pl.DataFrame:
    """The metric table of a unit's per-group aggregates (from the kernel)."""
    return grouped_table(grouped, list(spec.keys))


def replicated(grouped: pl.DataFrame, spec: Spec, options: Mapping[str, Any]) -> pl.DataFrame:
    """The metric table of replicates' aggregates; the data's warnings only."""
    return data_warnings(lambda g: grouped_table(g, list(spec.keys)), grouped)


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The regression metric table: a row per group (intervals by resampling only)."""
    refuse_threshold("regression", options.threshold)
    if options.ci is not None:
        raise InputError(
            f"expected no ci= for a regression state, got {options.ci!r}; hint: "
            "regression metrics get intervals by bootstrap or jackknife"
        )
    return regression_metrics(state, alpha=options.alpha, metrics=options.metrics)
