"""Multiclass task: a label of any type, a hard prediction and/or per-class score columns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ...errors import InputError
from ...kernels.classes import collect_classes
from ...resample import data_warnings
from ...resample_draw import ROW_KEY
from ...source import collect
from ...spec import Spec
from ...states.data import StateData
from ...stats.tables import multiclass_metrics
from ...validate import _coerce_positive
from ..common import (
    Check,
    Inputs,
    MetricOptions,
    Opened,
    TaskPlan,
    finite_checks,
    first_problem,
    refuse_threshold,
    require_int,
    score_columns,
    task_spec,
    unit_reader,
    weight_expr,
)
from . import state as multiclass
from .classes import PER_CLASS, SCORE_COLUMNS
from .metrics import COLUMNS
from .state import MAX_CLASSES as MAX_CLASSES  # re-exported (spark)
from .state import check_count

#: The finalize step's own column names (per class: t, p, c, s, k …; per pair: a, b, i, j).
_INTERNAL = {"k", "t", "p", "c", "s", "t_n", "p_n", "tp", "fp", "fn", "tn", "a", "b", "i", "j"}
RESERVED = {*multiclass.ALL_COLUMNS, *COLUMNS, *PER_CLASS, *SCORE_COLUMNS, "class", *_INTERNAL}
#: What a multiclass state offers: a metric table of declared metrics, per-class tables and
#: its confusion matrix, and caret's summary; on Spark, a state Spark's SQL builds.
CAPABILITIES = frozenset(
    {"classification", "replicates", "metrics", "classes", "summary", "spark_sql"}
)
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset(
    {"prediction", "scores", "classes", "top_k", "beta", "metrics", "ci", "level", "auc_method"}
)
#: The options of which it needs one (the columns it scores).
REQUIRED = ("prediction", "scores")


def _score_columns(inputs: Inputs) -> list[str]:
    return score_columns(inputs.scores, "class", "['p_cat', 'p_dog', 'p_bird']")


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    if inputs.prediction is None and inputs.scores is None:
        raise InputError(
            "expected prediction= (the predicted class) or scores= (per-class probability "
            "columns) for a multiclass task, got neither; hint: prediction='pred'"
        )
    out = [(inputs.label, "label")]
    if inputs.prediction is not None:
        out.append((inputs.prediction, "prediction"))
    out += [(c, "score") for c in _score_columns(inputs)]
    return out


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return [(c, "score") for c in _score_columns(inputs)]


def _found_values(opened: Opened, columns: list[str]) -> list[Any]:
    """Sorted distinct values of the label (and prediction) columns: one extra pass."""
    exprs = []
    for c in columns:
        col = pl.col(c)
        if isinstance(opened.schema[c], pl.Categorical | pl.Enum):
            col = col.cast(pl.String)
        exprs.append(col.drop_nulls().unique().head(MAX_CLASSES + 1).implode().alias(c))
    row = collect(opened.lf.select(exprs), opened.engine, opened.files).row(0)
    values = sorted({v for column in row for v in column})
    if len(values) > MAX_CLASSES:
        raise InputError(
            f"expected at most {MAX_CLASSES} classes, found more in {', '.join(columns)}; "
            "hint: is this a regression target? pass task='regression'"
        )
    return values


def _classes(opened: Opened, inputs: Inputs) -> tuple[list[Any], list[str], bool]:
    """The classes in order, their score columns (empty without scores=) and whether found.

    Classes not given (by ``classes=`` or a scores mapping) are the sorted values found in
    the label and prediction columns of this part of the data; how many there are is decided
    where all rows have been seen (merge and finalize), so a part with one class is ordinary.
    A list of score columns then names the classes in sorted order, one column each.
    """
    dtype = opened.schema[inputs.label]
    if not (dtype.is_numeric() or dtype in (pl.String, pl.Categorical, pl.Enum, pl.Boolean)):
        raise InputError(
            f"expected the label column {inputs.label!r} to be boolean, numeric or string, got "
            f"{dtype}; hint: cast it, or pass a LazyFrame with a derived label column"
        )

    _check_prediction_type(opened.schema, inputs)

    def coerce(value: Any) -> Any:
        try:
            return _coerce_positive(value, dtype, inputs.label)
        except InputError:
            raise InputError(
                f"expected classes that are values of the {dtype} label column "
                f"{inputs.label!r}, got {value!r}; hint: pass classes in the label's type"
            ) from None

    scores = inputs.scores
    if inputs.classes is None and not isinstance(scores, Mapping):
        columns = [inputs.label] + ([inputs.prediction] if inputs.prediction else [])
        found = [coerce(c) for c in _found_values(opened, columns)]
        _check_finite(found)
        score_columns = _score_columns(inputs)
        if score_columns:
            if len(score_columns) < 2:
                raise InputError(
                    f"expected at least two score columns, got {score_columns!r}; hint: a "
                    "two-class problem with one score column is task='binary'"
                )
            check_count(found, score_columns)
        return found, score_columns, True
    if inputs.classes is not None:
        if isinstance(inputs.classes, str) or not isinstance(inputs.classes, Sequence):
            raise InputError(f"expected classes= to be a list, got {inputs.classes!r}")
        classes = [coerce(c) for c in inputs.classes]
    else:
        classes = [coerce(c) for c in scores]  # type: ignore[union-attr]
    if len(set(classes)) < len(classes) or len(classes) < 2:
        raise InputError(
            f"expected at least two distinct classes, got {classes!r}; hint: a two-class "
            "problem with one score column is task='binary'"
        )
    _check_finite(classes)
    return classes, _given_columns(inputs, classes, coerce), False


def _kind(dtype: pl.DataType) -> str:
    if dtype == pl.Boolean:
        return "boolean"
    if dtype.is_integer():
        return "integer"
    if dtype.is_numeric():
        return "number"
    return "string"


def _check_prediction_type(schema: pl.Schema, inputs: Inputs) -> None:
    """Refuse a prediction column that cannot hold the label's classes (strings vs codes).

    An integer or float prediction of float labels is fine; a float prediction of integer
    labels is not (0.5 is no class), nor numbers for string labels or the other way round.
    """
    if not inputs.prediction:
        return
    label, prediction = schema[inputs.label], schema[inputs.prediction]
    kinds = (_kind(label), _kind(prediction))
    if kinds[0] == kinds[1] or kinds == ("number", "integer"):
        return
    raise InputError(
        f"expected the prediction column {inputs.prediction!r} to hold classes as the label "
        f"column {inputs.label!r} does ({label}), got {prediction}; hint: cast one of them "
        "(e.g. map class codes to their names) so that both hold the same values"
    )


def _check_finite(classes: list[Any]) -> None:
    if any(isinstance(c, float) and not math.isfinite(c) for c in classes):
        raise InputError(f"expected finite class values, got {classes!r}")


def _given_columns(inputs: Inputs, classes: list[Any], coerce: Any) -> list[str]:
    """The score columns of given classes, in class order (empty without scores=)."""
    scores = inputs.scores
    if scores is None:
        return []
    if isinstance(scores, Mapping):
        by_class = {coerce(k): str(v) for k, v in scores.items()}
        missing = [c for c in classes if c not in by_class]
        extra = [k for k in by_class if k not in classes]
        if missing or extra:
            raise InputError(
                f"expected one score column per class, but classes {missing!r} have none and "
                f"{extra!r} are not classes; hint: classes are {classes!r}"
            )
        return [by_class[c] for c in classes]
    columns = _score_columns(inputs)
    if len(columns) != len(classes):
        check_count(classes, columns, exact=True)
    return columns


def _index(column: str, schema: pl.Schema, classes: list[Any]) -> pl.Expr:
    """Class index (Int32) of a label/prediction column; null when not a class."""
    col = pl.col(column)
    if isinstance(schema[column], pl.Categorical | pl.Enum):
        col = col.cast(pl.String)
    elif schema[column].is_float():
        classes = [float(c) for c in classes]
    return col.replace_strict(classes, list(range(len(classes))), default=None).cast(pl.Int32)


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a multiclass task."""
    top_k = require_int(inputs.top_k, "top_k", 1)
    classes, score_columns, found = _classes(opened, inputs)
    schema, label = opened.schema, inputs.label
    actual = _index(label, schema, classes)
    ps = [pl.col(c).cast(pl.Float64) for c in score_columns]
    if inputs.prediction is not None:
        predicted = _index(inputs.prediction, schema, classes)
    else:  # argmax, the first class on ties (as numpy)
        top = pl.max_horizontal(ps)
        predicted = pl.coalesce(
            [pl.when(p == top).then(pl.lit(k, pl.Int32)) for k, p in enumerate(ps)]
        )
    w, bad_weight, weight_checks = weight_expr(inputs.weight)
    bad = actual.is_null() | bad_weight
    if inputs.prediction is not None:
        bad = bad | predicted.is_null()
    for p in ps:
        bad = bad | (~p.is_finite()).fill_null(True)
    spec = task_spec(
        "multiclass",
        opened,
        inputs,
        label=label,
        score=None,
        positive=None,
        prediction=inputs.prediction,
        classes=tuple(classes),
        found=found,
        scores=tuple(score_columns),
        top_k=top_k,
    )
    checks = row_checks(label, actual, predicted, inputs.prediction, score_columns, classes)
    checks += weight_checks

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        return multiclass.state_query(unit, spec, schema, actual, predicted, ps, w, bad, constants)

    def invalid(table: pl.DataFrame) -> bool:
        return bool(table["actual"].null_count())

    def diagnose() -> Exception:
        return first_problem(opened.lf, checks, opened.engine, opened.files)

    columns = [label, *score_columns, *opened.keys]
    columns += [c for c in (inputs.prediction, inputs.weight) if c is not None]
    given = predicted if inputs.prediction is not None else None
    key = pl.col(ROW_KEY) if inputs.bootstrap else None  # (added by the replicates' reader)
    rows = (actual, given, ps, w, bad, key)
    runs = unit_reader(opened, columns, collect_classes, rows, diagnose)
    return TaskPlan(
        spec, build, invalid, diagnose, runs, finish=finish, finish_replicated=replicated
    )


def row_checks(
    label: str,
    actual: pl.Expr,
    predicted: pl.Expr,
    prediction: str | None,
    score_columns: list[str],
    classes: list[Any],
) -> list[Check]:
    """The kinds of bad row of a multiclass task, in the order they are named (weight's aside).

    A null label, a label that is not a class (``actual`` null), a prediction that is not a
    class (with ``prediction``), then each score column's nulls and NaN or infinite values.
    """
    shown = ", ".join(repr(c) for c in classes[:10]) + (" …" if len(classes) > 10 else "")
    checks = [
        Check(
            pl.col(label).is_null(),
            f"expected no nulls in the label column {label!r}, found {{count}}; hint: filter "
            "them out, or pass drop_nulls=True to drop them with a count",
        ),
        Check(
            actual.is_null(),
            f"expected labels among the classes ({shown}), found {{count}} row(s) with other "
            f"values in {label!r} such as {{examples}}; hint: pass classes=[...] listing every "
            "class",
            show=pl.col(label).cast(pl.String),
        ),
    ]
    if prediction is not None:
        checks.append(
            Check(
                predicted.is_null(),
                f"expected predictions among the classes ({shown}), found {{count}} null or "
                f"other value(s) in {prediction!r} such as {{examples}}; hint: pass "
                "classes=[...] listing every class",
                show=pl.col(prediction).cast(pl.String),
            )
        )
    for column in score_columns:
        checks += finite_checks(column, "score")
    return checks


def finish(
    sums: tuple[pl.DataFrame, pl.DataFrame], spec: Spec, options: Mapping[str, Any]
) -> pl.DataFrame:
    """The metric table of a unit's confusion rows and pair sums (from the kernel)."""
    confusion, pairs = sums
    metrics, ci, level = options.get("metrics"), options.get("ci"), options.get("level", 0.95)
    beta = options.get("beta", 1.0)
    return multiclass_metrics(StateData(spec, confusion), metrics, ci, level, pairs, beta)


def replicated(
    sums: tuple[pl.DataFrame, pl.DataFrame], spec: Spec, options: Mapping[str, Any]
) -> pl.DataFrame:
    """The metric table of replicates' confusion rows and pair sums; the data's warnings only."""
    level, beta = options.get("level", 0.95), options.get("beta", 1.0)

    def table(confusion: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
        return multiclass_metrics(StateData(spec, confusion), None, None, level, pairs, beta)

    return data_warnings(table, *sums)


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The multiclass metric table: a row per group, intervals as ``ci`` asks."""
    refuse_threshold("multiclass", options.threshold)
    return multiclass_metrics(state, options.metrics, options.ci, options.level, beta=options.beta)
