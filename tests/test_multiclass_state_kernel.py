"""The multiclass kernel's states (:mod:`streameval.kernels.classstate`) against the group-by."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import kernel_path, written_source
from reference_multiclass import TOP_K, multiclass_frames
from streameval.kernels import classes as kernel
from streameval.kernels import classstate

pytestmark = pytest.mark.filterwarnings("ignore:the scores of:UserWarning")

ORDER = ["actual", "predicted", "column", "bucket"]


@contextmanager
def spying() -> Iterator[list[bool]]:
    """Whether each unit's state came from the kernel (True) or from the Polars query."""
    seen: list[bool] = []
    original = kernel.ClassRows.state

    def state(self: kernel.ClassRows, *args: Any) -> Any:
        out = original(self, *args)
        seen.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel.ClassRows, "state", state)
        yield seen


def _both(call: Callable[[], se.State]) -> tuple[se.State, se.State]:
    """The state by the kernel (which must have built every unit's) and by Polars."""
    with spying() as taken:
        fast = call()
    assert taken and all(taken)
    with kernel_path("off"):
        return fast, call()


def assert_same_state(fast: se.State, slow: se.State) -> None:
    """Same rows and types, counts equal, float sums to 1e-12 (relative) or 1e-300."""
    assert fast.spec == slow.spec
    order = [*fast.keys, *ORDER]
    a, b = (s.table.sort(order, nulls_last=True) for s in (fast, slow))
    assert_frame_equal(a, b, rel_tol=1e-12, abs_tol=1e-300)


def _options(df: pl.DataFrame, classes: list[Any] | None, weighted: bool) -> dict[str, Any]:
    return {
        "task": "multiclass",
        "label": "y",
        "classes": classes,
        "scores": [c for c in df.columns if c[0] == "p" and c[1:].isdigit()] or None,
        "prediction": "pred" if "pred" in df.columns else None,
        "weight": "w" if weighted else None,
        "top_k": TOP_K,
    }


@settings(max_examples=80, deadline=None)
@given(
    multiclass_frames(),
    st.sampled_from([0, 1, 2, 11, 30, "exact"]),
    st.booleans(),
    st.booleans(),
)
def test_states_match_the_polars_group_by(data, precision, argmax, found):
    df, classes, _, weighted = data
    if argmax and "pred" in df.columns:
        df = df.drop("pred")
    options = _options(df, None if found else classes, weighted) | {"precision": precision}
    assert_same_state(*_both(lambda: se.accumulate(df, by="g", **options)))


@settings(max_examples=60, deadline=None)
@given(multiclass_frames(), st.sampled_from([2, 11, "exact"]), st.booleans())
def test_a_states_pair_sums_match_the_polars_finalize(data, precision, keyed):
    df, classes, _, weighted = data
    options = _options(df, classes, weighted) | {"precision": precision}
    state = se.accumulate(df, by="g" if keyed else None, **options)
    fast = state.metrics()
    with kernel_path("off"):
        slow = state.metrics()
    assert_frame_equal(fast, slow, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=30, deadline=None)
@given(multiclass_frames(scores=False))
def test_states_without_scores(data):
    df, classes, _, weighted = data
    options = _options(df, classes, weighted)
    assert_same_state(*_both(lambda: se.accumulate(df, by="g", **options)))


def _frame(rows: int, groups: int, k: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), rows).round(3)
    p[rng.random(rows) < 0.05, 0] = 1.5  # outside [0, 1], not summing to 1
    p[rng.random(rows) < 0.05, 1] = -0.0
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows),
            "seg": rng.choice(["x", "y", "z"], rows),
            "y": rng.integers(0, k, rows),
            "w": rng.choice([0.0, 0.5, 1.0, 3.0], rows),
            **{f"p{j}": p[:, j] for j in range(k)},
        }
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("precision", [4, "exact"])
def test_many_groups_and_a_big_one(weighted, precision):
    # 6,000 (g, seg) groups of a few rows, and one group of 6,000 rows (its tables grow)
    df = pl.concat([_frame(20_000, 2_000, 5, seed=1), _frame(6_000, 1, 5, seed=2)])
    options = _options(df, list(range(5)), weighted) | {"precision": precision}
    assert_same_state(*_both(lambda: se.accumulate(df, by=["g", "seg"], **options)))


@pytest.mark.parametrize("layout", ["hive", "file", "glob", "lazyframe"])
def test_sources(layout, monkeypatch):
    df = _frame(6_000, 40, 4, seed=3).with_columns(
        day=pl.lit("2026-10-01").str.to_date() + pl.duration(days=pl.col("g") % 3)
    )
    monkeypatch.setattr("streameval.source.SHARD_ROWS", 1_000)  # several shards
    with tempfile.TemporaryDirectory() as tmp:
        source, by = written_source(df, Path(tmp), layout)
        options = _options(df, None, True)
        assert_same_state(*_both(lambda: se.accumulate(source, by=by, **options)))


def test_merged_parts_of_found_classes_finalize_as_one():
    df = _frame(3_000, 5, 4, seed=4).with_columns(pl.col("y").cast(pl.String))
    options = _options(df, None, True)
    parts = [df.filter(pl.col("y") != "3"), df.filter(pl.col("y") == "3")]
    fast, slow = _both(lambda: se.accumulate(df, by="g", **options))
    merged = se.merge([se.accumulate(part, by="g", **options) for part in parts])
    assert_frame_equal(merged.metrics().sort("g"), slow.metrics().sort("g"), rel_tol=1e-9)
    assert_frame_equal(fast.metrics().sort("g"), slow.metrics().sort("g"), rel_tol=1e-12)


def test_too_many_segments_use_the_polars_query(monkeypatch):
    df = _frame(500, 30, 3, seed=5)
    monkeypatch.setattr(classstate, "MAX_SEGMENTS", 8)
    options = _options(df, [0, 1, 2], False)
    with spying() as taken:
        fast = se.accumulate(df, by="g", **options)
    assert taken == [False]
    with kernel_path("off"):
        assert_same_state(fast, se.accumulate(df, by="g", **options))


def test_bad_rows_raise_the_same_error():
    df = pl.DataFrame({"y": [0, 1, 5], "p0": [0.5, 0.4, 0.1], "p1": [0.5, 0.6, 0.9]})
    options = {"task": "multiclass", "label": "y", "classes": [0, 1], "scores": ["p0", "p1"]}
    with pytest.raises(se.InputError, match="expected labels among the classes") as fast:
        se.accumulate(df, **options)
    with kernel_path("off"), pytest.raises(se.InputError) as slow:
        se.accumulate(df, **options)
    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize("given", [{"scores": ["p0", "p1"]}, {"prediction": "q"}])
def test_a_unit_without_rows_has_an_empty_state(given):
    df = pl.DataFrame({"g": ["a"], "y": [0], "q": [1], "p0": [0.3], "p1": [0.7]}).head(0)
    kw: dict[str, Any] = dict(task="multiclass", label="y", classes=[0, 1], by="g") | given
    assert_same_state(*_both(lambda: se.accumulate(df, **kw)))
