"""Hive partitions larger than a shard are summed in shards of whole groups (read once each)."""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import streameval as se
from reference import kernel_path
from streameval.kernels import scatter

planner = importlib.import_module("streameval.pipeline")
pytestmark = [
    pytest.mark.filterwarnings("ignore::streameval.DomainWarning"),
    pytest.mark.filterwarnings("ignore:the scores of:UserWarning"),
]


def _frame(rows: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(3), rows).round(3)
    return pl.DataFrame(
        {
            "day": rng.choice(["2026-01-01", "2026-01-02", "2026-01-03"], rows),
            "g": rng.integers(0, 60, rows),
            "seg": rng.choice(["x", "y", "z"], rows),
            "y": rng.integers(0, 2, rows),
            "p": rng.random(rows),
            "c": rng.integers(0, 3, rows),
            **{f"p{k}": p[:, k] for k in range(3)},
            "f": rng.normal(0, 1, rows),
            "w": rng.choice([0.5, 1.0, 2.0], rows),
        }
    )


@pytest.fixture(scope="module")
def hive() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        _frame(9_000, seed=1).write_parquet(tmp, partition_by="day")
        yield Path(tmp)


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[Any]]:
    """Shards of 500 rows, every partition counted: the readers that ran, the units planned."""
    monkeypatch.setattr("streameval.source.SHARD_ROWS", 500)
    monkeypatch.setattr("streameval.source.SMALL_UNIT_BYTES", 0)
    ran: list[int] = []
    planned: list[Any] = []
    run, split = scatter.Scatter.run, planner.split_large

    def running(self: scatter.Scatter, *args: Any) -> None:
        ran.append(id(self))
        run(self, *args)

    def splitting(*args: Any) -> Any:
        planned.append(split(*args))
        return planned[-1]

    monkeypatch.setattr(scatter.Scatter, "run", running)
    monkeypatch.setattr(planner, "split_large", splitting)
    return ran, planned


TASKS: dict[str, dict[str, Any]] = {
    "binary": dict(label="y", score="p"),
    "weighted": dict(label="y", score="p", weight="w"),
    "multiclass": dict(task="multiclass", label="c", scores=["p0", "p1", "p2"]),
    "regression": dict(task="regression", label="f", prediction="p"),
    "multilabel": dict(task="multilabel", label=["y"], scores=["p"], weight="w"),
}


@pytest.mark.parametrize("task", list(TASKS))
def test_large_partitions_give_the_same_tables(hive, task, small_shards):
    kw = TASKS[task] | {"by": ["day", "g", "seg"]}
    ran, planned = small_shards
    ours = se.evaluate(hive, **kw)
    (units,) = planned
    assert len(units) > 3 and all(u.scatter is not None for u in units)  # several shards each
    assert len(ran) == len(units) and len(set(ran)) == 3  # each partition read once
    assert not any(u.scatter._buffers for u in units)  # its split rows let go once all read
    state = se.accumulate(hive, **kw)
    with kernel_path("off"):
        theirs = se.evaluate(hive, **kw)
    assert_frame_equal(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    assert_frame_equal(state.metrics(), theirs, rel_tol=1e-9, abs_tol=1e-12)


def test_a_partition_of_one_group_stays_whole(hive, small_shards):
    kw: dict[str, Any] = dict(label="y", score="p", by=["day"])
    ours = se.evaluate(hive, **kw)
    (units,) = small_shards[1]
    assert len(units) == 3 and all(u.shard is None for u in units)
    assert_frame_equal(ours, se.evaluate(pl.scan_parquet(hive), **kw))


@pytest.mark.parametrize("task", ["binary", "weighted"])
def test_units_finalized_a_few_groups_at_a_time_give_one_table(hive, task, monkeypatch):
    kw = TASKS[task] | {"by": ["day", "g", "seg"]}
    whole = se.evaluate(hive, **kw)
    monkeypatch.setattr(importlib.import_module("streameval.local"), "FINISH_ROWS", 50)
    assert_frame_equal(se.evaluate(hive, **kw), whole)
    assert_frame_equal(se.evaluate(hive, ci="wilson", **kw), _polars_table(hive, ci="wilson", **kw))


def _polars_table(source: Any, **kw: Any) -> pl.DataFrame:
    with kernel_path("off"):
        return se.evaluate(source, **kw)


def test_a_partition_whose_footer_cannot_be_read_gets_the_passs_error(tmp_path, small_shards):
    _frame(600, seed=2).write_parquet(tmp_path, partition_by="day")
    broken = next((tmp_path / "day=2026-01-02").iterdir())
    broken.write_bytes(b"not parquet" * 100)
    with pytest.raises(se.InputError, match="2026-01-02"):
        se.evaluate(tmp_path, label="y", score="p", by=["day", "g"])


def test_bootstrap_tables_of_split_partitions(hive, small_shards):
    kw: dict[str, Any] = dict(label="y", score="p", by=["day", "seg"], ci="bootstrap")
    kw |= dict(bootstrap=20, seed=3)
    ours = se.evaluate(hive, **kw)
    assert len(small_shards[1][0]) > 3  # (evaluate draws in the kernel: partitions split)
    assert_frame_equal(ours, _polars_table(hive, **kw), rel_tol=1e-9, abs_tol=1e-12)
    planned = len(small_shards[1])
    state = se.accumulate(hive, label="y", score="p", by=["day", "seg"], bootstrap=5)
    assert len(small_shards[1]) == planned  # (a replicated state's passes: partitions whole)
    assert state.table["replicate"].n_unique() == 6
