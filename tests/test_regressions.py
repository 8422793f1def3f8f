"""Cases found in review: each once returned a wrong number or a raw error."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_auc_score

import streameval as se
from reference import kernel_path


@pytest.fixture
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    return pl.DataFrame({"y": y, "p": rng.random(200) + 0.3 * y, "w": rng.random(200)})


@pytest.mark.parametrize("scale", [1e-165, 1e-158, 1.0, 1e155])
def test_auc_with_tiny_or_huge_weights_matches_sklearn(frame, scale):
    df = frame.with_columns(pl.col("w") * scale)
    ours = se.evaluate(df, label="y", score="p", weight="w", precision="exact")
    expected = roc_auc_score(df["y"], df["p"], sample_weight=df["w"])
    assert ours["roc_auc"].item() == pytest.approx(expected, rel=1e-9)


def test_error_bound_does_not_overflow_with_huge_counts():
    spec = se.Spec(kind="binary", keys=(), precision=11)
    counts = {"pos": [4_000_000_000], "neg": [4_000_000_000]}
    sums = {"log_loss": [0.0], "brier": [0.0], "psum": [0.0], "hinge": [0.0]}
    table = pl.DataFrame({"bucket": [0], **counts, **sums})
    row = se.State(spec, table).metrics(threshold=0.0).row(0, named=True)
    assert (row["roc_auc"], row["roc_auc_error"]) == (0.5, 0.5)


def test_read_state_refuses_a_directory(tmp_path, frame):
    se.accumulate(frame, label="y", score="p").write(tmp_path / "a.parquet")
    with pytest.raises(se.StateFileError, match="directory"):
        se.read_state(tmp_path)


def test_folders_above_the_source_root_are_not_partition_columns(tmp_path, frame):
    base = tmp_path / "g=zzz" / "preds"
    df = frame.with_columns(
        g=pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.lit("a")).otherwise(pl.lit("b"))
    )
    for day in (1, 2):
        os.makedirs(base / f"day={day}")
        df.write_parquet(base / f"day={day}" / "x.parquet")
    ours = se.evaluate(base, label="y", score="p", by="g", precision="exact")
    expected = se.evaluate(pl.concat([df, df]), label="y", score="p", by="g", precision="exact")
    assert ours.select("g", "n", "roc_auc").equals(expected.select("g", "n", "roc_auc"))


def test_numeric_labels_one_and_two_with_positive_one(frame):
    df = frame.with_columns(pl.col("y") + 1)
    ours = se.evaluate(df, label="y", score="p", positive=1, precision="exact")
    assert ours["roc_auc"].item() == pytest.approx(roc_auc_score(df["y"] == 1, df["p"]))


def test_cli_positive_for_string_labels_that_look_like_numbers(tmp_path, frame):
    path = tmp_path / "s.parquet"
    frame.with_columns(pl.col("y").cast(pl.String)).write_parquet(path)
    result = subprocess.run(
        [sys.executable, "-m", "streameval", "evaluate", str(path), "--label", "y", "--score", "p",
         "--positive", "1", "--precision", "exact", "--output", str(tmp_path / "m.parquet")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    got = pl.read_parquet(tmp_path / "m.parquet")["roc_auc"].item()
    assert got == pytest.approx(roc_auc_score(frame["y"], frame["p"]))


@pytest.mark.parametrize("name", ["threshold", "tp", "roc_auc", "_all", "_o"])
def test_group_keys_named_like_output_columns_are_refused(frame, name):
    with pytest.raises(se.InputError, match="rename it"):
        se.evaluate(frame.with_columns(pl.lit(1).alias(name)), label="y", score="p", by=name)


def test_merging_states_with_different_key_types_is_refused(frame):
    a = se.accumulate(frame.with_columns(g=pl.lit(1)), label="y", score="p", by="g")
    b = se.accumulate(frame.with_columns(g=pl.lit("1")), label="y", score="p", by="g")
    with pytest.raises(se.SpecMismatchError, match="g: Int"):
        a.merge(b)


@pytest.mark.parametrize("threshold", ["0.5", None, True])
def test_thresholds_that_are_not_numbers_are_refused(frame, threshold):
    with pytest.raises(se.InputError, match="threshold"):
        se.evaluate(frame, label="y", score="p", threshold=threshold)


def test_by_that_is_not_column_names_is_refused(frame):
    with pytest.raises(se.InputError, match="by="):
        se.evaluate(frame, label="y", score="p", by=1)  # type: ignore[arg-type]


def test_state_file_with_damaged_metadata_is_refused(tmp_path, frame):
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    se.accumulate(frame, label="y", score="p").write(path)
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[b"streameval.spec"] = b'{"kind": "binary"}'
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(se.StateFileError, match="metadata"):
        se.read_state(path)


def test_duplicate_thresholds_give_one_row_and_edge_thresholds_keep_states_mergeable(frame):
    assert se.evaluate(frame, label="y", score="p", threshold=[0.5, 0.5]).height == 1
    a = se.accumulate(frame, label="y", score="p", thresholds=[0.25])
    b = se.accumulate(frame, label="y", score="p")
    assert a.merge(b).metrics([0.25, 0.5]).height == 2


def test_hive_units_warn_once_about_log_loss(tmp_path):
    for day in (1, 2, 3):
        os.makedirs(tmp_path / f"day={day}")
        df = pl.DataFrame({"g": ["a", "b"], "y": [0, 1], "p": [-1.0, 2.0]})
        df.write_parquet(tmp_path / f"day={day}" / "x.parquet")
    with pytest.warns(UserWarning, match="null for 6 group row") as caught:
        se.evaluate(tmp_path, label="y", score="p", by=["day", "g"])
    assert len(caught) == 1


@pytest.mark.parametrize(
    ("labels", "weights"),
    [
        (["c2", "c3", "c0", "c0", "c3", "c0", "c2"],
         [0.33360442341306673, 0.3, 2.00001, 2.0014690004169338, 1.0005436249914655e-06, 1e-06,
          1.0008158535541216e-06]),
        (["c3", "c3", "c0", "c2", "c3", "c1"],
         [5.724469542704666, 0.3, 0.3001538276169786, 1e-06, 0.001, 0.3333333333333333]),
    ],
)  # fmt: skip
def test_multiclass_mcc_is_zero_when_one_class_holds_every_prediction(labels, weights):
    # S² − Σp² is exactly 0 here, but its two sums of fractional weights round apart (to
    # 1.8e-8 and 6.7e-10 once divided): the remainder must not become a divisor (sklearn: 0).
    df = pl.DataFrame({"y": labels, "pred": ["c0"] * len(labels), "w": weights})
    table = se.evaluate(
        df, task="multiclass", label="y", prediction="pred", weight="w",
        classes=["c0", "c1", "c2", "c3"], precision="exact",
    )  # fmt: skip
    assert table["mcc"].item() == 0.0


@pytest.mark.parametrize(
    "weights", [[0.3, 7.0], [0.30016144299396574, 1e-06, 1e-06, 5.726113601810511]]
)
def test_per_class_counts_by_subtraction_snap_to_zero(weights):
    # Every row is predicted class 0: its tn and fn are 0, npv 0/0 → 0 (sklearn). Computed as
    # s − t − p + c they came out as rounding residue, and npv as 1.
    n = len(weights)
    labels = [0] * (n - 1) + [2]
    df = pl.DataFrame({"y": labels, "p0": [0.5] * n, "p1": [0.5] * n, "w": weights})
    state = se.accumulate(
        df, task="multiclass", label="y", scores=["p0", "p1"], classes=[0, 2], weight="w",
        precision="exact",
    )  # fmt: skip
    row = state.per_class().filter(pl.col("class") == 0)
    assert row.select("npv", "specificity").row(0) == (0.0, 0.0)


@pytest.mark.parametrize("weight", [5e-324, 1e-310])
def test_a_subnormal_weight_sum_is_scaled_without_overflow(weight):
    """Found by hypothesis: the pair-scale of a subnormal largest weight was 2**1073 (overflow)."""
    df = pl.DataFrame({"y": [False, True], "p": [0.0, 0.5], "w": [weight, weight]})
    for kernel in (True, False):
        with kernel_path("all" if kernel else "off"):
            table = se.evaluate(df, label="y", score="p", weight="w", precision=0, threshold=0.0)
        assert table["roc_auc"].item() == 1.0
        assert table["tp"].item() == weight and table["fp"].item() == weight
