"""Ranking metrics of any set of binary problems given as score histograms.

Input rows: group columns, ``bucket`` (ordered score key), ``pos`` and ``neg`` (Float64
weights of positives and negatives in the bucket). Output per group: ``_P``, ``_N``,
``roc_auc`` (ties ½, as sklearn), ``roc_auc_error`` (the bound ½·Σ P_b·N_b / (P·N), 0 in
exact mode), ``average_precision`` (sklearn's step sum) and its bound
``average_precision_error`` (:func:`streameval.pairsums.ap_bound_terms`). One sort
and one group_by serve every group: the one-vs-rest and one-vs-one problems of a multiclass
state are all computed in one query.
"""

from __future__ import annotations

import polars as pl

from ..pairsums import ap_bound_terms, twice_pairs


def ranking(lf: pl.LazyFrame, groups: list[str], *, exact: bool) -> pl.LazyFrame:
    """AUC, its bound and average precision per group of a (groups, bucket, pos, neg) table.

    Each (group, bucket) must appear once: ties are pairs within one row.

    >>> import polars as pl
    >>> h = pl.LazyFrame({"g": [0, 0, 0], "bucket": [3, 2, 1], "pos": [1.0, 0.0, 1.0],
    ...                   "neg": [0.0, 1.0, 1.0]})
    >>> ranking(h, ["g"], exact=True).select("roc_auc", "average_precision").collect().row(0)
    (0.625, 0.75)
    """
    pos, neg = pl.col("pos"), pl.col("neg")
    cpos, cneg = pl.col("_cpos"), pl.col("_cneg")
    P, N = pl.col("_P"), pl.col("_N")
    both = (P > 0) & (N > 0)
    over, under = ap_bound_terms(pos, neg, cpos, cneg)
    return (
        lf.sort("bucket", descending=True)
        .with_columns(
            pos.cum_sum().over(groups).alias("_cpos"), neg.cum_sum().over(groups).alias("_cneg")
        )
        .group_by(groups, maintain_order=True)
        .agg(
            pos.sum().alias("_P"),
            neg.sum().alias("_N"),
            (0.5 * twice_pairs(pos, neg, cpos - pos)).sum().alias("_auc"),
            (pos * neg).sum().alias("_ties"),
            (pos * cpos / (cpos + cneg)).filter(pos > 0).sum().alias("_ap"),
            over.filter(pos > 0).sum().alias("_ap_over"),
            under.filter(pos > 0).sum().alias("_ap_under"),
        )
        .with_columns(
            pl.when(both).then(pl.col("_auc") / P / N).alias("roc_auc"),
            pl.when(both)
            .then(pl.col("_ties") / P / N * (0.0 if exact else 0.5))
            .alias("roc_auc_error"),
            pl.when(P > 0).then(pl.col("_ap") / P).alias("average_precision"),
            pl.when(P > 0)
            .then(pl.max_horizontal("_ap_over", "_ap_under") / P * (0.0 if exact else 1.0))
            .alias("average_precision_error"),
        )
        .drop("_auc", "_ties", "_ap", "_ap_over", "_ap_under")
    )
