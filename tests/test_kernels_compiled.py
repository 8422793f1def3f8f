"""The compiled loops give the sort kernel's and Polars' states; hashed String keys."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_kernels_dense import ANY_THRESHOLDS
from test_sort_kernel import frames
from test_sort_kernel_bucketed import PRECISIONS, THRESHOLDS, assert_same_state, hive_copy

import streameval as se
from reference import kernel_path
from streameval.codes import key_code
from streameval.kernels import buffer, give_back, reusing
from streameval.kernels import collect as collect_module
from streameval.kernels import compiled as compiled_module
from streameval.kernels.collect import Deferred
from streameval.kernels.hashcodes import hashed_codes, hashed_exprs, number_hashes
from streameval.pipeline import prepare, unit_staged
from streameval.source import _partition_values
from streameval.tasks.common import Inputs

loops = compiled_module.loops()
assert loops is not None, "numba is a dependency: the compiled loops must load"


def compiled_and_sorted(call: Callable[[], Any]) -> tuple[Any, Any]:
    """``call()`` with the compiled loops, then with the sort kernel and Polars alone."""
    fast = call()
    with kernel_path("no-loops"):
        slow = call()
    return fast, slow


@given(frames(), PRECISIONS, THRESHOLDS | ANY_THRESHOLDS)
def test_compiled_states_and_metrics_match_the_sort_kernel(frame, precision, thresholds):
    df, keys, weight = frame
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    fast, slow = compiled_and_sorted(lambda: se.accumulate(df, thresholds=thresholds, **kw))
    assert_same_state(fast, slow)
    fast, slow = compiled_and_sorted(lambda: se.evaluate(df, threshold=thresholds, **kw))
    order = [*keys, "threshold"]
    assert_frame_equal(
        fast.sort(order, nulls_last=False), slow.sort(order, nulls_last=False), rel_tol=1e-12
    )


@settings(max_examples=20)
@given(frames(), PRECISIONS, THRESHOLDS)
def test_compiled_hive_units_match_the_sort_kernel(tmp_path_factory, frame, precision, thresholds):
    root, keys, weight = hive_copy(tmp_path_factory, frame)
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    with reusing():  # buffers handed from unit to unit, as in a pass
        fast, slow = compiled_and_sorted(lambda: se.accumulate(root, thresholds=thresholds, **kw))
    assert_same_state(fast, slow)
    fast, slow = compiled_and_sorted(lambda: se.evaluate(root, threshold=thresholds, **kw))
    assert_frame_equal(fast, slow, rel_tol=1e-12)


def test_metrics_straight_from_the_rows_match_sklearn_on_long_groups(monkeypatch):
    """The log loss as the log of a product, over groups of 10**5 rows and extreme scores."""
    tables = []
    straight = compiled_module.CompiledCells.grouped
    monkeypatch.setattr(
        compiled_module.CompiledCells,
        "grouped",
        lambda self, *a: tables.append(straight(self, *a)) or tables[-1],
    )
    rng = np.random.default_rng(11)
    n = 300_000
    extreme = np.array([0.0, 1.0, 1e-300, 1e-17, 1 - 1e-16, 0.5])
    p = np.where(rng.random(n) < 0.01, extreme[rng.integers(0, 6, n)], rng.beta(0.3, 0.7, n))
    y = rng.random(n) < np.clip(p, 0.05, 0.95)
    g = rng.integers(0, 5, n)
    # d: near-perfect probabilities (each row's loss 2**-40), e: the labels themselves (eps):
    # there the product's rounding would show, and the terms are summed a log each
    p = np.where(g == 3, np.where(y, 1 - 2.0**-40, 2.0**-40), p)
    p = np.where(g == 4, y.astype(float), p)
    df = pl.DataFrame({"g": np.array(["a", "b", "c", "d", "e"])[g], "y": y, "p": p})
    kw: dict[str, Any] = dict(label="y", score="p", by="g")
    fast, slow = compiled_and_sorted(lambda: se.evaluate(df, threshold=[0.3, 0.5], **kw))
    assert_frame_equal(fast, slow, rel_tol=1e-12)
    assert len(tables) == 1 and tables[0] is not None  # the compiled path gave the table
    sklearn = pytest.importorskip("sklearn.metrics")
    table = fast.filter(pl.col("threshold") == 0.5).sort("g")
    for i, row in enumerate(table.iter_rows(named=True)):
        mine = g == i
        assert row["n"] == mine.sum()
        want = sklearn.log_loss(y[mine], p[mine])
        assert math.isclose(row["log_loss"], want, rel_tol=1e-12), (row["g"], want)
        assert math.isclose(row["brier"], sklearn.brier_score_loss(y[mine], p[mine]), rel_tol=1e-12)
        assert row["tp"] == (y[mine] & (p[mine] >= 0.5)).sum()
        exact = sklearn.roc_auc_score(y[mine], p[mine])
        assert abs(row["roc_auc"] - exact) <= row["roc_auc_error"] + 1e-15


def test_splits_inside_buckets_in_every_binade():
    rng = np.random.default_rng(5)
    n = 20_000
    df = pl.DataFrame({"y": rng.random(n) < 0.5, "p": rng.normal(0, 3, n)})
    thresholds = [-4.1, -0.3, 0.3, 0.30001, 0.7, 2.2, 9.9]
    kw: dict[str, Any] = dict(label="y", score="p", precision=3)
    fast, slow = compiled_and_sorted(lambda: se.accumulate(df, thresholds=thresholds, **kw))
    assert_same_state(fast, slow)
    exact = se.evaluate(df, threshold=thresholds, label="y", score="p", precision="exact")
    table = fast.metrics(thresholds)
    assert table["tp"].to_list() == exact["tp"].to_list()


def test_hashed_codes_number_values_by_first_appearance_and_decode():
    code = key_code("g", pl.String)
    values = ["b", "a", None, "b", "é", "a" * 40, None, "a"]
    frame = pl.DataFrame({"g": values}).select(hashed_exprs(code, 0))
    codes, decode, span = hashed_codes(frame, code, 0, loops)
    assert codes.tolist() == [1, 2, 0, 1, 3, 4, 0, 2]
    assert span == (0, 4)  # nulls, and codes up to 4
    assert decode(pl.Series(codes)).to_list() == values


def in_chunks(values: np.ndarray, cuts: list[int]) -> pl.Series:
    """A Series of ``values`` in chunks starting at ``cuts``."""
    pieces = np.split(values, cuts)
    return pl.concat([pl.Series("x", piece) for piece in pieces], rechunk=False)


@pytest.mark.parametrize("b_cuts", [[3000, 7000], [5000]], ids=["aligned", "not-aligned"])
def test_many_distinct_values_grow_the_table_over_chunks(b_cuts):
    first = np.arange(1, 5001, dtype=np.int64) * 7919
    rows = np.concatenate([first, first[::-1]]).view(np.uint64)
    a, b = in_chunks(rows, [3000, 7000]), in_chunks(rows * np.uint64(3), b_cuts)
    frame = pl.DataFrame({"a": a, "b": b})
    codes, firsts, ok = number_hashes(frame, ["a", "b"], loops)
    assert ok
    assert codes[:5000].tolist() == list(range(1, 5001))
    assert codes[5000:].tolist() == list(range(5000, 0, -1))
    assert firsts.tolist() == list(range(5000))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=60),
    st.lists(st.integers(1, 59), max_size=3),
    st.booleans(),
)
def test_two_threads_number_the_values_as_one_pass(values, cuts, collide):
    """Halves numbered on their own and joined: the codes, first rows and ok flag of one pass."""
    first = np.array(values, np.int64) * 7919  # value 0: null (both hashes 0)
    second = first * 3
    if collide:  # value 6: value 5's first hash, another second hash
        first[first == 6 * 7919] = 5 * 7919
    hashes = {name: in_chunks(h.view(np.uint64), sorted(set(cuts))) for name, h in
              (("a", first), ("b", second))}  # fmt: skip
    frame = pl.DataFrame(hashes)
    out = []
    for rows in (compiled_module.PARALLEL_ROWS, 1):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(compiled_module, "PARALLEL_ROWS", rows)
            out.append(number_hashes(frame, ["a", "b"], loops))
    (codes, firsts, ok), (halved, halved_firsts, halved_ok) = out
    assert ok == halved_ok == (not (collide and {5, 6} <= set(values)))
    if ok:
        assert halved.tolist() == codes.tolist()
        assert halved_firsts.tolist() == firsts.tolist()


def test_a_collision_of_the_first_hash_is_caught_and_coded_another_way():
    first = np.array([5, 9, 5, 5], np.int64)
    second = np.array([1, 2, 1, 4], np.int64)  # row 3: same first hash, other second
    hashes = {"a": first.view(np.uint64), "b": second.view(np.uint64)}
    assert not number_hashes(pl.DataFrame(hashes), ["a", "b"], loops)[2]
    code = key_code("g", pl.String)
    frame = pl.DataFrame(
        {
            "_g0": first.view(np.uint64),
            "_h0": second.view(np.uint64),
            "_s0": ["x", "y", "x", "z"],
        }
    )
    codes, decode, span = hashed_codes(frame, code, 0, loops)
    assert span is None  # Categorical codes: their range is not known
    assert decode(pl.Series(codes)).to_list() == ["x", "y", "x", "z"]
    assert codes[0] == codes[2] and len(set(codes.tolist())) == 3


@pytest.mark.parametrize("weight", [None, "w"])
def test_string_keys_read_from_parquet_in_chunks_give_the_same_tables(tmp_path, weight):
    """Units read in many chunks (small row groups) are hashed, counted and placed in chunks."""
    rng = np.random.default_rng(1)
    n = 30_000
    segments = [f"segment-{i:03d}-with-a-long-name" for i in range(300)] + ["s", None]
    df = pl.DataFrame(
        {
            "seg": pl.Series([segments[i] for i in rng.integers(0, len(segments), n)]),
            "day": pl.Series([dt.date(2026, 1, 1 + int(i)) for i in rng.integers(0, 2, n)]),
            "y": rng.random(n) < 0.2,
            "p": rng.random(n),
            "w": rng.random(n) * 2,
        }
    )
    df.write_parquet(tmp_path, partition_by="day", row_group_size=1000)
    kw: dict[str, Any] = dict(label="y", score="p", by=["day", "seg"], weight=weight)
    fast, slow = compiled_and_sorted(lambda: se.evaluate(tmp_path, **kw))
    assert fast.height == slow.height == df.select("day", "seg").unique().height
    assert_frame_equal(fast, slow, rel_tol=1e-12)
    with reusing():
        fast, slow = compiled_and_sorted(lambda: se.accumulate(tmp_path, precision=9, **kw))
    order = ["day", "seg", "bucket"]
    left, right = (s.table.sort(order, nulls_last=False) for s in (fast, slow))
    # counts exactly; float sums to rounding (the streaming read may order rows differently)
    assert_frame_equal(left, right, rel_tol=1e-12)


@pytest.mark.parametrize("groups", [40, 3000])
def test_few_and_many_groups_give_the_same_tables(groups, monkeypatch):
    """Up to thousands of groups (12-bit codes), each with its coarse cells."""
    rng = np.random.default_rng(groups)
    n = 60_000
    df = pl.DataFrame(
        {
            "g": pl.Series([f"g{i}" for i in rng.integers(0, groups, n)]),
            "y": rng.random(n) < 0.4,
            "p": 0.25 + 0.75 * rng.random(n),  # two binades: few coarse cells, dense counts
        }
    )
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision=3)
    calls = []
    counted = compiled_module.compiled_cells
    monkeypatch.setattr(
        collect_module, "compiled_cells", lambda *a: calls.append(counted(*a)) or calls[-1]
    )
    fast, slow = compiled_and_sorted(lambda: se.accumulate(df, **kw))
    assert calls and calls[0] is not None  # the compiled loops counted the rows
    assert_same_state(fast, slow)
    fast, slow = compiled_and_sorted(lambda: se.evaluate(df, **kw))
    assert fast.height == groups
    assert_frame_equal(fast, slow, rel_tol=1e-12)


@pytest.mark.parametrize("weight", [None, "w"])
def test_many_groups_over_many_binades_number_their_cells_by_a_sort(weight, monkeypatch):
    """Sparse cells: (group, binade) pairs numbered by a sort, slots sorted, not scanned."""
    rng = np.random.default_rng(7)
    n = 30_000
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 8_000, n),
            "y": rng.random(n) < 0.3,
            "p": np.exp(rng.normal(0, 20, n)),  # hundreds of binades, a few rows a cell
            "w": rng.choice([0.0, 0.5, 2.0], n),
        }
    )
    kw: dict[str, Any] = dict(label="y", score="p", by="g", weight=weight)
    tables = []
    for limit in (1, compiled_module.SPARSE_CELLS):  # a sort always; a table when it fits
        monkeypatch.setattr(compiled_module, "SPARSE_CELLS", limit)
        tables.append(compiled_and_sorted(lambda: se.evaluate(df, threshold=[0.5, 2.0], **kw)))
        state = compiled_and_sorted(lambda: se.accumulate(df, thresholds=[0.5, 2.0], **kw))
        assert_same_state(*state)
    order = ["g", "threshold"]
    for fast, slow in tables:
        assert_frame_equal(fast.sort(order), slow.sort(order), rel_tol=1e-12)
    assert_frame_equal(tables[0][0].sort(order), tables[1][0].sort(order))


@pytest.mark.parametrize("groups", [1, 2, 50])
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("sparse", [False, True])
def test_two_threads_over_halves_give_the_same_table_and_state(groups, weight, sparse, monkeypatch):
    """Rows placed by two threads (halves of the rows), read by two (halves of the groups)."""
    rng = np.random.default_rng(groups)
    n = 20_000
    sizes = rng.integers(0, groups, n) if groups > 2 else np.where(rng.random(n) < 0.9, 0, 1)
    df = pl.DataFrame(  # (two groups: the first holds the middle row)
        {"g": sizes % groups, "y": rng.random(n) < 0.3, "p": rng.random(n), "w": rng.random(n)}
    )
    df = pl.concat([df[: n // 3], df[n // 3 :]], rechunk=False)  # a chunk holds the middle row
    if sparse:  # coarse cells numbered by a sort
        monkeypatch.setattr(compiled_module, "SPARSE_CELLS", 1)
    kw: dict[str, Any] = dict(label="y", score="p", by="g", weight=weight)
    tables, states = [], []
    for rows in (compiled_module.PARALLEL_ROWS, 1):
        monkeypatch.setattr(compiled_module, "PARALLEL_ROWS", rows)
        tables.append(se.evaluate(df, threshold=[0.3, 0.5], **kw).sort("g", "threshold"))
        states.append(se.accumulate(df, thresholds=[0.3, 0.5], **kw))
    assert_frame_equal(tables[0], tables[1])
    order = ["g", "bucket"]
    assert_frame_equal(states[0].table.sort(order), states[1].table.sort(order), check_exact=True)
    assert tables[0]["g"].n_unique() == groups


def test_the_grouped_frame_and_the_runs_in_either_order():
    """runs() first: grouped() comes from the runs; grouped() first: runs() raises, no crash."""
    rng = np.random.default_rng(4)
    n = 20_000
    df = pl.DataFrame({"g": rng.integers(0, 3, n).astype(str), "y": rng.random(n) < 0.4})
    df = df.with_columns(p=pl.Series(0.25 + 0.75 * rng.random(n)))  # two binades: dense cells
    plan = prepare(df, Inputs(label="y", score="p", thresholds=(0.3,)), by="g")
    with reusing():
        first = unit_staged(plan)
        assert isinstance(first, Deferred)
        runs = first.runs()
        assert isinstance(first._staged(), compiled_module.CompiledCells)
        assert runs is not None
        from_runs = first.grouped(plan.spec, [0.3, 0.5])
        straight = unit_staged(plan)
        assert straight is not None
        direct = straight.grouped(plan.spec, [0.3, 0.5])
        with pytest.raises(RuntimeError, match="let go"):
            straight.runs()
    assert from_runs is not None and direct is not None
    floats = ["_ap_num", "_log_loss", "_brier", "_hinge"]
    left, right = (f.sort("g") for f in (from_runs, direct))
    assert_frame_equal(left.drop(floats), right.drop(floats), check_exact=True)
    assert_frame_equal(left.select(floats), right.select(floats), rel_tol=1e-12)


def test_buffers_are_reused_within_a_pass_only():
    with reusing():
        a = buffer(100, np.int64)
        give_back(a)
        b = buffer(50, np.float64, zero=True)
        assert np.shares_memory(a, b) and not b.any()
        give_back(b)
    c = buffer(100, np.int64)
    give_back(c)  # outside a pass: dropped
    assert not np.shares_memory(c, buffer(100, np.int64))


def test_partition_values_are_parsed_from_directory_names(tmp_path):
    for day in ("1", "2"):
        (tmp_path / f"k={day}").mkdir()
        pl.DataFrame({"x": [1.0, 2.0]}).write_parquet(tmp_path / f"k={day}" / "0.parquet")
    lf = pl.scan_parquet(tmp_path, hive_partitioning=True)
    assert _partition_values(lf, "k", ["1", "2"]) == [1, 2]
    # names that do not parse, or name no rows, are left to the rows' values
    assert _partition_values(lf, "k", ["1", "x"]) is None
    assert _partition_values(lf, "k", ["1", "01", "2"]) is None


def test_hive_values_that_need_the_rows_still_give_every_group(tmp_path, monkeypatch):
    # names that cannot be trusted (None): the values are read from the rows
    for name in ("1", "2", "3"):
        (tmp_path / f"k={name}").mkdir()
        pl.DataFrame({"y": [True, False], "p": [0.9, 0.1]}).write_parquet(
            tmp_path / f"k={name}" / "0.parquet"
        )
    monkeypatch.setattr("streameval.source._partition_values", lambda *args: None)
    table = se.evaluate(tmp_path, label="y", score="p", by="k")
    assert table["k"].to_list() == [1, 2, 3]
    assert table["n"].to_list() == [2, 2, 2]
    assert math.isclose(table["roc_auc"][0], 1.0)


def test_memory_not_allocated_by_buffer_is_never_pooled():
    """A single-chunk Series' values are its own memory: reusing them would write into it."""
    series = pl.Series([0, 1, 1, 0] * 100, dtype=pl.UInt8)
    values = series.to_numpy()
    with reusing():
        give_back(values)
        give_back(np.zeros(400, np.uint8))  # not from buffer() either
        fresh = buffer(400, np.uint8)
        assert not np.shares_memory(fresh, values)
        fresh.fill(7)
    assert series.to_list() == [0, 1, 1, 0] * 100
