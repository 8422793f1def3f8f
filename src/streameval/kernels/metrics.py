"""Per-group aggregates of an unweighted exact state, straight from its sorted runs.

The runs are sorted by group, then score ascending, so the finalize step's cumulative sums
from the top score down are suffix sums within each group. With integer counts these are
exact in Int64 (a global suffix sum minus the one past the group's end), and so are the pair
sums of the AUC: the results are those of :func:`streameval.metrics.binary.metric_table`'s
Polars aggregation, bit for bit where that one is exact, and to rounding of sums elsewhere
(average precision, log loss, Brier score).

Weighted runs are not handled here: float suffix sums of a whole unit would cancel badly in
small groups, so their metrics come from the Polars finalize of the state table.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import float_to_key_scalar
from ..metrics.binary import ALL, COLUMNS, finish_rows, metric_rows
from ..spec import Spec
from . import small_pages
from .runs import F64, I64, Runs

_EPS = float(np.finfo(np.float64).eps)
_LOW63 = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def pair_scale(pos: I64, neg: I64) -> float:
    """The power of two that brings the largest run count near 1 (as the Polars path).

    Parameters
    ----------
    pos : ndarray of int64
        Positives of each run.
    neg : ndarray of int64
        Negatives of each run.

    Returns
    -------
    float

    """
    largest = max(int(pos.max()), int(neg.max()))
    return math.ldexp(1.0, -math.frexp(float(largest))[1]) if largest else 1.0


def scores(key: I64) -> F64:
    """Inverse of the ordered key: each run's score.

    Parameters
    ----------
    key : ndarray of int64
        Ordered keys.

    Returns
    -------
    ndarray of float64

    """
    bits = np.where(key < 0, key ^ _LOW63, key)
    return bits.view(np.float64)


def _suffix(x: I64) -> I64:
    """Sums from each index to the end, with a 0 appended."""
    out = np.zeros(x.size + 1, np.int64)
    np.cumsum(x[::-1], out=out[-2::-1])
    return out


def aggregates(runs: Runs, thresholds: list[float], all_key: str) -> pl.DataFrame:
    """One row per group: the key columns and the aggregates the metric formulas read.

    Parameters
    ----------
    runs : Runs
        Unweighted runs (Int64 ``pos`` and ``neg``).
    thresholds : list of float
        Sorted thresholds; their confusion counts are ``_tp{i}``, ``_fp{i}``, ….
    all_key : str
        Name of the constant key column added when the unit has no key columns.

    Returns
    -------
    DataFrame
        As the grouped frame of :func:`streameval.metrics.binary.metric_table`.

    """
    pos, neg = runs.pos.astype(np.int64, copy=False), runs.neg.astype(np.int64, copy=False)
    group = runs.group()
    firsts = np.concatenate((np.zeros(1, np.int64), np.flatnonzero(group[1:] != group[:-1]) + 1))
    ends = np.append(firsts[1:], group.size)
    codes = group[firsts]
    del group
    scale = pair_scale(pos, neg)
    # Cumulative sums from the top score down, within the group of run r, are
    # rpos[r] - rpos[end of r's group]: exact in Int64.
    rpos, rneg = _suffix(pos), _suffix(neg)
    positives, negatives = rpos[firsts] - rpos[ends], rneg[firsts] - rneg[ends]
    cols: dict[str, npt.NDArray[np.generic] | pl.Series] = {}
    keys = runs.groups.decode(codes)
    cols.update({s.name: s for s in keys})
    if not keys:
        cols[all_key] = pl.Series(all_key, np.zeros(firsts.size, np.int8))
    cols["n"] = positives + negatives
    cols["positives"], cols["negatives"] = positives, negatives
    cols["_P"], cols["_N"] = positives * scale, negatives * scale
    ties = np.add.reduceat(pos * neg, firsts)
    # Σ neg·(2·cpos − pos) with cpos = rpos[r] − rpos[end]: no per-run gather needed.
    auc = 2 * (np.add.reduceat(neg * rpos[:-1], firsts) - rpos[ends] * negatives) - ties
    cols["_auc_num"] = auc.astype(np.float64) * (scale * scale * 0.5)
    cols["_tie_pairs"] = ties.astype(np.float64) * (scale * scale)
    cols["_ap_num"] = _ap_num(pos, rpos, rneg, firsts, ends, scale)
    cols.update(_losses(runs, pos, neg, firsts))
    for i, t in enumerate(thresholds):
        at = _threshold_index(runs, codes, firsts, ends, float_to_key_scalar(t))
        tp, fp = rpos[at] - rpos[ends], rneg[at] - rneg[ends]
        cols[f"_tp{i}"], cols[f"_fp{i}"] = tp, fp
        cols[f"_tn{i}"], cols[f"_fn{i}"] = negatives - fp, positives - tp
    return pl.DataFrame(cols)


def _ap_num(pos: I64, rpos: I64, rneg: I64, firsts: I64, ends: I64, scale: float) -> F64:
    """Σ over runs with positives of pos·precision at the run (scaled as the Polars path)."""
    at = np.flatnonzero(pos)
    group = np.searchsorted(firsts, at, side="right") - 1
    end = ends[group]
    cpos = (rpos[at] - rpos[end]).astype(np.float64)
    cneg = (rneg[at] - rneg[end]).astype(np.float64)
    terms = (pos[at] * scale) * (cpos / (cpos + cneg))
    out: F64 = np.bincount(group, weights=terms, minlength=firsts.size).astype(np.float64)
    return out


def _losses(runs: Runs, pos: I64, neg: I64, firsts: I64) -> dict[str, npt.NDArray[np.generic]]:
    """Σ log loss, Σ Brier score and rows outside [0, 1] per group, from each run's score."""
    score = scores(runs.key())
    buffer = np.clip(score, _EPS, 1.0 - _EPS)
    other = np.subtract(1.0, buffer)
    np.log(buffer, out=buffer)
    np.log(other, out=other)
    # -(pos·log p) − neg·log(1 − p), as the Polars expression
    np.multiply(buffer, pos, out=buffer)
    np.negative(buffer, out=buffer)
    np.multiply(other, neg, out=other)
    np.subtract(buffer, other, out=buffer)
    log_loss = np.add.reduceat(buffer, firsts)
    # pos·(1 − p)² + neg·p²
    np.subtract(1.0, score, out=buffer)
    np.square(buffer, out=buffer)
    np.multiply(buffer, pos, out=buffer)
    np.square(score, out=other)
    np.multiply(other, neg, out=other)
    np.add(buffer, other, out=buffer)
    brier = np.add.reduceat(buffer, firsts)
    del buffer, other
    if runs.key_min >= 0 and runs.key_max <= float_to_key_scalar(1.0):
        outside = np.zeros(firsts.size, np.int64)
    else:
        flags = (score < 0) | (score > 1)
        outside = np.add.reduceat(np.where(flags, pos + neg, 0), firsts)
    return {"_log_loss": log_loss, "_brier": brier, "_n_outside": outside}


def _threshold_index(
    runs: Runs, codes: npt.NDArray[np.uint64], firsts: I64, ends: I64, key: int
) -> I64:
    """Index of each group's first run with a score key ≥ ``key`` (its end if none)."""
    offset = key - runs.key_min
    if offset <= 0:
        return firsts
    if offset >= 1 << runs.score_bits:
        return ends
    target = (codes << np.uint64(runs.score_bits)) | np.uint64(offset)
    return np.searchsorted(runs.value, target, side="left").astype(np.int64)


def runs_metrics(runs: Runs, spec: Spec, thresholds: list[float]) -> pl.DataFrame | None:
    """The metric table of unweighted runs, as ``State(spec, table).metrics(thresholds)``.

    Parameters
    ----------
    runs : Runs
        The unit's runs.
    spec : Spec
        The spec, whose keys are the unit's varying keys only.
    thresholds : list of float
        Sorted distinct thresholds.

    Returns
    -------
    DataFrame or None
        None for weighted runs (their metrics come from the Polars finalize).

    """
    if spec.weighted:
        return None
    keys = list(spec.keys)
    with small_pages():
        grouped = aggregates(runs, thresholds, ALL).lazy()
    part = metric_rows(grouped, keys or [ALL], spec, thresholds)
    return finish_rows([part], keys).select(*keys, *COLUMNS)
