"""The shared harness's ranking part: graded, tied queries and their metrics by brute force.

Each query's metrics under ties are expectations over every order of its tied items, each
order equally likely: the reference enumerates the orders (queries are small) and averages
the metrics of each strict ranking. DCG and NDCG are also checked against scikit-learn's
``dcg_score`` / ``ndcg_score`` (which average ties in closed form), and MAP over the whole
list against ``label_ranking_average_precision_score``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import polars as pl
from hypothesis import strategies as st
from sklearn import metrics as skm

from reference import per_group

KS = (None, 1, 3)


@st.composite
def ranking_frames(draw: st.DrawFn, *, weighted: bool | None = None):
    """(DataFrame g, q, y, s[, w], each query's rows together; cuts between queries; weighted)."""
    n_groups = draw(st.integers(1, 3))
    pool = draw(st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0, -2.0]), min_size=1, max_size=3))
    score = st.sampled_from(pool) | st.floats(-5, 5, allow_subnormal=False)
    label = st.sampled_from([0, 0, 0, 1, 2, 3])
    if weighted is None:
        weighted = draw(st.booleans())
    rows: list[tuple[Any, ...]] = []
    bounds = [0]
    for q in range(draw(st.integers(1, 8))):
        g = draw(st.integers(0, n_groups - 1))
        w = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]) if weighted else st.just(1.0))
        items = draw(st.integers(1, 6))
        for _ in range(items):
            rows.append((g, q, float(draw(label)), draw(score), w))
        bounds.append(len(rows))
    g, q, y, s, w = (list(c) for c in zip(*rows, strict=True))
    data: dict[str, Any] = {"g": g, "q": q, "y": y, "s": s}
    if weighted:
        data["w"] = w
    df = pl.DataFrame(data)
    df = df.with_columns(pl.col("q").cast(draw(st.sampled_from([pl.Int64, pl.String]))))
    cuts = sorted(set(draw(st.lists(st.sampled_from(bounds), max_size=3))) | {0, len(rows)})
    return df, cuts, weighted


def _orders(s: np.ndarray) -> list[np.ndarray]:
    """Every strict ranking of the items (descending score, tied items in every order)."""
    groups = [np.flatnonzero(s == v) for v in sorted(set(s.tolist()), reverse=True)]
    orders = itertools.product(*(itertools.permutations(g) for g in groups))
    return [np.concatenate(p) for p in orders]


def _strict(y: np.ndarray, order: np.ndarray, k: int) -> dict[str, float]:
    """The metrics of one strict ranking at cutoff k."""
    ranked = y[order]
    relevant = ranked > 0
    discounts = 1 / np.log2(np.arange(2, y.size + 2))
    top = relevant[:k].sum()
    first = int(np.argmax(relevant)) + 1 if relevant.any() else None
    return {
        "dcg": float((ranked[:k] * discounts[:k]).sum()),
        "precision": top / k,
        "recall": top / relevant.sum() if relevant.any() else 0.0,
        "hit_rate": float(first is not None and first <= k),
        "rr": 1 / first if first is not None and first <= k else 0.0,
    }


def _query(y: np.ndarray, s: np.ndarray, k: int | None) -> dict[str, float]:
    """A query's metrics at cutoff k (None: the whole list), ties averaged by brute force."""
    kk = y.size if k is None else k
    orders = _orders(s)
    values = [_strict(y, o, kk) for o in orders]
    out = {name: float(np.mean([v[name] for v in values])) for name in values[0]}
    ideal = np.sort(y)[::-1][:kk]
    idcg = float((ideal / np.log2(np.arange(2, ideal.size + 2))).sum())
    out["ndcg"] = out["dcg"] / idcg if idcg > 0 else 0.0
    relevant = y > 0
    ap = 0.0
    for i in np.flatnonzero(relevant):  # a tied item ranks after its ties
        rank = (s >= s[i]).sum()
        if rank <= kk:
            ap += (relevant & (s >= s[i])).sum() / rank
    out["ap"] = ap / min(kk, relevant.sum()) if relevant.any() else 0.0
    if y.size > 1:  # scikit-learn's functions need two items
        kw = {} if k is None else {"k": k}
        for name, score in (("dcg", skm.dcg_score), ("ndcg", skm.ndcg_score)):
            assert math.isclose(out[name], score([y], [s], **kw), rel_tol=1e-9, abs_tol=1e-12)
        if k is None and relevant.any():
            lrap = skm.label_ranking_average_precision_score([relevant], [s])
            assert math.isclose(out["ap"], lrap, rel_tol=1e-9, abs_tol=1e-12)
    return out


def _group(part: pl.DataFrame, k: int | None) -> dict[str, Any]:
    queries = part.partition_by("q", maintain_order=True)
    weights = [float(p["w"][0]) if "w" in p.columns else 1.0 for p in queries]
    metrics = [_query(p["y"].to_numpy(), p["s"].to_numpy(), k) for p in queries]
    relevant = [bool((p["y"] > 0).any()) for p in queries]
    out: dict[str, Any] = {
        "n": part.height,
        "queries": len(queries),
        "relevant_queries": sum(relevant),
        "k": k,
    }
    total = sum(weights)
    total_relevant = sum(w for w, r in zip(weights, relevant, strict=True) if r)
    for name, column, over in [("dcg", "dcg", None), ("ndcg", "ndcg", None),
                               ("precision", "precision", None), ("recall", "recall", True),
                               ("hit_rate", "hit_rate", None), ("mrr", "rr", None),
                               ("map", "ap", True)]:  # fmt: skip
        den = total_relevant if over else total
        num = sum(
            w * m[column]
            for w, m, r in zip(weights, metrics, relevant, strict=True)
            if r or not over
        )
        out[name] = num / den if den > 0 else None
    return out


def ranking_reference(
    df: pl.DataFrame,
    ks: tuple[int | None, ...] = KS,
    keys: list[str] = ["g"],  # noqa: B006
) -> list[dict[str, Any]]:
    """The ranking metrics per group and cutoff (whole list first), sorted like ours."""
    order = sorted(ks, key=lambda k: -1 if k is None else k)
    return per_group(df, keys, lambda part: [_group(part, k) for k in order])
