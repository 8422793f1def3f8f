"""Every binary metric against scikit-learn on chunked, weighted, tied, imbalanced input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from reference import (
    assert_tables_match,
    binary_frames,
    chunks,
    reference_pr,
    reference_roc,
    reference_table,
)

# Scores outside [0, 1] (logits) make log loss null with a warning; tested in test_errors.
pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")


#: F-beta's beta: precision (0), recall (inf) and in between.
BETAS = st.sampled_from([0.0, 0.5, 1.0, 2.0, float("inf")]) | st.floats(0.01, 100)


def accumulate_chunked(df, cuts, weighted, **kw):
    w = "w" if weighted else None
    parts = [
        se.accumulate(c, label="y", score="p", by="g", weight=w, **kw) for c in chunks(df, cuts)
    ]
    return se.merge(parts)


@given(binary_frames(), st.lists(st.sampled_from([0.0, 0.25, 0.3, 0.5, 0.7, 1.0]), min_size=1,
                                 max_size=3, unique=True), BETAS)  # fmt: skip
def test_metric_table_matches_sklearn_exact(data, thresholds, beta):
    df, cuts, weighted = data
    state = accumulate_chunked(df, cuts, weighted, precision="exact")
    ours = state.metrics(thresholds, beta=beta)
    assert_tables_match(ours, reference_table(df, thresholds, beta=beta))
    assert (ours["roc_auc_error"].drop_nulls() == 0).all()


@given(binary_frames(probabilities=False))
def test_metric_table_matches_sklearn_on_logits(data):
    df, cuts, weighted = data
    state = accumulate_chunked(df, cuts, weighted, precision="exact")
    assert_tables_match(state.metrics([0.0]), reference_table(df, [0.0]))


@given(binary_frames())
def test_roc_curve_points_match_sklearn(data):
    df, cuts, weighted = data
    curve = accumulate_chunked(df, cuts, weighted, precision="exact").roc_curve()
    ref = reference_roc(df)
    for g, (thr, fpr, tpr) in ref.items():
        mine = curve.filter(pl.col("g") == g)
        np.testing.assert_array_equal(mine["threshold"].to_numpy(), thr)
        np.testing.assert_allclose(mine["fpr"].to_numpy(), fpr, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["tpr"].to_numpy(), tpr, rtol=1e-9, atol=1e-12)


@given(binary_frames())
def test_pr_curve_points_match_sklearn(data):
    df, cuts, weighted = data
    curve = accumulate_chunked(df, cuts, weighted, precision="exact").pr_curve()
    for g, (thr, prec, rec) in reference_pr(df).items():
        mine = curve.filter(pl.col("g") == g)
        np.testing.assert_array_equal(mine["threshold"].to_numpy(), thr)
        np.testing.assert_allclose(mine["precision"].to_numpy(), prec, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["recall"].to_numpy(), rec, rtol=1e-9, atol=1e-12)


@given(
    binary_frames(probabilities=False), st.integers(0, 20), st.lists(st.floats(-5, 5), max_size=2)
)
def test_bucketed_auc_within_reported_bound(data, bits, splits):
    df, cuts, weighted = data
    exact = accumulate_chunked(df, cuts, weighted, precision="exact").metrics(0.0)
    state = accumulate_chunked(df, cuts, weighted, precision=bits, thresholds=[0.0, *splits])
    bucketed = state.metrics([0.0, *sorted(set(splits))])
    joined = bucketed.join(exact.select("g", "roc_auc", "tp", "fp"), on="g", suffix="_exact")
    auc = joined.drop_nulls("roc_auc")
    diff = (auc["roc_auc"] - auc["roc_auc_exact"]).abs()
    assert (diff <= auc["roc_auc_error"] + 1e-12).all()
    # threshold metrics stay exact at bucket edges and at the split thresholds
    at_zero = joined.filter(pl.col("threshold") == 0.0)
    np.testing.assert_allclose(at_zero["tp"], at_zero["tp_exact"], rtol=1e-12)
    np.testing.assert_allclose(at_zero["fp"], at_zero["fp_exact"], rtol=1e-12)


@given(binary_frames(), st.integers(0, 16))
def test_split_thresholds_are_exact_in_bucketed_mode(data, bits):
    df, cuts, weighted = data
    thresholds = [0.3, 0.5, 0.7]
    state = accumulate_chunked(df, cuts, weighted, precision=bits, thresholds=thresholds)
    ours = state.metrics(thresholds).drop("roc_auc", "roc_auc_error", "average_precision")
    ref = [
        {k: v for k, v in r.items() if k not in ("roc_auc", "average_precision")}
        for r in reference_table(df, thresholds)
    ]
    assert_tables_match(ours, ref)


@given(binary_frames(), st.sampled_from(["exact", 6, 11]), st.booleans())
def test_hive_partitioned_files_match_sklearn(tmp_path_factory, data, precision, two_keys):
    """Hive directories take the per-partition path (packed keys, finalize per partition)."""
    df, cuts, weighted = data
    df = df.with_columns(
        pl.format("seg_{}", pl.col("g")).alias("g"), (pl.int_range(pl.len()) % 2).alias("h")
    )
    root = tmp_path_factory.mktemp("hive")
    for i, chunk in enumerate(chunks(df, cuts)):
        for (g,), part in chunk.partition_by("g", as_dict=True).items():
            folder = root / f"g={g}"
            folder.mkdir(exist_ok=True)
            part.drop("g").write_parquet(folder / f"part-{i}.parquet")
    by = ["h", "g"] if two_keys else ["g"]
    w = "w" if weighted else None
    ours = se.evaluate(root, label="y", score="p", by=by, weight=w, precision=precision)
    if precision == "exact":
        assert_tables_match(ours, reference_table(df, [0.5], keys=by))
    in_memory = se.evaluate(df, label="y", score="p", by=by, weight=w, precision=precision)
    assert_tables_match(ours, in_memory.to_dicts())
    state = se.accumulate(root, label="y", score="p", by=by, weight=w, precision=precision)
    expected = se.accumulate(df, label="y", score="p", by=by, weight=w, precision=precision)
    order = [*by, "bucket"]
    assert_frame_equal(
        state.table.sort(order),
        expected.table.sort(order).select(state.table.columns),
        rel_tol=1e-12,
        abs_tol=1e-12,
    )


@given(binary_frames(), st.sampled_from(["exact", 4]))
def test_finalize_in_key_chunks_matches_one_piece(data, precision):
    """Large states are finalized in parts split by a hash of the keys; tiny parts here."""
    import streameval.tasks.binary.metrics as finalize

    df, cuts, weighted = data
    state = accumulate_chunked(df, cuts, weighted, precision=precision)
    whole = state.metrics([0.25, 0.5])
    original = finalize.CHUNK_ROWS
    finalize.CHUNK_ROWS = 2
    try:
        parts = state.metrics([0.25, 0.5])
    finally:
        finalize.CHUNK_ROWS = original
    assert_tables_match(parts, whole.to_dicts(), tol=1e-12)
