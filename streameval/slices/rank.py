"""Judging every slice against the rest of the data, from the counted cells.

Each slice's rows and the rest of the data's are disjoint samples, so the difference of a
metric between them has the sum of their variances: DeLong's for the ROC AUC (from the
bucketed histogram, as :func:`streameval.stats.delong.delong`), the binomial one for a
proportion at the threshold (its successes and trials as the metric registry declares
them). The rest's histogram is the whole data's minus the slice's (every cell is a sum).
The worsening is the rest's value minus the slice's where higher is better (the slice's
minus the rest's where lower is); its one-sided p-value, of "the slice is no worse", is
``Φ(−worsening / se)``; the p-values of all the slices judged are adjusted together.

The metrics are computed on dense ``[bucket][slice]`` blocks, many slices at a time (a
block of :data:`BLOCK` slices bounds the memory the sums take).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl
from scipy.special import ndtr

from ..bucketing import EXACT_BITS, float_to_key_scalar
from ..kernels.slicing import auc_columns
from ..measure import binomial_se, declaration
from ..stats.delong import normal_interval, z_quantile
from ..stats.multiple import adjust
from ..stats.proportions import interval
from .counts import Cells

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: Slices judged together in one block of dense sums.
BLOCK = 2048
#: A one-feature slice's key: feature · KEY + code.
KEY = 1 << 32


@dataclass(frozen=True)
class Judging:
    """How slices are judged: the metric, threshold, thresholds on size, level and family."""

    metric: str
    threshold: float
    min_n: int
    level: float
    significance: float
    correction: str
    precision: int


#: A block of slices' sums, buckets × slices: positives' and negatives' weights, and their
#: rows (weighted only; None otherwise).
Sums = tuple[F64, F64, F64 | None, F64 | None]


@dataclass
class Slices:
    """Every slice of the cells: its features and codes (``second`` −1: one feature).

    Slices ``0 … layout.slices − 1`` are the cells' own (pairs at depth 2); the others are
    one-feature slices summed from a pair's (``singles``: their sums).
    """

    first: I64
    first_code: I64
    second: I64
    second_code: I64
    cells: Cells
    singles: Sums

    def block(self, cols: I64) -> Sums:
        """The sums of slices ``cols`` (ascending), buckets in code order."""
        own = self.cells.layout.slices
        mine, summed = cols[cols < own], cols[cols >= own] - own
        c = self.cells
        parts = [
            None if m is None or single is None else np.hstack([m[:, mine], single[:, summed]])
            for m, single in zip((c.pos, c.neg, c.pos_rows, c.neg_rows), self.singles, strict=True)
        ]
        assert parts[0] is not None and parts[1] is not None
        return parts[0], parts[1], parts[2], parts[3]

    def rows(self) -> F64:
        """Every slice's rows."""
        c = self.cells
        if c.pos_rows is not None and c.neg_rows is not None:
            own = c.pos_rows.sum(axis=0) + c.neg_rows.sum(axis=0)
            singles = self.singles[2], self.singles[3]
        else:
            own = c.pos.sum(axis=0) + c.neg.sum(axis=0)
            singles = self.singles[0], self.singles[1]
        assert singles[0] is not None and singles[1] is not None
        return np.concatenate([own, singles[0].sum(axis=0) + singles[1].sum(axis=0)])


def every_slice(cells: Cells, features: int) -> Slices:
    """The cells' slices, with each feature's one-feature slices summed from a pair's."""
    layout = cells.layout
    first, first_code, second, second_code = [], [], [], []
    sums: list[tuple[F64 | None, ...]] = []
    one: list[tuple[int, int]] = []
    arrays = (cells.pos, cells.neg, cells.pos_rows, cells.neg_rows)
    for k in range(layout.first.size):
        f, g = int(layout.first[k]), int(layout.second[k])
        c1, c2 = layout.shape(k)
        a, b = np.divmod(np.arange(c1 * c2), c2)
        first.append(np.full(c1 * c2, f))
        first_code.append(a)
        second.append(np.full(c1 * c2, g if g < features else -1))
        second_code.append(b if g < features else np.full(c1 * c2, -1))
        if g >= features:
            continue
        lo = int(layout.offset[k])
        for feature, axis, codes in ((f, 2, c1), (g, 1, c2)):
            if feature in {x for x, _ in one}:
                continue
            sums.append(tuple(_summed(m, (lo, c1, c2, axis)) for m in arrays))
            one.append((feature, codes))
    for feature, codes in one:  # (after every pair, as their sums are)
        first.append(np.full(codes, feature))
        first_code.append(np.arange(codes))
        second.append(np.full(codes, -1))
        second_code.append(np.full(codes, -1))
    buckets = cells.keys.size

    def joined(i: int) -> F64 | None:
        if arrays[i] is None:
            return None
        parts: list[F64] = [np.zeros((buckets, 0))]
        parts += [m for m in (s[i] for s in sums) if m is not None]
        return np.hstack(parts)

    singles = joined(0), joined(1), joined(2), joined(3)
    assert singles[0] is not None and singles[1] is not None
    return Slices(
        np.concatenate(first),
        np.concatenate(first_code),
        np.concatenate(second),
        np.concatenate(second_code),
        cells,
        (singles[0], singles[1], singles[2], singles[3]),
    )


def _summed(cells: F64 | None, shape: tuple[int, int, int, int]) -> F64 | None:
    """A pair set's cells (from column ``lo``, ``c1 × c2``) summed over one feature."""
    if cells is None:
        return None
    lo, c1, c2, axis = shape
    out: F64 = cells[:, lo : lo + c1 * c2].reshape(-1, c1, c2).sum(axis=axis)
    return out


def rests(block: Sums, whole: Sums) -> tuple[F64, F64]:
    """The rest's positives and negatives of each slice of ``block`` (buckets × slices).

    The whole data's sums minus the slice's, never below 0; weighted, none where the rest
    has no row of that class in that bucket (known from the rows, exactly: a difference of
    float sums leaves rounding residue).
    """
    pos, neg, pos_rows, neg_rows = block
    rest_pos = np.maximum(whole[0][:, None] - pos, 0.0)
    rest_neg = np.maximum(whole[1][:, None] - neg, 0.0)
    if pos_rows is not None and neg_rows is not None:
        assert whole[2] is not None and whole[3] is not None
        rest_pos[whole[2][:, None] - pos_rows <= 0] = 0.0
        rest_neg[whole[3][:, None] - neg_rows <= 0] = 0.0
    return rest_pos, rest_neg


def block_metric(
    pos: F64, neg: F64, judging: Judging, order: I64, above: npt.NDArray[np.bool_]
) -> pl.DataFrame:
    """Per column: ``value``, ``se``, interval ``lo``/``hi``, ``positives``, ``error``.

    As ``se.evaluate(ci="wilson")``: for the AUC, DeLong's normal interval widened by the
    bucketing bound (``error``) and clipped to [0, 1]; for a proportion at the threshold,
    Wilson's, and the binomial SE. ``order`` are the buckets, highest first; ``above``
    whether each bucket is at or above the threshold.
    """
    m = declaration("binary", judging.metric)
    if m.interval == "auc":
        out = np.zeros((pos.shape[1], 5))
        auc_columns(pos, neg, order, out)
        value, se = out[:, 2], np.sqrt(out[:, 3])
        error = np.zeros(pos.shape[1]) if judging.precision >= EXACT_BITS else out[:, 4]
        frame = pl.DataFrame(
            {"value": value, "se": se, "positives": out[:, 0], "error": error}, nan_to_null=True
        )
        low, high = normal_interval(pl.col("value"), pl.col("se"), judging.level, pl.col("error"))
        return frame.select("value", "se", low.alias("lo"), high.alias("hi"), "positives", "error")
    assert m.counts is not None and m.formula is not None
    P, N = pos.sum(axis=0), neg.sum(axis=0)
    tp, fp = pos[above].sum(axis=0), neg[above].sum(axis=0)
    counts = pl.DataFrame(
        {"tp": tp, "fp": fp, "tn": N - fp, "fn": P - tp, "positives": P, "negatives": N}
    )
    x, trials = m.counts()
    out_ = counts.select(
        m.formula().cast(pl.Float64).alias("value"),
        binomial_se(m).alias("se"),
        x.cast(pl.Float64).alias("_x"),
        trials.cast(pl.Float64).alias("_n"),
        pl.col("positives"),
        pl.lit(0.0).alias("error"),
    )
    lo, hi = interval(out_["_x"].to_numpy(), out_["_n"].to_numpy(), "wilson", judging.level)
    return out_.select(
        "value",
        "se",
        pl.Series("lo", lo, nan_to_null=True),
        pl.Series("hi", hi, nan_to_null=True),
        "positives",
        "error",
    )


def judge(
    cells: Cells, features: list[str], values: list[pl.Series], judging: Judging
) -> pl.DataFrame:
    """Every slice with at least ``min_n`` rows (and as many outside it), judged.

    ``values[f]`` is feature ``f``'s value of each code. Columns: the slice's description,
    its ``n``, ``positives``, the metric's value and interval, the rest's, the
    ``difference`` (the worsening) with its interval, ``p_value``, ``adjusted_p`` and a
    pair's ``parent``.
    """
    slices = every_slice(cells, len(features))
    n = slices.rows()
    # The whole data: any grouping set's slices partition the rows (the first set's here).
    c1, c2 = cells.layout.shape(0)
    whole = tuple(
        None if m is None else m[:, : c1 * c2].sum(axis=1)
        for m in (cells.pos, cells.neg, cells.pos_rows, cells.neg_rows)
    )
    total = float(n[: c1 * c2].sum())
    kept = np.flatnonzero((n >= judging.min_n) & (total - n >= judging.min_n))
    order = np.argsort(cells.keys, kind="stable")[::-1]
    order = order[order > 0]  # (code 0: no bucket)
    above = cells.keys >= float_to_key_scalar(judging.threshold)
    above[0] = False
    mine, rest = [], []
    for lo in range(0, kept.size, BLOCK):
        block = slices.block(kept[lo : lo + BLOCK])
        mine.append(block_metric(block[0], block[1], judging, order, above))
        rest.append(block_metric(*rests(block, whole), judging, order, above))  # type: ignore[arg-type]
    empty = pl.DataFrame(
        schema=dict.fromkeys(("value", "se", "lo", "hi", "positives", "error"), pl.Float64)
    )
    described = describe(slices, kept, features, values)
    return tested(
        described,
        n[kept],
        total,
        pl.concat(mine) if mine else empty,
        pl.concat(rest) if rest else empty,
        judging,
    )


def describe(
    slices: Slices, kept: I64, features: list[str], values: list[pl.Series]
) -> pl.DataFrame:
    """The kept slices' ``slice`` (``a=x, b is null``), ``features`` and ``values`` (strings).

    Also ``_key`` (a one-feature slice's feature and code), and a pair's ``_p1`` and
    ``_p2`` (its two one-feature slices' keys).
    """
    first, second = slices.first[kept], slices.second[kept]
    a, b = slices.first_code[kept], slices.second_code[kept]
    names = np.array(features, dtype=object)
    frame = pl.DataFrame(
        {
            "_f1": names[first].tolist(),
            "_v1": _values(values, first, a),
            "_f2": [names[g] if g >= 0 else None for g in second],
            "_v2": _values(values, second, b),
            "_k1": first * KEY + a,
            "_k2": np.where(second >= 0, second * KEY + b, -1),
        },
        schema={
            "_f1": pl.String, "_v1": pl.String, "_f2": pl.String, "_v2": pl.String,
            "_k1": pl.Int64, "_k2": pl.Int64,
        },
    )  # fmt: skip
    pair = pl.col("_f2").is_not_null()
    shown = [
        pl.when(pl.col(f"_v{i}").is_null())
        .then(pl.format("{} is null", pl.col(f"_f{i}")))
        .otherwise(pl.format("{}={}", pl.col(f"_f{i}"), pl.col(f"_v{i}")))
        for i in (1, 2)
    ]
    return frame.select(
        pl.when(pair)
        .then(pl.format("{}, {}", shown[0], shown[1]))
        .otherwise(shown[0])
        .alias("slice"),
        pl.when(pair)
        .then(pl.concat_list("_f1", "_f2"))
        .otherwise(pl.concat_list("_f1"))
        .alias("features"),
        pl.when(pair)
        .then(pl.concat_list("_v1", "_v2"))
        .otherwise(pl.concat_list("_v1"))
        .alias("values"),
        pl.when(~pair).then("_k1").alias("_key"),
        pl.when(pair).then("_k1").alias("_p1"),
        pl.when(pair).then("_k2").alias("_p2"),
    )


def _values(values: list[pl.Series], feature: I64, code: I64) -> list[str | None]:
    """Each slice's value of ``feature`` (None where the feature is −1 or the value null)."""
    out: list[str | None] = [None] * feature.size
    for f in np.unique(feature[feature >= 0]):
        at = np.flatnonzero(feature == f)
        got = values[int(f)].gather(code[at]).to_list()
        for i, v in zip(at.tolist(), got, strict=True):
            out[i] = v
    return out


def tested(
    described: pl.DataFrame,
    n: F64,
    total: float,
    mine: pl.DataFrame,
    rest: pl.DataFrame,
    judging: Judging,
) -> pl.DataFrame:
    """The slices' rows: values, the difference, its interval and the adjusted p-values."""
    m = declaration("binary", judging.metric)
    sign = -1.0 if m.direction == "higher" else 1.0
    z = z_quantile(judging.level)
    name = judging.metric
    out = pl.concat(
        [
            described,
            pl.DataFrame({"n": n.astype(np.int64), "rest_n": (total - n).astype(np.int64)}),
            mine.select(
                pl.col("positives"),
                pl.col("value").alias(name),
                pl.col("se").alias(f"{name}_se"),
                pl.col("lo").alias(f"{name}_lo"),
                pl.col("hi").alias(f"{name}_hi"),
                pl.col("error").alias(f"{name}_error"),
            ),
            rest.select(pl.col("value").alias("rest"), pl.col("se").alias("rest_se")),
        ],
        how="horizontal",
    )
    se = (pl.col(f"{name}_se") ** 2 + pl.col("rest_se") ** 2).sqrt()
    out = out.with_columns(
        (sign * (pl.col(name) - pl.col("rest"))).alias("difference"),
        pl.when(se > 0).then(se).alias("_se"),
    ).with_columns(
        (pl.col("difference") - z * pl.col("_se")).alias("difference_lo"),
        (pl.col("difference") + z * pl.col("_se")).alias("difference_hi"),
        (pl.col("difference") / pl.col("_se")).alias("_z"),
    )
    z_values = out["_z"].fill_null(np.nan).to_numpy()
    p = ndtr(-z_values)
    adjusted = adjust(p, judging.correction)
    out = out.with_columns(
        pl.Series("p_value", p, nan_to_null=True),
        pl.Series("adjusted_p", adjusted, nan_to_null=True),
    ).with_columns(
        ((pl.col("adjusted_p") <= judging.significance) & (pl.col("difference") > 0))
        .fill_null(False)
        .alias("significant")
    )
    out = _with_parents(out)
    return out.select(
        "slice",
        "features",
        "values",
        "n",
        "positives",
        name,
        f"{name}_lo",
        f"{name}_hi",
        f"{name}_error",
        "rest",
        "rest_n",
        "difference",
        "difference_lo",
        "difference_hi",
        "p_value",
        "adjusted_p",
        "significant",
        "parent",
        "parent_difference",
    ).sort(  # worst first; the slices that could not be tested (no p-value) last
        pl.col("p_value").is_null(), "difference", descending=[False, True], nulls_last=True
    )


def _with_parents(table: pl.DataFrame) -> pl.DataFrame:
    """A pair's ``parent``: the worse of its two one-feature slices, and its difference.

    The parents are found by feature and code (two values may print alike). Null for
    one-feature slices, and for a pair whose parents were not judged.
    """
    singles = table.filter(pl.col("_key").is_not_null()).select("_key", "slice", "difference")
    for i in (1, 2):
        renamed = singles.rename({"_key": f"_p{i}", "slice": f"_s{i}", "difference": f"_d{i}"})
        table = table.join(renamed, on=f"_p{i}", how="left", maintain_order="left")
    first_worse = pl.col("_d1").fill_null(-np.inf) >= pl.col("_d2").fill_null(-np.inf)
    known = pl.col("_d1").is_not_null() | pl.col("_d2").is_not_null()
    return table.with_columns(
        pl.when(known).then(pl.when(first_worse).then("_s1").otherwise("_s2")).alias("parent"),
        pl.max_horizontal("_d1", "_d2").alias("parent_difference"),
    )
