"""A binary state's metric table read by the kernel's loops against the Polars finalize.

``State.metrics()`` reads a binary state's rows back as runs (:func:`streameval.kernels.collect.
state_runs`) and computes the table with the compiled loops where they apply; the Polars
finalize (the kernels switched off) is the reference.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import binary_frames, chunks, kernel_path
from streameval.kernels import collect as kernel_runs

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")


def _polars(call: Any) -> Any:
    with kernel_path("off"):
        return call()


@settings(max_examples=80, deadline=None)
@given(
    binary_frames(probabilities=False) | binary_frames(),
    st.sampled_from([2, 11, "exact"]),
    st.booleans(),
    st.booleans(),
)
def test_metric_tables_match_the_polars_finalize(data, precision, keyed, several):
    df, cuts, weighted = data
    thresholds = [0.25, 0.5] if several else [0.5]
    kw: dict[str, Any] = dict(label="y", score="p", by="g" if keyed else None)
    kw |= dict(weight="w" if weighted else None, precision=precision, thresholds=thresholds)
    state = se.merge(se.accumulate(c, **kw) for c in chunks(df, cuts))
    ours = state.metrics(thresholds)
    assert_frame_equal(
        ours, _polars(lambda: state.metrics(thresholds)), rel_tol=1e-9, abs_tol=1e-12
    )


def test_rows_of_one_bucket_apart_are_summed():
    df = pl.DataFrame({"g": [0, 0, 1, 1, 0], "y": [1, 0, 1, 0, 1], "p": [0.9, 0.2, 0.4, 0.6, 0.2]})
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision="exact")
    parts = [se.accumulate(df[:3], **kw), se.accumulate(df[3:], **kw)]
    unmerged = se.State(parts[0].spec, pl.concat([p.table for p in parts]))  # (0, 0.2) twice
    runs = kernel_runs.state_runs(unmerged.table, unmerged.spec)
    assert runs is not None and runs.value.size == unmerged.table.height - 1
    assert_frame_equal(unmerged.metrics(), se.accumulate(df, **kw).metrics())


@pytest.mark.parametrize("precision", [11, "exact"])
def test_the_loops_read_the_state(precision, monkeypatch):
    from streameval.tasks.binary import metrics as kernel_metrics

    df = pl.DataFrame({"g": [0, 1, 0, 1], "y": [1, 0, 0, 1], "p": [0.9, 0.2, 0.4, 0.6]})
    state = se.accumulate(df, label="y", score="p", by="g", precision=precision)
    tables: list[Any] = []
    original = kernel_metrics.runs_grouped

    def spied(*args: Any) -> Any:
        tables.append(original(*args))
        return tables[-1]

    monkeypatch.setattr(kernel_metrics, "runs_grouped", spied)
    ours = state.metrics()
    assert len(tables) == 1 and tables[0] is not None
    assert ours["roc_auc"].to_list() == [1.0, 1.0]


KEY_TYPES = {
    "string": pl.String,
    "categorical": pl.Categorical,
    "enum": pl.Enum(["a", "b", "c"]),
    "int64": pl.Int64,
    "date": pl.Date,
    "float": pl.Float64,
}


@pytest.mark.parametrize("kind", list(KEY_TYPES))
@pytest.mark.parametrize("task", ["binary", "multiclass", "paired"])
def test_every_key_type_reads_back(kind, task):
    rng = np.random.default_rng(7)
    n = 600
    key = pl.Series("seg", rng.choice(["a", "b", "c"], n))
    if kind in ("int64", "float"):
        key = key.replace_strict({"a": 1, "b": 20, "c": -3}, return_dtype=KEY_TYPES[kind])
    elif kind == "date":
        key = key.replace_strict({"a": 0, "b": 40, "c": 99}, return_dtype=pl.Int32).cast(pl.Date)
    else:
        key = key.cast(KEY_TYPES[kind])
    p = rng.dirichlet([1, 1, 1], n).round(2)
    df = pl.DataFrame(
        {"seg": key, "y": rng.integers(0, 2, n), "c": rng.integers(0, 3, n), "q": rng.random(n)}
        | {f"p{j}": p[:, j] for j in range(3)}
    ).with_columns(
        pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("seg").alias("seg")
    )
    kw: dict[str, Any] = {
        "binary": dict(label="y", score="p0"),
        "multiclass": dict(task="multiclass", label="c", scores=["p0", "p1", "p2"]),
        "paired": dict(task="paired", label="y", scores=["p0", "q"]),
    }[task]
    state = se.accumulate(df, by="seg", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (scores rounded: not summing to 1)
        ours, theirs = state.metrics(), _polars(state.metrics)
    assert_frame_equal(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    if task == "paired":
        assert_frame_equal(state.roc_test(), _polars(state.roc_test), rel_tol=1e-9, abs_tol=1e-12)


def test_counts_whose_pairs_pass_an_int64_take_the_polars_finalize():
    df = pl.DataFrame({"g": [0, 0, 0, 1], "y": [1, 0, 1, 0], "p": [0.9, 0.2, 0.4, 0.6]})
    state = se.accumulate(df, label="y", score="p", by="g", precision="exact")
    huge = state.table.with_columns(pl.col("pos", "neg") * 3_000_000_000)  # 1.8e19 pairs
    merged = se.State(state.spec, huge)
    assert kernel_runs.state_runs(merged.table, merged.spec) is None
    assert_frame_equal(merged.metrics(), _polars(merged.metrics))
    assert merged.metrics()["roc_auc"].to_list()[0] == state.metrics()["roc_auc"].to_list()[0]


def test_a_paired_states_float_keys_keep_their_nan():
    df = pl.DataFrame(
        {
            "k": [float("nan"), float("nan"), None, None, 1.0, 1.0, 1.0, float("nan")],
            "y": [1, 0, 1, 0, 1, 0, 0, 1],
            "a": [0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.6, 0.4],
            "b": [0.5, 0.4, 0.9, 0.1, 0.3, 0.6, 0.2, 0.8],
        }
    )
    state = se.accumulate(df, task="paired", label="y", scores=["a", "b"], by="k")
    ours = state.metrics()
    assert ours.height == 6
    assert_frame_equal(ours, _polars(state.metrics), rel_tol=1e-9, abs_tol=1e-12)
