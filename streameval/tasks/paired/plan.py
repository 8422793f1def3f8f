"""Paired task: one binary label and two or more models' score columns on the same rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ...errors import InputError
from ...kernels.paired import collect_paired
from ...states.data import StateData
from ...stats.compare import model_table
from ...validate import label_expr
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
from . import state as paired
from .metrics import PAIRED

#: The state's columns, the model table's (and its AUC interval's), the test table's.
RESERVED = {
    *paired.ALL_COLUMNS,
    *(m.name for m in PAIRED),
    *(f"roc_auc_{part}" for part in ("lo", "hi", "se")),
    *("model_a", "model_b", "roc_auc_a", "roc_auc_b", "difference", "difference_lo"),
    *("difference_hi", "z", "p_value"),
}
#: What a paired state offers: a label with a positive class, and a model table with DeLong's
#: paired tests of its models (not a table of declared metrics: ``metrics=`` and ``ci=``
#: do not apply); on Spark, a state Spark's SQL builds.
CAPABILITIES = frozenset({"positive", "models", "histogram", "spark_sql"})
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset({"scores", "positive", "level"})
#: The options of which it needs one (the columns it scores).
REQUIRED = ("scores",)


def _scores(inputs: Inputs) -> list[str]:
    scores = inputs.scores
    if (
        scores is None
        or isinstance(scores, str | Mapping)
        or len(scores) < 2
        or not all(isinstance(c, str) for c in scores)
        or len(set(scores)) < len(scores)
    ):
        raise InputError(
            f"expected scores= to list two or more distinct score columns (one per model), got "
            f"{scores!r}; hint: scores=['model_a', 'model_b']"
        )
    return list(scores)


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    return [(inputs.label, "label"), *((c, "score") for c in _scores(inputs))]


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return [(c, "score") for c in _scores(inputs)]


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a paired task."""
    lf, schema = opened.lf, opened.schema
    scores = _scores(inputs)
    y, not_allowed, pos_value, values = label_expr(
        lf, schema, inputs.label, inputs.positive, opened.engine, opened.files
    )
    w, bad_weight, weight_checks = weight_expr(inputs.weight)
    finite = [(~pl.col(c).cast(pl.Float64).is_finite()).fill_null(True) for c in scores]
    bad = pl.col(inputs.label).is_null() | pl.any_horizontal(finite) | bad_weight
    bad = bad | not_allowed.fill_null(False)
    spec = task_spec(
        "paired",
        opened,
        inputs,
        label=inputs.label,
        positive=pos_value if isinstance(pos_value, bool | int | float | str) else str(pos_value),
        classes=values or (),
        found=values is not None,
        scores=tuple(scores),
    )

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        return paired.state_query(unit, spec, schema, y, w, bad, constants)

    def diagnose() -> Exception:
        checks = row_checks(inputs.label, not_allowed, pos_value, scores) + weight_checks
        return first_problem(lf, checks, opened.engine, opened.files)

    columns = [inputs.label, *scores, *opened.keys, *([inputs.weight] if inputs.weight else [])]
    floats = [pl.col(c).cast(pl.Float64) for c in scores]
    runs = unit_reader(opened, columns, collect_paired, (y, floats, w, bad), diagnose)
    invalid = lambda t: bool(t["bucket_0"].null_count())  # noqa: E731
    return TaskPlan(spec, build, invalid, diagnose, runs, states=False)


def row_checks(label: str, not_allowed: pl.Expr, positive: Any, scores: list[str]) -> list[Check]:
    """The kinds of bad row of a paired task, in the order they are named (weight's aside).

    A null label, a label other than the two classes, then each score's nulls and NaN or
    infinite values (:func:`~streameval.tasks.common.finite_checks`).
    """
    checks = [
        Check(
            pl.col(label).is_null(),
            f"expected no nulls in the label column {label!r}, found {{count}}; "
            "hint: filter them out, or pass drop_nulls=True to drop them with a count",
        ),
        Check(
            not_allowed,
            f"expected two classes in {label!r} (positive={positive!r}), found "
            "{count} rows with other values, such as {examples}; hint: filter those rows",
            show=pl.col(label),
        ),
    ]
    for c in scores:
        checks += finite_checks(c, "score")
    return checks


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The paired model table: a row per group and model, each AUC's interval at ``level``."""
    refuse_threshold("paired", options.threshold)
    return model_table(state, options.level)
