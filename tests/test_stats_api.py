"""Intervals and tests: bad input gets named errors; sources, files and the CLI agree."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import streameval as se
from streameval.errors import InputError

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

DF = pl.DataFrame(
    {
        "day": ["d1"] * 6 + ["d2"] * 6,
        "y": [0, 0, 1, 1, 0, 1] * 2,
        "a": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7, 0.3, 0.2, 0.6, 0.5, 0.1, 0.9],
        "b": [0.3, 0.2, 0.6, 0.5, 0.1, 0.9, 0.1, 0.4, 0.35, 0.8, 0.2, 0.7],
    }
)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"ci": "wald"}, ["ci", "'wald'", "wilson"]),
        ({"ci": "wilson", "level": 95}, ["level", "95", "0.95"]),
        ({"ci": "wilson", "auc_method": "bootstrap"}, ["auc", "'bootstrap'", "delong"]),
    ],
)
def test_bad_interval_options_are_named(kwargs, words):
    state = se.accumulate(DF, label="y", score="a")
    with pytest.raises(InputError) as info:
        state.metrics(**kwargs)
    assert all(w in str(info.value) for w in words), info.value
    with pytest.raises(InputError):
        se.evaluate(DF, label="y", score="a", **kwargs)


def test_regression_has_no_proportion_intervals():
    df = pl.DataFrame({"y": [1.0, 2.0], "f": [1.5, 2.0]})
    state = se.accumulate(df, task="regression", label="y", prediction="f")
    with pytest.raises(InputError, match="bootstrap or jackknife"):
        state.metrics(ci="wilson")


@pytest.mark.parametrize(
    ("scores", "words"),
    [(["a"], ["two or more", "['a']"]), (["a", "a"], ["distinct"]), ("a", ["scores="])],
)
def test_paired_task_needs_two_score_columns(scores, words):
    with pytest.raises(InputError) as info:
        se.accumulate(DF, task="paired", label="y", scores=scores)
    assert all(w in str(info.value) for w in words), info.value


def test_paired_task_names_bad_scores():
    bad = DF.with_columns(pl.when(pl.col("a") > 0.75).then(float("nan")).otherwise("a").alias("a"))
    with pytest.raises(InputError, match="finite values in the score column 'a'"):
        se.accumulate(bad, task="paired", label="y", scores=["a", "b"])


def test_roc_test_errors():
    binary = se.accumulate(DF, label="y", score="a", by="day")
    with pytest.raises(InputError, match="column= and baseline="):
        binary.roc_test()
    with pytest.raises(InputError, match="group keys"):
        binary.roc_test("segment", "x")
    with pytest.raises(InputError, match="values are"):
        binary.roc_test("day", "d9")
    with pytest.raises(InputError, match="alternative"):
        binary.roc_test("day", "d1", alternative="bigger")
    paired = se.accumulate(DF, task="paired", label="y", scores=["a", "b"])
    with pytest.raises(InputError, match="paired state"):
        paired.roc_test("day", "d1")
    regression = se.accumulate(DF, task="regression", label="y", prediction="a")
    with pytest.raises(InputError, match="binary state"):
        regression.roc_test("day", "d1")


def _hive(folder):
    """DF written as one Parquet file per day (``day=…/part-0.parquet``)."""
    for day, part in DF.partition_by("day", as_dict=True).items():
        (folder / f"day={day[0]}").mkdir()
        part.drop("day").write_parquet(folder / f"day={day[0]}" / "part-0.parquet")


def test_unpaired_days_and_paired_models_from_files(tmp_path):
    _hive(tmp_path)
    state = se.accumulate(tmp_path, label="y", score="a", by="day", precision="exact")
    test = state.roc_test("day", "d1").row(0, named=True)
    assert test["day"] == "d2" and test["baseline"] == "d1"
    assert test["difference"] == pytest.approx(test["roc_auc"] - test["roc_auc_baseline"])
    on_files = se.accumulate(tmp_path, task="paired", label="y", scores=["a", "b"], by="day")
    in_memory = se.accumulate(DF, task="paired", label="y", scores=["a", "b"], by="day")
    assert on_files.roc_test().equals(in_memory.roc_test())
    path = tmp_path / "state.parquet"
    in_memory.write(path)
    assert se.read_state(path).roc_test().equals(in_memory.roc_test())


def test_evaluate_with_ci_on_hive_units_equals_the_state(tmp_path):
    """The same table, to the last bits of float sums: evaluate's comes from the kernel."""
    _hive(tmp_path)
    table = se.evaluate(tmp_path, label="y", score="a", by="day", ci="clopper-pearson")
    state = se.accumulate(DF, label="y", score="a", by="day")
    expected = state.metrics(ci="clopper-pearson")
    assert table.columns == expected.columns
    assert_frame_equal(table, expected, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)


def test_cli_summary_and_tests(tmp_path):
    path = tmp_path / "preds.parquet"
    DF.write_parquet(path)
    run = [sys.executable, "-m", "streameval", "evaluate", str(path), "--label", "y"]
    summary = subprocess.run([*run, "--score", "a", "--summary"], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    assert "Mcnemar's Test P-Value" in summary.stdout and "'Positive' Class : 1" in summary.stdout
    out = tmp_path / "tests.csv"
    tests = subprocess.run(
        [*run, "--task", "paired", "--scores", "a,b", "--by", "day", "--table", "tests",
         "--output", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stderr
    assert pl.read_csv(out).columns[:3] == ["day", "model_a", "model_b"]
    bad = subprocess.run([*run, "--score", "a", "--table", "tests"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--task paired" in bad.stderr


def test_bootstrap_and_jackknife_through_evaluate_and_the_cli(tmp_path):
    from streameval.resample import bootstrap_intervals, jackknife_intervals

    df = pl.concat([DF.with_columns(pl.lit(i).alias("copy")) for i in range(20)]).with_row_index(
        "id"
    )
    table = se.evaluate(df, label="y", score="a", by="day", ci="bootstrap", bootstrap=25,
                        row_id="id", seed=3)  # fmt: skip
    state = se.accumulate(df, label="y", score="a", by="day", bootstrap=25, row_id="id", seed=3)
    # Weighted sums are float sums in no fixed order: equal to rounding.
    assert_frame_equal(table, bootstrap_intervals(state, lambda s: s.metrics()), rel_tol=1e-9)
    assert (table["roc_auc_lo"] <= table["roc_auc"]).all()
    plain = se.accumulate(df, label="y", score="a", by=["day", "copy"])
    jack = se.evaluate(df, label="y", score="a", by=["day", "copy"], ci="jackknife",
                       jackknife="copy")  # fmt: skip
    assert_frame_equal(
        jack, jackknife_intervals(plain, "copy", lambda s: s.metrics()), rel_tol=1e-9
    )
    with pytest.raises(InputError, match="bootstrap=R"):
        plain.metrics(ci="bootstrap")
    path = tmp_path / "preds.parquet"
    df.write_parquet(path)
    out = tmp_path / "boot.csv"
    run = subprocess.run(
        [sys.executable, "-m", "streameval", "evaluate", str(path), "--label", "y", "--score",
         "a", "--by", "day", "--ci", "bootstrap", "--replicates", "25", "--row-id", "id",
         "--seed", "3", "--output", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert pl.read_csv(out)["roc_auc_hi"].to_list() == pytest.approx(table["roc_auc_hi"].to_list())
