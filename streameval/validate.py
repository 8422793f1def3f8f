"""Checks on the rows: which label is positive, and what is wrong with rows found invalid."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import polars as pl

from .errors import InputError, StreamevalError
from .source import Engine, collect


def _label_values(
    lf: pl.LazyFrame, label: str, engine: Engine, files: list[str] | None
) -> list[Any]:
    col = pl.col(label)
    if isinstance(lf.collect_schema()[label], pl.Categorical | pl.Enum):
        col = col.cast(pl.String)
    out = collect(lf.select(col.drop_nulls().unique().sort().head(101)), engine, files)
    return out.to_series().to_list()


def _coerce_positive(positive: Any, dtype: pl.DataType, label: str) -> Any:
    """A ``positive`` given as text (the command line) read as the label column's type."""
    if positive is None:
        return None
    if hasattr(positive, "item") and not isinstance(positive, str):  # numpy scalars
        positive = positive.item()
    if dtype == pl.Boolean:
        if isinstance(positive, bool):
            return positive
        text = str(positive).strip().lower()
        if text in ("true", "1", "false", "0"):
            return text in ("true", "1")
    elif dtype.is_numeric():
        if isinstance(positive, numbers.Real) and not isinstance(positive, bool):
            return positive
        try:
            number = float(str(positive))
            return int(number) if number.is_integer() and dtype.is_integer() else number
        except ValueError:
            pass
    elif isinstance(positive, str):
        return positive
    else:
        return str(positive)
    raise InputError(
        f"expected positive= to be a value of the {dtype} label column {label!r}, got "
        f"{positive!r}; hint: pass one of the label values"
    )


def label_expr(
    lf: pl.LazyFrame,
    schema: pl.Schema,
    label: str,
    positive: Any,
    engine: Engine,
    files: list[str] | None,
) -> tuple[pl.Expr, pl.Expr, Any, tuple[Any, ...] | None]:
    """(y as Boolean, 'label not allowed' as Boolean, positive value, label values found).

    The label values are read (one pass) when the labels are neither booleans nor 0/1 with
    the default positive; they are None otherwise. Which values occur is checked here as far
    as one part of the data can tell (at most one value other than ``positive``), and over
    all parts when states merge (:func:`check_label_values`): a part without positives is
    ordinary.
    """
    dtype = schema[label]
    col = pl.col(label)
    positive = _coerce_positive(positive, dtype, label)
    if dtype == pl.Boolean:
        pos = True if positive is None else positive
        return (col if pos else ~col), pl.lit(False), pos, None
    if dtype.is_numeric() and positive is None:
        return col == 1, ~((col == 0) | (col == 1)), 1, None
    if not (dtype.is_numeric() or dtype in (pl.String, pl.Categorical, pl.Enum)):
        raise InputError(
            f"expected the label column {label!r} to be boolean, numeric or string, got {dtype}; "
            "hint: cast it, or pass a LazyFrame with a derived label column"
        )
    values = _label_values(lf, label, engine, files)
    if positive is None:
        raise InputError(
            f"expected 0/1 or boolean labels in {label!r}, found {dtype} values "
            f"{_shown(values)}; hint: pass positive=<the positive class>"
        )
    if dtype in (pl.Categorical, pl.Enum):
        col = col.cast(pl.String)
    check_label_values(values, positive, label)
    return col == positive, pl.lit(False), positive, tuple(values)


def _shown(values: list[Any]) -> str:
    return ", ".join(repr(v) for v in values[:10]) + (" …" if len(values) > 10 else "")


def check_label_values(values: list[Any], positive: Any, label: str) -> None:
    """Raise unless the label values are ``positive`` and at most one other value.

    >>> check_label_values(["ham", "spam"], "spam", "y")
    >>> check_label_values(["ham"], "spam", "y")  # no positives: ordinary
    >>> check_label_values(["ham", "eggs"], "spam", "y")
    Traceback (most recent call last):
    ...
    streameval.errors.InputError: expected two classes in 'y' with positive='spam', but ...
    """
    others = [v for v in values if v != positive]
    if len(others) > 1:
        what = (
            "more than two label values"
            if positive in values
            else f"the positive value {positive!r} never occurs"
        )
        raise InputError(
            f"expected two classes in {label!r} with positive={positive!r}, but {what}: "
            f"found {_shown(sorted(values))}; hint: filter the rows or fix positive= (values "
            "are case-sensitive)"
        )


def diagnose_bad_rows(
    lf: pl.LazyFrame,
    label: str,
    score: str,
    weight: str | None,
    not_allowed: pl.Expr,
    engine: Engine,
    files: list[str] | None,
    optional: bool = False,
) -> StreamevalError:
    """Name the first problem among the rows the state counted as bad (error path only).

    ``optional``: the labels are optional, so a null label is no problem.
    """
    s, y = pl.col(score), pl.col(label)
    checks: list[pl.Expr] = [
        (pl.lit(0) if optional else y.is_null().sum()).alias("null_label"),
        s.is_null().sum().alias("null_score"),
        s.cast(pl.Float64).is_nan().sum().alias("nan_score"),
        s.cast(pl.Float64).is_infinite().sum().alias("inf_score"),
        not_allowed.fill_null(False).sum().alias("bad_label"),
        y.filter(not_allowed.fill_null(False)).unique().sort().head(5).implode().alias("examples"),
    ]
    if weight is not None:
        w = pl.col(weight).cast(pl.Float64)
        checks += [
            w.is_null().sum().alias("null_weight"),
            (w < 0).sum().alias("neg_weight"),
            (~w.is_finite()).fill_null(False).sum().alias("nonfinite_weight"),
            w.filter(w < 0).min().alias("min_weight"),
        ]
    r = collect(lf.select(checks), engine, files).row(0, named=True)
    return bad_rows_error(r, label, score, weight)


def bad_rows_error(
    r: Mapping[str, Any], label: str, score: str, weight: str | None
) -> StreamevalError:
    """The error naming the first problem among bad rows, from their counts ``r``.

    ``r`` holds the counts :func:`diagnose_bad_rows` takes (``null_label``, ``null_score``,
    ``nan_score``, ``inf_score``, ``bad_label`` and up to five ``examples`` of bad labels;
    with a weight ``null_weight``, ``neg_weight``, ``nonfinite_weight`` and ``min_weight``),
    however they were counted (by Polars here, by Spark for a Spark DataFrame).

    >>> counts = dict(null_label=0, null_score=0, nan_score=2, inf_score=0, bad_label=0)
    >>> str(bad_rows_error(counts, "y", "p", None))[:52]
    "expected finite scores in 'p', found 2 NaN and 0 inf"
    """
    if r["null_label"] or r["null_score"]:
        return InputError(
            f"expected no nulls, found {r['null_label']} null labels in {label!r} and "
            f"{r['null_score']} null scores in {score!r}; hint: filter them out, or pass "
            "drop_nulls=True to drop them with a count"
        )
    if r["nan_score"] or r["inf_score"]:
        return InputError(
            f"expected finite scores in {score!r}, found {r['nan_score']} NaN and "
            f"{r['inf_score']} infinite values; hint: fix the model output or filter those rows"
        )
    if r["bad_label"]:
        return InputError(
            f"expected labels 0/1 (or booleans) in {label!r}, found {r['bad_label']} row(s) "
            f"with other values such as {r['examples']}; hint: pass positive=<the positive class> "
            "if the column holds two other values"
        )
    if weight is not None and (r["null_weight"] or r["neg_weight"] or r["nonfinite_weight"]):
        return InputError(
            f"expected finite non-negative weights in {weight!r}, found {r['neg_weight']} "
            + (f"negative (smallest {r['min_weight']}), " if r["neg_weight"] else "negative, ")
            + f"{r['null_weight']} null and {r['nonfinite_weight']} non-finite; hint: weights "
            "are sample weights, as sklearn's sample_weight"
        )
    return InputError("found invalid rows in the source; hint: check label, score and weight")
