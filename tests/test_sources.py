"""Every kind of source and label/score type gives the numbers of the plain in-memory frame.

Sources are real Parquet files in ``tmp_path``. The reference is always ``se.evaluate`` on a
``pl.DataFrame`` with 0/1 Int64 labels and Float64 scores, and roc_auc is spot-checked
against scikit-learn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.dataset as ds
import pytest
from polars.testing import assert_frame_equal
from sklearn.metrics import roc_auc_score

import streameval as se

THRESHOLDS = [0.3, 0.5]
DAYS = ["2026-10-01", "2026-10-02", "2026-10-03"]


@pytest.fixture(scope="module")
def base() -> pl.DataFrame:
    """Tied, weighted predictions in three segments and three days; labels 0/1."""
    rng = np.random.default_rng(7)
    n = 300
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0).round(2)
    return pl.DataFrame(
        {
            "segment": rng.choice(["a", "b", "c"], n),
            "day": rng.choice(DAYS, n),
            "label": y,
            "score": score,
            "w": rng.integers(1, 4, n).astype(float),
        }
    )


def run(source: Any, **kw: Any) -> pl.DataFrame:
    args = {
        "label": "label",
        "score": "score",
        "by": "segment",
        "precision": "exact",
        "threshold": THRESHOLDS,
    }
    return se.evaluate(source, **{**args, **kw})


def assert_same(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    assert_frame_equal(got, expected, rel_tol=1e-12, abs_tol=1e-12)


def assert_auc_matches_sklearn(got: pl.DataFrame, df: pl.DataFrame, weight: str | None = None):
    """roc_auc of every segment (null key included) equals scikit-learn's."""
    for (segment,), part in df.group_by("segment"):
        key = pl.col("segment").is_null() if segment is None else pl.col("segment") == segment
        ours = got.filter(key)["roc_auc"].unique().to_list()
        w = None if weight is None else part[weight].to_numpy()
        theirs = roc_auc_score(part["label"].to_numpy(), part["score"].to_numpy(), sample_weight=w)
        assert len(ours) == 1
        assert ours[0] == pytest.approx(theirs, rel=1e-12), segment


def write_parts(df: pl.DataFrame, folder: Path, n_parts: int = 3) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-df.height // n_parts)
    paths = []
    for i in range(n_parts):
        path = folder / f"part-{i}.parquet"
        df.slice(i * size, size).write_parquet(path)
        paths.append(path)
    return paths


# --- where the data is ------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["exact", None])
@pytest.mark.parametrize("weight", [None, "w"])
def test_single_file(tmp_path, base, precision, weight):
    path = tmp_path / "predictions.parquet"
    base.write_parquet(path)
    got = run(path, precision=precision, weight=weight)
    assert_same(got, run(base, precision=precision, weight=weight))
    assert_same(run(str(path), precision=precision, weight=weight), got)
    if precision == "exact":
        assert_auc_matches_sklearn(got, base, weight)


@pytest.mark.parametrize("precision", ["exact", None])
def test_hive_directory_groups_by_the_partition_column(tmp_path, base, precision):
    for day in DAYS:
        folder = tmp_path / f"day={day}"
        folder.mkdir()
        base.filter(pl.col("day") == day).drop("day").write_parquet(folder / "part-0.parquet")
    by = ["segment", "day"]
    got = run(tmp_path, by=by, precision=precision)
    assert sorted(got["day"].cast(pl.String).unique().to_list()) == DAYS
    expected = run(base, by=by, precision=precision)
    assert_same(got.with_columns(pl.col("day").cast(pl.String)), expected)


def test_hive_directory_through_a_pyarrow_dataset(tmp_path, base):
    for day in DAYS:
        folder = tmp_path / f"day={day}"
        folder.mkdir()
        base.filter(pl.col("day") == day).drop("day").write_parquet(folder / "part-0.parquet")
    got = run(ds.dataset(tmp_path, format="parquet", partitioning="hive"), by=["segment", "day"])
    expected = run(base, by=["segment", "day"])
    assert_same(got.with_columns(pl.col("day").cast(pl.String)), expected)


def test_directory_of_parts(tmp_path, base):
    write_parts(base, tmp_path / "parts")
    got = run(tmp_path / "parts")
    assert_same(got, run(base))
    assert_auc_matches_sklearn(got, base)


def test_glob_picks_only_matching_files(tmp_path, base):
    write_parts(base, tmp_path)
    (tmp_path / "notes.txt").write_text("not parquet")
    base.head(50).write_parquet(tmp_path / "other.parq")
    got = run(str(tmp_path / "part-*.parquet"))
    assert_same(got, run(base))


def test_list_of_files(tmp_path, base):
    paths = write_parts(base, tmp_path)
    got = run(paths, weight="w")
    assert_same(got, run(base, weight="w"))
    assert_same(run([str(p) for p in paths[:2]]), run(pl.read_parquet(paths[:2])))
    assert_auc_matches_sklearn(got, base, "w")


def test_lazyframe(tmp_path, base):
    path = tmp_path / "predictions.parquet"
    base.write_parquet(path)
    got = run(pl.scan_parquet(path))
    assert_same(got, run(base))
    derived = pl.scan_parquet(path).with_columns(label=(pl.col("label") == 1))
    assert_same(run(derived), run(base))


def test_dataframe_matches_sklearn(base):
    got = run(base)
    assert got.height == 3 * len(THRESHOLDS)
    assert_auc_matches_sklearn(got, base)


def test_pyarrow_table(base):
    assert_same(run(base.to_arrow()), run(base))


def test_pyarrow_dataset(tmp_path, base):
    write_parts(base, tmp_path)
    assert_same(run(ds.dataset(tmp_path, format="parquet")), run(base))


# --- label and score types --------------------------------------------------------------------

HAM_SPAM = pl.col("label").replace_strict({0: "ham", 1: "spam"}, return_dtype=pl.String)
LABELS = {
    "bool": (pl.col("label").cast(pl.Boolean), None),
    "int8": (pl.col("label").cast(pl.Int8), None),
    "uint8": (pl.col("label").cast(pl.UInt8), None),
    "int32": (pl.col("label").cast(pl.Int32), None),
    "float64": (pl.col("label").cast(pl.Float64), None),
    "float32": (pl.col("label").cast(pl.Float32), None),
    "string": (HAM_SPAM, "spam"),
    "categorical": (HAM_SPAM.cast(pl.Categorical), "spam"),
    "enum": (HAM_SPAM.cast(pl.Enum(["ham", "spam"])), "spam"),
}


@pytest.mark.parametrize("kind", list(LABELS))
def test_label_types(tmp_path, base, kind):
    label, positive = LABELS[kind]
    path = tmp_path / "predictions.parquet"
    base.with_columns(label).write_parquet(path)
    got = run(path, positive=positive)
    assert_same(got, run(base))
    assert_auc_matches_sklearn(got, base)


def test_boolean_labels_with_positive_false_flip_the_classes(base):
    flipped = base.with_columns(label=pl.col("label") == 0)
    assert_same(run(flipped, positive=False), run(base))


def test_integer_labels_with_other_values_and_positive(base):
    coded = base.with_columns(pl.col("label").replace_strict({0: 5, 1: 9}))
    assert_same(run(coded, positive=9), run(base))


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Int32, pl.UInt16])
def test_integer_scores(tmp_path, base, dtype):
    """Integer scores (e.g. a 0–100 grade) rank like the same values as floats."""
    graded = base.with_columns((pl.col("score") * 100).round().cast(dtype))
    path = tmp_path / "predictions.parquet"
    graded.write_parquet(path)
    as_float = graded.with_columns(pl.col("score").cast(pl.Float64))
    with pytest.warns(UserWarning, match="outside"):
        got = run(path, threshold=[30, 50])
    with pytest.warns(UserWarning, match="outside"):
        expected = run(as_float, threshold=[30, 50])
    assert_same(got, expected)
    assert got["log_loss"].null_count() == got.height
    assert_auc_matches_sklearn(got, as_float)


def test_float32_scores(tmp_path, base):
    narrow = base.with_columns(pl.col("score").cast(pl.Float32))
    path = tmp_path / "predictions.parquet"
    narrow.write_parquet(path)
    widened = narrow.with_columns(pl.col("score").cast(pl.Float64))
    for precision in ("exact", None):
        assert_same(run(path, precision=precision), run(widened, precision=precision))
    assert_auc_matches_sklearn(run(path), widened)


# --- group keys -------------------------------------------------------------------------------


def test_null_group_key_is_its_own_group(tmp_path, base):
    with_null = base.with_columns(
        segment=pl.when(pl.col("segment") == "b").then(None).otherwise(pl.col("segment"))
    )
    path = tmp_path / "predictions.parquet"
    with_null.write_parquet(path)
    got = run(path)
    assert got["segment"].to_list() == [None, None, "a", "a", "c", "c"]
    null_rows = got.filter(pl.col("segment").is_null()).drop("segment")
    alone = run(base.filter(pl.col("segment") == "b"), by=None)
    assert_same(null_rows, alone)
    assert_auc_matches_sklearn(got, with_null)
