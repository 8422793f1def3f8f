"""State.report_text: scikit-learn's classification_report of each group.

Unweighted, character for character; weighted, the same text but for the supports' last bits
(printed to 12 significant digits, where scikit-learn prints its own sum's).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import classification_report

import streameval as se


def sklearn_report(y: Any, pred: Any, labels: list[Any], w: Any, digits: int) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (zero_division's warning: the values are 0)
        return classification_report(y, pred, labels=labels, sample_weight=w, digits=digits)


def same(ours: str, theirs: str) -> None:
    """The same text, numbers within 1e-9 (a weighted support's last bits aside)."""
    a, b = ours.split("\n"), theirs.split("\n")
    assert len(a) == len(b), (ours, theirs)
    for x, y in zip(a, b, strict=True):
        tx, ty = x.split(), y.split()
        assert len(tx) == len(ty), (x, y)
        for u, v in zip(tx, ty, strict=True):
            try:
                assert abs(float(u) - float(v)) <= 1e-9 * max(1.0, abs(float(v))), (x, y)
            except ValueError:
                assert u == v, (x, y)


def merged(df: pl.DataFrame, cut: int, **kw: Any) -> se.State:
    """The state of ``df`` accumulated in two chunks and merged."""
    return se.accumulate(df[:cut], **kw).merge(se.accumulate(df[cut:], **kw))


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 60),
    st.sampled_from(["int", "str", "bool"]),
    st.booleans(),
    st.integers(0, 4),
    st.data(),
)
def test_binary_reports_match_sklearn_per_group(n, labels, weighted, digits, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    y = rng.integers(0, 2, n)
    p = np.round(rng.random(n), 1)  # ties at the threshold
    values = {"int": y, "str": np.where(y == 1, "spam", "ham"), "bool": y == 1}[labels]
    positive = {"int": 1, "str": "spam", "bool": True}[labels]
    w = np.round(rng.random(n) * 3, 3) if weighted else None
    df = pl.DataFrame({"g": rng.integers(0, 3, n), "y": values, "p": p})
    if w is not None:
        df = df.with_columns(w=pl.Series(w))
    kw: dict[str, Any] = dict(label="y", score="p", by="g", precision="exact", positive=positive)
    kw |= dict(weight="w") if weighted else {}
    state = merged(df, n // 2, **kw)
    ours = state.report_text(0.5, digits=digits)
    blocks = []
    for (g,), part in sorted(df.partition_by("g", as_dict=True).items()):
        truth = part["y"].to_numpy()
        pred = np.where(
            part["p"].to_numpy() >= 0.5, positive, {"int": 0, "str": "ham", "bool": False}[labels]
        )
        names = sorted({*values.tolist()}) if len(set(values.tolist())) == 2 else None
        if names is None:
            return  # (one label value in all the data: the negative has no name to print)
        pw = part["w"].to_numpy() if weighted else None
        blocks.append(f"g = {g}\n\n" + sklearn_report(truth, pred, names, pw, digits))
    # (numbers compared, not characters: a group with no true positive has scikit-learn print
    # its supports as floats, 1.0 for 1, even unweighted)
    same(ours, "\n".join(blocks))


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_reports_match_sklearn_with_an_absent_class(weighted):
    rng = np.random.default_rng(3)
    n = 300
    classes = ["a", "b", "c", "d"]  # "d" never occurs
    y = rng.choice(classes[:3], n)
    pred = np.where(rng.random(n) < 0.6, y, rng.choice(classes[:3], n))
    w = np.round(rng.random(n) * 2, 3)
    df = pl.DataFrame({"seg": rng.choice(["x", "y"], n), "y": y, "pred": pred, "w": w})
    kw: dict[str, Any] = dict(task="multiclass", label="y", prediction="pred", classes=classes)
    kw |= dict(by="seg") | (dict(weight="w") if weighted else {})
    ours = merged(df, 123, **kw).report_text(digits=3)
    blocks = []
    for (seg,), part in sorted(df.partition_by("seg", as_dict=True).items()):
        pw = part["w"].to_numpy() if weighted else None
        theirs = sklearn_report(part["y"].to_numpy(), part["pred"].to_numpy(), classes, pw, 3)
        blocks.append(f"seg = {seg}\n\n{theirs}")
    if weighted:
        same(ours, "\n".join(blocks))
    else:
        assert ours == "\n".join(blocks)


def test_a_state_without_keys_prints_sklearns_text_alone():
    df = pl.DataFrame({"y": [0, 1, 1, 0, 1], "p": [0.2, 0.9, 0.4, 0.6, 0.7]})
    ours = se.accumulate(df, label="y", score="p").report_text(0.5)
    pred = (df["p"].to_numpy() >= 0.5).astype(int)
    assert ours == sklearn_report(df["y"].to_numpy(), pred, [0, 1], None, 2)


def test_report_text_is_refused_where_there_are_no_classes():
    df = pl.DataFrame({"y": [0.5, 1.0], "yhat": [0.4, 1.2]})
    state = se.accumulate(df, task="regression", label="y", prediction="yhat")
    with pytest.raises(se.InputError, match="report_text"):
        state.report_text()
    binary = se.accumulate(pl.DataFrame({"y": [0, 1], "p": [0.2, 0.8]}), label="y", score="p")
    with pytest.raises(se.InputError, match="expected digits to be an integer of 0 or more"):
        binary.report_text(digits=-1)


def test_the_command_line_prints_the_report_per_group(tmp_path):
    import subprocess
    import sys

    rng = np.random.default_rng(7)
    df = pl.DataFrame({"seg": rng.choice(["a", "b"], 200), "y": rng.integers(0, 2, 200)})
    df = df.with_columns(p=pl.Series(np.round(rng.random(200), 2)))
    path = tmp_path / "preds.parquet"
    df.write_parquet(path)
    run = [sys.executable, "-m", "streameval", "evaluate", str(path), "--label", "y"]
    done = subprocess.run(
        [*run, "--score", "p", "--by", "seg", "--table", "report", "--threshold", "0.3"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    state = se.accumulate(df, label="y", score="p", by="seg", thresholds=[0.3])
    assert done.stdout == state.report_text(0.3)
    assert done.stdout.startswith("seg = a\n\n") and "\nseg = b\n\n" in done.stdout
    wrong = subprocess.run(
        [*run, "--task", "regression", "--prediction", "p", "--table", "report"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert wrong.returncode == 2 and "--table report only with --task binary" in wrong.stderr
    saved = subprocess.run(
        [*run, "--score", "p", "--table", "report", "--output", str(tmp_path / "r.csv")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert saved.returncode == 2 and "without --output or --format" in saved.stderr
