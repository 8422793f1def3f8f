"""Ranking state: per group and cutoff, sums over queries of each query's metrics.

One table, two parts (column ``part``), every value column a sum:

- part 0, per group and cutoff ``k`` (null: the whole list): ``n`` rows, ``queries``,
  ``relevant_queries`` (those with a relevant item, label > 0), ``weight`` = Σw_q and
  ``weight_relevant`` (the same over queries with a relevant item; query counts when
  unweighted), and Σw_q·value of each query's ``dcg``, ``ndcg``, ``precision``, ``recall``,
  ``hit_rate``, ``ap`` and ``rr`` at k (:mod:`.plan` computes them);
- part 1, a row per group and query: its ``query_hash`` (a stable 64-bit hash of the query
  column values, :func:`streameval.split.keys.add_key_hash`) and ``seen`` = 1, with a null
  cutoff.

A query's metrics need all of its items, so a query must lie in one part of the data: when
states merge, a query hash seen in two of them, in one group or in two, is refused
(:func:`check_merged`), rather than a query scored twice on pieces of its list. The hashes
cost 8 bytes a query.
"""

from __future__ import annotations

import polars as pl

from ...errors import InputError
from ...spec import Spec

COUNTS = ("n", "queries", "relevant_queries")
WEIGHTS = ("weight", "weight_relevant")
#: Each query's metrics at a cutoff, summed over queries (weighted by the query's weight).
SUMS = ("dcg", "ndcg", "precision", "recall", "hit_rate", "ap", "rr")
ALL_COLUMNS = ("part", "k", "query_hash", *COUNTS, *WEIGHTS, *SUMS, "seen")


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    return dict.fromkeys([*COUNTS, *WEIGHTS, *SUMS, "seen"], "sum")


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["part", "k", "query_hash"]


def check_found(spec: Spec) -> None:
    """Nothing to check: a ranking state holds no label values found in the data."""


def reindex(table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
    """The table itself: a ranking state holds no values found in the data to index."""
    return table


def check_merged(spec: Spec, table: pl.DataFrame) -> None:
    """Refuse a merged table in which a query was seen in two of the merged states."""
    hashes = table.filter(pl.col("part") == 1)
    repeated = hashes.filter(pl.col("query_hash").is_duplicated())["query_hash"].n_unique()
    twice = hashes.filter(pl.col("seen") > 1).height + repeated
    if twice:
        columns = ", ".join(spec.query)
        raise InputError(
            f"expected each query ({columns}) in one part of the data, but {twice} "
            "queries appear in two of the states merged (partitions, files or days): their "
            "lists would be scored in pieces; hint: accumulate a query's rows together, or "
            "make the query key unique per part, e.g. query=['day', "
            f"{spec.query[-1]!r}]"
        )


def ordered(table: pl.DataFrame, spec: Spec) -> pl.DataFrame:
    """A state table's columns in order, the value columns' nulls (other part) as 0."""
    values = pl.col(list(merge_ops(spec))).fill_null(0)
    order = [*spec.keys, *group_columns(spec), *merge_ops(spec)]
    casts: dict[str, pl.DataType] = {"part": pl.Int8(), "k": pl.Int64(), "query_hash": pl.UInt64()}
    casts |= dict.fromkeys([*COUNTS, "seen"], pl.Int64())
    casts |= dict.fromkeys([*WEIGHTS, *SUMS], pl.Float64())
    return table.with_columns(values).select(order).cast(casts)  # type: ignore[arg-type]
