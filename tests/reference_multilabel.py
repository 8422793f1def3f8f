"""The shared harness's multilabel part: random label sets and scikit-learn's values per group.

Each group's rows are handed to scikit-learn's multilabel functions (``zero_division=0``,
the samples' weights as ``sample_weight``); a NaN (an AUC without both classes) is null.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn import metrics as skm

THRESHOLD = 0.5


@st.composite
def multilabel_frames(draw: st.DrawFn, *, weighted: bool | None = None):
    """(DataFrame g, y0…, p0…[, w]; chunk boundaries; weighted; the number of labels)."""
    n = draw(st.integers(1, 40))
    n_groups = draw(st.integers(1, 3))
    labels = draw(st.integers(2, 4))
    rates = [draw(st.sampled_from([0.0, 0.02, 0.3, 0.5, 0.98, 1.0])) for _ in range(labels)]
    pool = draw(st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0, -2.0]), min_size=1, max_size=3))
    score = st.sampled_from(pool) | st.floats(-3, 3, allow_subnormal=False)
    if weighted is None:
        weighted = draw(st.booleans())
    data: dict[str, list[Any]] = {"g": [], "w": []}
    for j in range(labels):
        data[f"y{j}"], data[f"p{j}"] = [], []
    for _ in range(n):
        data["g"].append(draw(st.integers(0, n_groups - 1)))
        weight = st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]) | st.floats(1e-6, 10)
        data["w"].append(draw(weight) if weighted else 1.0)
        for j in range(labels):
            data[f"y{j}"].append(int(draw(st.floats(0, 1)) < rates[j]))
            data[f"p{j}"].append(draw(score))
    if not weighted:
        del data["w"]
    df = pl.DataFrame(data)
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3))) | {0, n})
    return df, cuts, weighted, labels


def label_columns(df: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The frame's label columns y0… and score columns p0…."""
    count = sum(c.startswith("y") for c in df.columns)
    return [f"y{j}" for j in range(count)], [f"p{j}" for j in range(count)]


def _parts(df: pl.DataFrame):
    ys, ps = label_columns(df)
    for key, part in sorted(df.partition_by("g", as_dict=True).items()):
        y = part.select(ys).to_numpy().astype(int)
        s = part.select(ps).to_numpy().astype(float)
        w = part["w"].to_numpy() if "w" in part.columns else np.ones(part.height)
        yield key[0], y, s, w


def _defined(y: np.ndarray, w: np.ndarray) -> tuple[bool, bool]:
    """Whether a label's AUC (positives and negatives) and AP (positives) are defined."""
    positives, negatives = w[y == 1].sum(), w[y == 0].sum()
    return positives > 0 and negatives > 0, positives > 0


def _label_ranking(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> dict[str, float | None]:
    """AUC and average precision of one binary problem (None where undefined)."""
    auc, ap = _defined(y, w)
    return {
        "roc_auc": skm.roc_auc_score(y, s, sample_weight=w) if auc else None,
        "average_precision": skm.average_precision_score(y, s, sample_weight=w) if ap else None,
    }


def per_label_reference(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Per group and label, in that order: the per-label table's values."""
    out = []
    for _, y, s, w in _parts(df):
        p = (s >= THRESHOLD).astype(int)
        if w.sum() <= 0:  # (scikit-learn refuses weights that are all 0: only counts, 0)
            out += [dict.fromkeys(("support", "tp", "fp", "fn", "tn"), 0.0)] * y.shape[1]
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            matrices = skm.multilabel_confusion_matrix(y, p, sample_weight=w)
            values = {
                name: f(y, p, average=None, sample_weight=w, zero_division=0)
                for name, f in (
                    ("precision", skm.precision_score),
                    ("recall", skm.recall_score),
                    ("f1", skm.f1_score),
                    ("jaccard", skm.jaccard_score),
                )
            }
        for j, ((tn, fp), (fn, tp)) in enumerate(matrices):
            row: dict[str, Any] = {"support": tp + fn, "tp": tp, "fp": fp, "fn": fn, "tn": tn}
            row |= {name: float(v[j]) for name, v in values.items()}
            out.append(row | _label_ranking(y[:, j], s[:, j], w))
    return out


def _sklearn(f: Any, y: np.ndarray, s: np.ndarray, w: np.ndarray, average: str) -> Any:
    """scikit-learn's ``f(y, s, average=...)``: None where it is NaN or raises."""
    try:
        value = float(f(y, s, average=average, sample_weight=w))
    except ValueError:
        return None
    return None if np.isnan(value) else value


def _averages(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> dict[str, Any]:
    """The AUC and average precision averages, as scikit-learn computes them.

    One difference, documented: a group without a positive has a null weighted AUC, where
    scikit-learn returns 0.
    """
    out: dict[str, Any] = {}
    for name, f in (
        ("roc_auc", skm.roc_auc_score),
        ("average_precision", skm.average_precision_score),
    ):
        for average in ("macro", "weighted", "micro"):
            out[f"{name}_{average}"] = _sklearn(f, y, s, w, average)
    if not (w[:, None] * y).sum() > 0:
        out["roc_auc_weighted"] = None
    return out


def multilabel_reference(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Per group, in key order: the metric table's values."""
    out = []
    for _, y, s, w in _parts(df):
        p = (s >= THRESHOLD).astype(int)
        row: dict[str, Any] = {"n": y.shape[0]}
        if w.sum() <= 0:
            out.append(row)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row["subset_accuracy"] = skm.accuracy_score(y, p, sample_weight=w)
            row["hamming_loss"] = skm.hamming_loss(y, p, sample_weight=w)
            for name, f in (
                ("precision", skm.precision_score),
                ("recall", skm.recall_score),
                ("f1", skm.f1_score),
                ("jaccard", skm.jaccard_score),
            ):
                for average in ("samples", "micro", "macro", "weighted"):
                    row[f"{name}_{average}"] = f(
                        y, p, average=average, sample_weight=w, zero_division=0
                    )
            row["label_ranking_average_precision"] = skm.label_ranking_average_precision_score(
                y, s, sample_weight=w
            )
            row["coverage_error"] = skm.coverage_error(y, s, sample_weight=w)
            row["label_ranking_loss"] = skm.label_ranking_loss(y, s, sample_weight=w)
            row |= _averages(y, s, w)
        out.append(row)
    return out
