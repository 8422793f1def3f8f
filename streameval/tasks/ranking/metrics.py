"""Ranking metric table: a row per group and cutoff k, each metric a mean over queries.

Per query (its items ranked by score, ties averaged over every order of the tied items, as
scikit-learn's ``dcg_score`` / ``ndcg_score`` with ``ignore_ties=False``; gains are the
labels themselves, discounts 1/log2(position + 1), 0 past k):

- ``dcg``, ``ndcg``: scikit-learn's; a query with no relevant item has NDCG 0 and counts in
  the mean, as scikit-learn counts it;
- ``precision``: the expected number of relevant items (label > 0) in the top k, over k;
- ``recall``: the same over the query's relevant items;
- ``hit_rate``: the probability of a relevant item in the top k;
- ``mrr``: the expected reciprocal rank of the first relevant item (0 beyond k);
- ``map``: average precision at k, Σ over relevant items ranked within k of (relevant items
  scored at least as high) / (items scored at least as high), over min(k, relevant items):
  scikit-learn's ``label_ranking_average_precision_score`` convention for ties (a tied item
  ranks after its ties); over the whole list it equals that score of the query.

``recall`` and ``map`` are undefined for a query without a relevant item: their means are
over the queries with one (``relevant_queries``). Means are weighted by the query's weight.
With k = null the cutoff is the whole list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from ...metrics.declare import Metric, count, formulas
from ...metrics.groups import with_group_key
from ...metrics.select import select_metrics
from ...ordered import ORDERED
from ...spec import ALL

if TYPE_CHECKING:
    from ...states.data import StateData

W, W_RELEVANT = pl.col("weight"), pl.col("weight_relevant")


def _mean(column: str, weight: pl.Expr = W) -> pl.Expr:
    return pl.when(weight > 0).then(pl.col(column) / weight)


def _over_relevant(column: str) -> pl.Expr:
    return _mean(column, W_RELEVANT)


#: The ranking metric table's columns, in order (one finalize stage, ``queries``).
DECLARED = (
    count("n", summary=1),
    count("queries", summary=2),
    count("relevant_queries"),
    Metric("dcg", lambda: _mean("dcg"), "queries", direction="higher"),
    Metric("ndcg", lambda: _mean("ndcg"), "queries", direction="higher", summary=3, trend=1),
    Metric("precision", lambda: _mean("precision"), "queries", direction="higher", summary=4),
    Metric("recall", lambda: _over_relevant("recall"), "queries", direction="higher", summary=5),
    Metric("hit_rate", lambda: _mean("hit_rate"), "queries", direction="higher", trend=3),
    Metric("mrr", lambda: _mean("rr"), "queries", direction="higher", summary=6, trend=2),
    Metric("map", lambda: _over_relevant("ap"), "queries", direction="higher", summary=7),
    Metric("k", role="identifier", summary=8),
)
METRICS = formulas(DECLARED, "queries")
COLUMNS = [m.name for m in DECLARED]


def metric_table(state: StateData, metrics: Sequence[str] | None = None) -> pl.DataFrame:
    """Finalize a ranking state into the metric table (a row per group and cutoff).

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"q": [1, 1, 1, 2, 2], "y": [2, 0, 1, 0, 1],
    ...                    "s": [0.9, 0.8, 0.1, 0.3, 0.2]})
    >>> st = se.accumulate(df, task="ranking", label="y", score="s", query="q", k=2)
    >>> st.metrics().select("queries", "ndcg", "precision", "mrr", "k").row(0)
    (2, 0.695558643501663, 0.5, 0.75, 2)
    """
    names = select_metrics(metrics, list(METRICS))
    lf, keys = with_group_key(state.table.filter(pl.col("part") == 0), state.keys)
    table = (
        lf.with_columns([METRICS[name]().alias(name) for name in names])
        .sort([*keys, "k"], nulls_last=False)
        .collect(engine="in-memory", optimizations=ORDERED)
        .select(*keys, "n", "queries", "relevant_queries", *names, "k")
    )
    return table.drop(ALL) if keys == [ALL] else table
