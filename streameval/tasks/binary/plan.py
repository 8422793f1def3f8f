"""Binary task: a label with two classes and one score column of any numeric range."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from ...bucketing import ABOVE_ONE, EXACT_BITS, is_bucket_edge
from ...errors import InputError
from ...kernels.collect import collect_unit
from ...metrics.registry import names as registered
from ...metrics.select import select_metrics
from ...resample_draw import ROW_KEY
from ...spec import Spec
from ...states.data import StateData
from ...stats.tables import binary_table
from ...validate import diagnose_bad_rows, label_expr
from ..common import Inputs, MetricOptions, Opened, TaskPlan, task_spec, unit_reader, weight_expr
from . import state as binary
from .metrics import COLUMNS, DECLARED
from .metrics import metric_table_variance as binary_metrics

RESERVED = {"bucket", *binary.ALL_COLUMNS, *COLUMNS}
#: What a binary state offers: a metric table of declared metrics, a label with a positive
#: class, metrics per threshold, and the curves, operating points, areas, coarsening and
#: caret's summary of a score histogram; on Spark, a state Spark's SQL builds.
CAPABILITIES = frozenset(
    {
        "classification", "replicates", "metrics", "positive", "thresholds", "curves",
        "summary", "histogram", "unlabeled", "spark_sql",
    }
)  # fmt: skip
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset(
    {"score", "positive", "threshold", "beta", "metrics", "ci", "level", "auc_method", "labels"}
)
#: The options of which it needs one (the columns it scores).
REQUIRED = ("score",)


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    if inputs.score is None:
        raise InputError(
            "expected score= naming the score column of a binary task, got none; hint: "
            "score='p', or task='multiclass' with prediction= or scores="
        )
    return [(inputs.label, "label"), (inputs.score, "score")]


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return [(inputs.score, "score")] if inputs.score is not None else []


@dataclass(frozen=True)
class Rows:
    """A binary task's rows as expressions: the spec, y, score, weight, invalid-row flag."""

    spec: Spec
    y: pl.Expr
    p: pl.Expr
    w: pl.Expr | None
    bad: pl.Expr
    diagnose: Callable[[], Exception]


def row_exprs(opened: Opened, inputs: Inputs) -> Rows:
    """The spec and row expressions of a binary task (label values read if need be).

    ``bad`` flags the rows that cannot be evaluated (a null label, a non-finite score, a
    label other than the two classes, a bad weight); ``diagnose`` names what was wrong.
    """
    lf, schema, score = opened.lf, opened.schema, str(inputs.score)
    bits = inputs.precision
    cuts = {t for t in inputs.thresholds if not is_bucket_edge(t, bits)}
    splits = () if bits >= EXACT_BITS else tuple(sorted(cuts | {ABOVE_ONE}))
    if inputs.unlabeled and schema[inputs.label] == pl.Null:  # no label has arrived yet
        y, not_allowed = pl.lit(None, pl.Boolean), pl.lit(False)
        pos_value, values = (1, None) if inputs.positive is None else (inputs.positive, ())
    else:
        y, not_allowed, pos_value, values = label_expr(
            lf, schema, inputs.label, inputs.positive, opened.engine, opened.files
        )
    p = pl.col(score).cast(pl.Float64)
    w, bad_weight, _ = weight_expr(inputs.weight)
    # (an optional label's null is a row without a label yet: kept, in the histogram alone)
    missing = pl.lit(False) if inputs.unlabeled else pl.col(inputs.label).is_null()
    bad = missing | (~p.is_finite()).fill_null(True) | not_allowed.fill_null(False) | bad_weight
    spec = task_spec(
        "binary",
        opened,
        inputs,
        splits=splits,
        label=inputs.label,
        score=score,
        positive=pos_value if isinstance(pos_value, bool | int | float | str) else str(pos_value),
        classes=values or (),
        found=values is not None,
        unlabeled=inputs.unlabeled,
    )

    def diagnose() -> Exception:
        return diagnose_bad_rows(
            lf,
            inputs.label,
            score,
            inputs.weight,
            not_allowed,
            opened.engine,
            opened.files,
            inputs.unlabeled,
        )

    return Rows(spec, y, p, w, bad, diagnose)


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a binary task."""
    schema = opened.schema
    rows = row_exprs(opened, inputs)
    spec, y, p, w, bad = rows.spec, rows.y, rows.p, rows.w, rows.bad

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        return binary.state_query(unit, spec, schema, y, p, w, bad, constants)

    columns = [
        inputs.label,
        str(inputs.score),
        *opened.keys,
        *([inputs.weight] if inputs.weight else []),
    ]
    key = pl.col(ROW_KEY) if inputs.bootstrap else None  # (added by the replicates' reader)
    unknown = pl.col(inputs.label).is_null() if inputs.unlabeled else None
    row_tuple = (y, p, w, bad, key, unknown)
    runs = unit_reader(opened, columns, collect_unit, row_tuple, rows.diagnose)

    invalid = lambda t: bool(t["bucket"].null_count())  # noqa: E731
    return TaskPlan(spec, build, invalid, rows.diagnose, runs)


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The binary metric table: a row per group and threshold, intervals as ``ci`` asks.

    A probability metric named in ``metrics=`` raises where scores fall outside [0, 1]
    (instead of being null with a warning).
    """
    fixed = ["n", "threshold"]
    names = select_metrics(options.metrics, [c for c in COLUMNS if c not in fixed])
    t = 0.5 if options.threshold is None else options.threshold
    delong = options.ci is not None and options.auc_method == "delong"
    if options.metrics is None or not set(registered("binary", need="probabilities")) & set(names):
        table, variance = binary_metrics(state, t, options.beta, delong)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            try:
                table, variance = binary_metrics(state, t, options.beta, delong)
            except UserWarning as exc:
                raise InputError(f"expected probabilities, but {exc}") from None
    if options.ci is None:
        table = table.select(*state.keys, "n", *names, "threshold")
    else:
        table = binary_table(
            state,
            table,
            names,
            options.ci,
            options.level,
            options.auc_method,
            variance,
            options.statistics,
        )
    return with_unlabeled_count(state, table) if state.spec.unlabeled else table


def with_unlabeled_count(state: StateData, table: pl.DataFrame) -> pl.DataFrame:
    """The metric table with each group's ``n_unlabeled`` after ``n`` (optional labels).

    A group whose rows all lack a label has ``n`` 0 and null metrics.
    """
    keys = state.keys
    column = binary.column_exprs(state.spec)["n_unlabeled"].meta.output_name()
    counts = state.column_sums([column]).rename({column: "n_unlabeled"})
    joined = (
        table.join(counts, on=keys, how="left", nulls_equal=True, maintain_order="left")
        if keys
        else table.join(counts, how="cross", maintain_order="left_right")
    )
    order = [*table.columns]
    order.insert(order.index("n") + 1, "n_unlabeled")
    # no labelled row: every metric (and interval) is null; the counts are 0
    kept = {*keys, "threshold", "n_unlabeled", *(m.name for m in DECLARED if m.role == "count")}
    labelled = pl.col("n") > 0
    return joined.with_columns(pl.col("n_unlabeled").fill_null(0)).select(
        pl.col(c) if c in kept else pl.when(labelled).then(pl.col(c)).alias(c) for c in order
    )
