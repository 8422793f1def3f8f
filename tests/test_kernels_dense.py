"""Bucket counting (streameval.kernels.dense) gives the sort kernel's and Polars' states."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sort_kernel import assert_same_metrics, both, frames
from test_sort_kernel_bucketed import PRECISIONS, THRESHOLDS, assert_same_state

import streameval as se
from reference import kernel_path
from streameval.kernels.buckets import bucketed_state
from streameval.pipeline import prepare, unit_runs
from streameval.tasks.binary.metrics import runs_metrics
from streameval.tasks.common import Inputs


def three(call: Callable[[], Any]) -> tuple[Any, Any, Any]:
    """``call()`` counted densely, then sorted, then by the Polars path."""
    fast, slow = both(call)
    with kernel_path("no-dense"):  # the sort kernel only, for bucketed states too
        sorted_ = call()
    return fast, sorted_, slow


def check_states(call: Callable[[], se.State]) -> None:
    fast, sorted_, slow = three(call)
    assert_same_state(fast, sorted_)
    assert_same_state(fast, slow)


def check_metrics(call: Callable[[], pl.DataFrame]) -> None:
    fast, sorted_, slow = three(call)
    assert_same_metrics(fast, sorted_)
    assert_same_metrics(fast, slow)


# thresholds anywhere: most fall inside a bucket, several may share one
ANY_THRESHOLDS = st.lists(
    st.floats(-50, 50, allow_nan=False) | st.floats(0, 1, allow_nan=False),
    min_size=1,
    max_size=5,
    unique=True,
)


@given(frames(), PRECISIONS, THRESHOLDS | ANY_THRESHOLDS)
def test_dense_states_and_metrics_match_the_sort_and_polars_paths(frame, precision, thresholds):
    df, keys, weight = frame
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    check_states(lambda: se.accumulate(df, thresholds=thresholds, **kw))
    check_metrics(lambda: se.evaluate(df, threshold=thresholds, **kw))


@settings(max_examples=15)
@given(frames(), PRECISIONS, THRESHOLDS | ANY_THRESHOLDS)
def test_dense_hive_units_match(tmp_path_factory, frame, precision, thresholds):
    df, keys, weight = frame
    root = tmp_path_factory.mktemp("hive")
    df.write_parquet(root, partition_by="d")
    keys = ["d", *(k for k in keys if k != "d")]
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    check_states(lambda: se.accumulate(root, thresholds=thresholds, **kw))
    check_metrics(lambda: se.evaluate(root, threshold=thresholds, **kw))


def _sample(n: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.05  # imbalanced
    logit = rng.normal(-3, 2, n) + 2 * y
    return pl.DataFrame(
        {
            "g": pl.Series([f"s{i}" for i in rng.integers(0, groups, n)], dtype=pl.String),
            "h": rng.integers(-2, 3, n).astype(np.int16),
            "y": y,
            "p": 1 / (1 + np.exp(-logit)),
            "tied": np.round(rng.random(n), 2),
            "logit": logit,
            "margin": logit * 1e5,
            "w": np.where(rng.random(n) < 0.1, 0.0, rng.exponential(1, n)),
        }
    )


@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("score", ["p", "tied", "logit", "margin"])
def test_the_default_precision_counts_densely(score, weight):
    df = _sample(200_000, 4, 3)  # enough rows per (group, binade) for dense cells
    thresholds = [0.3, 0.5, -1.7, 0.30000001, 0.2999]
    inputs = Inputs(label="y", score=score, weight=weight, thresholds=tuple(thresholds))
    plan = prepare(df, inputs, by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is not None  # counted, not sorted
    table = bucketed_state(runs, plan.spec, plan.schema, {})
    assert table is not None and int(table["n" if weight else "pos"].sum()) > 0
    if weight is None:
        assert int(table["pos"].sum() + table["neg"].sum()) == df.height
        assert runs_metrics(runs, plan.spec, sorted(thresholds)) is not None
    kw: dict[str, Any] = dict(label="y", score=score, by="g", weight=weight)
    check_states(lambda: se.accumulate(df, thresholds=thresholds, **kw))
    check_metrics(lambda: se.evaluate(df, threshold=thresholds, **kw))


@pytest.mark.parametrize("precision", [11, 16])
def test_many_groups_with_few_rows_each_are_counted_too(precision):
    """Far more cells than rows (500 groups, 40 rows each): the same kernel, no sort."""
    df = _sample(20_000, 500, 4).with_columns(pl.col("p") * 0.5 + 0.5)  # one binade: packs
    plan = prepare(df, Inputs(label="y", score="p", precision=precision), by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is not None
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision=precision)
    check_states(lambda: se.accumulate(df, **kw))
    check_metrics(lambda: se.evaluate(df, **kw))


def test_sparse_group_codes_are_renumbered():
    """Codes of two keys side by side span far more than the groups present."""
    rng = np.random.default_rng(8)
    n = 30_000
    df = _sample(n, 3, 6).with_columns(
        big=pl.Series(rng.integers(0, 2**40, 50))[rng.integers(0, 50, n)].cast(pl.Int64),
        small=pl.Series(rng.integers(0, 1000, n)).cast(pl.Int32),
    )
    kw: dict[str, Any] = dict(label="y", score="p", by=["small", "g"])
    check_states(lambda: se.accumulate(df, **kw))
    check_metrics(lambda: se.evaluate(df, **kw))


def test_a_precision_above_the_window_bound_is_sorted():
    df = _sample(5000, 10, 5)
    plan = prepare(df, Inputs(label="y", score="p", precision=24), by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is None
    check_states(lambda: se.accumulate(df, label="y", score="p", by="g", precision=24))


@pytest.mark.parametrize("weight", [None, "w"])
def test_overflowing_squared_errors_are_sorted_then_left_to_polars(weight):
    df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 1e300, -1e200, 0.4], "w": [1.0, 0.0, 2, 1]})
    plan = prepare(df, Inputs(label="y", score="p", weight=weight))
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is None
    assert bucketed_state(runs, plan.spec, plan.schema, {}) is None
    fast, _, slow = three(lambda: se.accumulate(df, label="y", score="p", weight=weight))
    assert fast.table.sort("bucket").equals(slow.table.sort("bucket"), null_equal=True)


def test_one_class_groups_and_one_row_groups():
    df = pl.DataFrame(
        {
            "g": ["a", "a", "b", "c", "c", "c"],
            "y": [1, 1, 0, 0, 1, 0],
            "p": [0.2, 0.2, 0.7, 1.0, 0.0, 0.5],
        }
    )
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision=3)
    check_states(lambda: se.accumulate(df, thresholds=[0.3, 1.0], **kw))
    check_metrics(lambda: se.evaluate(df, threshold=[0.3, 1.0], **kw))


def test_bucketed_runs_serve_only_their_spec():
    df = _sample(5000, 3, 6)
    plan = prepare(df, Inputs(label="y", score="tied"), by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is not None
    other = prepare(df, Inputs(label="y", score="tied", precision=8), by="g").spec
    with pytest.raises(ValueError, match="bucketed at"):
        bucketed_state(runs, other, plan.schema, {})


def test_weights_that_could_overflow_a_sum_are_sorted():
    df = _sample(2000, 3, 7).with_columns(pl.col("w") * 1e296)
    plan = prepare(df, Inputs(label="y", score="tied", weight="w"), by="g")
    runs = unit_runs(plan)
    assert runs is not None and runs.sums is None
    kw: dict[str, Any] = dict(label="y", score="tied", by="g", weight="w")
    check_states(lambda: se.accumulate(df, **kw))
