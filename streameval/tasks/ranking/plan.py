"""Ranking task: (query, item) rows with a graded relevance label and a score.

Each query's items are ranked within the query and its metrics computed at every cutoff
(:mod:`.metrics` defines them); the state holds their sums per group, so states merge. A
query's list must be seen whole, so the source is read as one pass (no hive units, no
shards) and a query whose rows lie in two groups, or in two merged states, is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ...errors import InputError
from ...kernels.ranking import all_terms, weight_spread
from ...ordered import ORDERED
from ...split.keys import add_key_hash
from ...states.data import StateData
from ..common import (
    Check,
    Inputs,
    MetricOptions,
    Opened,
    TaskPlan,
    finite_checks,
    first_problem,
    refuse_threshold,
    task_spec,
    weight_expr,
)
from . import state as ranking
from .metrics import COLUMNS
from .metrics import metric_table as ranking_metrics

RESERVED = {*ranking.ALL_COLUMNS, *COLUMNS}
#: What a ranking state offers: a metric table of declared metrics, over whole queries.
CAPABILITIES = frozenset({"metrics", "queries"})
#: Its own options, by their names in :func:`streameval.evaluate` (and keys of a job's
#: ``[task]`` table), beyond those of every task (label, weight, by, precision, drop_nulls).
OPTIONS = frozenset({"score", "query", "k", "metrics"})
#: The options of which it needs one (the columns it scores).
REQUIRED = ("score",)
#: The default cutoff.
DEFAULT_K = 10

_LN2 = math.log(2.0)


def query_columns(inputs: Inputs) -> list[str]:
    """The query key's columns, or an InputError when ``query=`` is missing."""
    query = inputs.query
    if query is None or (not isinstance(query, str) and not list(query)):
        raise InputError(
            "expected query= naming the query column(s) of a ranking task, got none; hint: "
            "task='ranking', label='relevance', score='s', query='query_id'"
        )
    return [query] if isinstance(query, str) else list(query)


def cutoffs(k: Any) -> tuple[int | None, ...]:
    """The cutoffs ``k=`` gives: a positive int, None (the whole list), or a list of those.

    >>> cutoffs(5), cutoffs([10, None, 5, 5])
    ((5,), (None, 5, 10))
    """

    def valid(v: Any) -> bool:
        return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1)

    items = list(k) if isinstance(k, Sequence) and not isinstance(k, str) else [k]
    if not items or not all(valid(v) for v in items):
        raise InputError(
            f"expected k to be a positive integer, None (the whole list) or a list of those, "
            f"got {k!r}; hint: k=10 or k=[5, 10]"
        )
    distinct = set(items)
    return (*((None,) if None in distinct else ()), *sorted(v for v in distinct if v is not None))


def roles(inputs: Inputs) -> list[tuple[str, str]]:
    """Source columns read, with their role."""
    if inputs.score is None:
        raise InputError(
            "expected score= naming the score column of a ranking task, got none; hint: "
            "task='ranking', label='relevance', score='s', query='query_id'"
        )
    query = [(c, "query") for c in query_columns(inputs)]
    return [(inputs.label, "label"), (inputs.score, "score"), *query]


def numeric(inputs: Inputs) -> list[tuple[str, str]]:
    """Columns that must be numeric, with their role."""
    return [(inputs.label, "label"), (str(inputs.score), "score")]


def plan(opened: Opened, inputs: Inputs) -> TaskPlan:
    """Spec and state query of a ranking task."""
    query = query_columns(inputs)
    ks = cutoffs(inputs.k)
    if inputs.bootstrap:
        raise InputError(
            "expected no bootstrap for a ranking task, got bootstrap="
            f"{inputs.bootstrap!r}: its replicates draw rows, which would cut queries apart; "
            "hint: ci='jackknife' with jackknife= a key (a day) gives intervals over days"
        )
    label, score = inputs.label, str(inputs.score)
    y, s = pl.col(label).cast(pl.Float64), pl.col(score).cast(pl.Float64)
    w, bad_weight, weight_checks = weight_expr(inputs.weight)
    bad_query = pl.any_horizontal([pl.col(c).is_null() for c in query])
    bad = (
        (~y.is_finite()).fill_null(True)
        | (y < 0).fill_null(True)
        | (~s.is_finite()).fill_null(True)
        | bad_query
        | bad_weight
    )
    spec = task_spec(
        "ranking",
        opened,
        inputs,
        label=label,
        score=score,
        positive=None,
        query=tuple(query),
        cutoffs=ks,
    )
    checks: list[Check] = [
        *finite_checks(label, "label"),
        Check(
            pl.col(label).cast(pl.Float64) < 0,
            f"expected relevance labels ≥ 0 in {label!r}, found {{count}} negative, such as "
            "{examples}; hint: graded relevance is 0 (not relevant), 1, 2, …",
            show=pl.col(label),
        ),
        *finite_checks(score, "score"),
        Check(
            bad_query,
            f"expected no nulls in the query column(s) {', '.join(query)}, found {{count}}; "
            "hint: filter those rows, or pass drop_nulls=True",
        ),
        *weight_checks,
    ]

    def diagnose() -> Exception:
        return first_problem(opened.lf, checks, opened.engine, opened.files)

    def build(unit: pl.LazyFrame, constants: Mapping[str, Any]) -> Any:
        keys = [k for k in spec.keys if k not in constants]
        weights = [] if w is None else [w.alias("_w")]
        rows = unit.select(
            *keys,
            *query,
            y.alias("_y"),
            (s + 0.0).alias("_s"),  # (+0.0: -0.0 ties with 0.0)
            *weights,
            bad.alias("_bad"),
        )
        fixed = [pl.lit(v, opened.schema[k]).alias(k) for k, v in constants.items()]

        def finish(frame: pl.DataFrame) -> pl.DataFrame:
            if frame["_bad"].any():
                raise diagnose()
            per_query, sums = _queries(frame, keys, query, ks, inputs.weight)
            hashed = add_key_hash(
                per_query.lazy(),
                opened.schema,
                query,
                seed=0,
                stream="query",
                role="query",
                out="query_hash",
            ).select(*keys, "query_hash", pl.lit(1, pl.Int8).alias("part"), pl.lit(1).alias("seen"))
            table = pl.concat(
                [sums, hashed.collect(engine="in-memory", optimizations=ORDERED)],
                how="diagonal_relaxed",
            )
            return ranking.ordered(table.with_columns(fixed), spec)

        return rows, finish

    return TaskPlan(spec, build, lambda table: False, diagnose, whole=True)


def _queries(
    frame: pl.DataFrame,
    keys: list[str],
    query: list[str],
    ks: tuple[int | None, ...],
    weight: str | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows' queries (keys and query columns, sorted) and part 0 of the state.

    A query's rows must be contiguous for the compiled loop
    (:func:`streameval.kernels.ranking.query_terms`, on two threads), which orders each
    query's items itself; rows that are not (a query's rows apart) are ordered by query
    first (:func:`_runs`). The queries are then summed per group in (group, query) order,
    whatever the rows' order.
    """
    ids = [*keys, *query]
    order, starts = _runs(frame, ids)
    first_rows = starts if order is None else order[starts]
    bounds = np.append(starts, frame.height).astype(np.int64)
    per_query = frame[first_rows].select(ids).with_row_index("_query")
    per_query = per_query.sort(ids, nulls_last=False)
    arrival = per_query["_query"].to_numpy()
    per_query = per_query.drop("_query")
    _check_groups(per_query, keys, query)
    y, s = frame["_y"].to_numpy(), frame["_s"].to_numpy()
    if order is not None:
        y, s = y[order], s[order]
    counts = np.diff(bounds)
    cutoffs = np.array([0 if k is None else k for k in ks], np.int64)
    terms, relevant = all_terms(bounds, y, s, cutoffs)
    if weight is None:
        wq, varies = np.ones(counts.size), np.zeros(counts.size, np.bool_)
    else:
        w = frame["_w"].to_numpy()
        wq, varies = weight_spread(bounds, w if order is None else w[order])
    terms, relevant, wq, counts = (
        terms[:, :, arrival],
        relevant[arrival],
        wq[arrival],
        counts[arrival],
    )
    if weight is not None and varies.any():
        raise InputError(
            f"expected one weight per query in {weight!r}, but {int(varies.sum())} queries "
            "have items of different weights; hint: a ranking weight weighs a query (as "
            "scikit-learn's sample_weight of ndcg_score)"
        )
    group_starts = np.flatnonzero(_changes(per_query, keys)) if keys else np.zeros(1, np.int64)
    groups = per_query[group_starts].select(keys)
    has = relevant > 0
    safe = np.where(has, relevant, 1)
    parts = []
    for c, k in enumerate(ks):
        cutoff = counts if k is None else np.full(counts.size, k)
        dcg, idcg, top, ap, hit, rr = terms[:, c]
        values = {
            "n": counts,
            "queries": np.ones(counts.size, np.int64),
            "relevant_queries": has.astype(np.int64),
            "weight": wq,
            "weight_relevant": np.where(has, wq, 0.0),
            "dcg": wq * dcg,
            "ndcg": wq * np.divide(dcg, idcg, out=np.zeros(dcg.size), where=idcg > 0),
            "precision": wq * (top / cutoff),
            "recall": np.where(has, wq * (top / safe), 0.0),
            "hit_rate": wq * hit,
            "ap": np.where(has, wq * (ap / np.minimum(cutoff, safe)), 0.0),
            "rr": wq * rr,
        }
        summed = {
            name: np.add.reduceat(v, group_starts) if v.size else v[:0]
            for name, v in values.items()
        }
        part = pl.DataFrame(summed).with_columns(pl.lit(k, pl.Int64).alias("k"))
        parts.append(pl.concat([groups, part], how="horizontal") if keys else part)
    sums = pl.concat(parts).with_columns(pl.lit(0, pl.Int8).alias("part"))
    return per_query, sums


def _runs(
    frame: pl.DataFrame, ids: list[str]
) -> tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.int64]]:
    """An order that puts each query's rows together (None: they are), and its runs' starts.

    Each row's query is hashed twice (two seeds): rows whose two hashes match in
    neighbouring rows form a run; when a pair of hashes starts two runs (or most rows are
    runs of their own) the rows are ordered by the first hash. Two queries could share a
    run only if both hashes collided, so a pair seen twice after ordering (one hash
    colliding) falls back to sorting by the query columns themselves.
    """
    if not frame.height:
        return None, np.zeros(0, np.int64)
    key = pl.struct(ids)
    hashes = frame.select(key.hash(seed=0).alias("a"), key.hash(seed=7).alias("b"))
    a, b = hashes["a"].to_numpy(), hashes["b"].to_numpy()
    order: npt.NDArray[np.int64] | None = None
    for attempt in range(2):
        change = np.empty(a.size, np.bool_)
        change[0] = True
        np.not_equal(a[1:], a[:-1], out=change[1:])
        change[1:] |= b[1:] != b[:-1]
        starts = np.flatnonzero(change).astype(np.int64)
        scattered = attempt == 0 and starts.size > a.size // 2  # (most rows apart: order)
        if (
            not scattered
            and not pl.DataFrame({"a": a[starts], "b": b[starts]}).is_duplicated().any()
        ):
            return order, starts
        if attempt == 0:
            order = pl.Series(a).arg_sort().to_numpy().astype(np.int64)
            a, b = a[order], b[order]
    order = frame.with_row_index("_row").sort(ids, nulls_last=False)["_row"].to_numpy()
    return order.astype(np.int64), _starts(frame[order], ids)


def _starts(frame: pl.DataFrame, columns: list[str]) -> npt.NDArray[np.int64]:
    """The rows where a run of equal ``columns`` values starts."""
    if not frame.height:
        return np.zeros(0, np.int64)
    return np.flatnonzero(_changes(frame, columns)).astype(np.int64)


def _changes(frame: pl.DataFrame, columns: list[str]) -> npt.NDArray[np.bool_]:
    """Per row, whether any of ``columns`` differs from the row before (the first row: True)."""
    changed = pl.any_horizontal([pl.col(c).ne_missing(pl.col(c).shift(1)) for c in columns]) | (
        pl.int_range(pl.len()) == 0
    )
    out: npt.NDArray[np.bool_] = frame.select(changed).to_series().to_numpy()
    return out


def _check_groups(per_query: pl.DataFrame, keys: list[str], query: list[str]) -> None:
    """Refuse a query whose rows lie in two groups."""
    if not keys:
        return
    split = per_query.select(query).is_duplicated()
    if split.any():
        count = per_query.filter(split).select(query).n_unique()
        raise InputError(
            f"expected each query ({', '.join(query)}) within one group, but {count} "
            f"queries have rows in several groups of {', '.join(keys)}; hint: a query's "
            "items must share the group keys (group by query-level columns only)"
        )


def metric_table(state: StateData, options: MetricOptions) -> pl.DataFrame:
    """The ranking metric table: a row per group and cutoff (intervals by jackknife only)."""
    refuse_threshold("ranking", options.threshold)
    if options.ci is not None:
        raise InputError(
            f"expected no ci= for a ranking state, got {options.ci!r}; hint: ranking "
            "metrics are means over queries: jackknife intervals over days come from "
            "ci='jackknife'"
        )
    return ranking_metrics(state, options.metrics)
