"""Bootstrap replicates and jackknife intervals: the draws against a NumPy reference, the
replicate states' laws (chunking, order, files), each replicate against scikit-learn with the
counts as weights, and leave-one-out states against accumulating without the value.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats

import streameval as se
from reference import (
    assert_states_equal,
    assert_tables_match,
    binary_frames,
    chunks,
    close,
    reference_table,
)
from reference_multiclass import TOP_K, multiclass_frames, multiclass_reference
from reference_regression import ALPHA, POWER, regression_frames, regression_reference
from streameval import resample
from streameval import resample_draw as rd
from streameval.resample import bootstrap_intervals, jackknife_intervals, leave_one_out

pytestmark = pytest.mark.filterwarnings(
    "ignore:null for the groups concerned:UserWarning", "ignore:the scores of:UserWarning"
)

# The constants are written out, not imported: a change to the draws must fail here.
M1, M2, GAMMA = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x9E3779B97F4A7C15
NULL_VALUE, BOOTSTRAP_STREAM = 0x6A09E667F3BCC908, 3
U64 = np.uint64


# --- NumPy reference of the draws --------------------------------------------------------------


def np_mix(z: np.ndarray) -> np.ndarray:
    """splitmix64: add γ, then the finalizer."""
    with np.errstate(over="ignore"):
        z = z.astype(U64) + U64(GAMMA)
        z = (z ^ (z >> U64(30))) * U64(M1)
        z = (z ^ (z >> U64(27))) * U64(M2)
    return z ^ (z >> U64(31))


def np_bits(values: pl.Series) -> np.ndarray:
    """A numeric column's values as 64 bits (streameval.split.keys' definition)."""
    if values.dtype.is_float():
        x = values.cast(pl.Float64).to_numpy()
        bits = np.where(x == 0.0, 0.0, x).view(U64)
    elif values.dtype.is_temporal():
        bits = values.to_physical().cast(pl.Int64).to_numpy().view(U64)
    else:
        bits = values.cast(pl.Int64).fill_null(0).to_numpy().view(U64)
    return np.where(values.is_null().to_numpy(), U64(NULL_VALUE), bits)


def np_key(df: pl.DataFrame, columns: list[str], seed: int) -> np.ndarray:
    start = np_mix(np.array([seed], dtype=U64) ^ np_mix(np.array([BOOTSTRAP_STREAM], dtype=U64)))
    key = np.full(df.height, start[0])
    for c in columns:
        key = np_mix(key ^ np_bits(df[c]))
    return key


def np_counts(key: np.ndarray, replicate: int) -> np.ndarray:
    """Poisson(1) counts: #{k : F(k) ≤ U}, F from SciPy, U the top 53 bits of the draw."""
    u = np_mix(key ^ np_mix(np.array([replicate], dtype=U64)))
    uniform = (u >> U64(11)).astype(np.float64) / 2.0**53
    cdf = stats.poisson.cdf(np.arange(40), 1)
    return (uniform[:, None] >= cdf[None, :]).sum(axis=1)


def polars_counts(
    df: pl.DataFrame, columns: list[str], seed: int, replicate: int, *, stable: bool = True
) -> np.ndarray:
    rows = rd.with_row_key(df.lazy(), columns, df.schema, seed, "_key", stable=stable)
    rows = rows.with_columns(pl.lit(replicate, pl.UInt16).alias("_r"))
    return rd.with_counts(rows, "_key", "_r", "_count").collect()["_count"].to_numpy()


def test_the_mix_is_splitmix64():
    # SplitMix64 seeded with 0 (Vigna's splitmix64.c) outputs these first three numbers.
    expected = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    state = np.array([0, GAMMA, (2 * GAMMA) % 2**64], dtype=U64)
    assert np_mix(state).tolist() == expected


def test_count_cuts_match_scipy():
    cuts = np.array(rd.count_cuts(), dtype=np.float64)
    cdf = stats.poisson.cdf(np.arange(len(cuts) + 1), 1)
    assert np.all(np.abs(cuts - cdf[:-1] * 2.0**53) <= 1)
    assert cdf[len(cuts)] * 2.0**53 >= 2.0**53 - 1  # the next point is 1 in double precision


def test_row_keys_and_counts_match_numpy_for_every_numeric_type():
    n = 2_000
    rng = np.random.default_rng(1)
    df = pl.DataFrame(
        {
            "i64": rng.integers(-(2**62), 2**62, n),
            "i16": rng.integers(-300, 300, n).astype(np.int16),
            "u32": rng.integers(0, 2**32, n).astype(np.uint32),
            "f": np.where(rng.random(n) < 0.1, -0.0, rng.normal(size=n)),
            "f32": rng.random(n).astype(np.float32),
            "b": rng.random(n) < 0.5,
            "d": [dt.date(2026, 1, 1) + dt.timedelta(days=int(k)) for k in rng.integers(0, 900, n)],
        }
    ).with_columns(pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise(pl.col("i16")))
    columns = df.columns
    for seed, replicate in [(0, 1), (7, 2), (2**64 - 1, 200)]:
        want = np_counts(np_key(df, columns, seed), replicate)
        np.testing.assert_array_equal(polars_counts(df, columns, seed, replicate), want)
        fast = polars_counts(df, columns, seed, replicate, stable=False)
        np.testing.assert_array_equal(fast, want)  # no text column: the same hash
    # The same value in another integer type draws the same (hive keys read as Int64 …).
    narrow = df.select(pl.col("i16").cast(pl.Int64))
    assert (polars_counts(narrow, ["i16"], 3, 5) == polars_counts(df, ["i16"], 3, 5)).all()


def test_draws_are_pinned():
    """The counts of ids 0..23 in replicates 1 and 2 with seed 0, forever."""
    df = pl.DataFrame({"id": range(24)})
    got = [polars_counts(df, ["id"], 0, r).tolist() for r in (1, 2)]
    want = [np_counts(np_key(df, ["id"], 0), r).tolist() for r in (1, 2)]
    assert got == want
    assert got == PINNED


PINNED = [
    [0, 1, 1, 1, 2, 1, 0, 1, 1, 0, 2, 1, 3, 2, 0, 0, 0, 2, 2, 2, 1, 0, 1, 2],
    [1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 2, 2, 1, 0, 1, 0, 2, 2, 1],
]


@pytest.mark.parametrize("ids", ["int", "string"])
def test_replicates_have_the_in_bag_counts_of_split_bootstrap(ids):
    df = pl.DataFrame({"id": range(300), "y": [0, 1, 1] * 100, "p": [i / 300 for i in range(300)]})
    if ids == "string":
        df = df.with_columns(pl.format("row-{}", "id").alias("id"))
    state = se.accumulate(df, label="y", score="p", bootstrap=3, seed=8, row_id="id")
    positives = state.metrics().filter(pl.col("replicate") > 0)["positives"].to_list()
    bags = se.split.bootstrap(df, [1, 2, 3], seed=8, by="id")
    in_bag = bags.group_by("replicate").agg((pl.col("in_bag") * pl.col("y")).sum())
    assert in_bag.sort("replicate")["in_bag"].cast(pl.Float64).to_list() == positives


def test_counts_are_poisson_with_mean_and_variance_one():
    df = pl.DataFrame({"id": range(100_000)})
    draws = [polars_counts(df, ["id"], 11, r) for r in (1, 2, 3)]
    counts = np.concatenate(draws)
    # 300,000 draws: the mean's standard error is 0.0018, the variance's 0.0037.
    assert abs(counts.mean() - 1) < 0.01
    assert abs(counts.var() - 1) < 0.02
    observed = np.bincount(np.minimum(counts, 5), minlength=6)
    p = stats.poisson.pmf(np.arange(5), 1)
    expected = np.append(p, 1 - p.sum()) * counts.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    assert abs(np.corrcoef(draws[0], draws[1])[0, 1]) < 0.01  # replicates are independent
    assert abs(np.corrcoef(draws[0][:-1], draws[0][1:])[0, 1]) < 0.01  # and so are rows


# --- accumulate(bootstrap=…): laws -------------------------------------------------------------

R = 4


def binary(df: pl.DataFrame, weighted: bool, replicates: int = R, **kw: Any) -> se.State:
    return se.accumulate(
        df, label="y", score="p", by="g", weight="w" if weighted else None,
        bootstrap=replicates, **kw,
    )  # fmt: skip


@settings(max_examples=30)
@given(binary_frames(), st.booleans(), st.integers(0, 2**64 - 1), st.randoms())
def test_binary_replicates_do_not_depend_on_chunks_or_order(frame, with_id, seed, rnd):
    df, cuts, weighted = frame
    kw: dict[str, Any] = {"seed": seed, "precision": rnd.choice(["exact", 4, 11])}
    if with_id or df.is_duplicated().any():  # equal rows need an id (see the next test)
        df, kw["row_id"] = df.with_row_index("id"), "id"
    whole = binary(df, weighted, **kw)
    assert whole.spec.keys == ("g", "replicate") and whole.spec.replicates == R
    assert_states_equal(se.merge([binary(c, weighted, **kw) for c in chunks(df, cuts)]), whole)
    order = list(range(df.height))
    rnd.shuffle(order)
    assert_states_equal(binary(df[order], weighted, **kw), whole)


@settings(max_examples=15)
@given(multiclass_frames(), st.booleans())
def test_multiclass_replicates_do_not_depend_on_chunks(data, with_id):
    df, classes, cuts, weighted = data
    kw: dict[str, Any] = {
        "task": "multiclass", "label": "y", "by": "g", "classes": classes, "bootstrap": R,
        "scores": [f"p{j}" for j in range(len(classes))] if "p0" in df.columns else None,
        "prediction": "pred" if "pred" in df.columns else None,
        "weight": "w" if weighted else None,
        "row_id": "id" if with_id or df.is_duplicated().any() else None,
    }  # fmt: skip
    df = df.with_row_index("id")
    whole = se.accumulate(df, **kw)
    assert_states_equal(se.merge([se.accumulate(c, **kw) for c in chunks(df, cuts)]), whole)
    assert_states_equal(se.accumulate(df.reverse(), **kw), whole)


@settings(max_examples=15)
@given(regression_frames(), st.sampled_from(["exact", 6]))
def test_regression_replicates_do_not_depend_on_chunks(data, precision):
    df, cuts, weighted = data
    kw: dict[str, Any] = {
        "task": "regression", "label": "y", "prediction": "f", "by": "g", "bootstrap": R,
        "weight": "w" if weighted else None, "precision": precision, "seed": 5,
    }  # fmt: skip
    if df.is_duplicated().any():
        df, kw["row_id"] = df.with_row_index("id"), "id"
    whole = se.accumulate(df, **kw)
    assert_states_equal(se.merge([se.accumulate(c, **kw) for c in chunks(df, cuts)]), whole)
    assert_states_equal(se.accumulate(df.reverse(), **kw), whole)


@settings(max_examples=15)
@given(binary_frames())
def test_replicates_of_parquet_partitions_equal_those_in_memory(frame):
    df, _, weighted = frame
    df = df.with_columns(pl.col("g").cast(pl.Int64))
    kw: dict[str, Any] = {"seed": 3}
    if df.is_duplicated().any():
        df, kw["row_id"] = df.with_row_index("id"), "id"
    with tempfile.TemporaryDirectory() as root:
        for g, part in df.partition_by("g", as_dict=True).items():
            folder = Path(root, f"g={g[0]}")
            folder.mkdir()
            for i, piece in enumerate(chunks(part, [0, part.height // 2, part.height])):
                piece.drop("g").write_parquet(folder / f"part-{i}.parquet")
        from_files = binary(root, weighted, **kw)
        in_memory = binary(df, weighted, **kw)
    assert_states_equal(from_files, in_memory)


# --- each replicate is the data with the counts as weights --------------------------------------


def counted(df: pl.DataFrame, replicate: int, seed: int = 0) -> pl.DataFrame:
    """The replicate as scikit-learn sees it: rows drawn at least once, weight × count."""
    count = np_counts(np_key(df, ["id"], seed), replicate)
    base = df["w"] if "w" in df.columns else pl.Series([1.0] * df.height)
    return df.with_columns(w=base * count).filter(pl.Series(count > 0))


def replicate_table(table: pl.DataFrame, replicate: int) -> pl.DataFrame:
    return table.filter(pl.col("replicate") == replicate).drop("replicate")


@settings(max_examples=15)
@given(binary_frames())
def test_binary_replicates_match_sklearn_with_counts_as_weights(frame):
    df, _, weighted = frame
    df = df.with_row_index("id")
    state = binary(df, weighted, replicates=2, precision="exact", row_id="id")
    table = state.metrics([0.3, 0.5])
    for r in (1, 2):  # replicate 0: see test_bootstrap_intervals_are_percentiles_…
        want = reference_table(counted(df, r), [0.3, 0.5])
        assert_tables_match(replicate_table(table, r), want)


@settings(max_examples=12)
@given(multiclass_frames())
def test_multiclass_replicates_match_sklearn_with_counts_as_weights(data):
    df, classes, _, weighted = data
    df = df.with_row_index("id")
    state = se.accumulate(
        df, task="multiclass", label="y", by="g", classes=classes,
        scores=[f"p{j}" for j in range(len(classes))] if "p0" in df.columns else None,
        prediction="pred" if "pred" in df.columns else None, weight="w" if weighted else None,
        top_k=TOP_K, precision="exact", bootstrap=2, row_id="id", seed=9,
    )  # fmt: skip
    table = state.metrics()
    for r in (1, 2):
        want = multiclass_reference(counted(df, r, seed=9), classes)
        for row in want:  # sklearn's MCC is NaN, not 0, when rounding makes a variance < 0
            if isinstance(row.get("mcc"), float) and math.isnan(row["mcc"]):
                row["mcc"] = 0.0
        assert_tables_match(replicate_table(table, r), want)


@settings(max_examples=15)
@given(regression_frames())
def test_regression_replicates_match_sklearn_with_counts_as_weights(data):
    df, _, weighted = data
    df = df.with_row_index("id")
    state = se.accumulate(
        df, task="regression", label="y", prediction="f", by="g", power=POWER,
        weight="w" if weighted else None, precision="exact", bootstrap=2, row_id="id",
    )  # fmt: skip
    table = state.metrics(alpha=ALPHA)
    for r in (1, 2):  # max_error too: over the rows drawn
        assert_tables_match(replicate_table(table, r), regression_reference(counted(df, r)))


def test_equal_rows_need_a_row_id():
    df = pl.DataFrame({"y": [0, 1] * 50, "p": [0.2, 0.7, 0.4, 0.9] * 25})
    with pytest.raises(se.InputError, match=r"about 96% of the 100 rows repeat.*row_id="):
        se.accumulate(df, label="y", score="p", bootstrap=3)
    few = df.with_columns(p=pl.int_range(pl.len()).cast(pl.Float64) % 97)  # 3% repeat
    assert se.accumulate(few, label="y", score="p", bootstrap=3).spec.row_id == ()


def test_bootstrap_spread_of_accuracy_is_the_binomial_one():
    n, p = 4_000, 0.8
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, n)
    correct = rng.random(n) < p
    df = pl.DataFrame({"y": y, "s": np.where(correct, y, 1 - y) * 0.6 + 0.2})
    df = df.with_row_index("id")  # hard predictions: every row repeats others' values
    state = se.accumulate(df, label="y", score="s", bootstrap=400, seed=1, row_id="id")
    accuracy = state.metrics().filter(pl.col("replicate") > 0)["accuracy"].to_numpy()
    se_binomial = math.sqrt(p * (1 - p) / n)
    assert 0.85 < accuracy.std() / se_binomial < 1.15


# --- intervals ---------------------------------------------------------------------------------


def test_bootstrap_intervals_are_percentiles_of_the_replicates(monkeypatch):
    rng = np.random.default_rng(2)
    n = 600
    g, y = rng.integers(0, 3, n), rng.integers(0, 2, n)
    y[g == 2] = 0
    y[np.flatnonzero(g == 2)[0]] = 1  # group 2: a single positive
    df = pl.DataFrame({"g": g, "y": y, "p": rng.random(n)})
    kw: dict[str, Any] = {"label": "y", "score": "p", "by": "g", "thresholds": [0.3, 0.5]}
    state = se.accumulate(df, bootstrap=200, precision=8, **kw)
    table = state.metrics(threshold=[0.3, 0.5])
    out = bootstrap_intervals(state, lambda s: s.metrics(threshold=[0.3, 0.5]), level=0.9)
    plain = se.accumulate(df, precision=8, **kw).metrics([0.3, 0.5])
    monkeypatch.setattr(resample, "FINALIZE_ROWS", 5_000)  # finalized in blocks of replicates
    assert_frame_equal(
        bootstrap_intervals(state, lambda s: s.metrics(threshold=[0.3, 0.5]), level=0.9), out
    )
    assert out.height == plain.height == 6
    assert out.columns[:5] == ["g", "n", "positives", "positives_lo", "positives_hi"]
    for name in ["roc_auc_error_lo", "n_lo", "threshold_lo", "replicate"]:
        assert name not in out.columns
    for mine, base in zip(out.to_dicts(), plain.to_dicts(), strict=True):
        for name, value in base.items():
            assert close(mine[name], value, 1e-12), name
    for row in out.to_dicts():
        reps = table.filter(
            (pl.col("g") == row["g"]) & (pl.col("threshold") == row["threshold"]),
            pl.col("replicate") > 0,
        )
        for name in ["roc_auc", "recall", "log_loss"]:
            values = reps[name].drop_nulls().to_numpy()
            if row["g"] == 2 and name == "roc_auc":  # the positive is missing from a third
                assert len(values) < 190 and row[f"{name}_lo"] is None
                continue
            lo, hi = np.quantile(values, [0.05, 0.95], method="linear")
            assert math.isclose(row[f"{name}_lo"], lo) and math.isclose(row[f"{name}_hi"], hi)


def test_paired_models_and_their_difference_get_intervals():
    rng = np.random.default_rng(6)
    n = 400
    y = rng.integers(0, 2, n)
    df = pl.DataFrame({"id": range(n), "y": y, "a": rng.random(n) + 0.3 * y, "b": rng.random(n)})
    kw: dict[str, Any] = {"task": "paired", "label": "y", "scores": ["a", "b"]}
    state = se.accumulate(df, **kw, bootstrap=100, row_id="id")
    per_model = bootstrap_intervals(state, lambda s: s.metrics())
    plain = se.accumulate(df, **kw).metrics()
    assert per_model["model"].to_list() == ["a", "b"]
    points = [c for c in plain.columns if not c.endswith(("_lo", "_hi"))]
    assert_frame_equal(per_model.select(points), plain.select(points), check_dtypes=False)
    a, b = per_model.rows_by_key("model", named=True, unique=True).values()
    assert a["roc_auc_lo"] < a["roc_auc"] < a["roc_auc_hi"] and a["roc_auc_lo"] > b["roc_auc_hi"]
    # The paired bootstrap of the AUC difference replaces DeLong's interval in roc_test.
    test = bootstrap_intervals(state, lambda s: s.roc_test(), columns=["difference"])
    assert test.columns == state.roc_test().drop("replicate").columns
    delong = se.accumulate(df, **kw).roc_test()
    assert math.isclose(test["difference"].item(), delong["difference"].item())
    for side in ("lo", "hi"):  # about DeLong's, from 100 replicates
        assert abs(test[f"difference_{side}"].item() - delong[f"difference_{side}"].item()) < 0.04


def test_analytic_intervals_are_replaced_and_statistics_left_alone():
    df = pl.DataFrame(
        {"id": range(200), "y": [0, 1] * 100, "p": [(i * 7 % 200) / 200 for i in range(200)]}
    )
    state = se.accumulate(df, label="y", score="p", bootstrap=40, row_id="id")
    plain = bootstrap_intervals(state, lambda s: s.metrics())
    wilson = bootstrap_intervals(state, lambda s: s.metrics(ci="wilson"))
    assert not [c for c in wilson.columns if c.endswith("_right")]
    for name in ["accuracy_lo", "roc_auc_hi", "prevalence_lo"]:
        assert wilson[name].equals(plain[name])
    assert "accuracy_pvalue_lo" not in wilson.columns and "roc_auc_se_lo" not in wilson.columns


def test_identifiers_must_identify_rows_in_every_replicate():
    df = pl.DataFrame(
        {"id": range(300), "y": [0, 1, 1] * 100, "p": [(i * 7 % 300) / 300 for i in range(300)]}
    )
    state = se.accumulate(df, label="y", score="p", bootstrap=20, row_id="id", precision="exact")
    with pytest.raises(se.InputError, match=r"identifiers=.*criterion"):
        bootstrap_intervals(state, lambda s: s.operating_point())
    out = bootstrap_intervals(state, lambda s: s.operating_point(), identifiers=["criterion"])
    assert out.height == state.operating_point().filter(pl.col("replicate") == 0).height
    assert out["threshold_lo"].null_count() == 0


def test_bootstrap_intervals_need_a_replicated_state():
    df = pl.DataFrame({"y": [0, 1], "p": [0.2, 0.8]})
    with pytest.raises(se.InputError, match="bootstrap replicates"):
        bootstrap_intervals(se.accumulate(df, label="y", score="p"), lambda s: s.metrics())
    state = se.accumulate(df, label="y", score="p", bootstrap=3)
    with pytest.raises(se.InputError, match="confidence level"):
        bootstrap_intervals(state, lambda s: s.metrics(), level=95)
    with pytest.raises(se.InputError, match="columns="):
        bootstrap_intervals(state, lambda s: s.metrics(), columns=["auc"])


def with_days(df: pl.DataFrame, days: list[int]) -> pl.DataFrame:
    return df.with_columns(day=pl.Series(days[: df.height], dtype=pl.Int64))


DAYS = st.lists(st.integers(0, 3), min_size=50, max_size=50)


def check_leave_one_out(df: pl.DataFrame, accumulate, metrics) -> None:
    """leave_one_out over ``day`` equals accumulating without that day, for every day."""
    state = accumulate(df, ["g", "day"])
    left_out = metrics(leave_one_out(state, "day"))
    for day in df["day"].unique().to_list():
        groups = df.filter(pl.col("day") == day)["g"].unique()
        rest = df.filter(pl.col("day") != day)
        got = left_out.filter(pl.col("day") == day).drop("day")
        if rest.height == 0:
            assert got.height == 0
            continue
        want = metrics(accumulate(rest, ["g"])).filter(pl.col("g").is_in(groups.implode()))
        assert_frame_equal(got, want, rel_tol=1e-9, abs_tol=1e-12, check_dtypes=False)


@settings(max_examples=20)
@given(binary_frames(), DAYS)
def test_binary_leave_one_out_is_accumulating_without_the_value(frame, days):
    df, _, weighted = frame

    def accumulate(data, by):
        return se.accumulate(
            data, label="y", score="p", by=by, weight="w" if weighted else None,
            thresholds=[0.3, 0.5],
        )  # fmt: skip

    check_leave_one_out(with_days(df, days), accumulate, lambda s: s.metrics([0.3, 0.5]))


@settings(max_examples=12)
@given(multiclass_frames(), DAYS)
def test_multiclass_leave_one_out_is_accumulating_without_the_value(data, days):
    df, classes, _, weighted = data
    kw: dict[str, Any] = {
        "task": "multiclass", "label": "y", "classes": classes,
        "scores": [f"p{j}" for j in range(len(classes))] if "p0" in df.columns else None,
        "prediction": "pred" if "pred" in df.columns else None,
        "weight": "w" if weighted else None,
    }  # fmt: skip
    check_leave_one_out(
        with_days(df, days), lambda data, by: se.accumulate(data, by=by, **kw), se.State.metrics
    )


@settings(max_examples=15)
@given(regression_frames(), DAYS, st.sampled_from(["exact", 6]))
def test_regression_leave_one_out_is_accumulating_without_the_value(data, days, precision):
    df, _, weighted = data

    def accumulate(data, by):
        return se.accumulate(
            data, task="regression", label="y", prediction="f", by=by, precision=precision,
            weight="w" if weighted else None,
        )  # fmt: skip

    # max_error is a "max" column: the largest of the other days
    check_leave_one_out(with_days(df, days), accumulate, se.State.metrics)


def test_jackknife_intervals_follow_the_formula():
    rng = np.random.default_rng(4)
    n = 900
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 2, n),
            "day": rng.integers(0, 6, n),
            "y": rng.normal(size=n),
        }
    ).with_columns(f=pl.col("y") + pl.Series(rng.normal(size=n)))
    df = df.filter(~((pl.col("g") == 1) & (pl.col("day") == 5)))  # group 1 has five days
    state = se.accumulate(df, task="regression", label="y", prediction="f", by=["g", "day"])
    out = jackknife_intervals(state, "day", se.State.metrics, level=0.9)
    assert out.columns[:6] == [
        "g",
        "n",
        "mean_error",
        "mean_error_lo",
        "mean_error_hi",
        "mean_error_se",
    ]
    for row in out.to_dicts():
        part = df.filter(pl.col("g") == row["g"])
        days = sorted(part["day"].unique())
        g = len(days)
        for name, fn in [
            ("mae", lambda e: np.abs(e).mean()),
            ("max_error", lambda e: np.abs(e).max()),
        ]:
            estimate = fn((part["f"] - part["y"]).to_numpy())
            loo = np.array(
                [
                    fn((q["f"] - q["y"]).to_numpy())
                    for d in days
                    for q in [part.filter(pl.col("day") != d)]
                ]
            )
            se_ = math.sqrt((g - 1) / g * ((loo - loo.mean()) ** 2).sum())
            t = stats.t.ppf(0.95, g - 1)
            assert math.isclose(row[name], estimate, rel_tol=1e-12)
            assert math.isclose(row[f"{name}_se"], se_, rel_tol=1e-9, abs_tol=1e-12)
            assert math.isclose(row[f"{name}_lo"], estimate - t * se_, rel_tol=1e-9)
            assert math.isclose(row[f"{name}_hi"], estimate + t * se_, rel_tol=1e-9)


def test_jackknife_is_null_where_a_left_out_metric_is_undefined():
    df = pl.DataFrame(
        {"day": [1, 1, 2, 2, 3], "y": [0, 1, 0, 0, 0], "p": [0.1, 0.9, 0.3, 0.2, 0.4]}
    )
    state = se.accumulate(df, label="y", score="p", by="day", precision="exact")
    out = jackknife_intervals(state, "day", se.State.metrics)
    assert out["roc_auc"].item() == 1.0  # but without day 1 there is no positive
    assert out["roc_auc_se"].item() is None and out["roc_auc_lo"].item() is None
    assert out["accuracy_se"].item() is not None
    one_day = se.accumulate(df.filter(pl.col("day") == 1), label="y", score="p", by="day")
    assert jackknife_intervals(one_day, "day", se.State.metrics)["accuracy_se"].item() is None
    with pytest.raises(se.InputError, match="group key"):
        jackknife_intervals(state, "segment", se.State.metrics)


# --- specs, files, bad input --------------------------------------------------------------------


def test_replicated_states_round_trip_and_refuse_other_bootstraps(tmp_path):
    df = pl.DataFrame({"id": range(20), "y": [0, 1] * 10, "p": [i / 20 for i in range(20)]})
    kw: dict[str, Any] = {"label": "y", "score": "p", "bootstrap": 5}
    state = se.accumulate(df, **kw, row_id="id", seed=4)
    state.write(tmp_path / "s.parquet")
    back = se.read_state(tmp_path / "s.parquet")
    assert back.spec == state.spec and back.spec.row_id == ("id",)
    assert back.table.equals(state.table)
    doubled = se.merge([back, state])
    assert doubled.table["n"].sum() == 2 * state.table["n"].sum()
    others = [
        se.accumulate(df, **{**kw, "bootstrap": 6}, row_id="id", seed=4),
        se.accumulate(df, **kw, row_id="id", seed=5),
        se.accumulate(df, **kw, seed=4),
    ]
    for other, field in zip(others, ["replicates", "seed", "row_id"], strict=True):
        with pytest.raises(se.SpecMismatchError, match=field):
            se.merge([state, other])
    with pytest.raises(se.SpecMismatchError):
        se.merge([state, se.accumulate(df, label="y", score="p")])


def test_specs_written_before_bootstrap_still_read():
    spec = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.8]}), label="y", score="p").spec
    old = json.loads(spec.to_json())
    for name in ("replicates", "seed", "row_id"):
        del old[name]
    assert se.Spec.from_json(json.dumps(old)) == spec


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"bootstrap": 0}, "bootstrap= to be a number of replicates"),
        ({"bootstrap": True}, "bootstrap= to be a number of replicates"),
        ({"bootstrap": 70_000}, "bootstrap= to be a number of replicates"),
        ({"bootstrap": 5, "seed": -1}, "seed= to be an integer"),
        ({"bootstrap": 5, "row_id": "idd"}, "row id column 'idd'.*did you mean 'id'"),
        ({"bootstrap": 5, "row_id": 3}, "row_id= to be a column name"),
        ({"row_id": "id"}, "row_id= only with bootstrap="),
        ({"bootstrap": 5, "by": "replicate"}, "group keys other than"),
    ],
)
def test_bad_bootstrap_options_are_named(kw, match):
    df = pl.DataFrame({"id": [1, 2], "replicate": [1, 2], "y": [0, 1], "p": [0.2, 0.8]})
    with pytest.raises(se.InputError, match=match):
        se.accumulate(df, label="y", score="p", **kw)


def test_bad_rows_are_reported_with_bootstrap():
    df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, float("nan"), 0.8], "w": [1.0, 1.0, -2.0]})
    with pytest.raises(se.InputError, match="finite"):
        se.accumulate(df, label="y", score="p", bootstrap=3)
    with pytest.raises(se.InputError, match="non-negative weights in 'w'"):
        se.accumulate(df.drop_nans(), label="y", score="p", weight="w", bootstrap=3)


def test_string_row_ids_and_keys_draw_the_same_in_every_chunk():
    df = pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(60)],
            "g": ["a", "b", "c"] * 20,
            "y": [0, 1] * 30,
            "p": [(i * 37 % 60) / 60 for i in range(60)],
        }
    ).with_columns(pl.col("g").cast(pl.Categorical))
    for row_id in ("id", None):
        kw: dict[str, Any] = {
            "label": "y",
            "score": "p",
            "by": "g",
            "bootstrap": 3,
            "row_id": row_id,
        }
        whole = se.accumulate(df, **kw)
        parts = [se.accumulate(df[a:b], **kw) for a, b in itertools.pairwise([0, 17, 40, 60])]
        assert_states_equal(se.merge(parts), whole)


@pytest.mark.parametrize(
    "kw",
    [
        {"ci": "bootstrap", "bootstrap": 5},
        {"ci": "bootstrap", "bootstrap": 5, "precision": "exact"},
        {"ci": "jackknife", "jackknife": "d"},
    ],
)
def test_resampled_tables_warn_of_the_data_not_of_its_replicates(kw):
    """A warning counts the data's rows and groups, as without ci=, not the replicates'."""
    rng = np.random.default_rng(0)
    n = 2_000
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "d": rng.integers(0, 4, n),
            "y": rng.integers(0, 2, n),
            "p": rng.normal(0, 2, n),  # outside [0, 1]: log loss and Brier are null
            "f": rng.normal(0, 1, n),  # below −1: msle is null
        }
    )
    by = ["g", "d"]
    pooled = ["g"] if kw["ci"] == "jackknife" else by  # (the jackknife's table pools d)

    def messages(**options: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            se.evaluate(df, **options)
        return [str(w.message) for w in caught]

    tasks = [{"label": "y", "score": "p"}, {"task": "regression", "label": "y", "prediction": "f"}]
    for task in tasks:
        plain = messages(by=pooled, **task)
        assert plain, task
        assert messages(by=by, **task, **kw) == plain
