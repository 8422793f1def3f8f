"""Multiclass and regression on real Parquet partitions and from the command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import streameval as se

pytestmark = pytest.mark.filterwarnings("ignore:the scores of:UserWarning")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streameval", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """A hive-partitioned log (day=…/part-0.parquet) with a 3-class and a numeric target.

    Class 'bird' never occurs on the second day.
    """
    root = tmp_path_factory.mktemp("log")
    rng = np.random.default_rng(7)
    for day, classes in [("2026-10-01", 3), ("2026-10-02", 2)]:
        n = 400
        y = rng.integers(0, classes, n)
        raw = rng.random((n, 3)) + np.eye(3)[y] * rng.random(n)[:, None]
        p = raw / raw.sum(axis=1, keepdims=True)
        names = np.array(["cat", "dog", "bird"])
        value = rng.gamma(2.0, 3.0, n)
        df = pl.DataFrame(
            {
                "segment": rng.choice(["a", "b"], n),
                "animal": names[y],
                "guess": names[p.argmax(axis=1)],
                "p_cat": p[:, 0], "p_dog": p[:, 1], "p_bird": p[:, 2],
                "amount": value,
                "forecast": value * rng.lognormal(0, 0.3, n),
                "w": rng.random(n),
            }
        )  # fmt: skip
        (root / f"day={day}").mkdir()
        df.write_parquet(root / f"day={day}" / "part-0.parquet")
    return root


MULTICLASS = {
    "task": "multiclass",
    "label": "animal",
    "scores": {"cat": "p_cat", "dog": "p_dog", "bird": "p_bird"},
}
REGRESSION = {"task": "regression", "label": "amount", "prediction": "forecast"}


@pytest.mark.parametrize("kw", [MULTICLASS, REGRESSION], ids=["multiclass", "regression"])
def test_partitioned_directory_equals_in_memory(log, kw):
    by = ["segment", "day"]
    from_files = se.evaluate(log, by=by, weight="w", precision="exact", **kw)
    frame = pl.read_parquet(log, hive_partitioning=True)
    in_memory = se.evaluate(frame, by=by, weight="w", precision="exact", **kw)
    assert from_files.height == 4
    assert_frame_equal(from_files, in_memory, check_exact=False, rel_tol=1e-12)


def test_days_missing_a_class_merge_when_classes_come_from_the_scores(log, tmp_path):
    days = sorted(log.glob("day=*"))
    states = [se.accumulate(d, by="segment", **MULTICLASS) for d in days]
    merged = se.merge(states).metrics()
    whole = se.evaluate(log, by="segment", **MULTICLASS)
    assert_frame_equal(merged, whole, check_exact=False, rel_tol=1e-12)
    frames = [pl.read_parquet(d).filter(pl.col("guess") != "bird") for d in days]
    found = [
        se.accumulate(f, task="multiclass", label="animal", prediction="guess") for f in frames
    ]
    assert [s.spec.classes for s in found] == [("bird", "cat", "dog"), ("cat", "dog")]
    kw = {"task": "multiclass", "label": "animal", "prediction": "guess"}
    together = se.evaluate(pl.concat(frames), **kw)  # found classes merge by their union
    assert_frame_equal(se.merge(found).metrics(), together, check_exact=False, rel_tol=1e-12)


def test_cli_multiclass_tables(log, tmp_path):
    base = ["evaluate", str(log), "--task", "multiclass", "--label", "animal"]
    scores = ["--scores", "cat=p_cat,dog=p_dog", "--scores", "bird=p_bird"]
    out = tmp_path / "mc.parquet"
    result = cli(*base, *scores, "--by", "day", "--output", str(out))
    assert result.returncode == 0, result.stderr
    expected = se.evaluate(log, by="day", **MULTICLASS)
    assert_frame_equal(pl.read_parquet(out), expected, check_exact=False, rel_tol=1e-12)
    result = cli(*base, "--prediction", "guess", "--table", "confusion")
    assert result.returncode == 0, result.stderr
    assert "actual" in result.stdout and "predicted" in result.stdout
    result = cli(*base, "--prediction", "guess", "--classes", "cat,dog", "--by", "day")
    assert result.returncode == 2
    assert "expected labels among the classes ('cat', 'dog')" in result.stderr
    assert "bird" in result.stderr


def test_cli_regression_with_chosen_metrics(log):
    args = ["evaluate", str(log), "--task", "regression", "--label", "amount"]
    result = cli(*args, "--prediction", "forecast", "--metric", "rmse", "--metric", "r2")
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[0]  # piped: CSV, the header first
    assert "rmse" in header and "r2" in header and "mae" not in header
    result = cli(*args, "--prediction", "forecast", "--metric", "rmsee")
    assert result.returncode == 2 and "did you mean 'rmse'" in result.stderr


def test_multiclass_bad_input_is_named(log):
    frame = pl.read_parquet(log, hive_partitioning=True)
    with pytest.raises(se.InputError, match="one score column per class"):
        se.evaluate(frame, task="multiclass", label="animal", scores=["p_cat", "p_dog"])
    with pytest.raises(se.InputError, match=r"expected prediction= .* or scores="):
        se.evaluate(frame, task="multiclass", label="animal")
    bad = frame.with_columns(
        pl.when(pl.col("w") < 0.1).then(None).otherwise("p_dog").alias("p_dog")
    )
    with pytest.raises(se.InputError, match=r"no nulls in the score column 'p_dog', found \d+"):
        se.evaluate(bad, **MULTICLASS)
    with pytest.raises(se.InputError, match="score column 'p_bird' to be numeric"):
        se.evaluate(frame.with_columns(pl.col("p_bird").cast(pl.String)), **MULTICLASS)
    with pytest.raises(se.InputError, match="top_k to be an integer"):
        se.evaluate(frame, top_k=0, **MULTICLASS)
    with pytest.raises(se.InputError, match="multiclass state for per_class"):
        se.accumulate(frame, **REGRESSION).per_class()
    with pytest.raises(se.InputError, match="task to be one of"):
        se.evaluate(frame, task="multi", label="animal")


def test_domain_warnings_of_partitions_add_up_to_one(tmp_path):
    for day, values in [("2026-10-01", [0.0, 1.0]), ("2026-10-02", [-2.0, 0.0])]:
        (tmp_path / f"day={day}").mkdir()
        frame = pl.DataFrame({"y": values, "f": [1.0, 1.0]})
        frame.write_parquet(tmp_path / f"day={day}" / "part-0.parquet")
    with pytest.warns(se.DomainWarning) as caught:
        se.evaluate(tmp_path, by="day", **REGRESSION | {"label": "y", "prediction": "f"})
    domain = [w for w in caught if isinstance(w.message, se.DomainWarning)]
    assert len(domain) == 1
    assert domain[0].message.problems["mape needs |label| ≥ machine epsilon"] == [2, 2]
    assert domain[0].message.problems["msle needs label and prediction > −1"] == [1, 1]
