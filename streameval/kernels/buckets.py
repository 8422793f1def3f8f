"""Bucketed binary state of one unit from its exact runs: one more pass, no hashing.

The exact runs (:mod:`.runs`) are sorted by group, then score, so the runs of a bucket are
adjacent: each run's bucket is its score key floored to the spec's precision and raised to
the largest split at or below it (:func:`streameval.bucketing.bucket_expr`), and the
bucket's sums are sums over a slice. The log-loss and Brier sums of a run are those of its
rows, since every row of a run has the same score: ``pos·ℓ(p, 1) + neg·ℓ(p, 0)``, the
per-row terms of :func:`streameval.tasks.binary.state.aggregations` (weighted when the runs are).
They differ from the Polars path's sums only by summation order. Taken as runs
(:func:`bucket_runs`), the buckets give unweighted metrics directly (:mod:`.metrics`).

Scores whose squared error overflows give ``inf`` or ``nan`` sums that depend on the rows'
order and weights: such units return None, and the Polars path computes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EPS, EXACT_BITS, float_to_key_scalar, key_floats
from ..spec import Spec
from . import small_pages
from .loops import run_hinges
from .runs import F64, I64, U64, Runs, state_frame
from .scorekeys import pack


def bucket_keys(key: I64, precision: int, splits: tuple[float, ...]) -> I64:
    """Bucket (lowest ordered key) of each ordered score key, as ``bucket_expr``.

    Parameters
    ----------
    key : ndarray of int64
        Ordered score keys.
    precision : int
        Mantissa bits kept.
    splits : tuple of float
        Scores that start a bucket.

    Returns
    -------
    ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> from streameval.bucketing import float_to_key_scalar as k
    >>> keys = np.array([k(0.3), k(0.31), k(0.6)], np.int64)
    >>> (bucket_keys(keys, 1, (0.31,)) == [k(0.25), k(0.31), k(0.5)]).tolist()
    [True, True, True]

    """
    if precision >= EXACT_BITS:
        return key
    width = np.int64(1 << (EXACT_BITS - precision))
    out: I64 = (key // width) * width
    if splits:
        cuts = np.array(sorted({float_to_key_scalar(s) for s in splits}), np.int64)
        at = np.searchsorted(cuts, key, side="right") - 1
        below = at >= 0
        np.maximum(out, np.where(below, cuts[np.maximum(at, 0)], out), out=out)
    return out


#: Each run's (or bucket's) log-loss, squared-error and hinge sums.
Losses = tuple[F64, F64, F64 | None]


def _losses(runs: Runs, score: F64) -> tuple[F64, F64, F64]:
    """Σ log loss, Σ squared error and Σ hinge loss of each run's rows (weighted if they are)."""
    clipped = np.clip(score, EPS, 1.0 - EPS)
    no_groups = np.zeros(0, np.int64)  # (a sum per run)
    if runs.single:  # one row per run: one term, the very float the Polars path sums
        y = runs.pos.astype(bool)
        miss = np.where(y, score - 1.0, score)
        hinge = run_hinges(runs.pos, runs.pos[:0], score, no_groups)
        return -np.log(np.where(y, clipped, 1.0 - clipped)), miss * miss, hinge
    pos, neg = runs.pos, runs.neg
    miss = score - 1.0
    ll = pos * -np.log(clipped) + neg * -np.log(1.0 - clipped)
    sq = pos * (miss * miss) + neg * (score * score)
    hinge = run_hinges(pos, neg, score, no_groups)
    return ll.astype(np.float64, copy=False), sq.astype(np.float64, copy=False), hinge


@dataclass
class Buckets:
    """The buckets of a unit, sorted by group code, then bucket, with their stored sums."""

    group: U64
    bucket: I64
    sums: dict[str, npt.NDArray[np.generic]]


def bucket_sums(runs: Runs, spec: Spec) -> Buckets | None:
    """Sum a unit's exact runs into its buckets (None when some squared error overflows).

    Parameters
    ----------
    runs : Runs
        The unit's exact runs.
    spec : Spec
        The bucketed binary state's spec.

    Returns
    -------
    Buckets or None

    """
    if runs.sums is not None:  # already the buckets (:mod:`.dense`)
        _check_bucketed(runs, spec)
        sums: dict[str, npt.NDArray[np.generic]] = {"pos": runs.pos, "neg": runs.neg}
        if runs.n is not None:
            sums["n"] = runs.n
        sums.update(runs.sums)
        return Buckets(runs.group(), runs.key(), sums)
    with small_pages(), np.errstate(over="ignore", invalid="ignore"):
        key = runs.key()
        score = key_floats(key)
        ll, sq, hinge = _losses(runs, score)
        psum = (runs.pos + runs.neg) * score
        del score
        if not (np.isfinite(sq).all() and np.isfinite(ll).all()):
            return None
        bucket = bucket_keys(key, spec.precision, spec.splits)
        del key
        group = runs.group()
        changed = np.empty(bucket.size, np.bool_)
        changed[0] = True
        np.not_equal(bucket[1:], bucket[:-1], out=changed[1:])
        changed[1:] |= group[1:] != group[:-1]
        starts = np.flatnonzero(changed)
        sums = {
            "pos": np.add.reduceat(runs.pos, starts),
            "neg": np.add.reduceat(runs.neg, starts),
            "log_loss": np.add.reduceat(ll, starts) + 0.0,
            "brier": np.add.reduceat(sq, starts) + 0.0,
            "psum": np.add.reduceat(psum, starts) + 0.0,
            "hinge": np.add.reduceat(hinge, starts) + 0.0,
        }
        if runs.n is not None:
            sums["n"] = np.add.reduceat(runs.n, starts)
        if spec.weighted:  # +0.0 turns -0.0 into 0.0, as Polars' sums give
            sums["pos"] = np.add(sums["pos"], 0.0)
            sums["neg"] = np.add(sums["neg"], 0.0)
        return Buckets(group[starts], bucket[starts], sums)


def bucketed_state(
    runs: Runs, spec: Spec, schema: pl.Schema, constants: Mapping[str, Any]
) -> pl.DataFrame | None:
    """The bucketed state table of a unit's exact runs (None: let the Polars path do it).

    Parameters
    ----------
    runs : Runs
        The unit's exact runs.
    spec : Spec
        The bucketed binary state's spec.
    schema : Schema
        The source's schema (types of the keys fixed over the unit).
    constants : mapping
        Keys fixed over the unit, and their values.

    Returns
    -------
    DataFrame or None
        The columns and types of :func:`streameval.tasks.binary.state.state_query`'s table, or
        None when some squared error overflows.

    """
    buckets = bucket_sums(runs, spec)
    if buckets is None:
        return None
    return state_frame(runs, buckets.group, buckets.bucket, buckets.sums, spec, schema, constants)


def bucket_runs(runs: Runs, spec: Spec) -> tuple[Runs, Losses | None] | None:
    """The buckets as runs (for the direct metrics), with their log-loss, Brier and hinge sums.

    Parameters
    ----------
    runs : Runs
        The unit's exact runs, or runs that are already its buckets.
    spec : Spec
        The bucketed binary state's spec.

    Returns
    -------
    tuple of (Runs, tuple of ndarray or None) or None
        None when some squared error overflows, or the buckets' keys do not pack. The
        losses are None for runs whose losses are summed per group (``Runs.group_sums``).

    """
    if runs.sums is not None:  # already the buckets (:mod:`.dense`)
        _check_bucketed(runs, spec)
        return runs, _bucket_losses(runs.sums)
    if runs.group_sums is not None:  # already the buckets, their losses summed per group
        _check_bucketed(runs, spec)
        return runs, None
    buckets = bucket_sums(runs, spec)
    if buckets is None:
        return None
    packed = pack(buckets.group, buckets.bucket, runs.groups.bits)
    if packed is None:
        return None
    field, value, low, high = packed
    sums = buckets.sums
    out = Runs(value, sums["pos"], sums["neg"], None, field, low, high, runs.groups)  # type: ignore[arg-type]
    return out, _bucket_losses(sums)


def _bucket_losses(sums: Mapping[str, npt.NDArray[Any]]) -> Losses:
    """The buckets' loss sums (no hinge sums in a state of schema version 2)."""
    return sums["log_loss"], sums["brier"], sums.get("hinge")


def _check_bucketed(runs: Runs, spec: Spec) -> None:
    """Bucketed runs serve only the precision and splits they were counted at."""
    if runs.bucketed != (spec.precision, spec.splits):
        raise ValueError(
            f"expected runs bucketed at {(spec.precision, spec.splits)}, got {runs.bucketed}"
        )
