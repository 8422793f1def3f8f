"""Binary score state: per group and score bucket, weighted positive/negative sums.

Columns (all merge by ``sum``): ``pos`` = Σw·y, ``neg`` = Σw·(1−y), ``n`` = rows,
``sum_p`` = Σw·p, ``log_loss`` = Σw·(−log-likelihood, p clipped to [eps, 1−eps]),
``brier`` = Σw·(p−y)², ``n_outside`` = rows with p outside [0, 1].
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..bucketing import bucket_expr

MERGE_OPS: dict[str, str] = {
    "pos": "sum",
    "neg": "sum",
    "n": "sum",
    "sum_p": "sum",
    "log_loss": "sum",
    "brier": "sum",
    "n_outside": "sum",
}
BAD = "_bad"
_EPS = float(np.finfo(np.float64).eps)


def aggregations(
    y: pl.Expr, p: pl.Expr, w: pl.Expr | None, bad: pl.Expr
) -> list[pl.Expr]:
    """Aggregations that build the state from rows (``y`` Boolean, ``p`` Float64)."""
    yi = y.cast(pl.Int64)
    clipped = p.clip(_EPS, 1.0 - _EPS)
    ll = -pl.when(y).then(clipped.log()).otherwise((1.0 - clipped).log())
    sq = (p - yi) ** 2
    if w is None:
        pos, neg, sp, lls, bs = yi.sum(), (1 - yi).sum(), p.sum(), ll.sum(), sq.sum()
    else:
        pos, neg = (w * yi).sum(), (w * (1 - yi)).sum()
        sp, lls, bs = (w * p).sum(), (w * ll).sum(), (w * sq).sum()
    return [
        pos.alias("pos"),
        neg.alias("neg"),
        pl.len().cast(pl.Int64).alias("n"),
        sp.alias("sum_p"),
        lls.alias("log_loss"),
        bs.alias("brier"),
        ((p < 0.0) | (p > 1.0)).cast(pl.Int64).sum().alias("n_outside"),
        bad.cast(pl.Int64).sum().alias(BAD),
    ]


def state_query(
    lf: pl.LazyFrame,
    keys: list[str],
    y: pl.Expr,
    p: pl.Expr,
    w: pl.Expr | None,
    bad: pl.Expr,
    precision: int,
    splits: tuple[float, ...],
) -> pl.LazyFrame:
    """Lazy state table (with the ``_bad`` row count still attached)."""
    bucket = bucket_expr(p, precision, splits).alias("bucket")
    return lf.group_by([*keys, bucket]).agg(aggregations(y, p, w, bad))
