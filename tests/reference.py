"""The shared reference harness: scikit-learn's numbers for every binary metric.

``binary_frames`` draws chunked, weighted, tied, imbalanced inputs with several groups;
``reference_table`` computes what scikit-learn says per group; ``assert_tables_match``
compares a streameval table with it to 1e-9.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn import metrics as skm

from streameval.states import kind_module

TOL = 1e-9


@st.composite
def binary_frames(draw: st.DrawFn, *, weighted: bool | None = None, probabilities: bool = True):
    """(DataFrame with g, y, p[, w], list of chunk boundaries, weighted flag)."""
    n = draw(st.integers(1, 50))
    n_groups = draw(st.integers(1, 3))
    if probabilities:
        pool = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=8))
        wide = draw(st.booleans())
        score = st.floats(0, 1, allow_nan=False) if wide else st.sampled_from(pool)
    else:
        pool = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8))
        score = st.one_of(st.sampled_from(pool), st.floats(-50, 50, allow_nan=False))
    positive_rate = draw(st.sampled_from([0.0, 0.02, 0.3, 0.5, 0.98, 1.0]))
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, n_groups - 1),
                st.floats(0, 1).map(lambda u: int(u < positive_rate)),
                score,
                st.sampled_from([0.0, 0.5, 1.0, 2.25, 7.0]) | st.floats(1e-6, 10),
            ),
            min_size=n,
            max_size=n,
        )
    )
    if weighted is None:
        weighted = draw(st.booleans())
    g, y, p, w = (list(c) for c in zip(*rows, strict=True))
    data: dict[str, Any] = {"g": g, "y": y, "p": p}
    if weighted:
        data["w"] = w
    df = pl.DataFrame(data, schema_overrides={"y": pl.Int64, "p": pl.Float64})
    key_type = draw(st.sampled_from([pl.Int64, pl.Int16, pl.String]))
    df = df.with_columns(pl.col("g").cast(key_type))
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=4))) | {0, n})
    return df, cuts, weighted


def chunks(df: pl.DataFrame, cuts: list[int]) -> list[pl.DataFrame]:
    return [df[a:b] for a, b in itertools.pairwise(cuts)]


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _metrics(
    y: np.ndarray, p: np.ndarray, w: np.ndarray | None, t: float, beta: float = 1.0
) -> dict[str, Any]:
    sw = np.ones_like(p) if w is None else w
    P, N = float(sw[y == 1].sum()), float(sw[y == 0].sum())
    pred = (p >= t).astype(int)
    if P + N == 0:
        return _all_zero_weight(len(y), t)
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[0, 1], sample_weight=w).ravel()
    both = P > 0 and N > 0
    probs = bool(((p >= 0) & (p <= 1)).all()) and P + N > 0
    kappa = skm.cohen_kappa_score(y, pred, labels=[0, 1], sample_weight=w)
    out = {
        "n": len(y),
        "positives": P,
        "negatives": N,
        "prevalence": P / (P + N) if P + N > 0 else None,
        "roc_auc": skm.roc_auc_score(y, p, sample_weight=w) if both else None,
        "average_precision": skm.average_precision_score(y, p, sample_weight=w) if P > 0 else None,
        "log_loss": skm.log_loss(y, p, sample_weight=w, labels=[0, 1]) if probs else None,
        "brier": skm.brier_score_loss(y, p, sample_weight=w, labels=[0, 1]) if probs else None,
        "hinge_loss": hinge(y, p, w),
        "tp": tp, "fp": fp, "tn": tn, "fn": fn,
        "accuracy": skm.accuracy_score(y, pred, sample_weight=w) if P + N > 0 else None,
        "error_rate": 1 - skm.accuracy_score(y, pred, sample_weight=w) if P + N > 0 else None,
        "zero_one_loss": skm.zero_one_loss(y, pred, sample_weight=w),
        "precision": skm.precision_score(y, pred, sample_weight=w, zero_division=0, labels=[0, 1]),
        "recall": skm.recall_score(y, pred, sample_weight=w, zero_division=0, labels=[0, 1]),
        "specificity": skm.recall_score(
            y, pred, sample_weight=w, zero_division=0, labels=[0, 1], pos_label=0
        ),
        "npv": skm.precision_score(
            y, pred, sample_weight=w, zero_division=0, labels=[0, 1], pos_label=0
        ),
        "fpr": _ratio(fp, fp + tn),
        "fnr": _ratio(fn, fn + tp),
        "f1": skm.f1_score(y, pred, sample_weight=w, zero_division=0, labels=[0, 1]),
        "fbeta": skm.fbeta_score(
            y, pred, beta=beta, sample_weight=w, zero_division=0, labels=[0, 1]
        ),
        "mcc": _mcc(y, pred, w, (tp + fp, tp + fn, tn + fp, tn + fn)),
        "cohen_kappa": None if math.isnan(kappa) else kappa,
        "balanced_accuracy": skm.balanced_accuracy_score(y, pred, sample_weight=w)
        if P + N > 0
        else None,
        "threshold": t,
    }  # fmt: skip
    return out


def _mcc(y: np.ndarray, pred: np.ndarray, w: np.ndarray | None, margins: tuple) -> float:
    """scikit-learn's ``matthews_corrcoef``, with its zero-denominator value where it rounds.

    A confusion margin of 0 makes the denominator 0 (sklearn's value: 0), but sklearn's
    weighted sums can round it below 0, which gives NaN.
    """
    value = float(skm.matthews_corrcoef(y, pred, sample_weight=w))
    return 0.0 if math.isnan(value) and min(margins) == 0 else value


def hinge(y: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> float:
    """scikit-learn's binary ``hinge_loss`` of 0/1 labels ``y`` and margins ``p``.

    scikit-learn binarizes the labels it is given, so a group of one class would read as all
    negative: a row of each class with weight 0 lets it see both (the mean is unchanged).
    """
    sw = np.ones(len(y)) if w is None else w
    return float(
        skm.hinge_loss(
            np.append(y, [0, 1]), np.append(p, [0.0, 0.0]), sample_weight=np.append(sw, [0, 0])
        )
    )


def _all_zero_weight(n: int, t: float) -> dict[str, Any]:
    """sklearn refuses all-zero weights; streameval's definition: no weight, nothing defined."""
    zero = dict.fromkeys(["positives", "negatives", "tp", "fp", "tn", "fn"], 0.0)
    ratios = dict.fromkeys(
        ["precision", "recall", "specificity", "npv", "fpr", "fnr", "f1", "fbeta", "mcc"], 0.0
    )
    undefined = dict.fromkeys(
        ["prevalence", "roc_auc", "average_precision", "log_loss", "brier", "hinge_loss",
         "accuracy", "error_rate", "zero_one_loss", "cohen_kappa", "balanced_accuracy"]
    )  # fmt: skip
    return {"n": n, **zero, **ratios, **undefined, "threshold": t}


def per_group(
    df: pl.DataFrame, keys: list[str], rows_of: Callable[[pl.DataFrame], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The reference rows of every group, keys first, sorted like streameval's tables.

    The reference libraries' warnings (undefined metrics) are silenced: streameval's own
    are tested where they belong.
    """
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, part in sorted(df.partition_by(keys, as_dict=True).items()):
            named = dict(zip(keys, key, strict=True))
            rows += [{**named, **row} for row in rows_of(part)]
    return rows


def reference_table(
    df: pl.DataFrame,
    thresholds: list[float],
    keys: list[str] = ["g"],  # noqa: B006
    beta: float = 1.0,
) -> list[dict[str, Any]]:
    """scikit-learn's metrics per group and threshold (F-beta at ``beta``), sorted as ours."""

    def rows_of(part: pl.DataFrame) -> list[dict[str, Any]]:
        y, p = part["y"].to_numpy(), part["p"].to_numpy()
        w = part["w"].to_numpy() if "w" in part.columns else None
        return [_metrics(y, p, w, t, beta) for t in sorted(thresholds)]

    return per_group(df, keys, rows_of)


def close(a: Any, b: Any, tol: float = TOL) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(b, float) and math.isnan(b):
        return False
    if not isinstance(a, numbers.Real) or not isinstance(b, numbers.Real):
        return bool(a == b)
    return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)


def assert_tables_match(ours: pl.DataFrame, reference: list[dict[str, Any]], tol: float = TOL):
    got = ours.to_dicts()
    assert len(got) == len(reference), (len(got), len(reference))
    for mine, ref in zip(got, reference, strict=True):
        for name, value in ref.items():
            assert close(mine[name], value, tol), (name, mine[name], value, ref)


def _groups(df: pl.DataFrame):
    """Per group g: key, labels, scores, weights (or None) and positive/negative weight."""
    for key, part in df.partition_by("g", as_dict=True).items():
        y, p = part["y"].to_numpy(), part["p"].to_numpy()
        w = part["w"].to_numpy() if "w" in part.columns else None
        sw = np.ones_like(p) if w is None else w
        yield key[0], y, p, w, sw[y == 1].sum(), sw[y == 0].sum()


def reference_roc(df: pl.DataFrame) -> dict[Any, tuple[np.ndarray, ...]]:
    out = {}
    for g, y, p, w, positives, negatives in _groups(df):
        if positives > 0 and negatives > 0:
            fpr, tpr, thr = skm.roc_curve(y, p, sample_weight=w, drop_intermediate=False)
            out[g] = (thr, fpr, tpr)
    return out


def reference_pr(df: pl.DataFrame) -> dict[Any, tuple[np.ndarray, ...]]:
    out = {}
    for g, y, p, w, positives, _ in _groups(df):
        if positives > 0:
            prec, rec, thr = skm.precision_recall_curve(y, p, sample_weight=w)
            out[g] = (np.append(thr, np.inf), prec, rec)
    return out


def assert_states_equal(a: Any, b: Any) -> None:
    """Same spec and rows; integer columns equal, float columns equal to 1e-12 relative."""
    assert a.spec == b.spec
    order = [*a.keys, *kind_module(a.spec).group_columns(a.spec)]
    left, right = a.table.sort(order, nulls_last=False), b.table.sort(order, nulls_last=False)
    assert left.schema == right.schema
    assert left.select(order).equals(right.select(order))
    for name, dtype in left.schema.items():
        if name in order:
            continue
        if dtype.is_float():
            np.testing.assert_allclose(left[name], right[name], rtol=1e-12, atol=1e-300)
        else:
            assert left[name].equals(right[name]), name


@contextmanager
def refusing(owner: Any, name: str, what: str) -> Iterator[None]:
    """Fail the test if ``owner.name`` is called in the block: the path it must not take.

    ``what`` says what was computed where it should not have been.
    """
    with mock.patch.object(owner, name, side_effect=AssertionError(what)):
        yield


def written_source(df: pl.DataFrame, root: Any, layout: str) -> tuple[Any, list[str]]:
    """``df`` (columns ``seg``, ``day``, ``g``) written under ``root`` as ``layout``, and keys.

    ``hive``: a ``day=`` directory, grouped by (seg, day, g); ``file``, ``glob`` and
    ``lazyframe``: a file per ``seg`` value (one file, a glob of them, a scan of them),
    grouped by (g, day): sources summed in shards.
    """
    if layout == "hive":
        df.write_parquet(root, partition_by="day")
        return root, ["seg", "day", "g"]
    for i, part in enumerate(df.partition_by("seg")):
        part.write_parquet(root / f"{i}.parquet")
    source = {
        "file": root / "0.parquet",
        "glob": str(root / "*.parquet"),
        "lazyframe": pl.scan_parquet(root / "*.parquet"),
    }[layout]
    return source, ["g", "day"]


@contextmanager
def kernel_path(value: str) -> Iterator[None]:
    """``STREAMEVAL_KERNEL`` set to ``value`` for the block: the paths the kernels may take.

    ``"off"`` leaves only the Polars queries (the reference), ``"no-loops"`` the kernels
    without their compiled loops, ``"no-dense"`` no dense counting of bucketed states.
    """
    import os

    before = os.environ.get("STREAMEVAL_KERNEL")
    os.environ["STREAMEVAL_KERNEL"] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ["STREAMEVAL_KERNEL"]
        else:
            os.environ["STREAMEVAL_KERNEL"] = before
