"""Per-group aggregates of an unweighted exact state, straight from its sorted runs.

The runs are sorted by group, then score ascending. One compiled pass per group
(:func:`.loops.run_groups`, the loop the rows' kernel reads its buckets with) sums the counts,
the AUC's pair sum and the counts below each threshold exactly in Int64, then reads the
average precision, its bound and DeLong's sums from the counts at or above each run: the
results are those of :func:`streameval.tasks.binary.metrics.metric_table`'s Polars
aggregation, bit for bit where that one is exact, and to rounding of sums elsewhere
(average precision, log loss, Brier score).

Weighted exact runs are summed group by group by a compiled loop (:func:`weighted_runs`):
float suffix sums of a whole unit would cancel badly in small groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EPS, float_to_key_scalar, key_floats
from ..spec import ALL, Spec
from . import small_pages
from .buckets import Losses, bucket_runs
from .dense import SAFE
from .loops import run_groups, run_hinges
from .runs import F64, I64, Runs, TaggedRuns, row_literals
from .weightedloops import run_metrics

T = TypeVar("T")


def pair_scale(largest: float) -> float:
    """The power of two that brings the largest bucket weight (or run count) near 1.

    Pair sums take weights multiplied by it, which is exact, so that no product of two
    weights overflows or underflows. At most 2**1023 (the largest power of two): subnormal
    weights go up as far as that allows. 1 when there is no weight (0, or not finite).
    The compiled weighted loops compute the same per group
    (:func:`.weightedloops._finish`).

    >>> pair_scale(3.0), pair_scale(0.0), pair_scale(5e-324) == 2.0**1023
    (0.25, 1.0, True)
    """
    if not largest or not math.isfinite(largest):
        return 1.0
    return math.ldexp(1.0, min(-math.frexp(largest)[1], 1023))


@dataclass
class _Groups:
    """Where each group's runs start and end, and its code."""

    firsts: I64
    ends: I64
    codes: npt.NDArray[np.uint64]

    @classmethod
    def of(cls, runs: Runs) -> _Groups:
        """Group bounds by a search per possible code when there are few, else by a scan."""
        size, bits = runs.value.size, runs.groups.bits
        if bits <= 16:
            codes = np.arange(1 << bits, dtype=np.uint64)
            starts = np.searchsorted(runs.value, codes << np.uint64(runs.score_bits))
            stops = np.append(starts[1:], size)
            full = starts < stops
            firsts, ends, codes = starts[full].astype(np.int64), stops[full], codes[full]
        else:
            group = runs.group()
            firsts = np.flatnonzero(group[1:] != group[:-1]) + 1
            firsts = np.concatenate((np.zeros(1, np.int64), firsts))
            ends, codes = np.append(firsts[1:], size), group[firsts]
        return cls(firsts, ends.astype(np.int64), codes)


def aggregates(
    runs: Runs,
    thresholds: list[float],
    all_key: str,
    losses: Losses | None = None,
    variance: bool = False,
) -> pl.DataFrame:
    """One row per group: the key columns and the aggregates the metric formulas read.

    Parameters
    ----------
    runs : Runs
        Unweighted runs (Int64 ``pos`` and ``neg``).
    thresholds : list of float
        Sorted thresholds; their confusion counts are ``_tp{i}``, ``_fp{i}``, ….
    all_key : str
        Name of the constant key column added when the unit has no key columns.
    losses : tuple of ndarray, optional
        Each run's log-loss, Brier and hinge sums (bucket runs); by default, from each run's
        score, or each group's (``runs.group_sums``) where the runs carry them.
    variance : bool
        Add each group's DeLong variance of the AUC, ``_var`` (:func:`delong_variance`).

    Returns
    -------
    DataFrame
        As the grouped frame of :func:`streameval.tasks.binary.metrics.metric_table`.

    """
    pos = runs.pos.astype(np.int64, copy=False)
    neg = (1 - pos) if runs.single else runs.neg.astype(np.int64, copy=False)
    g = _Groups.of(runs)
    marks = np.zeros((len(thresholds), g.firsts.size), np.int64)
    for i, t in enumerate(thresholds):
        marks[i] = _threshold_index(runs, g, float_to_key_scalar(t))
    none = np.zeros(0, np.float64)
    log_loss, brier, hinge = (
        none if x is None else x.astype(np.float64, copy=False) for x in (losses or (None,) * 3)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        counts, sums, largest = run_groups(
            pos, neg, g.firsts, g.ends, marks, log_loss, brier, hinge, variance
        )
    positives, negatives = counts[0], counts[1]
    scale = pair_scale(float(largest))
    floats: dict[str, npt.NDArray[np.generic]] = {
        "_ap_num": sums[0] * scale,
        "_ap_over": sums[3] * scale,
        "_ap_under": sums[4] * scale,
    }
    if runs.group_sums is not None:  # (a pool's buckets: their losses summed per group)
        given = runs.group_sums.of(g.codes)
        floats["_log_loss"], floats["_brier"] = given["log_loss"], given["brier"]
        floats["_hinge"] = given.get("hinge", np.full(g.firsts.size, np.nan))
    elif losses is None:
        with np.errstate(over="ignore", invalid="ignore"):  # huge scores: null metrics later
            floats.update(_losses(runs, pos, g.firsts))
    else:
        floats["_log_loss"], floats["_brier"] = sums[1], sums[2]
        # (none in a state of schema version 2: a null hinge loss)
        floats["_hinge"] = np.full(g.firsts.size, np.nan) if losses[2] is None else sums[7]
    if variance:
        floats.update(delong_variance(positives, negatives, sums[5], sums[6]))
    below = [(counts[4 + 2 * i], counts[5 + 2 * i]) for i in range(len(thresholds))]
    return grouped_frame(
        runs.groups.decode(g.codes),
        all_key,
        (positives, negatives, scale),
        (counts[2], counts[3]),
        floats,
        _outside(runs, pos, g.firsts),
        [(positives - p, negatives - n) for p, n in below],
    )


def grouped_frame(
    keys: list[pl.Series],
    all_key: str,
    totals: tuple[I64, I64, float],
    pairs: tuple[I64, I64],
    floats: dict[str, npt.NDArray[np.generic]],
    outside: I64,
    counts: list[tuple[Any, Any]],
    rows: I64 | None = None,
    below: list[tuple[Any, Any]] | None = None,
    scaled: tuple[F64, F64] | None = None,
) -> pl.DataFrame:
    """The grouped frame of :func:`aggregates` from each group's sums.

    ``totals`` holds the positives, negatives and the pair scale (:func:`pair_scale`);
    ``pairs`` the AUC's pair sum 2·Σ neg·(positives above) + Σ pos·neg and its tie part
    Σ pos·neg; ``floats`` the scaled AP numerator and the log-loss and Brier sums;
    ``outside`` the rows with scores outside [0, 1]; ``counts`` tp and fp at each threshold.
    Weighted: ``rows`` the groups' rows, and ``below`` tn and fn at each threshold (summed
    apart, not differences of float sums), and ``scaled`` the scaled positive and negative
    weight each group's pair and AP sums were computed with (each group its own scale).
    """
    positives, negatives, scale = totals
    cols: dict[str, npt.NDArray[np.generic] | pl.Series] = {s.name: s for s in keys}
    if not keys:
        cols[all_key] = pl.Series(all_key, np.zeros(positives.size, np.int8))
    cols["n"] = positives + negatives if rows is None else rows
    cols["positives"], cols["negatives"] = positives, negatives
    cols["_P"], cols["_N"] = scaled or (positives * scale, negatives * scale)
    cols["_auc_num"] = pairs[0].astype(np.float64) * (scale * scale * 0.5)
    cols["_tie_pairs"] = pairs[1].astype(np.float64) * (scale * scale)
    cols.update(floats)
    cols["_n_outside"] = outside
    for i, (tp, fp) in enumerate(counts):
        cols[f"_tp{i}"], cols[f"_fp{i}"] = tp, fp
        tn, fn = (negatives - fp, positives - tp) if below is None else below[i]
        cols[f"_tn{i}"], cols[f"_fn{i}"] = tn, fn
    return pl.DataFrame(cols)


def weighted_grouped(
    keys: list[pl.Series],
    out: tuple[I64, F64, F64],
    place: dict[int, int],
    count: int,
    variance: bool,
) -> pl.DataFrame | None:
    """The grouped frame of weighted sums (:func:`.weightedloops.weighted_metrics`' layout).

    ``out`` holds the rows, sums and scales of each group (whose key columns are ``keys``);
    ``place`` maps a point's index (the ``count`` thresholds, then 0 and just above 1) to its
    mark; ``variance`` adds DeLong's ``_var``. None when a squared error overflowed (the
    Polars path then names the problem).
    """
    rows, sums, scales = out
    if not np.isfinite(sums).all():
        return None
    total = rows[0]
    at = {i: (rows[1 + j], *(sums[10 + 4 * j + k] for k in range(4))) for i, j in place.items()}
    zero, above_one = at[count][0], at[count + 1][0]
    return grouped_frame(
        keys,
        ALL,
        (sums[0], sums[1], 1.0),  # each group's pair sums come scaled by its own scale
        (sums[2], sums[3]),
        {
            "_ap_num": sums[4],
            "_log_loss": sums[5] + 0.0,
            "_brier": sums[6] + 0.0,
            "_ap_over": sums[7],
            "_ap_under": sums[8],
            "_hinge": sums[9] + 0.0,
            **(delong_variance(sums[0], sums[1], *sums[-2:]) if variance else {}),
        },
        zero + (total - above_one),
        [(at[i][3], at[i][4]) for i in range(count)],
        rows=total,
        below=[(at[i][2], at[i][1]) for i in range(count)],
        scaled=(sums[0] * scales, sums[1] * scales),
    )


def in_order(points: list[T]) -> tuple[list[T], dict[int, int]]:
    """The marks' points sorted, and where each point (by its index) went.

    >>> in_order([0.5, 0.0, 1.0])
    ([0.0, 0.5, 1.0], {1: 0, 0: 1, 2: 2})
    """
    order = sorted(range(len(points)), key=lambda i: points[i])  # type: ignore[arg-type,return-value]
    return [points[i] for i in order], {i: j for j, i in enumerate(order)}


def weighted_runs(
    runs: Runs, thresholds: list[float], variance: bool = False
) -> pl.DataFrame | None:
    """The grouped frame of weighted exact runs (each run a bucket of one score).

    As :meth:`.compiled.CompiledCells.grouped` of weighted rows: the same sums, read off the
    runs by :func:`.weightedloops.run_metrics`. None where a pair sum of weights could
    overflow (the state's finalize then serves).
    """
    pos, neg = runs.pos.astype(np.float64), runs.neg.astype(np.float64)
    if not float(pos.sum() + neg.sum()) < math.sqrt(SAFE) or runs.n is None:
        return None
    group = runs.group()
    firsts = np.flatnonzero(np.append(True, group[1:] != group[:-1]))
    ends = np.append(firsts[1:], group.size)
    points = [float_to_key_scalar(t) for t in thresholds]
    points += [0, float_to_key_scalar(1.0) + 1]  # (below 0, and above 1: outside [0, 1])
    ordered, place = in_order(points)
    marks = np.array(ordered, np.int64)
    with small_pages():
        out = run_metrics(runs.key(), pos, neg, runs.n, firsts, ends, marks, EPS, variance)
    keys = runs.groups.decode(group[firsts])
    return weighted_grouped(keys, out, place, len(thresholds), variance)


def delong_variance(
    positives: npt.ArrayLike, negatives: npt.ArrayLike, s10: F64, s01: F64
) -> dict[str, F64]:
    """DeLong's variance of each group's AUC (``_var``) from its two placement sums.

    ``var = S₁₀ / P + S₀₁ / N`` with ``S₁₀ = Σ pos·(V₁₀ − A)² / (P − 1)`` (``S₀₁`` alike), as
    :func:`streameval.stats.delong.delong`; NaN (null in the table) with fewer than two
    positives or negatives, where that one is null.

    >>> delong_variance([3], [3], np.array([0.5]), np.array([0.5]))["_var"].round(6).tolist()
    [0.166667]
    >>> delong_variance([1], [3], np.array([0.0]), np.array([0.0]))["_var"].tolist()
    [nan]
    """
    P = np.asarray(positives, np.float64)
    N = np.asarray(negatives, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = s10 / ((P - 1.0) * P) + s01 / ((N - 1.0) * N)
    out: F64 = np.where((P > 1.0) & (N > 1.0), var, np.nan)
    return {"_var": out}


def _losses(runs: Runs, pos: I64, firsts: I64) -> dict[str, npt.NDArray[np.generic]]:
    """Σ log loss, Σ Brier score and Σ hinge loss per group, from each run's score.

    Per run, as the Polars expressions: ``-(pos·log p) − neg·log(1 − p)`` with p clipped,
    ``pos·(1 − p)² + neg·p²`` and ``pos·max(0, 1 − p) + neg·max(0, 1 + p)``. A run of one
    row keeps one term, which is exactly the same float (the other is ±0).
    """
    score = key_floats(runs.key()) if runs.key_min < 0 else runs.key().view(np.float64)
    buffer = np.clip(score, EPS, 1.0 - EPS)
    other = np.subtract(1.0, buffer)
    if runs.single:
        positive = pos.astype(np.bool_)
        np.copyto(other, buffer, where=positive)
        np.log(other, out=other)
        log_loss = -np.add.reduceat(other, firsts)
        np.subtract(1.0, score, out=buffer)
        np.copyto(buffer, score, where=~positive)
        np.square(buffer, out=buffer)
    else:
        neg = runs.neg.astype(np.int64, copy=False)
        np.log(buffer, out=buffer)
        np.log(other, out=other)
        np.multiply(buffer, pos, out=buffer)
        np.negative(buffer, out=buffer)
        np.multiply(other, neg, out=other)
        np.subtract(buffer, other, out=buffer)
        log_loss = np.add.reduceat(buffer, firsts)
        np.subtract(1.0, score, out=buffer)
        np.square(buffer, out=buffer)
        np.multiply(buffer, pos, out=buffer)
        np.square(score, out=other)
        np.multiply(other, neg, out=other)
        np.add(buffer, other, out=buffer)
    brier = np.add.reduceat(buffer, firsts)
    neg = pos[:0] if runs.single else runs.neg.astype(np.int64, copy=False)
    hinge = run_hinges(pos, neg, score, firsts)
    return {"_log_loss": log_loss, "_brier": brier, "_hinge": hinge}


def _outside(runs: Runs, pos: I64, firsts: I64) -> I64:
    """Rows with a score outside [0, 1] per group (for buckets: from their lowest score)."""
    if runs.key_min >= 0 and runs.key_max <= float_to_key_scalar(1.0):
        return np.zeros(firsts.size, np.int64)
    key = runs.key()
    rows = pos + runs.neg.astype(np.int64, copy=False)
    out: I64 = np.add.reduceat(
        np.where((key < 0) | (key > float_to_key_scalar(1.0)), rows, 0), firsts
    )
    return out


def _threshold_index(runs: Runs, g: _Groups, key: int) -> I64:
    """Index of each group's first run with a score key ≥ ``key`` (its end if none)."""
    offset = runs.score.offset(key)
    if offset <= 0:
        return g.firsts
    if offset >= 1 << runs.score_bits:
        return g.ends
    target = (g.codes << np.uint64(runs.score_bits)) | np.uint64(offset)
    return np.searchsorted(runs.value, target, side="left").astype(np.int64)


def runs_grouped(
    runs: Runs, spec: Spec, thresholds: list[float], variance: bool = False
) -> pl.DataFrame | None:
    """The grouped frame of :func:`aggregates` of unweighted runs (bucketed: of their buckets).

    Parameters
    ----------
    runs : Runs
        The unit's runs.
    spec : Spec
        The spec, whose keys are the unit's varying keys only.
    thresholds : list of float
        Sorted distinct thresholds.
    variance : bool
        Add each group's DeLong variance of the AUC (``_var``).

    Returns
    -------
    DataFrame or None
        None for bucketed weighted runs, weighted runs whose pair sums could overflow, and
        bucketed runs whose buckets do not pack (their metrics come from the Polars finalize
        of the state table).

    """
    if spec.weighted:  # (bucketed weighted rows: the compiled cells' or the state's)
        return weighted_runs(runs, thresholds, variance) if spec.exact else None
    losses = None
    if not spec.exact:  # the buckets' runs, with the buckets' loss sums
        buckets = bucket_runs(runs, spec)
        if buckets is None:
            return None
        runs, losses = buckets
    with small_pages():
        return aggregates(runs, thresholds, ALL, losses, variance)


def tagged_grouped(
    tagged: TaggedRuns, thresholds: list[float], variance: bool = False
) -> pl.DataFrame | None:
    """The grouped frames of :func:`runs_grouped` of each part, tagged and concatenated.

    Each part's groups get its tag columns' values; None when a part's runs give none. The
    frame of each part ``tagged.keep`` flags is kept in ``tagged.grouped``, with DeLong's
    variance (``_var``) whether or not ``variance`` asks for it: a job's checks read them
    again (the variance is computed for those parts alone).
    """
    frames, tagged.grouped, tagged.thresholds = [], [], tuple(thresholds)
    keep = tagged.keep or (False,) * len(tagged.parts)
    for (runs, tags), kept in zip(tagged.parts, keep, strict=True):
        grouped = runs_grouped(runs, tagged.spec, thresholds, variance or kept)
        if grouped is None:
            return None
        tagged.grouped.append(grouped if kept else None)
        if kept and not variance:
            grouped = grouped.drop("_var")
        if not tagged.spec.keys:
            grouped = grouped.drop(ALL)
        frames.append(grouped.with_columns(row_literals(tags)))
    return pl.concat(frames, how="vertical") if frames else None
