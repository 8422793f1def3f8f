"""Laws of the state: merge is a commutative monoid, accumulate is a homomorphism from
concatenation to merge, files round-trip, and engines and row order change nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import assert_states_equal, binary_frames, chunks

PRECISIONS = st.one_of(st.just("exact"), st.integers(0, 24))
THRESHOLDS = st.lists(st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.7, 1.0]), min_size=1, max_size=3)


def accumulate(df: pl.DataFrame, weighted: bool, **kw: Any) -> se.State:
    return se.accumulate(df, label="y", score="p", by="g", weight="w" if weighted else None, **kw)


def three_parts(data: st.DataObject, df: pl.DataFrame) -> list[pl.DataFrame]:
    i, j = sorted(data.draw(st.lists(st.integers(0, df.height), min_size=2, max_size=2)))
    return [df[:i], df[i:j], df[j:]]


# --- merge is a commutative monoid ------------------------------------------------------------


@given(binary_frames(), PRECISIONS, st.data())
def test_merge_is_commutative_and_associative(frame, precision, data):
    df, _, weighted = frame
    a, b, c = (accumulate(part, weighted, precision=precision) for part in three_parts(data, df))
    assert_states_equal(se.merge([a, b]), se.merge([b, a]))
    left = se.merge([se.merge([a, b]), c])
    assert_states_equal(left, se.merge([a, se.merge([b, c])]))
    assert_states_equal(left, se.merge([c, a, b]))
    assert_states_equal(left, a.merge(b, c))


@given(binary_frames(), PRECISIONS)
def test_empty_state_is_the_identity(frame, precision):
    df, _, weighted = frame
    state = accumulate(df, weighted, precision=precision)
    empty = accumulate(df.head(0), weighted, precision=precision)
    assert empty.table.height == 0
    assert_states_equal(se.merge([state, empty]), state)
    assert_states_equal(se.merge([empty, state]), state)
    assert_states_equal(se.merge([empty, empty]), empty)


# --- accumulate(a ++ b) == merge(accumulate(a), accumulate(b)) --------------------------------


@given(binary_frames(), PRECISIONS, THRESHOLDS)
def test_accumulate_of_concatenation_is_merge_of_parts(frame, precision, thresholds):
    df, cuts, weighted = frame
    kw = {"precision": precision, "thresholds": thresholds}
    whole = accumulate(df, weighted, **kw)
    parts = se.merge([accumulate(part, weighted, **kw) for part in chunks(df, cuts)])
    assert_states_equal(parts, whole)


@given(binary_frames(probabilities=False), PRECISIONS)
def test_accumulate_of_concatenation_is_merge_of_parts_on_logits(frame, precision):
    df, cuts, weighted = frame
    whole = accumulate(df, weighted, precision=precision, thresholds=[0.0])
    parts = [
        accumulate(part, weighted, precision=precision, thresholds=[0.0])
        for part in chunks(df, cuts)
    ]
    assert_states_equal(se.merge(parts), whole)


# --- state files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def state_path(tmp_path_factory):
    return tmp_path_factory.mktemp("states") / "state.parquet"


def _relabel(df: pl.DataFrame, labels: str) -> tuple[pl.DataFrame, Any]:
    """Labels as ints, booleans or strings, and the positive value to pass."""
    if labels == "bool":
        return df.with_columns(pl.col("y") == 1), None
    if labels == "string":
        return df.with_columns(pl.col("y").replace_strict({0: "ham", 1: "spam"})), "spam"
    return df, None


def _rekey(df: pl.DataFrame, keys: str) -> pl.DataFrame:
    """Group keys as ints, strings with a null, or dates."""
    df = df.with_columns(pl.col("g").cast(pl.Int64))
    if keys == "string":
        return df.with_columns(
            g=pl.when(pl.col("g") == 2).then(None).otherwise(pl.format("seg-{}", pl.col("g")))
        )
    if keys == "date":
        return df.with_columns(g=pl.lit(dt.date(2026, 10, 1)) + pl.duration(days=pl.col("g")))
    return df


@given(
    binary_frames(),
    PRECISIONS,
    THRESHOLDS,
    st.sampled_from(["int", "bool", "string"]),
    st.sampled_from(["int", "string", "date", "none"]),
    st.booleans(),
)
def test_write_read_round_trip_is_lossless(
    state_path, frame, precision, thresholds, labels, keys, empty
):
    df, _, weighted = frame
    df, positive = _relabel(_rekey(df, keys), labels)
    if empty:
        df = df.head(0)
    state = se.accumulate(
        df,
        label="y",
        score="p",
        by=None if keys == "none" else "g",
        weight="w" if weighted else None,
        positive=positive,
        precision=precision,
        thresholds=thresholds,
    )
    state.write(state_path)
    back = se.read_state(state_path)
    assert back.spec == state.spec
    assert back.table.schema == state.table.schema
    assert back.table.equals(state.table)


# --- engines and row order --------------------------------------------------------------------


@settings(max_examples=30)
@given(binary_frames(), PRECISIONS)
def test_streaming_and_in_memory_engines_agree(frame, precision):
    df, _, weighted = frame
    streaming = accumulate(df, weighted, precision=precision, engine="streaming")
    in_memory = accumulate(df, weighted, precision=precision, engine="in-memory")
    assert_states_equal(streaming, in_memory)


@given(binary_frames(), PRECISIONS, st.randoms(use_true_random=False))
def test_metrics_do_not_depend_on_row_order(frame, precision, rnd):
    df, _, weighted = frame
    order = list(range(df.height))
    rnd.shuffle(order)
    shuffled = df[order]
    thresholds = [0.3, 0.5]
    state = accumulate(df, weighted, precision=precision, thresholds=thresholds)
    state_shuffled = accumulate(shuffled, weighted, precision=precision, thresholds=thresholds)
    assert_states_equal(state, state_shuffled)
    assert_frame_equal(
        state.metrics(thresholds), state_shuffled.metrics(thresholds), rel_tol=1e-9, abs_tol=1e-9
    )
