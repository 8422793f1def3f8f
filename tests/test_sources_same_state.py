"""Every source kind and every key type gives the same state for the same rows.

The rows of a :func:`frames` frame, with its keys cast to several types, are given as a
DataFrame, a LazyFrame, a pyarrow Table, one Parquet file, a glob of several files, a hive
directory, and files read in several shards (:func:`streameval.source.shard_units`); the
states must equal the in-memory frame's, to the rounding of float sums.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sort_kernel import frames
from test_sort_kernel_bucketed import assert_same_state

import streameval as se
from reference import kernel_path
from streameval import source
from streameval.kernels import scatter

KEY_TYPES = {
    "string": pl.String,
    "categorical": pl.Categorical,
    "int64": pl.Int64,
    "uint8": pl.UInt8,
    "float": pl.Float64,
    "uint64": pl.UInt64,
}


def _typed(df: pl.DataFrame, kind: str) -> pl.DataFrame:
    """The frame with its ``h`` key cast to a key type (``g`` stays a string, ``d`` a date)."""
    dtype = KEY_TYPES[kind]
    h = pl.col("h")
    if dtype in (pl.UInt8, pl.UInt64):
        h = h + 3  # -3, 0, 7 → 0, 3, 10
    elif dtype in (pl.String, pl.Categorical):
        h = h.cast(pl.String)
    return df.with_columns(h.cast(dtype))


def _sources(df: pl.DataFrame, tmp: Any) -> dict[str, Any]:
    single = tmp / "one.parquet"
    df.write_parquet(single)
    parts = tmp / "parts"
    parts.mkdir()
    step = max(1, df.height // 3)
    for i, start in enumerate(range(0, df.height, step)):
        df.slice(start, step).write_parquet(parts / f"part-{i}.parquet")
    return {
        "LazyFrame": df.lazy(),
        "Arrow": df.to_arrow(),
        "file": str(single),
        "glob": str(parts / "*.parquet"),
        "scan": pl.scan_parquet(single),
    }


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    frames(),
    st.sampled_from(sorted(KEY_TYPES)),
    st.sampled_from([None, 2, "exact"]),
    st.sampled_from([None, "in memory", "spilled"]),
)
def test_every_source_and_key_type_gives_the_same_state(
    tmp_path_factory, monkeypatch, frame, kind, precision, sharded
):
    df, keys, weight = frame
    df = _typed(df, kind)
    if sharded:  # shards of a row or two: groups spread over several shards
        monkeypatch.setattr(source, "SHARD_ROWS", 2)
        # each batch's rows written to the spill files before the next batch is split
        monkeypatch.setattr(scatter, "SPILL_BYTES", 1 if sharded == "spilled" else 1 << 28)
    kw: dict[str, Any] = dict(label="y", score="p", by=keys, weight=weight, precision=precision)
    with kernel_path("off"):  # the reference: the Polars group-by
        want = se.accumulate(df, **kw)
    assert_same_state(se.accumulate(df, **kw), want)
    tmp = tmp_path_factory.mktemp("sources")
    for name, src in _sources(df, tmp).items():
        got = se.accumulate(src, **kw)
        try:
            assert_same_state(got, want)
        except AssertionError as exc:  # pragma: no cover - the message names the source
            raise AssertionError(f"{name} ({kind} keys): {exc}") from None
    root = tmp / "hive"
    df.write_parquet(root, partition_by="d")
    hive_keys = ["d", *(k for k in keys if k != "d")]
    assert_same_state(
        se.accumulate(root, **{**kw, "by": hive_keys}),
        se.accumulate(df, **{**kw, "by": hive_keys}),
    )


@pytest.mark.parametrize("shard_rows", [3, 1_000_000])
def test_shards_hold_whole_groups_and_give_the_metrics(tmp_path, monkeypatch, shard_rows):
    monkeypatch.setattr(source, "SHARD_ROWS", shard_rows)
    df = pl.DataFrame(
        {
            "g": ["a", "b", "c", "a", "b", "c", "d", "d"],
            "y": [1, 0, 1, 0, 1, 0, 1, 0],
            "p": [0.9, 0.2, 0.7, 0.4, 0.6, 0.1, 0.8, 0.3],
        }
    )
    path = tmp_path / "one.parquet"
    df.write_parquet(path)
    got = se.evaluate(path, label="y", score="p", by="g")
    want = se.evaluate(df, label="y", score="p", by="g")
    assert got.equals(want)
    assert got["n"].to_list() == [2, 2, 2, 2]


def test_wide_integer_and_float_keys_take_the_kernel():
    """Int64 and float keys are numbered from hashes: the kernel, not the Polars group-by."""
    from streameval.pipeline import prepare, unit_runs
    from streameval.tasks.common import Inputs

    df = pl.DataFrame(
        {
            "k": [2**40, -(2**40), 2**40, None, 5],
            "f": [0.0, -0.0, float("nan"), float("nan"), None],
            "y": [1, 0, 0, 1, 1],
            "p": [0.9, 0.2, 0.7, 0.4, 0.6],
        }
    )
    for key in ("k", "f"):
        runs = unit_runs(prepare(df, Inputs(label="y", score="p"), by=key))
        assert runs is not None
        with kernel_path("off"):
            want = se.accumulate(df, label="y", score="p", by=key)
        assert_same_state(se.accumulate(df, label="y", score="p", by=key), want)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [(pl.String, ["b", None, "a", "b"]), (pl.Int64, [2**40, None, -7, 2**40])],
)
def test_a_collision_of_the_first_hash_codes_the_key_another_way(dtype, values):
    from streameval.codes import hashed_key, key_code
    from streameval.kernels.compiled import loops
    from streameval.kernels.hashcodes import hashed_codes, hashed_exprs

    code = key_code("g", dtype) or hashed_key("g", dtype)
    assert code is not None
    frame = pl.DataFrame({"g": values}, schema={"g": dtype}).select(hashed_exprs(code, 0))
    frame = frame.with_columns(pl.lit(12345, pl.UInt64).alias("_g0"))  # every first hash equal
    codes, decode, span = hashed_codes(frame, code, 0, loops())
    assert span is None  # coded the other way
    assert decode(pl.Series(codes)).to_list() == values
    assert codes[0] == codes[3] and len(set(codes.tolist())) == 3


@pytest.mark.parametrize("precision", [None, "exact"])
def test_keys_whose_codes_pass_63_bits_keep_their_groups(tmp_path, precision):
    """Three full-range 32-bit keys (96 bits of codes) still make 27 groups, as Polars does."""
    import numpy as np

    rng = np.random.default_rng(3)
    n = 3_000
    ends = [-(2**31), 2**31 - 1]
    df = pl.DataFrame(
        {
            "a": rng.choice([*ends, 0], n).astype(np.int32),
            "b": rng.choice([0, 2**32 - 1, 5], n).astype(np.uint32),
            "c": rng.choice([*ends, 7], n).astype(np.int32),
            "y": rng.random(n) < 0.4,
            "p": rng.random(n),
        }
    ).with_columns(pl.when(pl.int_range(n) % 11 == 0).then(None).otherwise(pl.col("b")).alias("b"))
    kw: dict[str, Any] = dict(label="y", score="p", by=["a", "b", "c"], precision=precision)
    with kernel_path("off"):
        want = se.accumulate(df, **kw)
        table = se.evaluate(df, **kw).sort("a", "b", "c")
    assert table.height == 36  # 3 × (3 values and null) × 3
    for src in (df, df.to_arrow(), *_sources(df, tmp_path).values()):
        assert_same_state(se.accumulate(src, **kw), want)
        got = se.evaluate(src, **kw).sort("a", "b", "c")
        assert got.select("a", "b", "c", "n").equals(table.select("a", "b", "c", "n"))
