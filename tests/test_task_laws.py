"""Multiclass, regression and paired states obey the binary state's laws: merge is a commutative
monoid, accumulate turns concatenation into merge, files round-trip, engines agree.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import streameval as se
from reference import assert_states_equal, binary_frames
from reference_multiclass import multiclass_frames
from reference_regression import regression_frames

PRECISIONS = st.one_of(st.just("exact"), st.integers(0, 24))


def frames() -> st.SearchStrategy[tuple[pl.DataFrame, dict[str, Any]]]:
    """A multiclass or regression frame with the accumulate arguments that read it."""

    def multiclass(drawn: tuple[Any, ...]) -> tuple[pl.DataFrame, dict[str, Any]]:
        df, classes, _, weighted = drawn
        scores = [c for c in df.columns if c.startswith("p") and c != "pred"]
        kw = {"task": "multiclass", "label": "y", "classes": classes, "scores": scores or None}
        kw["prediction"] = "pred" if "pred" in df.columns else None
        return df, kw | {"weight": "w" if weighted else None}

    def regression(drawn: tuple[Any, ...]) -> tuple[pl.DataFrame, dict[str, Any]]:
        df, _, weighted = drawn
        kw = {"task": "regression", "label": "y", "prediction": "f"}
        return df, kw | {"weight": "w" if weighted else None}

    def paired(drawn: tuple[Any, ...]) -> tuple[pl.DataFrame, dict[str, Any]]:
        df, _, weighted = drawn
        df = df.with_columns(q=(pl.col("p") * 0.5 + 0.25).round(2))
        kw = {"task": "paired", "label": "y", "scores": ["p", "q"]}
        return df, kw | {"weight": "w" if weighted else None}

    return (
        multiclass_frames().map(multiclass)
        | regression_frames().map(regression)
        | binary_frames().map(paired)
    )


def parts(data: st.DataObject, df: pl.DataFrame) -> list[pl.DataFrame]:
    i, j = sorted(data.draw(st.lists(st.integers(0, df.height), min_size=2, max_size=2)))
    return [df[:i], df[i:j], df[j:]]


@given(frames(), PRECISIONS, st.data())
def test_merge_laws_and_concatenation(frame, precision, data):
    df, kw = frame
    a, b, c = (se.accumulate(p, by="g", precision=precision, **kw) for p in parts(data, df))
    whole = se.accumulate(df, by="g", precision=precision, **kw)
    assert_states_equal(se.merge([a, b]), se.merge([b, a]))
    assert_states_equal(se.merge([se.merge([a, b]), c]), se.merge([a, se.merge([b, c])]))
    assert_states_equal(se.merge([a, b, c]), whole)
    empty = se.accumulate(df.head(0), by="g", precision=precision, **kw)
    assert_states_equal(se.merge([whole, empty]), whole)


@given(frames(), PRECISIONS)
def test_write_read_round_trip_and_engines(tmp_path_factory, frame, precision):
    df, kw = frame
    state = se.accumulate(df, by="g", precision=precision, **kw)
    path = tmp_path_factory.mktemp("state") / "state.parquet"
    state.write(path)
    back = se.read_state(path)
    assert back.spec == state.spec
    assert back.table.equals(state.table)
    in_memory = se.accumulate(df, by="g", precision=precision, engine="in-memory", **kw)
    assert_states_equal(in_memory, state)
