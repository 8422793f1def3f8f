"""Spark path against the local Polars path, on the same Parquet files, classic and Connect.

A real local Spark session (``local[2]``) is started once per test session (conftest); the
Connect flavour is served by the same Spark. Each state computed on Spark must equal the
local state of the same rows: integer columns exactly, float sums up to summation order.
"""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import streameval as se
from streameval.errors import InputError
from streameval.spark import worker
from streameval.spark.types import empty_frame
from streameval.states import kind_module

pytest.importorskip("pyspark")
import streameval.spark as ses

N = 6_000


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Predictions of every task in three Parquet files, ties, zero weights, logits."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, N)
    p = np.clip(np.round(rng.beta(2, 2, N) * 0.6 + 0.35 * y, 3), 0, 1)
    probs = rng.dirichlet([1, 1, 1], N)
    truth = rng.integers(0, 3, N)
    days = rng.integers(0, 4, N)
    frame = pl.DataFrame(
        {
            "rid": np.arange(N),
            "seg": rng.choice(["north", "south", "east"], N),
            "day": [dt.date(2026, 10, 1) + dt.timedelta(days=int(d)) for d in days],
            "y": y,
            "lab": np.where(y == 1, "spam", "ham"),
            "p": p,
            "q": np.round(rng.random(N), 2),
            "logit": np.round(np.log(p + 0.01) - np.log(1.01 - p), 4),
            "w": np.where(rng.random(N) < 0.1, 0.0, rng.random(N) * 3),
            "truth": np.array(["a", "b", "c"])[truth],
            "pred": np.array(["a", "b", "c"])[probs.argmax(axis=1)],
            "pa": probs[:, 0],
            "pb": probs[:, 1],
            "pc": probs[:, 2],
            "target": rng.gamma(2.0, 2.0, N),
            "fit": rng.gamma(2.0, 2.0, N),
            "y2": (probs[:, 0] > 0.4).astype(np.int8),
        }
    )
    root = tmp_path_factory.mktemp("spark") / "preds"
    root.mkdir()
    for i in range(3):
        frame.filter(pl.col("rid") % 3 == i).write_parquet(root / f"part-{i}.parquet")
    return str(root)


def read(spark, path: str, partitions: int = 3):
    return spark.read.parquet(path).repartition(partitions)


def same_state(spark_state: se.State, local: se.State) -> None:
    assert spark_state.spec == local.spec
    a, b = spark_state.table, local.table
    assert a.schema == b.schema
    order = [*local.spec.keys, *kind_module(local.spec).group_columns(local.spec)]
    assert_frame_equal(a.sort(order), b.sort(order), rel_tol=1e-12, abs_tol=1e-12)


def same_table(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert_frame_equal(a, b, rel_tol=1e-11, abs_tol=1e-12)


CASES = {
    "binary bucketed": dict(label="y", score="p", by=["seg", "day"]),
    "binary exact weighted": dict(label="y", score="p", by="seg", weight="w", precision="exact"),
    "binary logits, thresholds": dict(label="y", score="logit", by="day", thresholds=[-1.0, 0.3]),
    "binary string labels": dict(label="lab", score="q", positive="spam", precision=6),
    "multiclass classes found": dict(
        task="multiclass", label="truth", prediction="pred", scores=["pa", "pb", "pc"], by="seg"
    ),
    "multiclass weighted, mapping": dict(
        task="multiclass", label="truth", scores={"a": "pa", "b": "pb", "c": "pc"}, weight="w"
    ),
    "regression bucketed": dict(task="regression", label="target", prediction="fit", by="day"),
    "regression exact weighted": dict(
        task="regression", label="target", prediction="fit", weight="w", precision="exact"
    ),
    "paired": dict(task="paired", label="y", scores=["p", "q"], by="seg"),
    "multilabel weighted": dict(
        task="multilabel",
        label=["y", "y2"],
        scores=["p", "pa"],
        by="seg",
        weight="w",
        thresholds=0.3,
    ),
    "bootstrap replicates": dict(label="y", score="p", by="seg", bootstrap=4, row_id="rid"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_task_equals_local_path(spark, data: str, case: str) -> None:
    options = CASES[case]
    state = ses.accumulate(read(spark, data), block_rows=700, **options)
    same_state(state, se.accumulate(data, **options))


def test_evaluate_equals_local_evaluate(spark, data: str) -> None:
    options = dict(label="y", score="p", by=["seg", "day"], threshold=[0.3, 0.5], beta=2.0)
    same_table(
        ses.evaluate(read(spark, data), ci="wilson", **options),
        se.evaluate(data, ci="wilson", **options),
    )


def test_evaluate_folds_bootstrap_and_regression(spark_classic, data: str) -> None:
    df = spark_classic.read.parquet(data)
    folds = dict(label="y", score="p", folds="day", metrics=["roc_auc", "fbeta"], beta=0.5)
    same_table(ses.evaluate(df, **folds), se.evaluate(data, **folds))
    boot = dict(label="y", score="p", by="seg", ci="bootstrap", bootstrap=5, row_id="rid")
    same_table(ses.evaluate(df, **boot), se.evaluate(data, **boot))
    reg = dict(task="regression", label="target", prediction="fit", by="seg", alpha=0.8)
    same_table(ses.evaluate(df, **reg), se.evaluate(data, **reg))


def test_spark_frames_go_through_the_top_level_functions(spark_classic, data: str) -> None:
    df = spark_classic.read.parquet(data)
    same_state(se.accumulate(df, label="y", score="p"), se.accumulate(data, label="y", score="p"))
    same_table(
        se.evaluate(df, label="y", score="p", by="seg"),
        se.evaluate(data, label="y", score="p", by="seg"),
    )


def test_errors_found_on_the_driver_name_the_column(spark, data: str) -> None:
    df = read(spark, data)
    with pytest.raises(InputError, match=r"score column 'prob'.*did you mean"):
        ses.accumulate(df, label="y", score="prob")
    with pytest.raises(InputError, match="the positive value 'Spam' never occurs"):
        ses.accumulate(df, label="lab", score="p", positive="Spam")
    with pytest.raises(InputError, match="got 'scor'; hint: did you mean 'score'"):
        ses.accumulate(df, label="y", scor="p")
    with pytest.raises(InputError, match="got 'engine'"):
        ses.evaluate(df, label="y", score="p", engine="streaming")
    with pytest.raises(InputError, match=r"expected a pyspark\.sql\.DataFrame"):
        ses.accumulate(pl.DataFrame({"y": [1]}), label="y", score="p")
    with pytest.raises(InputError, match="whose queries must be read whole"):
        ses.evaluate(df, task="ranking", label="y", score="p", query="rid")


def test_a_multilabel_list_column_on_spark(spark) -> None:
    rows = pl.DataFrame(
        {
            "tags": [["news"], ["news", "tech"], [], ["sport"], ["news", "sport"]] * 20,
            "p_news": [0.9, 0.6, 0.2, 0.4, 0.7] * 20,
            "p_sport": [0.1, 0.3, 0.6, 0.8, 0.4] * 20,
            "p_tech": [0.2, 0.7, 0.1, 0.3, 0.2] * 20,
        }
    )
    scores = {"news": "p_news", "sport": "p_sport", "tech": "p_tech"}
    kw = {"task": "multilabel", "label": "tags", "scores": scores}
    df = spark.createDataFrame(rows.to_pandas())
    same_table(ses.evaluate(df, **kw), se.evaluate(rows, **kw))


def test_errors_found_on_executors_come_back_as_themselves(spark, data: str) -> None:
    df = read(spark, data)
    bad = df.selectExpr("y", "case when rid = 17 then double('NaN') else p end as p")
    with pytest.raises(InputError, match="NaN") as caught:
        ses.accumulate(bad, label="y", score="p")
    local = pl.read_parquet(data).select(
        "y", p=pl.when(pl.col("rid") == 17).then(float("nan")).otherwise(pl.col("p"))
    )
    with pytest.raises(InputError) as expected:
        se.accumulate(local, label="y", score="p")
    assert str(caught.value) == str(expected.value)
    negative = df.selectExpr("y", "p", "w - 1 as w")
    with pytest.raises(InputError, match="negative"):
        ses.accumulate(negative, label="y", score="p", weight="w")


def test_drop_nulls_warns_with_the_count(spark_classic, data: str) -> None:
    df = spark_classic.read.parquet(data).selectExpr(
        "seg", "y", "case when rid % 100 = 0 then null else p end as p"
    )
    with pytest.raises(InputError, match="null"):
        ses.accumulate(df, label="y", score="p")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state = ses.accumulate(df, label="y", score="p", by="seg", drop_nulls=True)
    assert any("dropped 60 rows" in str(w.message) for w in caught)
    expected = se.accumulate(
        pl.read_parquet(data).filter(pl.col("rid") % 100 != 0), label="y", score="p", by="seg"
    )
    same_state(state, expected)


def test_empty_dataframe_gives_the_empty_state(spark_classic, data: str) -> None:
    df = spark_classic.read.parquet(data).where("rid < 0")
    state = ses.accumulate(df, label="y", score="p", by="seg")
    assert state.table.height == 0
    assert state.table.schema == se.accumulate(data, label="y", score="p", by="seg").table.schema
    table = ses.evaluate(df, label="y", score="p", by="seg")
    assert table.height == 0
    assert table.schema == se.evaluate(data, label="y", score="p", by="seg").schema


# The executor side without Spark: blocks of batches, merged partition states.


@settings(max_examples=25)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    block=st.integers(1, 60),
    seed=st.integers(0, 2**16),
)
def test_partition_state_equals_accumulate_of_all_rows(sizes, block, seed) -> None:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    frame = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "y": rng.integers(0, 2, n),
            "p": np.round(rng.random(n), 1),
        }
    )
    options = dict(label="y", score="p", by="g", precision=3)
    expected = se.accumulate(frame, **options)
    arrow = frame.to_arrow()
    batches, start = [], 0
    for size in sizes:
        batches.extend(arrow.slice(start, size).to_batches())
        start += size
    task = worker.Task(options, block)
    state = worker.partition_state(task, iter(batches))
    if n == 0:
        assert state is None
        return
    assert state is not None
    same_state(state, expected)


def test_executor_errors_round_trip() -> None:
    error = se.SpecMismatchError("expected the same spec, got two")
    text = f"PythonException: Traceback ...\nRuntimeError: {worker.encode_error(error)}\n"
    decoded = worker.decode_error(text)
    assert type(decoded) is se.SpecMismatchError
    assert str(decoded) == str(error)
    assert worker.decode_error("java.lang.OutOfMemoryError") is None


def test_group_keys_of_every_spark_type(spark) -> None:
    df = spark.range(3000).selectExpr(
        "cast(id % 2 as int) as y",
        "round(rand(3), 2) as p",
        "timestamp'2026-01-01 10:00:00' + make_interval(0, 0, 0, 0, cast(id % 3 as int)) as ts",
        "timestamp_ntz'2026-01-01 00:00:00' as ntz",
        "id % 4 = 0 as flag",
        "cast(id % 5 as decimal(10, 2)) as dec",
        "cast(id % 3 as short) as sh",
        "cast(id % 2 as tinyint) as tiny",
        "cast(id % 7 as float) as f",
        "case when id % 6 = 0 then null else concat('s', id % 2) end as s",
    )
    keys = ["ts", "ntz", "flag", "dec", "sh", "tiny", "f", "s"]
    rows = [row.asDict() for row in df.collect()]
    zone = spark.conf.get("spark.sql.session.timeZone")  # executors see timestamps in it
    local = pl.DataFrame(rows, schema=empty_frame(df.schema, zone).schema)
    options = dict(label="y", score="p", by=keys)
    same_state(ses.accumulate(df, **options), se.accumulate(local, **options))


def _warned(function, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = function(*args, **kwargs)
    ours = [w for w in caught if not issubclass(w.category, ResourceWarning)]  # pyspark's sockets
    return table, sorted(str(w.message) for w in ours)


def test_evaluate_warnings_jackknife_and_multiclass_equal_local(spark_classic, data: str) -> None:
    df = spark_classic.read.parquet(data).repartition(3)
    for options in (
        dict(label="y", score="logit", by=["seg", "day"]),  # log loss needs probabilities
        dict(task="regression", label="logit", prediction="p", by="seg"),  # msle's domain
        dict(label="y", score="p", by=["seg", "day"], ci="jackknife", jackknife="day"),
        dict(task="multiclass", label="truth", scores=["pa", "pb", "pc"], by="day"),
    ):
        got, got_warnings = _warned(ses.evaluate, df, **options)
        want, want_warnings = _warned(se.evaluate, data, **options)
        same_table(got, want)
        assert got_warnings == want_warnings
