"""Multilabel task: L labels per row (a column each, or one list column) and a score each.

A label is predicted where its score is at least the threshold (one, fixed when the rows are
read: each row's set metrics depend on it). Rows are independent, so the source is read in
units and shards as the binary task's is; each unit's rows are summed by
:func:`unit_table` into the state of :mod:`.state`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ...bucketing import ABOVE_ONE, EXACT_BITS, bucket_expr, is_bucket_edge
from ...codes import KeyCode
from ...errors import InputError
from ...kernels import compiled
from ...kernels.collect import Collect, key_exprs, unit_groups
from ...kernels.groups import GroupCodes
from ...kernels.multilabel import label_grouped, label_tables, row_sums
from ...kernels.staged import Staged
from ...ordered import ORDERED
from ...spec import Spec
from ...states.data import StateData
from ...stats.tables import binary_table
from ...validate import _coerce_positive
from ..binary import state as binary
from ..binary.metrics import COLUMNS as BINARY_COLUMNS
from ..binary.metrics import grouped_metrics
from ..binary.metrics import metric_table as binary_metrics
from ..common import (
    Check,
    Inputs,
    MetricOptions,
    Opened,
    TaskPlan,
    finite_checks,
    first_problem,
    score_columns,
    task_spec,
    unit_reader,
    weight_expr,
)
from . import state as multilabel
from .labels import (
    PER_LABEL,
    binary_view,
    label_columns,
    label_rows,
    named,
    scores_as_margins,
)
from .metrics import COLUMNS, assemble, stages
from .metrics import metric_table as multilabel_metrics
from .state import SUMS

RESERVED = {*multilabel.ALL_COLUMNS, *COLUMNS, *PER_LABEL, "class"}
#: What a multilabel state offers: a metric table of declared metrics, per-label tables and
#: scikit-learn's classification report.
CAPABILITIES = frozenset({"metrics", "labels", "classification"})
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset({"scores", "classes", "threshold", "metrics"})
#: The options of which it needs one (the columns it scores).
REQUIRED = ("scores",)


def _score_columns(inputs: Inputs) -> list[str]:
    scores = inputs.scores
    if scores is None:
        raise InputError(
            "expected scores= naming a score column per label of a multilabel task, got "
            "none; hint: task='multilabel', label=['y_a', 'y_b'], scores=['p_a', 'p_b']"
        )
    return score_columns(scores, "label", "['p_a', 'p_b']")


def _label_columns(inputs: Inputs) -> list[str]:
    """The label columns (one per label), or the one list column."""
    return list(inputs.labels) if inputs.labels else [inputs.label]


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    labels = [(c, "label") for c in _label_columns(inputs)]
    return [*labels, *((c, "score") for c in _score_columns(inputs))]


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return [(c, "score") for c in _score_columns(inputs)]


@dataclass(frozen=True)
class Labels:
    """The labels: their names (``classes``), score columns and each row's indicators."""

    classes: list[Any]
    scores: list[str]
    indicators: list[pl.Expr]
    bad: pl.Expr
    checks: list[Check]
    #: The label columns, one per label (empty: the labels are a list column's).
    columns: tuple[str, ...] = ()


def _labels(schema: pl.Schema, inputs: Inputs) -> Labels:
    """The labels and how each row's indicator of each is read (columns, or a list column)."""
    scores = _score_columns(inputs)
    if inputs.labels:
        columns = list(inputs.labels)
        # (the labels are named by classes= or their columns; a scores mapping is by name)
        classes = list(inputs.classes) if inputs.classes is not None else columns
        _check_counts(classes, columns, "label columns")
        scores = _ordered_scores(inputs, classes, scores)
        indicators, bad, checks = _indicator_columns(schema, columns)
        return Labels(classes, scores, indicators, bad, checks, tuple(columns))
    column = inputs.label
    dtype = schema[column]
    if not isinstance(dtype, pl.List | pl.Array) and (dtype == pl.Boolean or dtype.is_numeric()):
        return _labels(schema, replace(inputs, labels=(column,)))  # one label's column
    if not isinstance(dtype, pl.List | pl.Array):
        raise InputError(
            f"expected the labels of a multilabel task as a list of label columns or one "
            f"list column, got the {dtype} column {column!r}; hint: label=['y_a', 'y_b'] (0/1 "
            "columns), or label='tags' (a list of the row's labels)"
        )
    inner = dtype.inner
    assert isinstance(inner, pl.DataType)  # (a list column's values' type)
    if inputs.classes is not None:
        classes = list(inputs.classes)
    elif isinstance(inputs.scores, Mapping):
        classes = list(inputs.scores)
    else:
        raise InputError(
            f"expected classes= (or scores= as a mapping label → column) naming the labels of "
            f"the list column {column!r}, got neither; hint: classes=['a', 'b'], scores=['p_a', "
            "'p_b']"
        )
    _check_counts(classes, scores, "score columns")
    scores = _ordered_scores(inputs, classes, scores)
    listed = pl.col(column).cast(pl.List(inner)) if isinstance(dtype, pl.Array) else pl.col(column)
    null = pl.col(column).is_null()
    if inner == pl.Boolean:
        wrong = listed.list.len() != len(classes)
        indicators = [listed.list.get(j, null_on_oob=True) for j in range(len(classes))]
        bad = null | wrong | pl.any_horizontal(i.is_null() for i in indicators)
        message = (
            f"expected each list in {column!r} to hold {len(classes)} booleans (one per label, "
            "none null), found {count} rows that do not; hint: one flag per class, in classes "
            "order"
        )
        return Labels(classes, scores, indicators, bad, [_null_check(column), Check(bad, message)])
    values = [_coerce(v, inner, column) for v in classes]
    if inner.is_numeric() and {0, 1} <= set(values):
        raise InputError(
            f"expected the list column {column!r} to hold each row's labels, but its classes "
            f"include 0 and 1, so a list such as [1, 0] could also be one 0/1 flag per "
            "label; hint: flags are booleans (pl.col(...).cast(pl.List(pl.Boolean))), or name "
            "the labels other than 0 and 1"
        )
    known = pl.lit(pl.Series(values, dtype=inner)).implode()
    unknown = listed.list.eval(~pl.element().is_in(known) | pl.element().is_null()).list.any()
    if inner.is_numeric():  # (a label twice in a list: 0/1 flags read as labels?)
        unknown = unknown | (listed.list.n_unique() != listed.list.len())
    indicators = [listed.list.contains(pl.lit(v, inner)) for v in values]
    shown = ", ".join(repr(c) for c in classes[:10]) + (" …" if len(classes) > 10 else "")
    check = Check(
        unknown.fill_null(False),
        f"expected the lists in {column!r} to hold only labels among the classes ({shown}), "
        "each once, found {count} rows with others (or one twice); hint: pass classes=[...] "
        "listing every label; 0/1 flags per label are booleans",
    )
    return Labels(classes, scores, indicators, null | unknown, [_null_check(column), check])


def _null_check(column: str) -> Check:
    return Check(
        pl.col(column).is_null(),
        f"expected no nulls in the label column {column!r}, found {{count}}; hint: an empty "
        "list is a row without labels; filter them out, or pass drop_nulls=True",
    )


def _coerce(value: Any, dtype: pl.DataType, column: str) -> Any:
    try:
        return _coerce_positive(value, dtype, column)
    except InputError:
        raise InputError(
            f"expected classes that are values of the lists in {column!r} ({dtype}), got "
            f"{value!r}; hint: pass classes in the lists' type"
        ) from None


def _check_counts(classes: list[Any], columns: list[str], what: str) -> None:
    if len(set(map(repr, classes))) < len(classes) or len(classes) < 1:
        raise InputError(f"expected distinct labels, got {classes!r}")
    if len(columns) != len(classes):
        raise InputError(
            f"expected one of the {what} per label ({len(classes)} labels: {classes!r}), got "
            f"{len(columns)}: {columns!r}; hint: list them in the labels' order"
        )


def _ordered_scores(inputs: Inputs, classes: list[Any], scores: list[str]) -> list[str]:
    """The score columns in the labels' order (a mapping's by label)."""
    given = inputs.scores
    if not isinstance(given, Mapping):
        _check_counts(classes, scores, "score columns")
        return scores
    by_label = {repr(k): str(v) for k, v in given.items()}
    missing = [c for c in classes if repr(c) not in by_label]
    extra = [k for k in given if repr(k) not in {repr(c) for c in classes}]
    if missing or extra:
        raise InputError(
            f"expected one score column per label, but labels {missing!r} have none and "
            f"{extra!r} are not labels; hint: the labels are {classes!r}"
        )
    return [by_label[repr(c)] for c in classes]


def _indicator_columns(
    schema: pl.Schema, columns: list[str]
) -> tuple[list[pl.Expr], pl.Expr, list[Check]]:
    """Each 0/1 (or boolean) label column as a Boolean, its bad rows and their checks."""
    indicators, bad, checks = [], pl.lit(False), []
    for column in columns:
        dtype = schema[column]
        if dtype == pl.Boolean:
            y = pl.col(column)
            wrong = y.is_null()
        elif dtype.is_numeric():
            x = pl.col(column).cast(pl.Float64)
            y = x == 1.0
            wrong = (~x.is_in([0.0, 1.0])).fill_null(True)
        else:
            raise InputError(
                f"expected the label column {column!r} to be boolean or 0/1, got {dtype}; "
                "hint: one 0/1 column per label"
            )
        indicators.append(y)
        bad = bad | wrong
        checks.append(
            Check(
                wrong,
                f"expected 0/1 (or boolean) values in the label column {column!r}, found "
                "{count} null or other values, such as {examples}; hint: 1 where the row has "
                "the label, 0 where not",
                show=pl.col(column).cast(pl.String),
            )
        )
    return indicators, bad, checks


def _threshold(inputs: Inputs) -> float:
    if len(inputs.thresholds) != 1:
        raise InputError(
            f"expected one threshold for a multilabel task, got {list(inputs.thresholds)!r}: "
            "each row's predicted label set depends on it; hint: threshold=0.5"
        )
    return float(inputs.thresholds[0])


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a multilabel task."""
    labels = _labels(opened.schema, inputs)
    t = _threshold(inputs)
    bits = inputs.precision
    cuts = set() if is_bucket_edge(t, bits) else {t}
    splits = () if bits >= EXACT_BITS else tuple(sorted(cuts | {ABOVE_ONE}))
    ss = [pl.col(c).cast(pl.Float64) for c in labels.scores]
    w, bad_weight, weight_checks = weight_expr(inputs.weight)
    bad = labels.bad | bad_weight
    for s in ss:
        bad = bad | (~s.is_finite()).fill_null(True)
    spec = task_spec(
        "multilabel",
        opened,
        inputs,
        splits=splits,
        label=", ".join(labels.columns) if labels.columns else inputs.label,
        score=None,
        positive=None,
        classes=tuple(labels.classes),
        scores=tuple(labels.scores),
        labels=labels.columns,
        threshold=t,
    )
    checks = [*labels.checks]
    for column in labels.scores:
        checks += finite_checks(column, "score")
    checks += weight_checks
    values = [
        *(
            y.fill_null(False).cast(pl.UInt8).alias(f"_y{j}")
            for j, y in enumerate(labels.indicators)
        ),
        *(pl.when(~bad).then(s).alias(f"_p{j}") for j, s in enumerate(ss)),
        *([] if w is None else [w.alias("_w")]),
    ]

    def diagnose() -> Exception:
        return first_problem(opened.lf, checks, opened.engine, opened.files)

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        keys = [k for k in spec.keys if k not in constants]
        rows = unit.select(*keys, *values)

        def finish(frame: pl.DataFrame) -> pl.DataFrame:
            if frame.height and frame["_p0"].null_count():
                raise diagnose()
            if not keys:
                code = np.zeros(frame.height, np.int64)
                return unit_table(
                    code,
                    pl.DataFrame(),
                    int(frame.height > 0),
                    frame,
                    spec,
                    opened.schema,
                    constants,
                )
            groups = frame.select(keys).unique(maintain_order=True).with_row_index("_g")
            coded = frame.select(keys).join(
                groups, on=keys, how="left", nulls_equal=True, maintain_order="left"
            )
            code = coded["_g"].to_numpy().astype(np.int64)
            groups = groups.drop("_g")
            return unit_table(code, groups, groups.height, frame, spec, opened.schema, constants)

        return rows, finish

    def read(
        lf: pl.LazyFrame,
        keys: list[str],
        codes: Mapping[str, KeyCode | None],
        rows: Any,
        collect: Collect,
        invalid: Any,
    ) -> Rows | None:
        coded = key_exprs(keys, codes)
        if coded is None:
            return None
        key_codes, exprs = coded
        frame = collect(lf, [*exprs, *values])
        if frame.height and frame["_p0"].null_count():
            raise invalid()
        return Rows(frame, key_codes, spec)

    columns = [*roles(inputs)]
    names = [c for c, _ in columns] + list(opened.keys) + ([inputs.weight] if inputs.weight else [])
    runs = unit_reader(opened, names, read, (), diagnose)
    return TaskPlan(spec, build, lambda table: False, diagnose, runs, finish=finish)


def unit_table(
    code: npt.NDArray[np.int64],
    groups: pl.DataFrame,
    count_groups: int,
    frame: pl.DataFrame,
    spec: Spec,
    schema: pl.Schema,
    constants: Mapping[str, Any],
    group_codes: GroupCodes | None = None,
) -> pl.DataFrame:
    """The state table of a unit's rows: ``code`` each row's group (a row of ``groups``).

    ``count_groups`` groups (``groups`` has no columns, and one group or none, without keys).

        ``frame`` holds the rows' ``_y0`` …, ``_s0`` … (and ``_w``). Part 0 comes from the
        compiled row loop (:func:`streameval.kernels.multilabel.row_sums`), part 1 from a
        group-by per label as the binary state's (one query, its labels in parallel).
    """
    count = len(spec.classes)
    y, s, w = _matrices(frame, spec)
    sums, rows = row_sums(code, count_groups, y, s, w, spec.threshold)
    del y, s
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    totals = pl.DataFrame({"n": rows, **{name: sums[:, i] for i, name in enumerate(SUMS)}})
    part0 = _keyed(groups, None, totals).with_columns(pl.lit(0, pl.Int8).alias("part"))
    bspec = multilabel.binary_spec(spec)
    if group_codes is not None:
        unit_spec = replace(bspec, keys=spec.keys)
        tables = label_tables(frame, group_codes, unit_spec, count, schema, constants)
        if tables is not None:
            part1 = tables.with_columns(pl.lit(1, pl.Int8).alias("part"))
            both = pl.concat([part0.with_columns(fixed), part1], how="diagonal_relaxed")
            return multilabel.ordered(both, spec)
    p, truth = pl.col("_p"), pl.col("_t")
    weight = pl.col("_w") if spec.weighted else None
    aggregations = binary.aggregations(bspec, truth, p, weight)
    base = pl.DataFrame({"_g": code}).with_columns(frame.select("_w") if spec.weighted else [])
    queries = [
        base.with_columns(frame[f"_y{j}"].cast(pl.Boolean).alias("_t"), frame[f"_p{j}"].alias("_p"))
        .lazy()
        .group_by(
            "_g", bucket_expr(p, spec.precision, spec.splits).alias("bucket"), maintain_order=True
        )
        .agg(aggregations)
        .with_columns(pl.lit(j, pl.Int32).alias(multilabel.LABEL))
        for j in range(count)
    ]
    hist = pl.concat(queries).collect(engine="in-memory", optimizations=ORDERED)
    part1 = _keyed(groups, hist["_g"].to_numpy(), hist.drop("_g"))
    part1 = part1.with_columns(pl.lit(1, pl.Int8).alias("part"))
    table = pl.concat([part0, part1], how="diagonal_relaxed").with_columns(fixed)
    return multilabel.ordered(table, spec)


def _keyed(
    groups: pl.DataFrame, index: npt.NDArray[Any] | None, values: pl.DataFrame
) -> pl.DataFrame:
    """``values`` after their groups' key columns (rows ``index`` of ``groups``; None: all)."""
    if not groups.width:
        return values
    keys = groups if index is None else groups[index]
    return pl.concat([keys, values], how="horizontal")


@dataclass
class Rows:
    """A unit's collected rows for the compiled path: key codes, ``_y0`` …, ``_s0`` …, ``_w``."""

    frame: pl.DataFrame
    key_codes: list[KeyCode]
    spec: Spec

    def staged(self, spec: Spec | None = None) -> Staged:
        """The rows, to be summed into the state table by the summing thread."""
        return Summing(self)


@dataclass
class Summing(Staged):
    """A unit's multilabel rows: no runs; :meth:`table` sums them into the state.

    :meth:`sums` gives the metric table's inputs straight from the rows instead (each
    label's, and the pooled labels', binary metric aggregates; no state table).
    """

    rows: Rows

    def _finish(self) -> None:
        return None

    def _coded(self) -> tuple[GroupCodes, pl.DataFrame, npt.NDArray[np.int64], pl.DataFrame]:
        """The rows' group codes, the rows, each row's group 0 … G − 1 and the groups' keys."""
        if not hasattr(self, "_groups"):
            groups, frame = unit_groups(self.rows.frame, self.rows.key_codes)
            codes, back = compiled.compact(groups.codes.view(np.int64), 1 << groups.bits)
            decoded = pl.DataFrame(groups.decode(back.view(np.uint64)))
            self._groups = groups, frame, codes, decoded
        coded: tuple[GroupCodes, pl.DataFrame, npt.NDArray[np.int64], pl.DataFrame]
        coded = self._groups
        return coded

    def table(self, schema: pl.Schema, constants: Mapping[str, Any]) -> pl.DataFrame | None:
        """The unit's state table: group codes compacted, then :func:`unit_table`."""
        rows = self.rows
        if not rows.frame.height:
            keys = [k for k in rows.spec.keys if k not in constants]
            empty = pl.DataFrame(schema={k: schema[k] for k in keys})
            code = np.zeros(0, np.int64)
            return unit_table(code, empty, 0, rows.frame, rows.spec, schema, constants)
        groups, frame, codes, decoded = self._coded()
        return unit_table(
            codes, decoded, decoded.height or 1, frame, rows.spec, schema, constants, groups
        )

    def sums(self, spec: Spec, options: Mapping[str, Any]) -> Any:
        """The rows' sums per group, each label's and the pooled labels' metric aggregates.

        ``spec`` is the unit's (its keys those that vary over it). None without rows, with
        intervals asked for (refused by the state's table), or where a kernel declines.
        """
        if not self.rows.frame.height or options.get("ci") is not None:
            return None
        groups, frame, codes, decoded = self._coded()
        count = len(spec.classes)
        unit = replace(multilabel.binary_spec(spec), keys=spec.keys)
        _, needed = stages(options.get("metrics"))
        wanted = ("labels" in needed, "pooled" in needed)
        grouped = label_grouped(frame, groups, unit, count, spec.threshold, wanted)
        if grouped is None:
            return None
        y, s, w = _matrices(frame, spec)
        totals, rows = row_sums(codes, decoded.height or 1, y, s, w, spec.threshold)
        sums = pl.DataFrame({"n": rows, **{n: totals[:, i] for i, n in enumerate(SUMS)}})
        return (_keyed(decoded, None, sums), *grouped)


def finish(
    sums: tuple[pl.DataFrame, pl.DataFrame | None, pl.DataFrame | None],
    spec: Spec,
    options: Mapping[str, Any],
) -> pl.DataFrame:
    """The metric table of a unit's sums (:meth:`Summing.sums`)."""
    rows, labels, pooled = sums
    label_spec = multilabel.binary_spec(spec)
    unit = replace(label_spec, keys=spec.keys)
    per_label = ranked = None
    with scores_as_margins():
        if labels is not None:
            table = grouped_metrics(labels, label_spec, [spec.threshold])
            per_label = label_columns(table, list(label_spec.keys))
        if pooled is not None:
            ranked = grouped_metrics(pooled, unit, [spec.threshold])
    return assemble(rows, per_label, ranked, spec, options.get("metrics"))


def _matrices(
    frame: pl.DataFrame, spec: Spec
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The rows' labels and scores (rows × labels) and weights (empty: unweighted)."""
    count = len(spec.classes)
    y = frame.select(f"_y{j}" for j in range(count)).to_numpy().astype(np.uint8)
    s = frame.select(f"_p{j}" for j in range(count)).to_numpy().astype(np.float64)
    w = frame["_w"].to_numpy() if spec.weighted else np.zeros(0)
    return y, s, w


def label_table(
    state: StateData, ci: str | None = None, level: float = 0.95, auc_method: str = "delong"
) -> pl.DataFrame:
    """The per-label table: per group and label, ``class`` (the label) then its columns.

    ``ci`` adds each label's intervals (its proportions' and its AUC's), as the binary
    task's metric table has them.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"a": [1, 0, 1, 0], "b": [0, 0, 1, 1],
    ...                    "pa": [0.9, 0.2, 0.6, 0.4], "pb": [0.3, 0.1, 0.8, 0.4]})
    >>> st = se.accumulate(df, task="multilabel", label=["a", "b"], scores=["pa", "pb"])
    >>> st.per_class().select("class", "support", "tp", "fn", "recall", "roc_auc")
    shape: (2, 6)
    ┌───────┬─────────┬─────┬─────┬────────┬─────────┐
    │ class ┆ support ┆ tp  ┆ fn  ┆ recall ┆ roc_auc │
    │ ---   ┆ ---     ┆ --- ┆ --- ┆ ---    ┆ ---     │
    │ str   ┆ i64     ┆ i64 ┆ i64 ┆ f64    ┆ f64     │
    ╞═══════╪═════════╪═════╪═════╪════════╪═════════╡
    │ a     ┆ 2       ┆ 2   ┆ 0   ┆ 1.0    ┆ 1.0     │
    │ b     ┆ 2       ┆ 1   ┆ 1   ┆ 0.5    ┆ 1.0     │
    └───────┴─────────┴─────┴─────┴────────┴─────────┘
    """
    if ci is None:
        return named(label_rows(state), state)
    view = binary_view(state)
    with scores_as_margins():
        table = binary_metrics(view, state.spec.threshold)
    names = [c for c in BINARY_COLUMNS if c not in ("n", "threshold")]
    table = binary_table(view, table, names, ci, level, auc_method)
    return named(label_columns(table, view.keys), state)


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The multilabel metric table: a row per group at the state's threshold."""
    t = options.threshold
    if t is not None and (not isinstance(t, int | float) or float(t) != state.spec.threshold):
        raise InputError(
            f"expected the threshold the multilabel state was accumulated with "
            f"({state.spec.threshold}), got {t!r}: each row's predicted label set was fixed "
            "then; hint: accumulate again with thresholds=[t]"
        )
    if options.ci is not None:
        raise InputError(
            f"expected no ci= for a multilabel metric table, got {options.ci!r}; hint: "
            "ci='bootstrap' (accumulate with bootstrap=R) or ci='jackknife' give intervals "
            "of every metric, and per_class(ci='wilson') each label's"
        )
    return multilabel_metrics(state, options.metrics)
