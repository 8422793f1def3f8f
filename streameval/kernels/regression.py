"""The regression kernel: a unit's state (label and error histograms, totals), compiled.

The state of :func:`streameval.tasks.regression.state.state_query`, built without Polars'
group-by: the label and the error (ŷ − y) are each placed by (group, binade) as the binary
kernel places scores (:func:`.loops.place`) and summed bucket by bucket in a window that
stays in cache (:func:`.regressionloops.histogram_cells`); the losses that need both values
are summed per group in one pass (:func:`.regressionloops.row_totals`). Exact mode sums each
distinct value instead (:func:`.regressionloops.value_runs`); a bucketed precision above
:data:`.compiled.MAX_WINDOW_BITS` keeps the Polars group-by. A metric table needs no state:
each group's buckets are aggregated as its placed rows are read, then let go.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from ..bucketing import EPS, TINY
from ..codes import KeyCode
from ..options import check_alpha
from ..resample_draw import REPLICATE, REPLICATE_TYPE, draw_limits
from ..spec import Spec
from ..tasks.regression.state import DOMAINS, LOSSES, QUANTILES, merge_ops
from . import regressionloops, small_pages
from .collect import key_exprs, unit_groups
from .compiled import (
    MAX_WINDOW_BITS,
    REPLICATE_BATCH,
    compact,
    loops,
    place_keyed,
    place_values,
    replicate_batches,
    replicate_salts,
)
from .staged import Staged

#: The residual quantiles' levels, in :data:`streameval.tasks.regression.state.QUANTILES` order.
_QUANTILES = np.array(list(QUANTILES.values()), np.float64)
_ROW = regressionloops.QUANTILE_ROW


def _options(alpha: float, absolute: int, power: float) -> tuple[Any, ...]:
    """The options of :func:`.regressionloops.part_aggregates` for the label or the error.

    The label's quantiles are its median and its ``alpha`` quantile (of ``d2_pinball``),
    the error's those reported (:data:`QUANTILES`).
    """
    label = np.array([50.0, alpha * 100], np.float64)
    quantiles = _QUANTILES if absolute else label
    return (alpha, bool(absolute), EPS, quantiles, float(power))


#: Replicates per read of the rows for the losses at most, and their sums' cells at most.
TOTALS_BATCH = 32
TOTALS_CELLS = 1 << 22
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]
#: A value's rows for :meth:`Histograms._per_value`'s work: the compiled loops, group codes,
#: values, weights (empty: unweighted) and the number of groups.
Rows = tuple[ModuleType, I64, F64, F64, int]
T = TypeVar("T")


@dataclass
class RegressionRows:
    """A unit's collected columns: key codes, ``_y``, ``_f``, ``_w`` and the row keys ``_k``."""

    frame: pl.DataFrame
    key_codes: list[KeyCode]
    weighted: bool
    keyed: bool = False

    def staged(self, spec: Spec) -> Staged:
        """The rows, to be summed into the unit's state table (:meth:`Histograms.table`)."""
        return Histograms(self, spec)


@dataclass
class Histograms(Staged):
    """Collected rows whose state table the summing thread computes (no runs)."""

    rows: RegressionRows
    spec: Spec

    def _finish(self) -> None:
        return None

    def grouped(self, spec: Spec, thresholds: list[float], variance: bool = False) -> None:
        """No grouped frame: a regression unit's metrics come from its state."""
        return None

    def table(self, schema: pl.Schema, constants: Mapping[str, Any]) -> pl.DataFrame | None:
        """The unit's state table, as the Polars query gives it (None: not this kernel's)."""
        parts = self._sums()
        if parts is None:
            return None
        keys, histograms, totals = parts
        return _table(keys, histograms, totals, self.spec, schema, constants)

    def sums(self, spec: Spec, options: Mapping[str, Any]) -> pl.DataFrame | None:
        """The unit's per-group aggregates from its buckets, without a state table.

        The aggregates of :func:`streameval.tasks.regression.histograms.aggregates`, per group, from
        the label's and the error's buckets: in bucketed mode each group's buckets are
        aggregated as its placed rows are read (:func:`.regressionloops.replicate_aggregates`
        with no draws), none kept beyond the group; in exact mode from its distinct values
        (:func:`.regressionloops.part_aggregates`). None: not here.
        """
        if options.get("metrics") or options.get("ci"):
            return None  # (a selection, or an error for ci=: the state's finalize)
        alpha = check_alpha(options.get("alpha", 0.5))
        parts = self._exact(alpha) if self.spec.exact else self._bucketed(alpha)
        if parts is None:
            return None
        keys, y, e, totals = parts
        return _grouped(keys, y, e, totals, spec)

    def _exact(self, alpha: float) -> tuple[list[pl.Series], Any, Any, Any] | None:
        """Keys, the label's and the error's aggregates and the totals, from distinct values."""
        parts = self._sums()
        if parts is None:
            return None
        keys, histograms, totals = parts
        size = totals[2].size
        aggregate = regressionloops.part_aggregates
        with ThreadPoolExecutor(2) as pool:  # the label's values, and the error's
            jobs = []
            for absolute, cells in enumerate(histograms):
                options = _options(alpha, absolute, self.spec.power)
                job = (*cells, size, options)
                jobs.append(pool.submit(aggregate, *job))
            y, e = (job.result() for job in jobs)
        return keys, y, e, totals

    def _bucketed(self, alpha: float) -> tuple[list[pl.Series], Any, Any, Any] | None:
        """Keys, the label's and the error's aggregates and the totals, from placed rows."""
        once, none, limits = np.zeros(1, np.uint64), np.zeros(0, np.uint64), draw_limits()
        p = self.spec.precision

        def aggregates(absolute: int, rows: Rows) -> tuple[npt.NDArray[Any], ...]:
            kernel, codes, values, weights, size = rows
            labels = np.zeros(codes.size, np.uint8)
            with small_pages():
                at = place_values(kernel, codes, values, labels, weights, size)
                placed = (at.words, none, at.weights, at.bounds, at.occupied, at.tops)
                options = _options(alpha, absolute, self.spec.power)
                out = regressionloops.replicate_aggregates(*placed, p, once, limits, size, options)
            at.give_back()
            return tuple(part[0] for part in out)

        parts = self._per_value(aggregates)
        if parts is None:
            return None
        keys, (label, errors), totals = parts
        return keys, label, errors, totals

    def replicated_sums(
        self, spec: Spec, options: Mapping[str, Any], replicates: int
    ) -> pl.DataFrame | None:
        """The aggregates of bootstrap replicates 0 … ``replicates`` (key ``replicate`` last).

        The rows must have been collected with their keys (``_k``). The label and the error
        are placed once; each batch of replicates reads them once
        (:func:`.regressionloops.replicate_aggregates`, :func:`.regressionloops.replicate_totals`),
        on two threads. A group a replicate draws no row of has no row there. None where
        the kernel does not apply (exact mode, ``metrics=``, a sum that overflowed).
        """
        if options.get("metrics") or spec.exact or not self.rows.keyed:
            return None
        alpha = check_alpha(options.get("alpha", 0.5))
        columns = self._columns()
        if columns is None:
            return None
        kernel, keys, codes, size, (y, f, weights, row_keys) = columns
        limits = draw_limits()
        index = np.arange(codes.size, dtype=np.int64).view(np.float64)
        labels = np.zeros(codes.size, np.uint8)
        placed = []
        with small_pages():
            for absolute, x in enumerate((y, f - y)):
                rows = (codes, x, labels)
                keyed = place_keyed(kernel, rows, weights, row_keys, size, index)
                placed.append((*keyed, bool(absolute)))
        p = spec.precision

        def aggregates(members: list[int]) -> list[tuple[npt.NDArray[Any], ...]]:
            salts = replicate_salts(members)
            parts = []
            for at, at_keys, at_weights, absolute in placed:
                drawn = at_keys if members[0] else at_keys[:0]
                options = _options(alpha, absolute, spec.power)
                rows = (at.words, drawn, at_weights, at.bounds, at.occupied, at.tops, p)
                parts.append(
                    regressionloops.replicate_aggregates(*rows, salts, limits, size, options)
                )
            return parts

        def totals(members: list[int]) -> tuple[npt.NDArray[Any], ...]:
            drawn = row_keys if members[0] else row_keys[:0]
            job = (codes, y, f, weights, drawn, float(spec.power), EPS, size)
            out: tuple[npt.NDArray[Any], ...] = regressionloops.replicate_totals(
                *job, replicate_salts(members), limits
            )
            return out

        # the totals' rows are costly to read (logarithms): more replicates per read
        wide = max(REPLICATE_BATCH, min(TOTALS_BATCH, TOTALS_CELLS // (size * 12)))
        narrow, broad = (
            replicate_batches(replicates, REPLICATE_BATCH),
            replicate_batches(replicates, wide),
        )
        with small_pages(), ThreadPoolExecutor(2) as pool:
            summed = pool.map(totals, broad)
            parts = list(pool.map(aggregates, narrow))
            sums = {
                r: (s[b], d[b], m[b])
                for members, (s, d, m) in zip(broad, summed, strict=True)
                for b, r in enumerate(members)
            }
        for at, *_ in placed:
            at.give_back()
        frames = []
        for members, (ys, es) in zip(narrow, parts, strict=True):
            for b, r in enumerate(members):
                replicate = pl.Series(REPLICATE, np.full(size, r), REPLICATE_TYPE)
                label, error = (x[b] for x in ys), (x[b] for x in es)
                grouped = _grouped([*keys, replicate], tuple(label), tuple(error), sums[r], spec)
                if grouped is None:
                    return None  # a sum of weights overflowed: the state path names it
                frames.append(grouped.filter(pl.col("n") > 0))
        return pl.concat(frames)

    def _columns(
        self,
    ) -> tuple[ModuleType, list[pl.Series], I64, int, tuple[F64, F64, F64, U64]] | None:
        """The compiled loops, key columns, dense group codes, groups, and the rows' columns.

        The columns are the label, the prediction, the weights and the row keys (the last
        two empty when not collected). None where the kernel does not apply.
        """
        spec, kernel = self.spec, loops()
        if kernel is None or (not spec.exact and spec.precision > MAX_WINDOW_BITS):
            return None
        frame = self.rows.frame
        if frame.height == 0:
            return None
        groups, frame = unit_groups(frame, self.rows.key_codes)
        codes, back = compact(groups.codes.view(np.int64), 1 << groups.bits)
        y, f = frame["_y"].to_numpy(), frame["_f"].to_numpy()
        weights = frame["_w"].to_numpy() if self.rows.weighted else np.zeros(0)
        row_keys = frame["_k"].to_numpy() if self.rows.keyed else np.zeros(0, np.uint64)
        keys = groups.decode(back.view(np.uint64))
        return kernel, keys, codes, back.size, (y, f, weights, row_keys)

    def _sums(
        self,
    ) -> tuple[list[pl.Series], list[tuple[npt.NDArray[Any], ...]], tuple[Any, ...]] | None:
        """The unit's key columns, its two histograms' buckets and its totals (None: not here)."""
        spec = self.spec
        return self._per_value(lambda _, rows: _histogram(rows, spec))

    def _per_value(
        self, work: Callable[[int, Rows], T]
    ) -> tuple[list[pl.Series], list[T], tuple[Any, ...]] | None:
        """The key columns, ``work`` of the label and of the error, and the rows' totals.

        ``work(absolute, rows)`` (``absolute``: 0 for the label, 1 for the error) gets the
        compiled loops, group codes, values, weights and groups. The two values, and each
        half of the rows' losses (:func:`.regressionloops.row_totals`), are summed on two
        threads. None where the kernel does not apply.
        """
        columns = self._columns()
        if columns is None:
            return None
        kernel, keys, codes, size, (y, f, weights, _) = columns
        power = float(self.spec.power)
        with small_pages(), ThreadPoolExecutor(2) as pool:
            error = f - y
            parts = [
                pool.submit(work, absolute, (kernel, codes, x, weights, size))
                for absolute, x in enumerate((y, error))
            ]
            half = codes.size // 2
            summed = []
            for rows in (slice(0, half), slice(half, codes.size)):
                w = weights[rows] if weights.size else weights
                job = (codes[rows], y[rows], f[rows], w, power, EPS, size)
                summed.append(pool.submit(regressionloops.row_totals, *job))
            done = [part.result() for part in parts]
            (sums, bad, amax), (sums2, bad2, amax2) = (part.result() for part in summed)
        return keys, done, (sums + sums2, bad + bad2, np.maximum(amax, amax2))


def _grouped(
    keys: list[pl.Series],
    label: tuple[npt.NDArray[Any], ...],
    error: tuple[npt.NDArray[Any], ...],
    totals: tuple[npt.NDArray[Any], ...],
    spec: Spec,
) -> pl.DataFrame | None:
    """The grouped frame of :func:`streameval.tasks.regression.metrics.grouped_table`, per group.

    ``label`` and ``error`` are :func:`.regressionloops.part_aggregates`' output of the
    label's and the error's buckets, ``totals`` :func:`.regressionloops.row_totals`'. None
    when a sum of weights overflowed.
    """
    (_, has_y, y), (rows, has_e, e) = label, error
    if not (np.isfinite(y[0]).all() and np.isfinite(e[0]).all()):
        return None
    sums, bad, amax = totals
    columns: dict[str, Any] = {s.name: s for s in keys}
    columns["n"] = rows
    columns["_W"] = e[0]
    columns.update(_se=e[1], _sse=e[3], _sae=e[4], _pinball=e[5], _m2_e=e[2])
    columns["_zero_e"] = _zero(e)
    quantile = {name: np.where(has_e, e[_ROW + i], np.nan) for i, name in enumerate(QUANTILES)}
    columns["_q50"] = quantile["residual_p50"]
    columns.update({f"_{name}": values for name, values in quantile.items()})
    columns.update(_m2_y=y[2], _zero_y=_zero(y))
    columns.update(_median_y=np.where(has_y, y[_ROW], np.nan))
    columns["_alpha_y"] = np.where(has_y, y[_ROW + 1], np.nan)
    columns.update(_dev_median=y[8], _dev_alpha=y[9], _dev_tweedie=y[10])
    columns.update({f"_{name}": sums[i] + 0.0 for i, name in enumerate(LOSSES)})
    columns.update({f"_{name}": bad[i] for i, name in enumerate(DOMAINS)})
    columns["_amax"] = amax
    rel = 0.0 if spec.exact else math.ldexp(1.0, 1 - spec.precision)
    columns["_rel_error"] = np.full(rows.size, rel)
    undefined = ["_q50", *(f"_{n}" for n in QUANTILES), "_median_y", "_alpha_y"]
    return pl.DataFrame(columns).with_columns(pl.col(undefined).fill_nan(None))


def _zero(part: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The level at or below which a sum of squares is zero (as the state's finalize)."""
    level = (16 * EPS * part[6]) ** 2 * part[0] + 16 * EPS * part[7]
    zero: npt.NDArray[np.float64] = np.maximum(level, 16 * TINY * part[0])
    return zero


def _histogram(rows: Rows, spec: Spec) -> tuple[npt.NDArray[Any], ...]:
    """One value's filled buckets, or in exact mode its distinct values.

    ``rows`` are as :meth:`Histograms._per_value` hands them. See
    :func:`.regressionloops.histogram_cells` and :func:`.regressionloops.value_runs`.
    """
    kernel, codes, values, weights, size = rows
    p = spec.precision
    if spec.exact:
        with small_pages():
            keys, ws, bounds = regressionloops.by_group(codes, values, weights, size)
            keys, ws = _sorted_within(keys, ws, bounds)
            exact: tuple[npt.NDArray[Any], ...] = regressionloops.value_runs(keys, ws, bounds)
        return exact
    labels = np.zeros(codes.size, np.uint8)
    placed = place_values(kernel, codes, values, labels, weights, size)
    with small_pages():
        out: tuple[npt.NDArray[Any], ...] = regressionloops.histogram_cells(
            placed.words, placed.weights, placed.bounds, placed.occupied, placed.tops, p
        )
    placed.give_back()
    return out


def _sorted_within(keys: I64, ws: F64, bounds: I64) -> tuple[I64, F64]:
    """Each group's keys sorted (the weights, when given, carried along), by NumPy.

    Few long groups are sorted one by one; many short ones by one sort of (group, key).
    """
    sizes = np.diff(bounds)
    if np.count_nonzero(sizes) > max(keys.size // 256, 16):  # many short groups
        group = np.repeat(np.arange(sizes.size), sizes)
        order = np.lexsort((keys, group))
        return keys[order], (ws[order] if ws.size else ws)
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if stop - start < 2:
            continue
        if ws.size:
            order = np.argsort(keys[start:stop])
            keys[start:stop] = keys[start:stop][order]
            ws[start:stop] = ws[start:stop][order]
        else:
            keys[start:stop].sort()
    return keys, ws


def _table(
    keys: list[pl.Series],
    histograms: list[tuple[npt.NDArray[Any], ...]],
    totals: tuple[npt.NDArray[Any], ...],
    spec: Spec,
    schema: pl.Schema,
    constants: Mapping[str, Any],
) -> pl.DataFrame:
    """The state table: the label's and the error's buckets, then each group's totals."""
    parts = []
    for part, (group, bucket, count, sums) in enumerate(histograms):
        columns: dict[str, Any] = {s.name: s.gather(group) for s in keys}
        columns["part"] = pl.Series(np.full(group.size, part, np.int8))
        columns["bucket"] = bucket
        columns["n"] = count
        if spec.weighted:
            columns["w"] = sums[0] + 0.0
        if not spec.exact:  # (an exact bucket is one value: no centred sums)
            columns["d1"], columns["d2"] = sums[1] + 0.0, sums[2] + 0.0
        parts.append(pl.DataFrame(columns))
    sums, bad, amax = totals
    columns = {s.name: s for s in keys}
    columns["part"] = pl.Series(np.full(amax.size, 2, np.int8))
    columns["bucket"] = np.zeros(amax.size, np.int64)
    columns.update({name: sums[i] + 0.0 for i, name in enumerate(LOSSES)})
    columns.update({name: bad[i] for i, name in enumerate(DOMAINS)})
    columns["amax"] = amax
    parts.append(pl.DataFrame(columns))
    fixed = [pl.lit(v, schema[k]).alias(k) for k, v in constants.items()]
    order = [*spec.keys, "part", "bucket", *merge_ops(spec)]
    table = pl.concat(parts, how="diagonal").with_columns(
        pl.col(list(merge_ops(spec))).fill_null(0)
    )
    return table.with_columns(fixed).select(order)


def collect_regression(
    lf: pl.LazyFrame,
    keys: list[str],
    codes: Mapping[str, KeyCode | None],
    rows: tuple[pl.Expr, pl.Expr, pl.Expr | None, pl.Expr, pl.Expr | None],
    collect: Callable[[pl.LazyFrame, list[pl.Expr]], pl.DataFrame],
    invalid: Callable[[], Exception],
) -> RegressionRows | None:
    """The columns the regression kernel reads of the rows of ``lf`` (None: no key code).

    ``rows`` holds the label and the prediction as Float64, the weight (or None), the
    bad-row flag and the row key of bootstrap draws (or None; collected as ``_k``).
    """
    y, f, weight, bad, row_key = rows
    coded = key_exprs(keys, codes)
    if coded is None:
        return None
    key_codes, exprs = coded
    exprs += [pl.when(~bad).then(y).alias("_y"), f.alias("_f")]
    if weight is not None:
        exprs.append(weight.alias("_w"))
    if row_key is not None:
        exprs.append(row_key.alias("_k"))
    frame = collect(lf, exprs)
    if frame["_y"].null_count():
        raise invalid()
    return RegressionRows(frame, key_codes, weight is not None, row_key is not None)
