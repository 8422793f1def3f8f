"""The sort kernel gives the Polars path's bucketed states and metrics (buckets, cuts, sums)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_sort_kernel import assert_same_metrics, both, frames

import streameval as se
from streameval.kernels.buckets import bucketed_state
from streameval.pipeline import prepare, state_table, unit_runs
from streameval.tasks.binary.metrics import runs_metrics
from streameval.tasks.common import Inputs


def assert_same_state(fast: se.State, slow: se.State) -> None:
    """Same spec, columns, types, rows and counts; float sums equal to 1e-12 relative.

    Log-loss and Brier sums are never bit-exact, even unweighted: the kernel multiplies a
    run's term by its row count where Polars adds the rows' terms. Sums in the subnormal
    range (weights near 1e-308) keep no relative precision: below 1e-300 they count as equal.
    """
    assert fast.spec == slow.spec
    order = [*fast.keys, "bucket"]
    left = fast.table.sort(order, nulls_last=False)
    right = slow.table.sort(order, nulls_last=False)
    assert left.schema == right.schema
    assert_frame_equal(left, right, check_exact=False, rel_tol=1e-12, abs_tol=1e-300)


PRECISIONS = st.sampled_from([0, 1, 2, 4, 7, 11, 16, 24])
# bucket edges at every precision (0, ±0.5, 1, 0.25), edges at some, and none (0.3, 0.1)
THRESHOLDS = st.lists(
    st.sampled_from([0.0, 0.5, 1.0, 0.25, 0.75, 0.3, 0.1, 0.9, -2.5, 7.0, 1e-300, 1e300]),
    min_size=1,
    max_size=4,
    unique=True,
)


@given(frames(), PRECISIONS, THRESHOLDS)
def test_bucketed_state_and_metrics_match_the_polars_path(frame, precision, thresholds):
    df, keys, weight = frame
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    state = both(lambda: se.accumulate(df, thresholds=thresholds, **kw))
    assert_same_state(*state)
    assert_same_metrics(*both(lambda: se.evaluate(df, threshold=thresholds, **kw)))


@settings(max_examples=15)
@given(frames(), PRECISIONS, THRESHOLDS)
def test_bucketed_hive_units_match_the_polars_path(tmp_path_factory, frame, precision, thresholds):
    root, keys, weight = hive_copy(tmp_path_factory, frame)
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    state = both(lambda: se.accumulate(root, thresholds=thresholds, **kw))
    assert_same_state(*state)
    assert_same_metrics(*both(lambda: se.evaluate(root, threshold=thresholds, **kw)))


def hive_copy(
    factory: pytest.TempPathFactory, frame: tuple[pl.DataFrame, list[str], str | None]
) -> tuple[Path, list[str], str | None]:
    """A :func:`frames` frame written partitioned by ``d``: root, keys (``d`` first), weight."""
    df, keys, weight = frame
    root = factory.mktemp("hive")
    df.write_parquet(root, partition_by="d")
    return root, ["d", *(k for k in keys if k != "d")], weight


def _sample(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "g": pl.Series([["a", "b", None][i] for i in rng.integers(0, 3, n)], dtype=pl.String),
            "y": rng.integers(0, 2, n),
            "p": np.round(rng.random(n), 3),
            "logit": rng.normal(0, 4, n),
            "w": np.where(rng.random(n) < 0.2, 0.0, rng.random(n)),
        }
    )


def test_the_kernel_builds_default_bucketed_states():
    df = _sample(5000, 1)
    for score in ("p", "logit"):
        plan = prepare(df, Inputs(label="y", score=score, thresholds=(0.3,)), by="g")
        runs = unit_runs(plan)
        assert runs is not None and not plan.spec.exact and plan.spec.splits
        table = bucketed_state(runs, plan.spec, plan.schema, {})
        assert table is not None
        assert table.equals(state_table(plan, None, runs))
        assert int(table["pos"].sum() + table["neg"].sum()) == df.height
        assert runs_metrics(runs, plan.spec, [0.3, 0.5]) is not None  # metrics from the buckets


@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("score", ["p", "logit"])
def test_large_samples_match_the_polars_path(score, weight):
    df = _sample(50_000, 2)
    kw: dict[str, Any] = dict(label="y", score=score, by="g", weight=weight)
    thresholds = [0.3, 0.5, -1.7]
    assert_same_state(*both(lambda: se.accumulate(df, thresholds=thresholds, **kw)))
    assert_same_metrics(*both(lambda: se.evaluate(df, threshold=thresholds, **kw)))


@pytest.mark.parametrize("weight", [None, "w"])
def test_overflowing_squared_errors_fall_back(weight):
    """Scores whose (p − y)² overflows: the Polars path's inf/nan sums are kept as they are."""
    df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 1e300, -1e200, 0.4], "w": [1.0, 0.0, 2, 1]})
    plan = prepare(df, Inputs(label="y", score="p", weight=weight))
    runs = unit_runs(plan)
    assert runs is not None
    assert bucketed_state(runs, plan.spec, plan.schema, {}) is None
    fast, slow = both(lambda: se.accumulate(df, label="y", score="p", weight=weight))
    assert fast.table.sort("bucket").equals(slow.table.sort("bucket"), null_equal=True)
