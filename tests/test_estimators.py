"""Bootstrap estimators: out-of-bag, .632 and .632+ against direct NumPy/scikit-learn versions."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import streameval as se
from reference import close
from streameval import noinfo

SOME = settings(max_examples=max(4, settings.default.max_examples // 5))


def plus(err: float, err1: float, gamma: float) -> tuple[float, float]:
    """Efron & Tibshirani's .632+ (their eq. 32) and R', on the loss scale."""
    capped = min(err1, gamma)
    rate = (capped - err) / (gamma - err) if err1 > err and gamma > err else 0.0
    return 0.368 * err + 0.632 * err1 + (capped - err) * 0.368 * 0.632 * rate / (
        1 - 0.368 * rate
    ), rate


@st.composite
def bootstrapped(draw: st.DrawFn):
    """Resubstitution scores, and out-of-bag scores of a few replicates, for n rows."""
    n = draw(st.integers(4, 30))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    p = draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    resub = pl.DataFrame({"id": range(n), "y": y, "p": p})
    rows = []
    for b in range(draw(st.integers(1, 4))):
        out = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        for i in range(n):
            if out[i]:
                rows.append((b, i, y[i], draw(st.floats(0, 1))))
    if not rows:
        rows.append((0, 0, y[0], 0.5))
    oob = pl.DataFrame(rows, schema=["replicate", "id", "y", "p"], orient="row")
    return resub, oob


def rows(table: pl.DataFrame) -> dict:
    return {r["estimate"]: r for r in table.to_dicts()}


@SOME
@given(bootstrapped())
def test_632_estimates_of_the_error_rate_and_auc_match_a_direct_computation(data):
    resub, oob = data
    table = rows(se.bootstrap_estimate(resub, oob, label="y", score="p", row_id="id",
                                       precision="exact"))  # fmt: skip
    y, pred = resub["y"].to_numpy(), (resub["p"].to_numpy() >= 0.5).astype(int)
    err = 1 - skm.accuracy_score(y, pred)
    losses = oob.with_columns(loss=((pl.col("p") >= 0.5).cast(pl.Int64) != pl.col("y")))
    err1 = losses.group_by("id").agg(pl.col("loss").mean())["loss"].mean()
    p1, q1 = y.mean(), pred.mean()
    gamma = p1 * (1 - q1) + (1 - p1) * q1
    expected, rate = plus(err, err1, gamma)
    assert close(table["resubstitution"]["error_rate"], err)
    assert close(table["oob"]["error_rate"], err1)
    assert close(table[".632"]["error_rate"], 0.368 * err + 0.632 * err1)
    assert close(table["no_information"]["error_rate"], gamma)
    assert close(table["overfitting_rate"]["error_rate"], rate)
    assert close(table[".632+"]["error_rate"], expected)
    assert close(table[".632+"]["accuracy"], 1 - expected)
    assert table[".632"]["n"] is None and table[".632+"]["roc_auc_error"] is None
    counts = oob.group_by("id").len()
    weighted = oob.join(counts, on="id")
    if weighted["y"].n_unique() == 2 and resub["y"].n_unique() == 2:
        auc1 = skm.roc_auc_score(weighted["y"], weighted["p"], sample_weight=1 / weighted["len"])
        auc = skm.roc_auc_score(y, resub["p"])
        assert close(table["oob"]["roc_auc"], auc1)
        assert close(table["no_information"]["roc_auc"], 0.5)
        assert close(table[".632+"]["roc_auc"], 1 - plus(1 - auc, 1 - auc1, 0.5)[0])


@SOME
@given(bootstrapped())
def test_mean_and_pooled_out_of_bag_errors(data):
    resub, oob = data
    kw = {"label": "y", "score": "p", "precision": "exact"}
    mean = rows(se.bootstrap_estimate(resub, oob, oob_estimate="mean", **kw))["oob"]
    pooled = rows(se.bootstrap_estimate(resub, oob, oob_estimate="pooled", **kw))["oob"]
    wrong = oob.with_columns(loss=((pl.col("p") >= 0.5).cast(pl.Int64) != pl.col("y")))
    assert close(mean["error_rate"], wrong.group_by("replicate").agg(pl.col("loss").mean())[
        "loss"].mean())  # fmt: skip
    assert close(pooled["error_rate"], wrong["loss"].mean())


def pairs(df: pl.DataFrame, label: str, prediction: list[str]) -> pl.DataFrame:
    """Every label with every row's prediction: the no-information data set (n² rows)."""
    return df.select(label).join(df.select(prediction), how="cross")


@SOME
@given(bootstrapped(), st.integers(0, 1), st.integers(1, 8))
def test_no_information_values_are_the_metrics_of_every_label_prediction_pair(
    data, weighted, batch
):
    """Also with the rows' moments summed in batches of ``batch`` rows (a streaming source's)."""
    resub, oob = data
    resub = resub.with_columns(segment=pl.col("id") % 2, w=1.0 + pl.col("id") % 3)
    w = "w" if weighted else None
    with patch.object(noinfo, "BATCH_ROWS", batch):
        table = se.bootstrap_estimate(resub, oob.with_columns(segment=pl.col("id") % 2,
                                                              w=pl.lit(1.0)),
                                      label="y", score="p", row_id="id", by="segment", weight=w,
                                      precision="exact")  # fmt: skip
    gammas = table.filter(pl.col("estimate") == "no_information")
    for (segment,), part in resub.partition_by("segment", as_dict=True).items():
        both = part.select("y", pl.col("w").alias("wy")).join(part.select("p", "w"), how="cross")
        sw = (both["wy"] * both["w"]).to_numpy() if weighted else None
        y, p = both["y"].to_numpy(), both["p"].to_numpy()
        mine = gammas.filter(pl.col("segment") == segment).row(0, named=True)
        assert close(mine["error_rate"], 1 - skm.accuracy_score(y, p >= 0.5, sample_weight=sw))
        assert close(mine["balanced_accuracy"], 0.5)
        assert close(mine["brier"], skm.brier_score_loss(y, p, sample_weight=sw, labels=[0, 1]))
        assert close(mine["log_loss"], skm.log_loss(y, p, sample_weight=sw, labels=[0, 1]))


@SOME
@given(st.integers(5, 40), st.integers(0, 2**31), st.integers(1, 50))
def test_multiclass_and_regression_no_information_values(n, seed, batch):
    rng = np.random.default_rng(seed)
    df = pl.DataFrame({"id": range(n), "y": rng.integers(0, 3, n), "k": rng.integers(0, 3, n),
                       "t": rng.normal(size=n), "f": rng.normal(size=n)})  # fmt: skip
    oob = df.with_columns(replicate=pl.lit(0))
    multi = se.bootstrap_estimate(df, oob, task="multiclass", label="y", prediction="k",
                                  row_id="id")  # fmt: skip
    gamma = rows(multi)["no_information"]
    both = pairs(df, "y", ["k"])
    y, k = both["y"].to_numpy(), both["k"].to_numpy()
    assert close(gamma["error_rate"], 1 - skm.accuracy_score(y, k))
    assert close(gamma["balanced_accuracy"], skm.balanced_accuracy_score(y, k))
    with patch.object(noinfo, "BATCH_ROWS", batch):  # (the moments summed in batches)
        reg = se.bootstrap_estimate(df, oob, task="regression", label="t", prediction="f",
                                    row_id="id", precision="exact")  # fmt: skip
    both = pairs(df, "t", ["f"])
    assert close(rows(reg)["no_information"]["mse"],
                 skm.mean_squared_error(both["t"], both["f"]))  # fmt: skip
    assert rows(reg)["no_information"]["mae"] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "expected row_id="),
        ({"row_id": "id", "oob_estimate": "mean0"}, "oob_estimate to be one of"),
        ({"row_id": "id", "replicate": "rep"}, "expected a replicate column 'rep'"),
        ({"row_id": "idd"}, "did you mean 'id'"),
        ({"row_id": "id", "task": "paired"}, "per model"),
    ],
)
def test_estimator_errors_say_what_was_expected(kwargs, message):
    df = pl.DataFrame({"id": [0, 1], "y": [0, 1], "p": [0.2, 0.8], "replicate": [0, 0]})
    with pytest.raises(se.InputError, match=message):
        se.bootstrap_estimate(df, df, label="y", score="p", **kwargs)
