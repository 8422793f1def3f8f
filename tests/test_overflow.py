"""Sums of weights that overflow to inf are an error naming the group and the column."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import polars as pl
import pytest

import streameval as se

BIG = 1e308

TASKS: dict[str, dict[str, Any]] = {
    "binary": dict(label="y", score="p"),
    "binary-exact": dict(label="y", score="p", precision="exact"),
    "multiclass": dict(task="multiclass", label="y", scores=["p0", "p1"]),
    "regression": dict(task="regression", label="p", prediction="f"),
    "multilabel": dict(task="multilabel", label=["y"], scores=["p"]),
}


def frame(weights: list[float], groups: list[str] | None = None) -> pl.DataFrame:
    n = len(weights)
    return pl.DataFrame(
        {
            "g": groups or ["a"] * n,
            "y": [i % 2 for i in range(n)],
            "p": [0.2 + 0.6 * (i % 2) for i in range(n)],
            "p0": [0.8 - 0.6 * (i % 2) for i in range(n)],
            "p1": [0.2 + 0.6 * (i % 2) for i in range(n)],
            "f": [0.5] * n,
            "w": weights,
        }
    )


def check_overflow(error: pytest.ExceptionInfo[se.errors.InputError], column: str) -> None:
    msg = str(error.value)
    assert "overflowed to inf" in msg and "g='a'" in msg and f"'{column}'" in msg, msg
    assert "hint: rescale the weights" in msg


@pytest.mark.parametrize("task", list(TASKS))
def test_two_weights_of_1e308_are_refused_by_evaluate(task):
    column = "pos + neg" if task.startswith(("binary", "multilabel")) else "w"
    with pytest.raises(se.errors.InputError) as info:
        se.evaluate(frame([BIG, BIG]), by="g", weight="w", **TASKS[task])
    check_overflow(info, column)


def test_two_weights_of_1e308_in_one_bucket_name_the_column():
    df = frame([BIG, BIG]).with_columns(y=pl.lit(1), p=pl.lit(0.9))
    with pytest.raises(se.errors.InputError) as info:
        se.evaluate(df, label="y", score="p", by="g", weight="w")
    check_overflow(info, "pos")


@pytest.mark.parametrize("task", list(TASKS))
def test_merging_two_finite_states_into_an_overflow_is_refused(task):
    parts = [se.accumulate(frame([BIG, 0.0]), by="g", weight="w", **TASKS[task]) for _ in range(2)]
    assert parts[0].table.select(pl.col(pl.Float64).is_finite().all()).row(0) == (True,) * len(
        parts[0].table.select(pl.col(pl.Float64)).columns
    )
    with pytest.raises(se.errors.InputError) as info:
        se.merge(parts)
    check_overflow(info, "neg" if task.startswith(("binary", "multilabel")) else "w")


def test_large_weights_in_separate_groups_are_fine():
    """Each group's total is finite, only the whole table's is not: nothing overflowed."""
    table = se.evaluate(frame([BIG, BIG], ["a", "b"]), label="y", score="p", by="g", weight="w")
    assert table["accuracy"].to_list() == [1.0, 1.0]


def test_the_command_line_exits_2_with_one_line(tmp_path):
    path = tmp_path / "preds.parquet"
    frame([BIG, BIG]).write_parquet(path)
    args = ["evaluate", str(path), "--label", "y", "--score", "p", "--weight", "w", "--by", "g"]
    result = subprocess.run(
        [sys.executable, "-m", "streameval", *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "overflowed to inf" in lines[0], result.stderr
