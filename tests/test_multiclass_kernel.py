"""The multiclass kernel (metric tables straight from the rows) against the state path and sklearn.

``evaluate`` of a multiclass task computes the confusion cells and the AUCs' pair sums from
the rows (:mod:`streameval.kernels.classes`); ``accumulate(...).metrics()`` finalizes the
whole state (the reference path, itself checked against scikit-learn by the shared harness).
"""

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

import streameval as se
from reference import assert_tables_match, kernel_path, written_source
from reference_multiclass import TOP_K, multiclass_frames, multiclass_reference
from streameval.kernels import classes as kernel

pytestmark = pytest.mark.filterwarnings("ignore:the scores of:UserWarning")


@contextmanager
def spying() -> Iterator[list[bool]]:
    """Whether each unit's metrics came from the kernel (True) or from its state (False)."""
    seen: list[bool] = []
    original = kernel.ClassRows.tables

    def tables(self: kernel.ClassRows, spec: Any) -> Any:
        out = original(self, spec)
        seen.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel.ClassRows, "tables", tables)
        yield seen


@pytest.fixture
def taken() -> Iterator[list[bool]]:
    """:func:`spying` for a whole test."""
    with spying() as seen:
        yield seen


def _options(df: pl.DataFrame, classes: list[Any], weighted: bool) -> dict[str, Any]:
    k = len(classes)
    return {
        "task": "multiclass",
        "label": "y",
        "classes": classes,
        "scores": [f"p{j}" for j in range(k)] if "p0" in df.columns else None,
        "prediction": "pred" if "pred" in df.columns else None,
        "weight": "w" if weighted else None,
        "top_k": TOP_K,
    }


def _reference(source: Any, by: Any, **options: Any) -> pl.DataFrame:
    """The state path's table (the kernels switched off)."""
    with kernel_path("off"):
        return se.evaluate(source, by=by, **options)


def assert_same(ours: pl.DataFrame, reference: pl.DataFrame) -> None:
    """Same columns, same rows; counts equal, floats to 1e-12 (relative) or 1e-15."""
    assert ours.columns == reference.columns
    assert ours.height == reference.height
    for name in ours.columns:
        a, b = ours[name].to_list(), reference[name].to_list()
        if ours[name].dtype.is_float():
            for x, y in zip(a, b, strict=True):
                assert (x is None) == (y is None), (name, x, y)
                if x is not None and not (math.isnan(x) and math.isnan(y)):
                    assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15), (name, x, y)
        else:
            assert a == b, name


@settings(max_examples=60, deadline=None)
@given(multiclass_frames(), st.sampled_from([1, 2, 11]), st.booleans())
def test_kernel_matches_the_state_path(data, precision, argmax):
    df, classes, _, weighted = data
    if argmax and "p0" in df.columns and "pred" in df.columns:
        df = df.drop("pred")
    options = _options(df, classes, weighted) | {"precision": precision}
    assert_same(se.evaluate(df, by="g", **options), _reference(df, "g", **options))


def _dyadic(df: pl.DataFrame, k: int) -> pl.DataFrame:
    """Scores on a grid of eighths that still sum to 1: every bucket holds one score."""
    columns = [(pl.col(f"p{j}") * 8).floor() / 8 for j in range(k - 1)]
    return df.with_columns(*[c.alias(f"p{j}") for j, c in enumerate(columns)]).with_columns(
        (1.0 - pl.sum_horizontal([f"p{j}" for j in range(k - 1)])).alias(f"p{k - 1}")
    )


@settings(max_examples=60, deadline=None)
@given(multiclass_frames())
def test_kernel_matches_sklearn(data):
    df, classes, _, weighted = data
    if "p0" in df.columns:
        df = _dyadic(df, len(classes))
    with spying() as taken:
        ours = se.evaluate(df, by="g", **_options(df, classes, weighted)).sort("g")
    assert taken and all(taken)
    assert_tables_match(ours, multiclass_reference(df, classes))


def _many_groups(rows: int, groups: int, k: int, weighted: bool, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), rows).round(4)
    data: dict[str, Any] = {
        "g": rng.integers(0, groups, rows),
        "seg": rng.choice(["x", "y"], rows),
        "y": rng.integers(0, k, rows),
        **{f"p{j}": p[:, j] for j in range(k)},
    }
    if weighted:
        data["w"] = rng.choice([0.0, 0.5, 1.0, 3.0], rows)
    return pl.DataFrame(data)


@pytest.mark.parametrize("weighted", [False, True])
def test_many_small_groups(weighted, taken):
    # 3,000 groups of a few rows: sparse cells (sorted, not windowed), binades looked up
    df = _many_groups(12_000, 3_000, 5, weighted, seed=1)
    options = _options(df, list(range(5)), weighted)
    ours = se.evaluate(df, by=["g", "seg"], **options)
    assert taken == [True]
    assert_same(ours, _reference(df, ["g", "seg"], **options))


@pytest.mark.parametrize("layout", ["hive", "file", "glob", "lazyframe"])
def test_sources(layout, monkeypatch, taken):
    df = _many_groups(6_000, 40, 4, True, seed=2).with_columns(
        day=pl.lit("2026-10-01").str.to_date() + pl.duration(days=pl.col("g") % 3)
    )
    monkeypatch.setattr("streameval.source.SHARD_ROWS", 1_000)  # several shards
    with tempfile.TemporaryDirectory() as tmp:
        source, by = written_source(df, Path(tmp), layout)
        options = _options(df, list(range(4)), True)
        ours = se.evaluate(source, by=by, **options)
        assert len(taken) > 1 and all(taken)
        assert_same(ours, _reference(source, by, **options))


def test_units_the_kernel_does_not_take_use_their_state(monkeypatch, taken):
    df = _many_groups(2_000, 30, 3, False, seed=3)
    options = _options(df, [0, 1, 2], False)
    for limit, precision in ((8, 11), (kernel.MAX_CELLS, "exact")):
        monkeypatch.setattr(kernel, "MAX_CELLS", limit)
        ours = se.evaluate(df, by="g", precision=precision, **options)
        assert taken == [False]
        taken.clear()
        assert_same(ours, _reference(df, "g", precision=precision, **options))


def test_scores_outside_and_intervals(taken):
    df = pl.DataFrame(
        {
            "g": ["a", "a", "a", "b", "b", "b"],
            "y": ["u", "v", "w", "u", "v", "w"],
            "pu": [0.7, 0.2, 1.5, 0.3, 0.3, 0.1],
            "pv": [0.2, 0.5, -0.5, 0.3, 0.6, 0.2],
            "pw": [0.1, 0.3, 0.0, 0.4, 0.1, 0.7],
        }
    )
    options = {"task": "multiclass", "label": "y", "scores": ["pu", "pv", "pw"], "ci": "wilson"}
    with pytest.warns(UserWarning, match="outside"):
        ours = se.evaluate(df, by="g", **options)
    assert taken == [True]
    assert ours.filter(pl.col("g") == "a")["log_loss"].item() is None
    with pytest.warns(UserWarning, match="outside"):
        assert_same(ours, _reference(df, "g", **options))


def test_keys_named_as_internal_columns_are_refused():
    df = pl.DataFrame({"s": ["a", "b"], "y": [0, 1], "pred": [0, 1]})
    with pytest.raises(se.InputError, match="expected group keys other than"):
        se.evaluate(df, task="multiclass", label="y", prediction="pred", by="s")


def test_bad_rows_raise_the_same_error():
    df = pl.DataFrame({"y": [0, 1, 5], "p0": [0.5, 0.4, 0.1], "p1": [0.5, 0.6, 0.9]})
    with pytest.raises(se.InputError, match="expected labels among the classes"):
        se.evaluate(df, task="multiclass", label="y", scores=["p0", "p1"], classes=[0, 1])
