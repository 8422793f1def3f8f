"""Spark's own row path: bucket keys built by SQL expressions, states by its aggregation.

A real local Spark session (conftest). The keys must equal the local encoder's bit for bit;
the states the local path's (integer sums exactly, float sums to 1e-12); the errors on bad
rows the local ones word for word; and no Python node may run on the rows.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streameval as se
from streameval.bucketing import bucket_expr, ordered_keys
from streameval.errors import InputError

pytest.importorskip("pyspark")
from test_spark import same_state, same_table

import streameval.spark as ses
from streameval.spark.keys import bucket_of, with_ordered_key

TINY = float(np.finfo(np.float64).tiny)
HUGE = float(np.finfo(np.float64).max)


def _special() -> list[float]:
    """Zeros, subnormals, every power of two and its neighbours, the largest floats."""
    powers = np.array([2.0**k for k in range(-1074, 1024)])
    near = np.concatenate([powers, np.nextafter(powers, 0.0), np.nextafter(powers, np.inf)])
    near = near[np.isfinite(near)]
    values = [0.0, -0.0, 5e-324, TINY, np.nextafter(TINY, 0.0), HUGE, 1.0 / 3.0, 0.1]
    return [float(v) for v in [*values, *near, *(-near)]]


def _spark_keys(spark, values: list[float], bits: int, splits: tuple[float, ...]) -> pl.DataFrame:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(i, float(v)) for i, v in enumerate(values)], "i long, x double")
    keyed = with_ordered_key(df, F, "x", "key")
    keyed = keyed.withColumn("bucket", bucket_of(F, F.col("key"), bits, splits))
    rows = keyed.orderBy("i").select("key", "bucket").collect()
    return pl.DataFrame(
        {"key": [r[0] for r in rows], "bucket": [r[1] for r in rows]},
        schema={"key": pl.Int64, "bucket": pl.Int64},
    )


def _local_keys(values: list[float], bits: int, splits: tuple[float, ...]) -> pl.DataFrame:
    x = np.array(values, dtype=np.float64)
    frame = pl.DataFrame({"x": x})
    return pl.DataFrame(
        {
            "key": ordered_keys(x.copy()),
            "bucket": frame.select(bucket_expr(pl.col("x"), bits, splits)).to_series(),
        }
    )


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_keys_of_every_power_of_two_and_its_neighbours(spark_classic, ansi: str) -> None:
    values = _special()
    before = spark_classic.conf.get("spark.sql.ansi.enabled")
    spark_classic.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        for bits, splits in ((52, ()), (11, (0.3, 1.0000000000000002)), (0, (-2.5,))):
            got = _spark_keys(spark_classic, values, bits, splits)
            want = _local_keys(values, bits, splits)
            assert got.equals(want), (bits, got.filter(got["key"] != want["key"]).head())
    finally:
        spark_classic.conf.set("spark.sql.ansi.enabled", before)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40),
    bits=st.integers(0, 52),
    splits=st.lists(st.floats(-1e3, 1e3, allow_nan=False), max_size=3),
)
def test_spark_keys_equal_the_local_encoders(spark_classic, values, bits, splits) -> None:
    cuts = tuple(sorted(set(splits)))
    assert _spark_keys(spark_classic, values, bits, cuts).equals(_local_keys(values, bits, cuts))


@st.composite
def _predictions(draw: st.DrawFn) -> pl.DataFrame:
    """Tied, imbalanced, signed or probability scores in 1–3 segments, with weights."""
    n = draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rate = draw(st.sampled_from([0.02, 0.5, 0.97]))
    y = (rng.random(n) < rate).astype(np.int64)
    shape = draw(st.sampled_from(["ties", "probabilities", "logits", "tiny"]))
    if shape == "ties":
        p = np.round(rng.random(n), 1)
    elif shape == "probabilities":
        p = rng.beta(2, 2, n) * 0.5 + 0.4 * y
    elif shape == "logits":
        p = rng.standard_normal(n) * 3 + y
    else:
        p = rng.random(n) * 1e-300
    return pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "c"][: draw(st.integers(1, 3))], n),
            "y": y,
            "p": p,
            "q": np.round(p + rng.standard_normal(n) * 0.2, 2),  # a second model, tied
            "w": np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3),
        }
    )


@pytest.mark.filterwarnings("ignore:log_loss and brier are null")  # logits: as locally
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frame=_predictions(),
    precision=st.sampled_from(["exact", 0, 4, 11, 30]),
    weighted=st.booleans(),
    keyed=st.booleans(),
    thresholds=st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=2),
)
def test_spark_states_equal_the_local_ones(
    spark_classic, frame, precision, weighted, keyed, thresholds
) -> None:
    options = dict(
        label="y", score="p", precision=precision, thresholds=thresholds,
        by="seg" if keyed else None, weight="w" if weighted else None,
    )  # fmt: skip
    df = spark_classic.createDataFrame(frame.to_pandas()).repartition(3)
    same_state(ses.accumulate(df, **options), se.accumulate(frame, **options))
    metrics = dict(options, threshold=thresholds[0])
    del metrics["thresholds"]
    same_table(ses.evaluate(df, **metrics), se.evaluate(frame, **metrics))
    paired = dict(task="paired", label="y", scores=["p", "q"], precision=precision)
    paired |= dict(by=options["by"], weight=options["weight"])
    same_state(ses.accumulate(df, **paired), se.accumulate(frame, **paired))
    same_table(ses.evaluate(df, **paired), se.evaluate(frame, **paired))


BAD = [
    "a null label", "an infinite score", "a label of 2", "a negative weight", "a NaN weight",
    "a null weight",
]  # fmt: skip


def _spoil(frame: pl.DataFrame, case: str) -> pl.DataFrame:
    first = pl.int_range(pl.len()) == 5
    if case == "a null label":
        return frame.with_columns(pl.when(~first).then(pl.col("y")).alias("y"))
    if case == "an infinite score":
        return frame.with_columns(pl.when(first).then(float("inf")).otherwise("p").alias("p"))
    if case == "a label of 2":
        return frame.with_columns(pl.when(first).then(2).otherwise("y").alias("y"))
    value = {"a negative weight": -1.5, "a NaN weight": float("nan"), "a null weight": None}[case]
    return frame.with_columns(pl.when(first).then(value).otherwise("w").alias("w"))


@pytest.mark.parametrize("case", BAD)
def test_bad_rows_are_named_as_locally(spark_classic, tmp_path, case: str) -> None:
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {"seg": ["a", "b"] * 20, "y": rng.integers(0, 2, 40), "p": rng.random(40)}
    ).with_columns(w=pl.lit(1.0), q=pl.col("p") / 2)
    spoiled = _spoil(frame, case)
    spoiled.write_parquet(tmp_path / "part.parquet")
    df = spark_classic.read.parquet(str(tmp_path))
    for task in (dict(score="p"), dict(task="paired", scores=["q", "p"])):
        options = dict(label="y", by="seg", weight="w", **task)
        with pytest.raises(InputError) as expected:
            se.accumulate(spoiled, **options)
        for function in (ses.accumulate, ses.evaluate):
            with pytest.raises(InputError) as caught:
                function(df, **options)
            assert str(caught.value) == str(expected.value)


@pytest.mark.parametrize(
    "task", [dict(score="p"), dict(score="p", precision=4), dict(task="paired", scores=["p", "q"])]
)
def test_no_python_runs_on_the_rows(spark_classic, tmp_path, task) -> None:
    p = np.linspace(0, 1, 100)
    frame = pl.DataFrame({"seg": ["a", "b"] * 50, "y": [0, 1] * 50, "p": p, "q": p[::-1]})
    frame.write_parquet(tmp_path / "part.parquet")
    df = spark_classic.read.parquet(str(tmp_path))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ses.explain(df, label="y", by="seg", **task)
    plan = printed.getvalue()
    rows = plan[plan.index("HashAggregate") :]  # the aggregation and what feeds it
    assert "Python" not in rows and "Arrow" not in rows and "HashAggregate" in rows
    assert plan.count("MapInArrow") == 1  # the finalize, on the state rows
