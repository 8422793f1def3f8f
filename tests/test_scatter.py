"""A source summed in shards is read once (:mod:`streameval.kernels.scatter`).

Its rows are split into the shards batch by batch, spilled to files past a budget, and each
shard is summed as a unit: the tables must equal those of the same rows in memory, for every
task, with the spill files checked and removed, and the old way (each shard filtering the
source) taken when the rows cannot be split here.
"""

from __future__ import annotations

import gc
import os
import tempfile
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import streameval as se
import streameval.tasks.common as tasks
from streameval import source
from streameval.errors import InputError
from streameval.kernels import scatter

TASKS: dict[str, dict[str, Any]] = {
    "binary": dict(label="y", score="p"),
    "weighted": dict(label="y", score="p", weight="w"),
    "exact": dict(label="y", score="p", precision="exact"),
    "thresholds": dict(label="y", score="p", threshold=[0.2, 0.5]),
    "bootstrap": dict(label="y", score="p", ci="bootstrap", bootstrap=20),
    "multiclass": dict(task="multiclass", label="c", scores=["p", "q", "r"]),
    "regression": dict(task="regression", label="v", prediction="p"),
}
KEYS = ["seg", "num", "day", "cat", "big"]


def _rows(n: int = 6_000) -> pl.DataFrame:
    """Rows with String, Int32, Date, Categorical and Int64 keys (with nulls), several tasks."""
    rng = np.random.default_rng(7)
    p = rng.integers(0, 50, n) / 50  # tied scores
    return pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "cc", "ddd", None], n),
            "num": rng.integers(-3, 3, n).astype(np.int32),
            "day": rng.integers(20_000, 20_004, n).astype(np.int32),
            "cat": rng.choice(["x", "y", None], n),
            "big": rng.choice([2**40, -(2**50), 5], n),
            "y": rng.random(n) < p,
            "p": p,
            "q": (1 - p) / 2,
            "r": (1 - p) / 2,
            "c": rng.integers(0, 3, n),
            "v": p + rng.normal(0, 0.1, n),
            "w": rng.random(n),
        }
    ).with_columns(
        pl.col("day").cast(pl.Date),
        pl.col("cat").cast(pl.Categorical),
        pl.when(pl.col("num") == 2).then(None).otherwise(pl.col("num")).alias("num"),
    )


@pytest.fixture
def spilled(tmp_path, monkeypatch):
    """Shards of about 1,000 rows, every batch spilled, the spill files under tmp_path."""
    monkeypatch.setattr(source, "SHARD_ROWS", 1_000)
    monkeypatch.setattr(scatter, "SPILL_BYTES", 1)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    reads: list[int] = []
    real = tasks.collect_batches

    def counted(*args: Any) -> Any:
        reads.append(1)
        return real(*args)

    monkeypatch.setattr(tasks, "collect_batches", counted)
    gave_up: list[int] = []
    give_up = scatter.Scatter._give_up

    def noted(self: scatter.Scatter) -> None:
        gave_up.append(1)
        give_up(self)

    monkeypatch.setattr(scatter.Scatter, "_give_up", noted)
    return spill, reads, gave_up


def _file(tmp_path: Any, df: pl.DataFrame) -> str:
    path = str(tmp_path / "rows.parquet")
    df.write_parquet(path, row_group_size=700)  # several batches
    return path


@pytest.mark.filterwarnings("ignore:null for the groups concerned")  # (regression's domains)
@pytest.mark.parametrize("task", sorted(TASKS))
def test_shards_read_once_and_spilled_give_the_tables_of_the_rows_in_memory(
    tmp_path, spilled, task
):
    spill, reads, gave_up = spilled
    df = _rows()
    path = _file(tmp_path, df)
    kw = TASKS[task]
    got = se.evaluate(path, by=KEYS, **kw).sort(KEYS)
    want = se.evaluate(df, by=KEYS, **kw).sort(KEYS)
    assert reads == [1] and not gave_up  # one read, split here
    assert got.height == want.height > 100
    assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
    if task not in ("bootstrap", "thresholds"):
        got = se.accumulate(path, by=KEYS, **kw).metrics().sort(KEYS)
        want = se.accumulate(df, by=KEYS, **kw).metrics().sort(KEYS)
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)
    assert os.listdir(spill) == []  # the spill directory went with the pass


def test_one_key_and_a_lazyframe_source_are_split_too(tmp_path, spilled):
    _, reads, gave_up = spilled
    df = _rows()
    lf = pl.scan_parquet(_file(tmp_path, df)).with_columns(p2=pl.col("p") ** 2)
    got = se.evaluate(lf, label="y", score="p2", by="seg").sort("seg")
    want = se.evaluate(df.with_columns(p2=pl.col("p") ** 2), label="y", score="p2", by="seg")
    assert reads == [1] and not gave_up
    assert got.equals(want.sort("seg"))


def test_bad_rows_in_shards_give_the_error_of_the_rows_in_memory(tmp_path, spilled):
    _, _, gave_up = spilled
    df = _rows().with_columns(p=pl.when(pl.col("seg") == "b").then(None).otherwise(pl.col("p")))
    path = _file(tmp_path, df)
    with pytest.raises(InputError) as want:
        se.evaluate(df, label="y", score="p", by=["seg", "day"])
    with pytest.raises(InputError) as got:
        se.evaluate(path, label="y", score="p", by=["seg", "day"])
    assert str(got.value) == str(want.value)
    assert gave_up == [1]  # (rows with nulls are not split: each shard read them)


def test_a_temporary_directory_that_cannot_be_written_reads_each_shard(
    tmp_path, spilled, monkeypatch
):
    _, _, gave_up = spilled
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setattr(tempfile, "tempdir", str(blocked / "sub"))
    df = _rows()
    path = _file(tmp_path, df)
    with pytest.warns(UserWarning, match=r"could not write the shards' rows under .*TMPDIR"):
        got = se.evaluate(path, label="y", score="p", by=["seg", "day"])
    assert gave_up == [1]
    assert got.sort("seg", "day").equals(
        se.evaluate(df, label="y", score="p", by=["seg", "day"]).sort("seg", "day")
    )


def test_a_spill_file_changed_under_the_pass_is_refused(tmp_path, spilled, monkeypatch):
    spill, _, _ = spilled
    frame = scatter.Scatter.frame

    def tampered(self: scatter.Scatter, k: int) -> pl.DataFrame:
        with open(self._path(k, 0), "ab") as f:
            f.write(b"\0")
        return frame(self, k)

    monkeypatch.setattr(scatter.Scatter, "frame", tampered)
    path = _file(tmp_path, _rows())
    with pytest.raises(RuntimeError, match=r"spill file .* holds \d+ bytes, expected \d+"):
        se.evaluate(path, label="y", score="p", by=["seg", "day"])
    gc.collect()
    assert os.listdir(spill) == []  # removed with the pass that failed


def test_a_warning_counting_rows_is_given_once_for_all_shards(tmp_path, spilled):
    df = _rows().with_columns(q=pl.col("q") * 1.5)  # scores of most rows sum past 1
    path = _file(tmp_path, df)
    kw: dict[str, Any] = dict(task="multiclass", label="c", scores=["p", "q", "r"], by=KEYS)
    with pytest.warns(UserWarning) as want:
        se.evaluate(df, **kw)
    with pytest.warns(UserWarning) as got:
        se.evaluate(path, **kw)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    assert len(got) == 1 and "do not sum to 1" in str(got[0].message)
