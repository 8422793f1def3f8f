"""The shared harness's multiclass part: chunked, weighted, tied inputs and sklearn's numbers."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn import metrics as skm

from reference import hinge, per_group

TOP_K = 2


@st.composite
def multiclass_frames(draw: st.DrawFn, *, weighted: bool | None = None, scores: bool = True):
    """(DataFrame with g, y, pred, p0..p{K-1}[, w], classes, chunk boundaries, weighted)."""
    k = draw(st.integers(2, 4))
    strings = draw(st.booleans())
    classes = [f"c{i}" for i in range(k)] if strings else list(range(0, 2 * k, 2))
    n = draw(st.integers(1, 40))
    n_groups = draw(st.integers(1, 3))
    raw = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 1.0]) | st.floats(0.01, 1)
    with_prediction = draw(st.booleans())
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_groups - 1),
                st.integers(0, k - 1),
                st.integers(0, k - 1),
                st.lists(raw, min_size=k, max_size=k),
                st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]) | st.floats(1e-6, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    if weighted is None:
        weighted = draw(st.booleans())
    data: dict[str, Any] = {
        "g": [r[0] for r in rows],
        "y": [classes[r[1]] for r in rows],
    }
    probs = []
    for r in rows:
        total = sum(r[3])
        probs.append([v / total for v in r[3]] if total > 0 else [1.0 / k] * k)
    for j in range(k):
        data[f"p{j}"] = [p[j] for p in probs]
    if with_prediction or not scores:
        data["pred"] = [classes[r[2]] for r in rows]
    if weighted:
        data["w"] = [r[4] for r in rows]
    df = pl.DataFrame(data)
    if not scores:
        df = df.drop([f"p{j}" for j in range(k)])
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    return df, classes, cuts, weighted


def _argmax(p: np.ndarray) -> np.ndarray:
    return np.argmax(p, axis=1)


def _binary_auc(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> float | None:
    if w[y].sum() > 0 and w[~y].sum() > 0:
        return float(skm.roc_auc_score(y, s, sample_weight=w))
    return None


def _ovo(y: np.ndarray, p: np.ndarray, w: np.ndarray, k: int) -> tuple[Any, Any]:
    present = [c for c in range(k) if w[y == c].sum() > 0]
    scores, prevalence = [], []
    for a, b in itertools.combinations(present, 2):
        mask = (y == a) | (y == b)
        auc_a = _binary_auc(y[mask] == a, p[mask, a], w[mask])
        auc_b = _binary_auc(y[mask] == b, p[mask, b], w[mask])
        scores.append((auc_a + auc_b) / 2)
        prevalence.append(w[mask].sum())
    if not scores:
        return None, None
    return float(np.mean(scores)), float(np.average(scores, weights=prevalence))


def _group(part: pl.DataFrame, classes: list[Any], beta: float = 1.0) -> dict[str, Any]:
    k = len(classes)
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[v] for v in part["y"].to_list()])
    has_scores = "p0" in part.columns
    p = part.select([f"p{j}" for j in range(k)]).to_numpy() if has_scores else None
    pred = (
        np.array([index[v] for v in part["pred"].to_list()])
        if "pred" in part.columns
        else _argmax(p)
    )
    w = part["w"].to_numpy() if "w" in part.columns else None
    sw = np.ones(len(y)) if w is None else w
    out: dict[str, Any] = {"n": len(y)}
    if sw.sum() == 0:
        return out | {"accuracy": None, "error_rate": None, "zero_one_loss": None}
    labels = list(range(k))
    out["accuracy"] = skm.accuracy_score(y, pred, sample_weight=w)
    out["error_rate"] = 1 - out["accuracy"]
    out["hamming_loss"] = skm.hamming_loss(y, pred, sample_weight=w)
    out["zero_one_loss"] = skm.zero_one_loss(y, pred, sample_weight=w)
    out["balanced_accuracy"] = skm.balanced_accuracy_score(y, pred, sample_weight=w)
    for name, weights in [("cohen_kappa", None), ("kappa_linear", "linear"),
                          ("kappa_quadratic", "quadratic")]:  # fmt: skip
        value = skm.cohen_kappa_score(y, pred, labels=labels, weights=weights, sample_weight=w)
        out[name] = None if math.isnan(value) else value
    out["mcc"] = skm.matthews_corrcoef(y, pred, sample_weight=w)
    for name, fn in [("precision", skm.precision_score), ("recall", skm.recall_score),
                     ("f1", skm.f1_score), ("jaccard", skm.jaccard_score)]:  # fmt: skip
        for avg in ("macro", "micro", "weighted"):
            out[f"{name}_{avg}"] = fn(y, pred, average=avg, sample_weight=w, zero_division=0)
    for avg in ("macro", "micro", "weighted"):
        out[f"fbeta_{avg}"] = skm.fbeta_score(
            y, pred, beta=beta, average=avg, sample_weight=w, zero_division=0
        )
    pm, rm = out["precision_macro"], out["recall_macro"]
    out["f1_macro_harmonic"] = 2 * pm * rm / (pm + rm) if pm + rm > 0 else 0.0
    true_classes = [c for c in labels if sw[y == c].sum() > 0]
    recalls = skm.recall_score(
        y, pred, labels=true_classes, average=None, sample_weight=w, zero_division=0
    )
    out["g_mean"] = float(np.prod(recalls) ** (1 / len(recalls)))
    if p is None:
        return out
    out["log_loss"] = skm.log_loss(y, p, labels=labels, sample_weight=w)
    out["brier"] = skm.brier_score_loss(y, p, labels=labels, sample_weight=w)
    out["hinge_loss"] = multiclass_hinge(y, p, sw)
    out["top_k_accuracy"] = (
        1.0  # sklearn reads two classes as binary scores; k ≥ classes always hits
        if k <= TOP_K
        else skm.top_k_accuracy_score(y, p, k=TOP_K, labels=labels, sample_weight=w)
    )
    aucs = [(c, _binary_auc(y == c, p[:, c], sw)) for c in labels]
    defined = [(c, a) for c, a in aucs if a is not None]
    if defined:
        support = [sw[y == c].sum() for c, _ in defined]
        out["roc_auc_ovr_macro"] = float(np.mean([a for _, a in defined]))
        out["roc_auc_ovr_weighted"] = float(np.average([a for _, a in defined], weights=support))
        if len(defined) == k > 2:  # sklearn needs every class present
            ovr = skm.roc_auc_score(y, p, multi_class="ovr", labels=labels, sample_weight=w)
            assert math.isclose(ovr, out["roc_auc_ovr_macro"], rel_tol=1e-9)
    else:
        out["roc_auc_ovr_macro"] = out["roc_auc_ovr_weighted"] = None
    out["roc_auc_ovo_macro"], out["roc_auc_ovo_weighted"] = _ovo(y, p, sw, k)
    if w is None and len(set(y)) == k and k > 2:  # sklearn's own OvO needs all classes
        ovo = skm.roc_auc_score(y, p, multi_class="ovo", labels=labels)
        assert math.isclose(ovo, out["roc_auc_ovo_macro"], rel_tol=1e-9)
    return out


def multiclass_hinge(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    """scikit-learn's Crammer–Singer ``hinge_loss`` of class indices ``y`` and scores ``p``.

    scikit-learn reads two classes as binary: there, the margin of the second class's score
    over the first's is the decision value (what Crammer and Singer's margin is for two).
    """
    k = p.shape[1]
    if k == 2:
        return hinge(y, p[:, 1] - p[:, 0], w)
    return float(skm.hinge_loss(y, p, labels=list(range(k)), sample_weight=w))


def multiclass_reference(
    df: pl.DataFrame,
    classes: list[Any],
    keys: list[str] = ["g"],  # noqa: B006
    beta: float = 1.0,
) -> list[dict[str, Any]]:
    """sklearn's multiclass metrics per group (F-beta at ``beta``), sorted like ours."""
    return per_group(df, keys, lambda part: [_group(part, classes, beta)])
