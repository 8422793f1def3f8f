"""Bucketed metrics report bounds that hold against the exact (scikit-learn) values.

Property: on random data with and without ties, weighted or not, grouped or not, at coarse
and default precisions, |bucketed − exact| ≤ the reported bound for average precision (every
path of the metric table: Polars finalize, NumPy aggregates, compiled loops), KS, partial
AUC and the PR trapezoid area; every bound is 0 in exact mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve

import streameval as se
from reference import kernel_path

pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

PRECISIONS = [2, 3, 4, 6, 11]
SLACK = 1e-12  # rounding of the sums themselves


def _frame(seed: int, n: int, *, ties: bool, weighted: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n) ** rng.uniform(0.5, 3), 0, 1)
    if ties:
        p = np.round(p, int(rng.integers(1, 3)))
    cols: dict[str, Any] = {"g": rng.integers(0, 3, n), "y": y, "p": p}
    cols["w"] = rng.choice([0.5, 1.0, 2.0, 7.25], n) if weighted else np.ones(n)
    return pl.DataFrame(cols)


def _cases() -> Iterator[tuple[pl.DataFrame, bool, int]]:
    seed = 0
    for n in (8, 40, 600):
        for ties in (False, True):
            for weighted in (False, True):
                for _ in range(3):
                    seed += 1
                    yield _frame(seed, n, ties=ties, weighted=weighted), weighted, seed


def _groups(df: pl.DataFrame, by: list[str]) -> Iterator[tuple[tuple[Any, ...], pl.DataFrame]]:
    if not by:
        yield (), df
        return
    for key, part in df.group_by(by):
        yield tuple(key), part


def _row(table: pl.DataFrame, by: list[str], key: tuple[Any, ...]) -> dict[str, Any]:
    for k, v in zip(by, key, strict=True):
        table = table.filter(pl.col(k) == v)
    assert table.height == 1
    return table.row(0, named=True)


def _tables(df: pl.DataFrame, by: list[str], weight: str | None, precision: Any) -> list[Any]:
    kw: dict[str, Any] = dict(label="y", score="p", by=by, weight=weight, precision=precision)
    tables = [se.accumulate(df, **kw).metrics()]  # the Polars finalize
    tables.append(se.evaluate(df, **kw))  # the kernels (compiled loops when unweighted)
    with kernel_path("no-loops"):
        tables.append(se.evaluate(df, **kw))  # NumPy aggregates of sorted runs
    with kernel_path("off"):
        tables.append(se.evaluate(df, **kw))
    return tables


@pytest.mark.parametrize("by", [[], ["g"]])
def test_average_precision_bound_holds_on_every_path(by):
    worst = 0.0
    for df, weighted, _ in _cases():
        weight = "w" if weighted else None
        for precision in [*PRECISIONS, "exact"]:
            tables = _tables(df, by, weight, precision)
            for key, part in _groups(df, by):
                y, p, w = (part[c].to_numpy() for c in ("y", "p", "w"))
                if y.sum() == 0:
                    continue
                exact = average_precision_score(y, p, sample_weight=w)
                for table in tables:
                    row = _row(table, by, key)
                    bound = row["average_precision_error"]
                    gap = abs(row["average_precision"] - exact)
                    assert gap <= bound + SLACK, (precision, key, gap, bound)
                    if precision == "exact":
                        assert bound == 0.0
                    worst = max(worst, gap)
    assert worst > 1e-3  # coarse buckets do move the value: the check is not vacuous


def test_average_precision_error_sits_next_to_average_precision_and_is_null_without_positives():
    df = pl.DataFrame({"g": [0, 0, 1, 1], "y": [0, 0, 1, 0], "p": [0.2, 0.7, 0.6, 0.3]})
    table = se.accumulate(df, label="y", score="p", by="g", precision=3).metrics()
    columns = table.columns
    assert columns.index("average_precision_error") == columns.index("average_precision") + 1
    assert table["average_precision_error"].to_list()[0] is None
    assert table["average_precision_error"].to_list()[1] == 0.0


def _exact_areas(y: Any, p: Any, w: Any, max_fpr: float) -> tuple[float, float, float]:
    fpr, tpr, _ = sk_roc_curve(y, p, sample_weight=w, drop_intermediate=False)
    ks = float(np.max(tpr - fpr))
    partial = roc_auc_score(y, p, sample_weight=w, max_fpr=max_fpr)
    prec, rec, _ = precision_recall_curve(y, p, sample_weight=w)
    return ks, partial, auc(rec, prec)


@pytest.mark.parametrize("max_fpr", [None, 0.3])
def test_area_and_ks_bounds_hold(max_fpr):
    names = ["ks", "partial_auc", "pr_auc"]
    worst = dict.fromkeys(names, 0.0)
    for df, weighted, _ in _cases():
        for precision in [2, 3, 4, 11, "exact"]:
            state = se.accumulate(
                df, label="y", score="p", by="g", weight="w" if weighted else None,
                precision=precision,
            )  # fmt: skip
            table = state.areas(max_fpr=max_fpr)
            for key, part in _groups(df, ["g"]):
                y, p, w = (part[c].to_numpy() for c in ("y", "p", "w"))
                if y.min() == y.max():
                    continue
                exact = _exact_areas(y, p, w, max_fpr or 1.0)
                row = _row(table, ["g"], key)
                for name, value in zip(names, exact, strict=True):
                    bound = row[f"{name}_error"]
                    gap = abs(row[name] - value)
                    assert gap <= bound + SLACK, (name, precision, key, gap, bound)
                    if precision == "exact":
                        assert bound == 0.0
                    worst[name] = max(worst[name], gap)
    assert min(worst.values()) > 1e-3


def test_bounds_are_useful_at_the_default_precision():
    rng = np.random.default_rng(7)
    n = 200_000
    y = rng.integers(0, 2, n)
    p = 1 / (1 + np.exp(-(1.5 * y - 0.75 + rng.normal(size=n))))
    df = pl.DataFrame({"y": y, "p": p})
    table = se.evaluate(df, label="y", score="p")
    assert table["average_precision_error"].item() < 1e-3
    areas = se.accumulate(df, label="y", score="p").areas()
    assert areas["ks_error"].item() < 1e-3


@pytest.mark.parametrize("weighted", [False, True])
def test_per_class_average_precision_bound_holds(weighted):
    rng = np.random.default_rng(11)
    n = 400
    y = rng.integers(0, 3, n)
    raw = rng.random((n, 3)) + 0.8 * np.eye(3)[y]
    probs = np.round(raw / raw.sum(axis=1, keepdims=True), 2)
    w = rng.choice([0.5, 1.0, 3.0], n) if weighted else np.ones(n)
    df = pl.DataFrame({"y": y, "w": w, **{f"s{k}": probs[:, k] for k in range(3)}})
    for precision in [2, 4, 11, "exact"]:
        state = se.accumulate(
            df, task="multiclass", label="y", scores=["s0", "s1", "s2"],
            weight="w" if weighted else None, precision=precision,
        )  # fmt: skip
        table = state.per_class()
        for k in range(3):
            row = table.row(k, named=True)
            exact = average_precision_score(y == k, probs[:, k], sample_weight=w)
            gap = abs(row["average_precision"] - exact)
            assert gap <= row["average_precision_error"] + SLACK, (precision, k)
            if precision == "exact":
                assert row["average_precision_error"] == 0.0
    assert "average_precision_error" in state.per_class(ci="wilson").columns
