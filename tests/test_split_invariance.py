"""Same rows, same answer, however they are chunked.

For every task, ``evaluate(whole)`` and ``merge(accumulate(part) for part in split)`` give the
same metric table, or the same kind of error: whatever depends on which values occur is
decided over all rows (classes found in the data, a binary label's values), never per chunk.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn.metrics import accuracy_score, confusion_matrix

import streameval as se

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _recorded(function: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    return result, [str(w.message) for w in caught]


# --- issue 25, item 1: a chunk holding one class ---------------------------------------------


def test_a_chunk_with_one_class_accumulates_and_merges() -> None:
    df = pl.DataFrame({"y": [0, 0, 0, 1, 2, 1], "yh": [0, 0, 0, 2, 2, 1]})
    kw: dict[str, Any] = {"task": "multiclass", "label": "y", "prediction": "yh"}
    quiet = se.accumulate(df[:3], **kw)  # one class only: an ordinary quiet day
    merged = se.merge([quiet, se.accumulate(df[3:], **kw)])
    assert_frame_equal(merged.metrics(), se.evaluate(df, **kw))
    assert merged.spec.classes == (0, 1, 2)


def test_chunks_missing_classes_merge_with_a_list_of_score_columns() -> None:
    df = pl.DataFrame(
        {
            "y": ["cat", "cat", "dog", "bird", "dog"],
            "a": [0.2, 0.1, 0.3, 0.6, 0.2],
            "b": [0.7, 0.8, 0.1, 0.3, 0.2],
            "c": [0.1, 0.1, 0.6, 0.1, 0.6],
        }
    )
    kw: dict[str, Any] = {"task": "multiclass", "label": "y", "scores": ["a", "b", "c"]}
    parts = [se.accumulate(df[i : i + 2], **kw) for i in (0, 2, 4)]
    merged = se.merge(parts).metrics(metrics=["log_loss", "brier", "top_k_accuracy"])
    assert_frame_equal(
        merged, se.evaluate(df, metrics=["log_loss", "brier", "top_k_accuracy"], **kw)
    )
    with pytest.raises(se.InputError, match="one score column per class"):
        parts[0].metrics()  # two classes for three columns: which column is which is unknown


def test_one_class_in_all_the_data_follows_sklearn_with_one_warning() -> None:
    y = [0, 0, 0, 0]
    df = pl.DataFrame({"y": y, "yh": y})
    kw: dict[str, Any] = {"task": "multiclass", "label": "y", "prediction": "yh"}
    table, messages = _recorded(se.evaluate, df, **kw)
    assert table["accuracy"].item() == accuracy_score(y, y)
    assert table["cohen_kappa"].item() is None
    assert len([m for m in messages if "one class" in m]) == 1
    state = se.accumulate(df, **kw)
    cells = state.confusion_matrix(wide=True).drop("actual").to_numpy()
    np.testing.assert_array_equal(cells, confusion_matrix(y, y))


# --- issue 25, item 2: an error or a null depending on the split ------------------------------


def test_a_positive_value_absent_everywhere_raises_whole_or_split() -> None:
    df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.6, 0.8, 0.3, 0.9]})
    kw: dict[str, Any] = {"label": "y", "score": "p", "positive": 2}
    with pytest.raises(se.InputError, match="never occurs"):
        se.evaluate(df, **kw)
    parts = [se.accumulate(df.filter(pl.col("y") == v), **kw) for v in (0, 1)]
    with pytest.raises(se.InputError, match="never occurs"):
        se.merge(parts).metrics()


def test_a_chunk_without_positives_is_ordinary() -> None:
    df = pl.DataFrame({"y": ["ham", "ham", "spam", "ham"], "p": [0.1, 0.2, 0.9, 0.6]})
    kw: dict[str, Any] = {"label": "y", "score": "p", "positive": "spam", "precision": "exact"}
    parts = [se.accumulate(df[:2], **kw), se.accumulate(df[2:], **kw)]
    assert_frame_equal(se.merge(parts).metrics(), se.evaluate(df, **kw))


# --- issue 25, item 3: the multiclass warning's count -----------------------------------------


def test_the_multiclass_warning_counts_the_groups_it_nulls() -> None:
    df = pl.DataFrame(
        {
            "g": [1, 1, 2, 2, 3],
            "y": [0, 1, 2, 0, 1],
            "p0": [1.5, 0.1, 0.2, 0.7, 0.2],
            "p1": [0.1, 0.8, 0.2, 0.2, 1.2],
            "p2": [0.1, 0.1, 0.6, 0.1, 0.0],
        }
    )
    kw: dict[str, Any] = {"task": "multiclass", "label": "y", "scores": ["p0", "p1", "p2"]}
    table, messages = _recorded(se.evaluate, df, by="g", **kw)
    nulled = table.filter(pl.col("log_loss").is_null()).height
    outside = [m for m in messages if "outside [0, 1]" in m]
    assert nulled == 2 and len(outside) == 1
    assert f"null for {nulled} group row(s)" in outside[0]


# --- the property: whole and any split agree, for every task ----------------------------------

SCORES = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]) | st.floats(0.0, 1.0)
WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 2.0]) | st.floats(0.01, 5.0)


def _frame(columns: dict[str, tuple[list[Any], Any]]) -> pl.DataFrame:
    """A frame with explicit dtypes (so that empty parts keep them)."""
    return pl.DataFrame([pl.Series(name, v, dtype=t) for name, (v, t) in columns.items()])


def _common(draw: st.DrawFn, n: int, columns: dict[str, tuple[list[Any], Any]]) -> dict[str, Any]:
    """Adds a group key and a weight column (maybe); the matching keywords."""
    kw: dict[str, Any] = {}
    if draw(st.booleans()):
        columns["g"] = (draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), pl.Int64)
        kw["by"] = "g"
    if draw(st.booleans()):
        columns["w"] = (draw(st.lists(WEIGHTS, min_size=n, max_size=n)), pl.Float64)
        kw["weight"] = "w"
    return kw


@st.composite
def binary_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, Any]]:
    """0/1, boolean or string labels; a positive value that may never occur; scores."""
    n = draw(st.integers(0, 14))
    kind = draw(st.sampled_from(["01", "bool", "strings", "absent"]))
    pools: dict[str, tuple[list[Any], Any]] = {
        "01": ([0, 1], pl.Int64),
        "bool": ([False, True], pl.Boolean),
        "strings": (["ham", "spam"] + (["eggs"] if draw(st.booleans()) else []), pl.String),
        "absent": ([0, 1], pl.Int64),
    }
    pool, dtype = pools[kind]
    labels = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    columns = {"y": (labels, dtype), "p": (draw(st.lists(SCORES, min_size=n, max_size=n)), None)}
    columns["p"] = (columns["p"][0], pl.Float64)
    kw = _common(draw, n, columns)
    positive = {"strings": "spam", "absent": 2}.get(kind)
    precision = draw(st.sampled_from(["exact", 4]))
    return _frame(columns), kw | {"label": "y", "score": "p", "positive": positive,
                                  "precision": precision}  # fmt: skip


@st.composite
def multiclass_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Labels from a subset of the classes (maybe one), a prediction and/or score columns."""
    k = draw(st.integers(2, 4))
    strings = draw(st.booleans())
    classes: list[Any] = [f"c{i}" for i in range(k)] if strings else list(range(0, 2 * k, 2))
    present = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k, unique=True))
    n = draw(st.integers(0, 14))
    y = draw(st.lists(st.sampled_from(present), min_size=n, max_size=n))
    dtype = pl.String if strings else pl.Int64
    columns: dict[str, tuple[list[Any], Any]] = {"y": ([classes[i] for i in y], dtype)}
    mode = draw(st.sampled_from(["prediction", "scores", "both"]))
    kw: dict[str, Any] = {"task": "multiclass", "label": "y"}
    if mode != "scores":
        pred = draw(st.lists(st.sampled_from(present), min_size=n, max_size=n))
        columns["yh"] = ([classes[i] for i in pred], dtype)
        kw["prediction"] = "yh"
    if mode != "prediction":
        rows = draw(st.lists(st.lists(SCORES, min_size=k, max_size=k), min_size=n, max_size=n))
        rows = [[v / sum(r) for v in r] if sum(r) > 0 else [1.0 / k] * k for r in rows]
        for j in range(k):
            columns[f"p{j}"] = ([r[j] for r in rows], pl.Float64)
        kw["scores"] = [f"p{j}" for j in range(k)]
    if draw(st.booleans()):
        kw["classes"] = classes
    kw |= _common(draw, n, columns)
    return _frame(columns), kw | {"precision": draw(st.sampled_from(["exact", 4]))}


@st.composite
def regression_cases(draw: st.DrawFn) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Targets and predictions with ties and zeros."""
    n = draw(st.integers(0, 14))
    values = st.sampled_from([0.0, 1.0, 2.5, 10.0]) | st.floats(-5.0, 20.0)
    columns: dict[str, tuple[list[Any], Any]] = {
        "y": (draw(st.lists(values, min_size=n, max_size=n)), pl.Float64),
        "f": (draw(st.lists(values, min_size=n, max_size=n)), pl.Float64),
    }
    kw = _common(draw, n, columns)
    precision = draw(st.sampled_from(["exact", 6]))
    return _frame(columns), kw | {"task": "regression", "label": "y", "prediction": "f",
                                  "precision": precision}  # fmt: skip


def _split(data: st.DataObject, df: pl.DataFrame) -> list[pl.DataFrame]:
    """Parts of the rows: at random cuts (some parts empty or of one row), after sorting by
    label maybe, or one part per label value (row order changes no metric)."""
    how = data.draw(st.sampled_from(["cuts", "sorted cuts", "by label"]), label="split")
    if how == "by label":
        return [df.clear(), *df.partition_by("y", maintain_order=True)]
    if how == "sorted cuts":
        df = df.sort("y", maintain_order=True)
    cuts = data.draw(st.lists(st.integers(0, df.height), max_size=4), label="cuts")
    edges = [0, *sorted(cuts), df.height]
    return [df[a:b] for a, b in itertools.pairwise(edges)]


def _outcome(function: Any) -> Any:
    """The function's result, or the class of the StreamevalError it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return function()
        except se.StreamevalError as error:
            return type(error)


def _same_answer(df: pl.DataFrame, kw: dict[str, Any], parts: list[pl.DataFrame]) -> None:
    whole = _outcome(lambda: se.evaluate(df, **kw))
    split = _outcome(lambda: se.merge([se.accumulate(p, **kw) for p in parts]).metrics())
    if isinstance(whole, type) or isinstance(split, type):
        raised = [x if isinstance(x, type) else "a table" for x in (whole, split)]
        assert raised[0] is raised[1], f"whole: {raised[0]}, split: {raised[1]}"
        return
    assert_frame_equal(whole, split, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


@SETTINGS
@given(binary_cases(), st.data())
def test_binary_whole_and_split_agree(case: tuple[pl.DataFrame, dict[str, Any]], data: Any) -> None:
    df, kw = case
    _same_answer(df, kw, _split(data, df))


@SETTINGS
@given(multiclass_cases(), st.data())
def test_multiclass_whole_and_split_agree(
    case: tuple[pl.DataFrame, dict[str, Any]], data: Any
) -> None:
    df, kw = case
    _same_answer(df, kw, _split(data, df))


@SETTINGS
@given(regression_cases(), st.data())
def test_regression_whole_and_split_agree(
    case: tuple[pl.DataFrame, dict[str, Any]], data: Any
) -> None:
    df, kw = case
    _same_answer(df, kw, _split(data, df))
