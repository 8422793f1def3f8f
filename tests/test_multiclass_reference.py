"""Every multiclass metric against scikit-learn on chunked, weighted, tied input."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sklearn import metrics as skm

import streameval as se
from reference import assert_tables_match, chunks
from reference_multiclass import TOP_K, multiclass_frames, multiclass_reference

pytestmark = pytest.mark.filterwarnings("ignore:the scores of:UserWarning")


def accumulate_chunked(df, classes, cuts, weighted, **kw):
    k = len(classes)
    scores = [f"p{j}" for j in range(k)] if "p0" in df.columns else None
    parts = [
        se.accumulate(
            c, task="multiclass", label="y", by="g", classes=classes, scores=scores,
            prediction="pred" if "pred" in df.columns else None,
            weight="w" if weighted else None, top_k=TOP_K, **kw,
        )
        for c in chunks(df, cuts)
    ]  # fmt: skip
    return se.merge(parts)


@given(multiclass_frames(), st.sampled_from([0.0, 0.5, 2.0, float("inf")]) | st.floats(0.01, 100))
def test_multiclass_metrics_match_sklearn_exact(data, beta):
    df, classes, cuts, weighted = data
    state = accumulate_chunked(df, classes, cuts, weighted, precision="exact")
    ours = state.metrics(beta=beta)
    assert_tables_match(ours, multiclass_reference(df, classes, beta=beta))
    if "p0" in df.columns:
        for name in [c for c in ours.columns if c.endswith("_error")]:
            assert (ours[name].drop_nulls() == 0).all()


@given(multiclass_frames(scores=False))
def test_multiclass_metrics_from_hard_predictions(data):
    df, classes, cuts, weighted = data
    ours = accumulate_chunked(df, classes, cuts, weighted).metrics()
    assert "log_loss" not in ours.columns
    assert_tables_match(ours, multiclass_reference(df, classes))


@given(multiclass_frames())
def test_bucketed_aucs_within_their_bounds(data):
    df, classes, cuts, weighted = data
    exact = accumulate_chunked(df, classes, cuts, weighted, precision="exact").metrics()
    coarse = accumulate_chunked(df, classes, cuts, weighted, precision=2).metrics()
    for name in ["roc_auc_ovr_macro", "roc_auc_ovr_weighted", "roc_auc_ovo_macro",
                 "roc_auc_ovo_weighted"]:  # fmt: skip
        for e, c, bound in zip(exact[name], coarse[name], coarse[f"{name}_error"], strict=True):
            assert (e is None) == (c is None)
            if e is not None:
                assert abs(e - c) <= bound + 1e-12


# a true negative weight of 0 that sklearn's subtraction leaves at 3e-17 (see below)
_RESIDUE = pl.DataFrame(
    {"g": [0, 0], "y": [0, 2], "p0": [0.5, 0.5], "p1": [0.5, 0.5], "pred": [2, 0], "w": [1e-6, 0.5]}
)


@given(multiclass_frames())
@example((_RESIDUE, [0, 2], [0, 2], True))
def test_per_class_and_confusion_matrix_match_sklearn(data):
    df, classes, cuts, weighted = data
    state = accumulate_chunked(df, classes, cuts, weighted, precision="exact")
    per_class = state.per_class()
    matrices = state.confusion_matrix()
    k = len(classes)
    for (g,), part in df.partition_by("g", as_dict=True).items():
        index = {c: i for i, c in enumerate(classes)}
        y = np.array([index[v] for v in part["y"]])
        if "pred" in part.columns:
            pred = np.array([index[v] for v in part["pred"]])
        else:
            pred = part.select([f"p{j}" for j in range(k)]).to_numpy().argmax(axis=1)
        w = part["w"].to_numpy() if weighted else None
        if w is not None and w.sum() == 0:
            continue  # sklearn refuses all-zero weights
        labels = list(range(k))
        for normalize in (None, "true", "pred", "all"):
            want = skm.confusion_matrix(y, pred, labels=labels, sample_weight=w,
                                        normalize=normalize)  # fmt: skip
            got = state.confusion_matrix(normalize).filter(pl.col("g") == g)
            np.testing.assert_allclose(got["count"].to_numpy().reshape(k, k), want, rtol=1e-9)
        mine = per_class.filter(pl.col("g") == g)
        assert mine["class"].to_list() == classes
        p, r, f, s = skm.precision_recall_fscore_support(
            y, pred, labels=labels, sample_weight=w, zero_division=0
        )
        np.testing.assert_allclose(mine["precision"], p, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["recall"], r, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["f1"], f, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine["support"], s if w is None else
                                   [w[y == c].sum() for c in labels], rtol=1e-9)  # fmt: skip
        cells = skm.multilabel_confusion_matrix(y, pred, labels=labels, sample_weight=w)
        fp, fn = cells[:, 0, 1], cells[:, 1, 0]
        # sklearn derives tn as total − tp − fp − fn: with weights 0.5 and 1e-6 that leaves a
        # 3e-17 residue where tn is 0 (npv 3e-11 instead of 0); summed directly it is exact
        sw_all = np.ones(len(y)) if w is None else w
        tn = np.array([sw_all[(y != c) & (pred != c)].sum() for c in labels])
        np.testing.assert_allclose(tn, cells[:, 0, 0], rtol=1e-9, atol=1e-12 * sw_all.sum())
        for name, num, den in [("specificity", tn, tn + fp), ("npv", tn, tn + fn),
                               ("fpr", fp, fp + tn), ("fnr", fn, fn + cells[:, 1, 1])]:  # fmt: skip
            want = np.divide(num, den, out=np.zeros(k), where=den > 0)
            np.testing.assert_allclose(mine[name], want, rtol=1e-9, atol=1e-12, err_msg=name)
        if "p0" not in part.columns:
            continue
        scores = part.select([f"p{j}" for j in range(k)]).to_numpy()
        sw = np.ones(len(y)) if w is None else w
        for c, row in zip(labels, mine.iter_rows(named=True), strict=True):
            positives, negatives = sw[y == c].sum(), sw[y != c].sum()
            if positives > 0 and negatives > 0:
                auc = skm.roc_auc_score(y == c, scores[:, c], sample_weight=w)
                assert row["roc_auc"] == pytest.approx(auc, rel=1e-9)
            else:
                assert row["roc_auc"] is None
            if positives > 0:
                ap = skm.average_precision_score(y == c, scores[:, c], sample_weight=w)
                assert row["average_precision"] == pytest.approx(ap, rel=1e-9)
    assert matrices.height == df["g"].n_unique() * k * k


def test_digit_confusion_matrix_from_the_reference_texts():
    # ../shared/seeds/003: 10-class handwritten digits, rows = true class, columns = predicted.
    matrix = [
        [97, 0, 0, 0, 0, 0, 1, 0, 0, 1],
        [0, 98, 0, 0, 1, 0, 0, 1, 0, 0],
        [0, 0, 96, 1, 0, 1, 0, 1, 0, 0],
        [0, 0, 2, 95, 0, 1, 0, 0, 1, 0],
        [0, 0, 0, 0, 98, 0, 0, 0, 0, 2],
        [0, 0, 0, 1, 0, 97, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 1, 98, 0, 0, 0],
        [0, 0, 1, 0, 0, 0, 0, 98, 0, 0],
        [0, 0, 0, 1, 0, 0, 1, 0, 96, 1],
        [1, 0, 0, 0, 3, 1, 0, 0, 0, 95],
    ]
    y, pred = [], []
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            y += [str(i)] * count
            pred += [str(j)] * count
    df = pl.DataFrame({"y": y, "pred": pred}).sample(fraction=1.0, shuffle=True, seed=1)
    state = se.accumulate(df, task="multiclass", label="y", prediction="pred")
    wide = state.confusion_matrix(wide=True)
    assert wide.drop("actual").to_numpy().astype(int).tolist() == matrix
    table = state.metrics()
    assert table["n"].item() == 993
    assert table["accuracy"].item() == pytest.approx(968 / 993, abs=1e-12)
    precision = [matrix[j][j] / sum(r[j] for r in matrix) for j in range(10)]
    recall = [matrix[i][i] / sum(matrix[i]) for i in range(10)]
    p_macro, r_macro = np.mean(precision), np.mean(recall)
    assert table["precision_macro"].item() == pytest.approx(p_macro, abs=1e-12)
    assert table["recall_macro"].item() == pytest.approx(r_macro, abs=1e-12)
    harmonic = 2 * p_macro * r_macro / (p_macro + r_macro)
    assert table["f1_macro_harmonic"].item() == pytest.approx(harmonic, abs=1e-12)
    assert table["cohen_kappa"].item() == pytest.approx(
        skm.cohen_kappa_score(df["y"], df["pred"]), abs=1e-12
    )
