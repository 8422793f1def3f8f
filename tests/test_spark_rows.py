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
from streameval.bucketing import bucket_expr, key_to_float, ordered_keys
from streameval.errors import InputError

pytest.importorskip("pyspark")
from test_spark import same_state, same_table

import streameval.spark as ses
from streameval.spark.keys import bucket_of, with_float_of_key, with_ordered_key

TINY = float(np.finfo(np.float64).tiny)
HUGE = float(np.finfo(np.float64).max)


def _special() -> list[float]:
    """Zeros, subnormals, every power of two and its neighbours, the largest floats, ±inf."""
    powers = np.array([2.0**k for k in range(-1074, 1024)])
    near = np.concatenate([powers, np.nextafter(powers, 0.0), np.nextafter(powers, np.inf)])
    near = near[np.isfinite(near)]
    values = [0.0, -0.0, 5e-324, TINY, np.nextafter(TINY, 0.0), HUGE, 1.0 / 3.0, 0.1]
    values += [np.inf, -np.inf]
    return [float(v) for v in [*values, *near, *(-near)]]


def _spark_keys(spark, values: list[float], bits: int, splits: tuple[float, ...]) -> pl.DataFrame:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(i, float(v)) for i, v in enumerate(values)], "i long, x double")
    keyed = with_ordered_key(df, F, "x", "key")
    keyed = keyed.withColumn("bucket", bucket_of(F, F.col("key"), bits, splits))
    keyed = with_float_of_key(keyed, F, "bucket", "lo")
    rows = keyed.orderBy("i").select("key", "bucket", "lo").collect()
    return pl.DataFrame(
        {name: [r[i] for r in rows] for i, name in enumerate(("key", "bucket", "lo"))},
        schema={"key": pl.Int64, "bucket": pl.Int64, "lo": pl.Float64},
    )


def _local_keys(values: list[float], bits: int, splits: tuple[float, ...]) -> pl.DataFrame:
    x = np.array(values, dtype=np.float64)
    frame = pl.DataFrame({"x": x})
    return pl.DataFrame(
        {
            "key": ordered_keys(x.copy()),
            "bucket": frame.select(bucket_expr(pl.col("x"), bits, splits)).to_series(),
        }
    ).with_columns(lo=key_to_float(pl.col("bucket")))  # a bucket's lowest value


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


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.floats(allow_nan=False), min_size=1, max_size=40),
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


@st.composite
def _classes(draw: st.DrawFn) -> tuple[pl.DataFrame, list[str], list]:
    """2–4 classes of a string, integer or float label, tied or normalized scores, weights.

    Every class is some row's label (the classes found must be the score columns' classes).
    """
    n = draw(st.integers(4, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    k = draw(st.integers(2, 4))
    values = draw(
        st.sampled_from(
            [["cat", "dog", "bird", "fish"][:k], list(range(3, 3 + k)), [0.5 * i for i in range(k)]]
        )
    )
    p = rng.dirichlet(np.ones(k), n)
    if draw(st.booleans()):
        p = np.round(p, 1)  # ties, and rows not summing to 1
    truth = rng.choice(len(values), n, p=rng.dirichlet(np.ones(k)))
    truth[:k] = np.arange(k)
    columns = [f"p{i}" for i in range(k)]
    frame = pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "c"][: draw(st.integers(1, 3))], n),
            "truth": pl.Series([values[i] for i in truth]),
            "pred": pl.Series([values[i] for i in rng.integers(0, k, n)]),
            "w": np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3),
            **{c: p[:, i] for i, c in enumerate(columns)},
        }
    )
    return frame, columns, values


@pytest.mark.filterwarnings("ignore:the scores of")  # rows not summing to 1: as locally
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=_classes(),
    precision=st.sampled_from(["exact", 0, 4, 11, 30]),
    inputs=st.sampled_from(["scores", "prediction", "both", "mapping"]),
    weighted=st.booleans(),
    keyed=st.booleans(),
    top_k=st.integers(1, 3),
)
def test_spark_multiclass_states_equal_the_local_ones(
    spark_classic, data, precision, inputs, weighted, keyed, top_k
) -> None:
    frame, columns, values = data
    options: dict = dict(
        task="multiclass", label="truth", precision=precision, top_k=top_k,
        by="seg" if keyed else None, weight="w" if weighted else None,
    )  # fmt: skip
    if inputs in ("prediction", "both"):
        options["prediction"] = "pred"
    if inputs in ("scores", "both"):
        options["scores"] = columns
    if inputs == "mapping":  # the classes given, in another order than sorted
        options["scores"] = dict(zip(values[::-1], columns, strict=True))
    df = spark_classic.createDataFrame(frame.to_pandas()).repartition(3)
    same_state(ses.accumulate(df, **options), se.accumulate(frame, **options))
    same_table(ses.evaluate(df, **options), se.evaluate(frame, **options))


@st.composite
def _regressions(draw: st.DrawFn) -> pl.DataFrame:
    """Positive, signed, tied or tiny targets (zeros and −1 inside, so losses leave rows out)."""
    n = draw(st.integers(1, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = draw(st.sampled_from(["gamma", "signed", "ties", "tiny"]))
    if shape == "gamma":
        y = rng.gamma(2.0, 50.0, n)
    elif shape == "signed":
        y = rng.standard_normal(n) * 3
    elif shape == "ties":
        y = rng.integers(-1, 4, n).astype(float)
    else:
        y = rng.random(n) * 1e-300
    f = y * rng.lognormal(0.0, 0.3, n) + rng.standard_normal(n) * draw(st.sampled_from([0, 1]))
    return pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "c"][: draw(st.integers(1, 3))], n),
            "y": y,
            "f": np.round(f, draw(st.sampled_from([1, 12]))),
            "w": np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 3),
        }
    )


@pytest.mark.filterwarnings("ignore::streameval.errors.DomainWarning")  # as locally
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frame=_regressions(),
    precision=st.sampled_from(["exact", 0, 4, 11, 30]),
    power=st.sampled_from([0, 1, 1.5, 2, 3, -1]),
    weighted=st.booleans(),
    keyed=st.booleans(),
)
def test_spark_regression_states_equal_the_local_ones(
    spark_classic, frame, precision, power, weighted, keyed
) -> None:
    options = dict(
        task="regression", label="y", prediction="f", precision=precision, power=power,
        by="seg" if keyed else None, weight="w" if weighted else None,
    )  # fmt: skip
    df = spark_classic.createDataFrame(frame.to_pandas()).repartition(3)
    same_state(ses.accumulate(df, **options), se.accumulate(frame, **options))
    same_table(ses.evaluate(df, **options), se.evaluate(frame, **options))


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
        _same_error(df, spoiled, dict(label="y", by="seg", weight="w", **task))


def _same_error(df, frame: pl.DataFrame, options: dict) -> None:
    """``ses.accumulate`` and ``ses.evaluate`` raise the local error word for word."""
    with pytest.raises(InputError) as expected:
        se.accumulate(frame, **options)
    for function in (ses.accumulate, ses.evaluate):
        with pytest.raises(InputError) as caught:
            function(df, **options)
        assert str(caught.value) == str(expected.value)


MULTICLASS_BAD = [
    "a null label", "a label not a class", "a prediction not a class", "a null score",
    "a NaN score", "an infinite score", "a negative weight", "a null weight",
]  # fmt: skip


@pytest.mark.parametrize("case", MULTICLASS_BAD)
def test_multiclass_bad_rows_are_named_as_locally(spark_classic, tmp_path, case: str) -> None:
    rng = np.random.default_rng(4)
    frame = pl.DataFrame(
        {
            "seg": ["a", "b"] * 20,
            "truth": rng.choice(["x", "y", "z"], 40),
            "pred": rng.choice(["x", "y", "z"], 40),
            "w": [1.0] * 40,
            **{c: rng.random(40) for c in ("px", "py", "pz")},
        }
    )
    first = pl.int_range(pl.len()) == 7
    column, value = {
        "a null label": ("truth", None), "a label not a class": ("truth", "q"),
        "a prediction not a class": ("pred", "q"), "a null score": ("py", None),
        "a NaN score": ("py", float("nan")), "an infinite score": ("pz", float("-inf")),
        "a negative weight": ("w", -2.0), "a null weight": ("w", None),
    }[case]  # fmt: skip
    spoiled = frame.with_columns(pl.when(first).then(pl.lit(value)).otherwise(column).alias(column))
    spoiled.write_parquet(tmp_path / "part.parquet")
    df = spark_classic.read.parquet(str(tmp_path))
    scores = {"x": "px", "y": "py", "z": "pz"}
    options = dict(task="multiclass", label="truth", scores=scores, by="seg", weight="w")
    if MULTICLASS_BAD.index(case) % 2 == 0:  # (every other case with a prediction column)
        options["prediction"] = "pred"
    _same_error(df, spoiled, options)


REGRESSION_BAD = [
    "a null label", "an infinite label", "a NaN prediction", "a null prediction",
    "a negative weight", "an infinite weight",
]  # fmt: skip


@pytest.mark.parametrize("case", REGRESSION_BAD)
def test_regression_bad_rows_are_named_as_locally(spark_classic, tmp_path, case: str) -> None:
    rng = np.random.default_rng(5)
    frame = pl.DataFrame(
        {"seg": ["a", "b"] * 20, "y": rng.random(40), "f": rng.random(40), "w": [1.0] * 40}
    )
    first = pl.int_range(pl.len()) == 3
    column, value = {
        "a null label": ("y", None), "an infinite label": ("y", float("inf")),
        "a NaN prediction": ("f", float("nan")), "a null prediction": ("f", None),
        "a negative weight": ("w", -1.0), "an infinite weight": ("w", float("inf")),
    }[case]  # fmt: skip
    spoiled = frame.with_columns(pl.when(first).then(pl.lit(value)).otherwise(column).alias(column))
    spoiled.write_parquet(tmp_path / "part.parquet")
    df = spark_classic.read.parquet(str(tmp_path))
    options = dict(task="regression", label="y", prediction="f", by="seg", weight="w")
    _same_error(df, spoiled, options)


@pytest.mark.parametrize(
    "task",
    [
        dict(task="regression", prediction="p"),
        dict(score="p"),
        dict(score="p", precision=4),
        dict(task="paired", scores=["p", "q"]),
        dict(task="multiclass", scores=["p", "q"], classes=[0, 1]),
        dict(task="multiclass", prediction="z"),
    ],
)
def test_no_python_runs_on_the_rows(spark_classic, tmp_path, task) -> None:
    p = np.linspace(0, 1, 100)
    frame = pl.DataFrame({"seg": ["a", "b"] * 50, "y": [0, 1] * 50, "p": p, "q": p[::-1]})
    frame = frame.with_columns(z=1 - pl.col("y"))
    frame.write_parquet(tmp_path / "part.parquet")
    df = spark_classic.read.parquet(str(tmp_path))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ses.explain(df, label="y", by="seg", **task)
    plan = printed.getvalue()
    rows = plan[plan.index("HashAggregate") :]  # the aggregation and what feeds it
    assert "Python" not in rows and "Arrow" not in rows and "HashAggregate" in rows
    assert plan.count("MapInArrow") == 1  # the finalize, on the state rows
    assert "ExistingRDD" not in plan  # (a table of classes built by Spark, not from Python)
