r"""Score drift between two score histograms: PSI, Jensen–Shannon distance and KS statistic.

A state's score histogram (rows' weight per score bucket) is all that score drift needs, so
the drift of each group against a baseline comes from stored states without reading a row.

**Bins.** The population stability index and the Jensen–Shannon distance compare the two
distributions over ``k`` bins made from the baseline's quantiles: the bins are the intervals
between the edges ``e_1 < e_2 < …``, where ``e_i`` is the lowest baseline score with at least
``i/k`` of the baseline's weight below it. A baseline score ``x`` thus falls in bin
``⌊k · F(x−)⌋``, ``F(x−)`` being the baseline's share of weight below ``x``; each bin holds
about ``1/k`` of the baseline (fewer bins where one score holds more than ``1/k``). In
exact mode the scores are the rows' own; in a bucketed state they are the buckets' lower
edges, so every edge is a bucket edge, within a relative ``2^-precision`` of the quantile
of the raw scores, and each value is the one of the raw scores binned at those edges.

- ``psi`` = Σ (c − b) · ln(c / b) over the bins, with ``c`` and ``b`` the current and
  baseline shares; a share of 0 is taken as :data:`PSI_FLOOR`, as is common practice, so a
  bin empty on one side gives a large but finite term.
- ``js_distance`` = the square root of the Jensen–Shannon divergence in bits (base 2), so it
  lies in [0, 1]: scipy's ``jensenshannon(c, b, base=2)``.

**KS.** ``ks_statistic`` is the largest gap between the two cumulative distributions at
the bucket edges, over every bucket (not the ``k`` bins). In exact mode that is the
two-sample Kolmogorov–Smirnov statistic of the raw scores (scipy's ``ks_2samp``; weighted:
of the weighted empirical distributions). In a bucketed state the raw scores' statistic
lies in ``[ks_statistic, ks_statistic + ks_bound]``: within a bucket the two distributions
can only part by what the bucket holds of each.

>>> import polars as pl
>>> cur = pl.DataFrame({"bucket": [1, 2, 3], "_mass": [1.0, 1.0, 2.0], "_rows": [1, 1, 2]})
>>> base = pl.DataFrame({"bucket": [1, 2, 3], "_mass": [2.0, 1.0, 1.0], "_rows": [2, 1, 1]})
>>> drift(cur, base, [], [], bins=2, exact=True).select("psi", "ks_statistic", "bins")
shape: (1, 3)
┌──────────┬──────────────┬──────┐
│ psi      ┆ ks_statistic ┆ bins │
│ ---      ┆ ---          ┆ ---  │
│ f64      ┆ f64          ┆ u32  │
╞══════════╪══════════════╪══════╡
│ 0.274653 ┆ 0.25         ┆ 2    │
└──────────┴──────────────┴──────┘
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..errors import InputError
from ..kernels.drift import group_drift, weighed_runs
from ..kernels.groups import GroupCodes
from ..kernels.runs import Runs
from ..resample_draw import REPLICATE
from ..spec import Spec

#: The share a bin empty on one side is taken to hold in the PSI (0.01%).
PSI_FLOOR = 1e-4
#: The drift measures, as the columns of :func:`drift`'s table.
MEASURES = ("psi", "js_distance", "ks_statistic")
#: The columns of :func:`drift`'s table beside the ids (group keys may not take them).
COLUMNS = ("n", "baseline_n", *MEASURES, "ks_bound", "bins")
#: A constant key added to both histograms: what a baseline without keys joins on.
_ONE = "_one"
#: A histogram's weight and rows per bucket (names a group key cannot take: they start with _).
_MASS, _ROWS = pl.col("_mass"), pl.col("_rows")
#: A sorted histogram's rows per group.
_N = "_n"

Array = npt.NDArray[Any]


@dataclass
class Sorted:
    """A score histogram in (group, bucket) order: what :func:`drift` walks.

    ``keys`` holds a row per group (the id columns and ``_n``, its rows); group ``g``'s buckets
    of weight are ``bucket[starts[g]:starts[g + 1]]`` (ascending), their weight ``mass``.
    The buckets are ordered score keys, or (``coding`` not None) buckets of the coding named
    there (its score fields, or positions on an index), which only a histogram of the same
    coding is compared with.
    """

    keys: pl.DataFrame
    starts: npt.NDArray[np.int64]
    bucket: npt.NDArray[np.int64] | npt.NDArray[np.uint64]
    mass: npt.NDArray[np.float64]
    coding: object = None

    def numbered(self) -> pl.DataFrame:
        """``keys`` with ``_b``, each group's number (its row)."""
        return self.keys.with_row_index("_b")

    def entries(self) -> tuple[Array, Array, Array | None, Array | None]:
        """As :func:`~streameval.kernels.drift.group_drift` reads a baseline: buckets, weight."""
        return self.bucket, self.mass, None, None

    @classmethod
    def of_frame(cls, hist: pl.DataFrame, ids: list[str]) -> Sorted:
        """The histogram of a frame (``ids``, ``bucket``, ``_mass`` and ``_rows``).

        >>> hist = pl.DataFrame({"g": ["b", "a", "b"], "bucket": [9, 4, 4],
        ...                      "_mass": [3.0, 1.0, 0.0], "_rows": [3, 1, 2]})
        >>> h = Sorted.of_frame(hist, ["g"])
        >>> order = h.keys["g"].to_list()
        >>> [h.bucket[h.starts[i]:h.starts[i + 1]].tolist() for i in range(2)] == [
        ...     {"a": [4], "b": [9]}[g] for g in order]
        True
        >>> sorted(zip(order, h.keys["_n"].to_list()))  # (groups in no set order)
        [('a', 1), ('b', 5)]
        """
        hist = hist.with_columns(pl.lit(0).alias(_ONE))  # (what a group_by without ids takes)
        keys = [*ids, _ONE]
        groups = (
            hist.group_by(keys, maintain_order=True).agg(_ROWS.sum().alias(_N)).with_row_index("_b")
        )
        coded = (
            hist.filter(_MASS > 0)
            .join(
                groups.select(*keys, "_b"),
                on=keys,
                how="inner",
                nulls_equal=True,
                maintain_order="left_right",
            )
            .select("_b", "bucket", "_mass")
            .sort("_b", "bucket")
        )
        counts = np.bincount(coded["_b"].to_numpy(), minlength=groups.height)
        return cls(
            groups.select(*ids, _N),
            np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            coded["bucket"].to_numpy(),
            coded["_mass"].to_numpy(),
        )

    @classmethod
    def of_runs(cls, runs: Runs, keys: list[str]) -> Sorted:
        """The histogram of unweighted runs (a bucket's weight and rows: its pos + neg).

        >>> import numpy as np
        >>> from streameval.kernels.groups import GroupCodes
        >>> from streameval.kernels.scorekeys import pack
        >>> groups = GroupCodes.build([lambda s: s], [np.array([1, 1, 2])], 3)
        >>> field, value, low, high = pack(groups.codes, np.array([4, 9, 4]), groups.bits)
        >>> runs = Runs(value, np.array([1, 0, 2]), np.array([0, 3, 0]), None, field, low,
        ...             high, groups)
        >>> h = Sorted.of_runs(runs, ["g"])
        >>> h.starts.tolist(), h.bucket.tolist(), h.mass.tolist(), h.keys["_n"].to_list()
        ([0, 2, 3], [4, 9, 4], [1.0, 3.0, 2.0], [4, 2])
        """
        pos, neg = (runs.pos.astype(np.int64, copy=False), runs.neg.astype(np.int64, copy=False))
        parts = weighed_runs(runs.value, pos, neg, runs.score_bits)
        fields = cls.of_weighed(parts, runs.groups, keys, coding=runs)
        return replace(fields, bucket=runs.score.decode(fields.bucket), coding=None)  # type: ignore[arg-type]

    @classmethod
    def of_weighed(
        cls,
        parts: tuple[npt.NDArray[Any], ...],
        groups: GroupCodes,
        keys: list[str],
        coding: object,
    ) -> Sorted:
        """The histogram of :func:`~streameval.kernels.drift.weighed_runs`' ``parts``.

        Its buckets are those of ``parts`` (score fields of ``coding``, or positions on it, an
        index), compared only with another histogram of ``coding`` (the codes' ``groups``
        name the keys).
        """
        fields, mass, starts, codes, totals = parts
        decoded = groups.decode(codes) if keys else []
        frame = pl.DataFrame([*decoded, pl.Series(_N, totals, pl.Int64)])
        return cls(frame, starts, fields, mass, coding)


@dataclass
class Counted:
    """A score histogram of counts read in place on an index (a pool's, not copied).

    Bucket ``j`` is the index's position ``j``, of weight ``pos[j] + neg[j]`` (integer
    counts; none where that is 0); group ``g``'s positions are ``starts[g]`` to
    ``starts[g + 1]``, its weight ``rows[g]``. ``keys`` holds a row per group of weight (the
    id columns, ``_n`` its rows and ``_b``, its ``g``). Only a histogram of positions on the
    same index (``coding``) is compared with it, and only while the counts stand.
    """

    keys: pl.DataFrame
    starts: npt.NDArray[np.int64]
    pos: Array
    neg: Array
    rows: npt.NDArray[np.int64]
    coding: object

    @classmethod
    def of_counts(
        cls,
        groups: pl.DataFrame,
        ids: list[str],
        rows: npt.NDArray[np.int64],
        starts: npt.NDArray[np.int64],
        pos: Array,
        neg: Array,
        coding: object,
    ) -> Counted:
        """The counts ``pos`` and ``neg`` of an index's groups.

        ``groups`` holds the ``ids`` and ``_b`` of each group of ``starts``; those of
        ``rows`` > 0 hold weight.
        """
        keys = groups.select(*ids, "_b").with_columns(pl.Series(_N, rows)).filter(pl.col(_N) > 0)
        return cls(keys, starts, pos, neg, rows, coding)

    def numbered(self) -> pl.DataFrame:
        """``keys``, whose ``_b`` numbers each group (its place among ``starts``)."""
        return self.keys

    def entries(self) -> tuple[Array, Array, Array | None, Array | None]:
        """As :func:`~streameval.kernels.drift.group_drift` reads a baseline.

        No buckets (they are the positions), the weight as two counts, each group's weight.
        """
        return self.pos[:0], self.pos, self.neg, self.rows


def drift(
    current: pl.DataFrame | Sorted,
    baseline: pl.DataFrame | Sorted | Counted | None,
    ids: list[str],
    on: list[str],
    *,
    bins: int,
    exact: bool,
    every: bool = False,
    measures: Collection[str] = MEASURES,
) -> pl.DataFrame:
    """Per group of ``current``: its score drift from the baseline group it joins.

    Parameters
    ----------
    current, baseline : DataFrame or Sorted
        Score histograms: the id columns, ``bucket`` (ordered score keys, of the same
        precision and cuts in both), ``_mass`` (the rows' weight) and ``_rows``, or the same
        already sorted (:class:`Sorted`: a histogram used again need not be sorted again).
        The baseline may be counts on an index (:class:`Counted`, against a current
        histogram of positions on it). No baseline (None): every group's measures are null.
    ids : list of str
        ``current``'s id columns (its groups).
    on : list of str
        ``baseline``'s id columns, among ``ids``: a current group's baseline is the
        baseline group of the same values (none: one baseline for every group).
    bins : int
        The number of baseline-quantile bins of the PSI and JS distance.
    exact : bool
        Whether each bucket is one score (``ks_bound`` is then 0).
    every : bool
        With ``on`` equal to ``ids``: also a row for each baseline group that ``current``
        lacks, its ``n`` and measures null.
    measures : collection of str
        The measures wanted (of :data:`MEASURES`): without the PSI and JS distance no bins
        are formed (their columns and ``bins`` null), a shorter walk.

    Returns
    -------
    DataFrame
        A row per current group, sorted: ``ids``, ``n`` and ``baseline_n`` (rows),
        ``psi``, ``js_distance``, ``ks_statistic``, ``ks_bound`` and ``bins`` (the bins
        formed). The measures are null for a group without weight or without a baseline.

    """
    cur = current if isinstance(current, Sorted) else Sorted.of_frame(current, ids)
    base: Sorted | Counted
    if baseline is None:  # (the shape of the table, without a baseline to measure)
        keys = cur.keys.select(on).clear().with_columns(pl.lit(0, pl.Int64).alias(_N))
        base = Sorted(keys, np.zeros(1, np.int64), cur.bucket[:0], cur.mass[:0], cur.coding)
    else:
        base = Sorted.of_frame(baseline, on) if isinstance(baseline, pl.DataFrame) else baseline
    if base.coding is not cur.coding:  # (buckets of another coding are not comparable)
        raise ValueError("expected two score histograms of one coding")
    one = pl.lit(0).alias(_ONE)  # (every group joins its baseline on some key)
    bases = base.numbered().rename({_N: "baseline_n"}).with_columns(one)
    groups = (
        cur.keys.rename({_N: "n"})
        .with_columns(one)
        .join(
            bases.select(*on, _ONE, "baseline_n", "_b"),
            on=[*on, _ONE],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
    )
    base_buckets, base_mass, base_more, base_rows = base.entries()
    psi, js, ks, bound, formed = group_drift(
        cur.starts,
        cur.bucket,
        cur.mass,
        groups["_b"].fill_null(-1).cast(pl.Int64).to_numpy(),
        base.starts,
        base_buckets,
        base_mass,
        bins if {"psi", "js_distance"} & set(measures) else 0,
        exact,
        PSI_FLOOR,
        base_more,
        base_rows,
    )
    measured = (
        pl.DataFrame(
            {"psi": psi, "js_distance": js, "ks_statistic": ks, "ks_bound": bound, "bins": formed}
        )
        .with_columns(pl.all().fill_nan(None))
        .with_columns(pl.col("bins").cast(pl.UInt32))
    )
    out = pl.concat([groups.select(*ids, "n", "baseline_n"), measured], how="horizontal")
    if every and on == ids:  # the baseline's groups that have no rows here
        gone = bases.join(
            groups, on=[*on, _ONE], how="anti", nulls_equal=True, maintain_order="left_right"
        )
        out = pl.concat([out, gone.select(*ids, "baseline_n")], how="diagonal_relaxed")
    return out.sort(ids, nulls_last=False).select(*ids, *COLUMNS) if ids else out.select(COLUMNS)


def check_comparable(current: Spec, baseline: Spec, bins: object) -> list[str]:
    """The baseline's keys a current group joins on, or an InputError saying what differs.

    Both states must be of one kind, with buckets of the same precision and cuts (so that
    each bucket of one lies within a bucket of the other), and the baseline's keys among the
    current state's.
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or not 2 <= bins <= 10_000:
        raise InputError(f"expected bins to be an integer from 2 to 10000, got {bins!r}")
    if baseline.kind != current.kind:
        raise InputError(
            f"expected a {current.kind} baseline state, got a {baseline.kind} one; hint: "
            "accumulate the baseline with the same task"
        )
    if (baseline.precision, baseline.splits) != (current.precision, current.splits):
        raise InputError(
            f"expected a baseline state with the same score buckets, got precision "
            f"{baseline.precision} and cuts {list(baseline.splits)} against "
            f"{current.precision} and {list(current.splits)}; hint: accumulate both with the "
            f"same precision= and thresholds={list(current.splits)[:-1] or [0.5]}"
            + (
                " (State.coarsen brings a bucketed state to fewer bits)"
                if not current.exact and not baseline.exact
                else ""
            )
        )
    if current.scores != baseline.scores:
        raise InputError(
            f"expected a baseline of the same models {list(current.scores)}, got "
            f"{list(baseline.scores)}"
        )
    clash = [k for k in current.keys if k in COLUMNS]
    if clash:
        raise InputError(
            f"expected group keys other than the drift table's columns {list(COLUMNS)}, got "
            f"{clash}; hint: rename the key in a LazyFrame before accumulating"
        )
    keys = sample_keys(baseline)
    extra = [k for k in keys if k not in current.keys]
    if extra:
        raise InputError(
            f"expected the baseline state's keys among the state's {list(current.keys)}, got "
            f"{keys}; hint: accumulate the baseline by a subset of the state's keys (none: "
            "one baseline for every group)"
        )
    return keys


def sample_keys(spec: Spec) -> list[str]:
    """A state's group keys less its bootstrap replicates' (those of :func:`sample`)."""
    return [k for k in spec.keys if k != REPLICATE]


def sample(spec: Spec, table: pl.DataFrame) -> tuple[Spec, pl.DataFrame]:
    """A state's own sample: without its bootstrap replicates (replicate 0, key dropped)."""
    if not spec.replicates:
        return spec, table
    keys = tuple(sample_keys(spec))
    table = table.filter(pl.col(REPLICATE) == 0).drop(REPLICATE)
    return replace(spec, keys=keys, replicates=0), table
