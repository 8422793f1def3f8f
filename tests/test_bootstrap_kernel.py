"""Bootstrap replicates drawn by the compiled kernel against the state's Polars passes.

``evaluate(ci="bootstrap")`` of a binary, regression or multiclass task reads each unit once
and reads every replicate off its placed rows
(:meth:`streameval.kernels.compiled.CompiledCells.replicated`,
:meth:`streameval.kernels.regression.Histograms.replicated_sums`,
:meth:`streameval.kernels.classes.ClassTables.replicated_sums`);
``accumulate(bootstrap=R).metrics(ci="bootstrap")`` builds the replicated state by Polars
passes (:mod:`streameval.resample_draw`), the reference: same draws, same tables, to the
order of float additions.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sort_kernel import frames

import streameval as se
from reference_multiclass import multiclass_frames
from reference_regression import regression_frames
from streameval import resample_plan
from streameval import source as source_module
from streameval.errors import InputError
from streameval.kernels import classes, compiled, regression
from streameval.kernels.weightedloops import drawn
from streameval.resample_draw import draw_limits, with_counts
from streameval.split.keys import mix_int

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")


#: Each task's kernel method drawing the replicates.
DRAWING = {
    "binary": (compiled.CompiledCells, "replicated"),
    "regression": (regression.Histograms, "replicated_sums"),
    "multiclass": (classes.ClassTables, "replicated_sums"),
}


@contextmanager
def spying() -> Iterator[list[bool]]:
    """Whether each unit's replicates came from the kernel (True) or not (False).

    A unit without rows (a shard a hash sent no group to) may take the state: it is empty.
    """
    seen: list[bool] = []

    def spy(original: Any) -> Any:
        def drawing(self: Any, *args: Any) -> Any:
            out = original(self, *args)
            rows = getattr(self, "rows", None)
            empty = rows is not None and rows.frame.height == 0
            seen.append(out is not None or empty)
            return out

        return drawing

    with pytest.MonkeyPatch.context() as patch:
        for owner, name in DRAWING.values():
            patch.setattr(owner, name, spy(getattr(owner, name)))
        yield seen


def reference(source: Any, options: dict[str, Any]) -> pl.DataFrame:
    """The intervals from the replicated state (Polars passes), as State.metrics gives them."""
    options = dict(options)
    level = options.pop("level", 0.95)
    options.pop("ci")
    if options.get("task", "binary") != "binary":
        alpha = options.pop("alpha", 0.5)
        state = se.accumulate(source, **options)
        return state.metrics(ci="bootstrap", level=level, alpha=alpha)
    threshold = options.pop("threshold", 0.5)
    state = se.accumulate(source, thresholds=threshold, **options)
    return state.metrics(threshold, ci="bootstrap", level=level)


def assert_same(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    """Same columns and rows; floats to 1e-9 (relative, or absolute near 0), the rest equal."""
    assert ours.columns == theirs.columns
    assert ours.dtypes == theirs.dtypes
    assert ours.height == theirs.height
    for name in ours.columns:
        a, b = ours[name].to_list(), theirs[name].to_list()
        if ours[name].dtype.is_float():
            for x, y in zip(a, b, strict=True):
                assert (x is None) == (y is None), (name, x, y)
                if x is not None and not (math.isnan(x) and math.isnan(y)):
                    assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9), (name, x, y)
        else:
            assert a == b, name


def both(source: Any, options: dict[str, Any]) -> tuple[Any, Any, list[bool]]:
    """(kernel's table or error, reference table or error, which units took the kernel)."""
    outcomes = []
    with spying() as seen:
        for run in (lambda: se.evaluate(source, **options), lambda: reference(source, options)):
            try:
                outcomes.append(run())
            except InputError as error:
                outcomes.append(error)
    return outcomes[0], outcomes[1], seen


@settings(max_examples=60, deadline=None)
@given(
    frames(),
    st.sampled_from([1, 4, 11]),
    st.sampled_from([[0.5], [0.25, 0.5, 0.7]]),
    st.booleans(),
    st.integers(1, 30),
    st.integers(0, 2**64 - 1),
)
def test_kernel_replicates_match_the_state_path(data, precision, threshold, by_id, r, seed):
    df, keys, weight = data
    df = df.with_row_index("id")
    options = {
        "label": "y", "score": "p", "by": keys, "weight": weight, "precision": precision,
        "threshold": threshold, "ci": "bootstrap", "bootstrap": r, "seed": seed,
        "row_id": "id" if by_id else None, "level": 0.8,
    }  # fmt: skip
    ours, theirs, seen = both(df, options)
    if isinstance(theirs, InputError):  # rows repeating each other without row_id=
        assert isinstance(ours, InputError) and str(ours) == str(theirs)
        return
    # (scores beyond could overflow a squared error, and weights near 0 make an AP bound
    # term NaN: such units take the state, as without replicates)
    if df["p"].abs().max() < 1e100 and weight is None:
        assert seen and all(seen)
    assert_same(ours, theirs)


@settings(max_examples=25, deadline=None)
@given(
    regression_frames(),
    st.sampled_from([1, 4, 11]),
    st.booleans(),
    st.integers(1, 25),
    st.integers(0, 2**64 - 1),
)
def test_regression_kernel_replicates_match_the_state_path(data, precision, by_id, r, seed):
    df, _, weighted = data
    df = df.with_row_index("id")
    options = {
        "task": "regression", "label": "y", "prediction": "f", "by": "g",
        "weight": "w" if weighted else None, "precision": precision, "ci": "bootstrap",
        "bootstrap": r, "seed": seed, "row_id": "id" if by_id else None, "level": 0.8,
        "alpha": 0.3,
    }  # fmt: skip
    ours, theirs, seen = both(df, options)
    if isinstance(theirs, InputError):  # rows repeating each other without row_id=
        assert isinstance(ours, InputError) and str(ours) == str(theirs)
        return
    assert seen and all(seen)
    assert_same(ours, theirs)


@settings(max_examples=25, deadline=None)
@given(
    multiclass_frames(),
    st.sampled_from([1, 4, 11]),
    st.integers(1, 25),
    st.integers(0, 2**64 - 1),
)
def test_multiclass_kernel_replicates_match_the_state_path(data, precision, r, seed):
    df, labels, _, weighted = data
    df = df.with_row_index("id")
    options = {
        "task": "multiclass", "label": "y", "by": "g", "classes": labels,
        "scores": [f"p{j}" for j in range(len(labels))] if "p0" in df.columns else None,
        "prediction": "pred" if "pred" in df.columns else None,
        "weight": "w" if weighted else None, "precision": precision, "ci": "bootstrap",
        "bootstrap": r, "seed": seed, "row_id": "id", "level": 0.8,
    }  # fmt: skip
    ours, theirs, seen = both(df, options)
    if isinstance(theirs, InputError):  # (refused the same way: a class without a score…)
        assert isinstance(ours, InputError) and str(ours) == str(theirs)
        return
    assert seen and all(seen)
    assert_same(ours, theirs)


def _data(rows: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows)
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "day": rng.integers(1, 4, rows),
            "seg": rng.choice(["a", "b", "c", "d"], rows),
            "y": y,
            "p": 1 / (1 + np.exp(-(rng.normal(size=rows) + 2 * y - 1))),
            "w": rng.exponential(size=rows),
            "c": rng.integers(0, 3, rows),
            "q0": rng.random(rows),
            "q1": rng.random(rows),
            "q2": rng.random(rows),
        }
    ).with_columns(f=pl.col("p") * 2 - pl.col("y"))


#: Each task's columns in :func:`_data`.
TASKS: dict[str, dict[str, Any]] = {
    "binary": {"label": "y", "score": "p", "threshold": [0.3, 0.5]},
    "regression": {"task": "regression", "label": "p", "prediction": "f", "alpha": 0.2},
    "multiclass": {"task": "multiclass", "label": "c", "scores": ["q0", "q1", "q2"]},
}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("layout", ["hive", "file", "shards", "lazy"])
@pytest.mark.parametrize("weight", [None, "w"])
def test_every_source_kind_takes_the_kernel(tmp_path: Path, monkeypatch, layout, weight, task):
    df = _data(3_000, 1)
    by: list[str] = ["seg", "day"]
    source: Any
    if layout == "hive":
        for (day,), part in df.partition_by("day", as_dict=True).items():
            (tmp_path / f"day={day}").mkdir()
            part.drop("day").write_parquet(tmp_path / f"day={day}" / "0.parquet")
        source = tmp_path
    else:
        df.write_parquet(tmp_path / "all.parquet")
        source = tmp_path / "all.parquet"
        if layout == "lazy":
            source = pl.scan_parquet(source)
        if layout == "shards":  # several shards of whole groups, each a read of the file
            monkeypatch.setattr(source_module, "SHARD_ROWS", 500)
    options = {"by": by, "weight": weight, "ci": "bootstrap", "bootstrap": 40, "row_id": "id"}
    options |= TASKS[task]
    ours, theirs, seen = both(source, options)
    assert (len(seen) > 1) if layout == "shards" else len(seen) == (3 if layout == "hive" else 1)
    assert all(seen)
    assert_same(ours, theirs)
    assert_same(ours, se.evaluate(df, **options))  # the same rows in memory: the same answer


@pytest.mark.parametrize("task", TASKS)
def test_exact_mode_and_metric_selection_take_the_state_path(task):
    df = _data(500, 2)
    metric = {"binary": "roc_auc", "regression": "mae", "multiclass": "accuracy"}[task]
    for extra in ({"precision": "exact"}, {"metrics": [metric]}):
        options = TASKS[task] | {"ci": "bootstrap", "bootstrap": 20, "row_id": "id"} | extra
        with spying() as seen:
            out = se.evaluate(df, **options)
        assert not seen
        assert f"{metric}_lo" in out.columns


def test_a_group_a_replicate_misses_is_left_out_as_in_the_state():
    # one row per group: most replicates draw none of some group's rows
    df = pl.DataFrame({"id": range(6), "g": [0, 0, 1, 2, 2, 2], "y": [0, 1, 1, 0, 1, 0]})
    df = df.with_columns(p=pl.Series([0.1, 0.8, 0.6, 0.3, 0.9, 0.2]))
    options = {
        "label": "y", "score": "p", "by": "g", "ci": "bootstrap", "bootstrap": 25,
        "row_id": "id", "seed": 5,
    }  # fmt: skip
    ours, theirs, seen = both(df, options)
    assert seen == [True]
    assert_same(ours, theirs)


def test_draws_are_the_polars_draws_for_any_key_bits():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**64, 20_000, dtype=np.uint64)
    # keys whose bits read as a float are NaN (signalling and quiet), inf and subnormal
    keys[:4] = [0x7FF0_0000_0000_0001, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0000, 1]
    limits = draw_limits()
    for r in (1, 2, 65_535):
        frame = pl.LazyFrame({"k": keys, "r": np.full(keys.size, r, np.uint16)})
        expected = with_counts(frame, "k", "r", "n").collect()["n"].to_numpy()
        salt = np.uint64(mix_int(r))
        got = [drawn(k, salt, limits) for k in keys[:2_000]]
        assert got == expected[:2_000].tolist()
        assert expected.mean() == pytest.approx(1.0, abs=0.05)


def test_placed_keys_keep_their_bits(monkeypatch):
    # every other row's key reads as a NaN (signalling or quiet) when its bits are a float
    df = _data(2_000, 4)
    odd = (pl.col("id") % 2).cast(pl.UInt64)
    bits = (pl.col("id").cast(pl.UInt64) * 0x9E37_79B9) | (odd * 0x7FF0_0000_0000_0001)
    expected = np.sort(df.select(bits)["id"].to_numpy())

    def fake_keys(lf: pl.LazyFrame, *args: Any, **kwargs: Any) -> pl.LazyFrame:
        return lf.with_columns(bits.alias(args[3]))

    captured: list[Any] = []
    original = compiled.CompiledCells.replicated

    def replicated(self: compiled.CompiledCells, *args: Any) -> Any:
        self._placed()
        captured.append(np.sort(self._keyed().copy()))
        return original(self, *args)

    monkeypatch.setattr(resample_plan, "with_row_key", fake_keys)
    monkeypatch.setattr(compiled.CompiledCells, "replicated", replicated)
    se.evaluate(df, label="y", score="p", ci="bootstrap", bootstrap=3, row_id="id")
    assert len(captured) == 1
    assert np.array_equal(captured[0], expected)
