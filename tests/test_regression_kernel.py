"""The regression kernel's states (compiled histograms and totals) against the Polars group-by."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn import metrics as skm

import streameval as se
from reference import kernel_path
from reference_regression import POWER, regression_frames
from streameval.kernels import regression as kernel

pytestmark = pytest.mark.filterwarnings("ignore::streameval.DomainWarning")


@contextmanager
def spying() -> Iterator[list[bool]]:
    """Whether each unit's state came from the kernel (True) or not (False)."""
    seen: list[bool] = []
    tables, metrics = kernel.Histograms.table, kernel.Histograms.sums

    def table(self: kernel.Histograms, schema: Any, constants: Any) -> Any:
        out = tables(self, schema, constants)
        seen.append(out is not None)
        return out

    def metric_table(self: kernel.Histograms, spec: Any, options: Any) -> Any:
        out = metrics(self, spec, options)
        seen.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel.Histograms, "table", table)
        patch.setattr(kernel.Histograms, "sums", metric_table)
        yield seen


def _both(call: Any) -> tuple[Any, Any]:
    with spying() as taken:
        fast = call()
    assert taken and all(taken)
    with kernel_path("off"):
        return fast, call()


#: Deviance sums cancel: a row's terms (y²⁻ᵖ/((1−p)(2−p)) and the like, up to 1e9 here) are
#: far larger than their sum (0 for ŷ = y), whose last bits then differ with the order of
#: the operations; they are compared to 1e-6.
DEVIANCES = ["poisson", "gamma", "tweedie"]
#: Scores of the form 1 − a/b round by about eps, not eps times themselves: near 0 (a ≈ b)
#: the two paths' orders of addition give 1e-16 against −2e-16 (seen). Compared to 1e-12
#: relative or 1e-12 absolute, whichever is looser.
EXPLAINED = ["r2", "explained_variance", "d2_absolute_error"]


def assert_same_state(fast: se.State, slow: se.State) -> None:
    """Same rows, counts equal, float sums to 1e-12 (relative) or 1e-300; deviances to 1e-6."""
    order = [*fast.keys, "part", "bucket"]
    a, b = fast.table.sort(order), slow.table.sort(order)
    assert_frame_equal(a.drop(DEVIANCES), b.drop(DEVIANCES), rel_tol=1e-12, abs_tol=1e-300)
    assert_frame_equal(a.select(DEVIANCES), b.select(DEVIANCES), rel_tol=1e-6, abs_tol=1e-6)


@settings(max_examples=80, deadline=None)
@given(
    regression_frames(),
    st.sampled_from([0, 3, 11, 16, "exact"]),
    st.sampled_from([POWER, 0, 1, 2, -1.0, 3]),
)
def test_states_match_the_polars_group_by(data, precision, power):
    df, _, weighted = data
    kw: dict[str, Any] = dict(
        task="regression", label="y", prediction="f", by="g", weight="w" if weighted else None,
        precision=precision, power=power,
    )  # fmt: skip
    assert_same_state(*_both(lambda: se.accumulate(df, **kw)))
    fast, slow = _both(lambda: se.evaluate(df, **kw))
    deviances = [f"mean_{name}_deviance" for name in DEVIANCES]
    fast, slow = fast.sort("g"), slow.sort("g")
    loose = [*deviances, *EXPLAINED]
    assert_frame_equal(fast.drop(loose), slow.drop(loose), rel_tol=1e-12, abs_tol=1e-300)
    assert_frame_equal(fast.select(deviances), slow.select(deviances), rel_tol=1e-6, abs_tol=1e-6)
    assert_frame_equal(fast.select(EXPLAINED), slow.select(EXPLAINED), rel_tol=1e-12, abs_tol=1e-12)


def _frame(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.lognormal(0, 2, rows) * rng.choice([-1, 1], rows)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows),
            "s": rng.choice(["x", "y", "z"], rows),
            "y": y,
            "f": y + rng.normal(0, 3, rows),
            "w": rng.choice([0.0, 0.5, 1.0, 3.0], rows),
        }
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_many_groups_look_up_their_binades(weighted):
    df = _frame(20_000, 2_000, seed=1)  # 6,000 groups: binades found, not all assumed
    kw: dict[str, Any] = dict(task="regression", label="y", prediction="f", by=["g", "s"])
    kw["weight"] = "w" if weighted else None
    assert_same_state(*_both(lambda: se.accumulate(df, **kw)))


@pytest.mark.parametrize("layout", ["hive", "file", "lazyframe"])
def test_sources(layout, monkeypatch):
    df = _frame(6_000, 40, seed=2).with_columns(day=(pl.col("g") % 3).cast(pl.String))
    monkeypatch.setattr("streameval.source.SHARD_ROWS", 1_000)  # several shards
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if layout == "hive":
            df.write_parquet(root, partition_by="day")
            source: Any = root
        else:
            df.write_parquet(root / "0.parquet")
            source = root / "0.parquet" if layout == "file" else pl.scan_parquet(root / "0.parquet")
        kw: dict[str, Any] = dict(
            task="regression", label="y", prediction="f", by=["day", "s", "g"], weight="w"
        )
        assert_same_state(*_both(lambda: se.accumulate(source, **kw)))


#: scikit-learn's metrics compared per group (median_ae: bucketed medians are approximate).
SKLEARN = {
    "mse": skm.mean_squared_error,
    "mae": skm.mean_absolute_error,
    "r2": skm.r2_score,
    "explained_variance": skm.explained_variance_score,
    "median_ae": skm.median_absolute_error,
}


def assert_matches_sklearn(ours: pl.DataFrame, df: pl.DataFrame, names: list[str]) -> None:
    """Each group's ``names`` (and max_error) as scikit-learn computes them from its rows."""
    weighted = "w" in df.columns
    for row in ours.sort("g").iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        y, f = part["y"].to_numpy(), part["f"].to_numpy()
        sw = part["w"].to_numpy() if weighted else None
        expected = {name: SKLEARN[name](y, f, sample_weight=sw) for name in names}
        expected["max_error"] = skm.max_error(y, f)
        for name, value in expected.items():
            assert math.isclose(row[name], value, rel_tol=1e-9, abs_tol=1e-12), (name, row)


@pytest.mark.parametrize("weighted", [False, True])
def test_metric_tables_match_sklearn(weighted):
    df = _frame(30_000, 4, seed=4)
    df = df if weighted else df.drop("w")
    w = "w" if weighted else None
    with spying() as taken:
        ours = se.evaluate(df, task="regression", label="y", prediction="f", by="g", weight=w)
    assert taken == [True]
    assert_matches_sklearn(ours, df, ["mse", "mae", "r2", "explained_variance"])


@pytest.mark.parametrize("weighted", [False, True])
def test_exact_mode_matches_sklearn(weighted):
    """Exact mode's distinct values, summed by the kernel: sklearn's numbers, medians too."""
    df = _frame(20_000, 3, seed=3).with_columns(pl.col("y", "f").round(1))  # tied values
    df = df if weighted else df.drop("w")
    w = "w" if weighted else None
    kw: dict[str, Any] = dict(task="regression", label="y", prediction="f", by="g", weight=w)
    with spying() as taken:
        ours = se.evaluate(df, precision="exact", **kw)
    assert taken == [True]
    assert_same_state(*_both(lambda: se.accumulate(df, precision="exact", **kw)))
    assert_matches_sklearn(ours, df, ["mse", "mae", "median_ae", "r2", "explained_variance"])


def test_bad_rows_raise_the_same_error():
    df = pl.DataFrame({"y": [1.0, float("nan")], "f": [1.0, 2.0]})
    with pytest.raises(se.InputError, match="expected finite values in the label column"):
        se.evaluate(df, task="regression", label="y", prediction="f")
