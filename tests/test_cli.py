"""The command line, run as a user would: a real process on real Parquet files."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

import streameval as se
from streameval.demo import generate_predictions


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streameval", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    return generate_predictions(tmp_path_factory.mktemp("log"), rows=3_000, segments=2, days=2)


@pytest.mark.parametrize("suffix", ["parquet", "csv", "json"])
def test_evaluate_writes_the_metric_table(log, tmp_path, suffix):
    out = tmp_path / f"metrics.{suffix}"
    args = ["evaluate", log, "--label", "label", "--score", "score", "--by", "segment"]
    result = cli(*args, "--by", "day", "--weight", "weight", "--output", str(out))
    assert result.returncode == 0, result.stderr
    expected = se.evaluate(
        log, label="label", score="score", by=["segment", "day"], weight="weight"
    )
    if suffix == "parquet":
        got = pl.read_parquet(out)
    elif suffix == "csv":
        got = pl.read_csv(out, try_parse_dates=True)
    else:
        got = pl.DataFrame(json.loads(out.read_text()))
    assert got.height == expected.height == 4
    assert got["roc_auc"].to_list() == pytest.approx(expected["roc_auc"].to_list(), rel=1e-12)


def test_evaluate_prints_a_table_with_thresholds_and_exact_precision(log):
    args = ["evaluate", log, "--label", "label", "--score", "score", "--by", "segment"]
    result = cli(*args, "--threshold", "0.3", "--threshold", "0.5", "--precision", "exact")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("seg_00") == 2  # one row per threshold
    # piped, the table is CSV; the note about the columns left out goes to stderr
    assert "roc_auc" in result.stdout.splitlines()[0] and "more columns" in result.stderr


def test_positive_value_is_parsed_for_string_labels(tmp_path):
    path = tmp_path / "p.parquet"
    pl.DataFrame({"y": ["spam", "ham", "spam", "ham"], "p": [0.9, 0.2, 0.4, 0.6]}).write_parquet(
        path
    )
    result = cli("evaluate", str(path), "--label", "y", "--score", "p", "--positive", "spam",
                 "--all")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "0.75" in result.stdout  # AUC


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--label", "lable", "--score", "score"], "did you mean 'label'"),
        (["--label", "label", "--score", "segment"], "numeric"),
        (["--label", "label", "--score", "score", "--precision", "fast"], "precision"),
        (["--label", "label", "--score", "score", "--output", "x.xlsx"], ".parquet, .csv or .json"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(log, args, needle):
    result = cli("evaluate", log, *args)
    assert result.returncode == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_source_is_one_line_and_exit_status_2(tmp_path):
    result = cli("evaluate", str(tmp_path / "nope"), "--label", "y", "--score", "p")
    assert result.returncode == 2 and "does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo.parquet"
    result = cli("demo", "--rows", "5000", "--dir", str(tmp_path / "log"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    table = pl.read_parquet(out)
    assert table.height == 5 * 7  # segments × days
    assert table["roc_auc"].is_between(0.5, 1.0).all()
