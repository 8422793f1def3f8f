"""DeLong's paired test of a paired state's joint histogram, by compiled loops.

A paired state (:mod:`streameval.tasks.paired.state`) holds a row per group and combination of
the models' buckets, about a row per row at the default precision. DeLong's test
(:func:`streameval.stats.compare.paired_test`) needs, per group, each model's AUC and
variance and, for each pair of models, the difference of their AUCs and its variance, both
summed from each row's difference of the two models' placements over the joint rows (so that
alike rankings give a difference and a variance with no cancellation, and identical ones
exactly 0). Here the rows are ordered by group once (a counting sort,
:func:`.classstate.by_segment`); in each group, each model's buckets are sorted (a merge
sort) and read from the highest down for its placements, then passes over the group's rows
sum every pair of models' differences of placements (:func:`joint_sums`). The Polars query
(sorts, windows and a join a model over the whole state) stays the reference, with the
kernels switched off.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from ..spec import Spec
from ..tasks.paired.state import bucket_columns
from . import small_pages
from .classstate import by_segment, permute
from .collect import table_groups
from .sums import twice_pairs

jit = numba.njit(cache=True, nogil=True)


@jit
def joint_sums(bounds, buckets, weights, bound, span, out):  # type: ignore[no-untyped-def]
    """Per group: each model's AUC, bound and variance; each pair's difference and its variance.

    Groups ``span[0]`` … ``span[1] − 1`` are summed into ``out``, so that two threads can
    share the work.

    Parameters
    ----------
    bounds : ndarray of int64
        Each group's first row (and the end); the rows in group order.
    buckets : 2-d ndarray of int64
        Each row's bucket under each model (rows × models).
    weights : 2-d ndarray of float64
        Each row's positive and negative weight and its rows (rows × 3).
    bound : float
        The AUC's bound per tied pair of a bucket (½ bucketed, 0 exact).
    span : (int, int)
        The first group summed and the group after the last.
    out : tuple of ndarray
        ``(auc, error, variance, difference, ap, totals)``, filled with NaN beforehand
        (``totals`` with anything); the span's groups are written. ``totals[g]`` holds P, N
        and the rows. ``auc[g, i]`` is Σ pos·V10 / P (V10: the negatives' weight below the
        row's bucket and half of it in the bucket, over N; the sum taken as
        Σ :func:`.sums.twice_pairs` / (2·P·N)), ``error[g, i]`` ``bound`` × the
        buckets' tied pairs / (P·N), and ``difference[g, i, j]`` (i < j) is
        D = Σ pos·(V10ᵢ − V10ⱼ) / P, all NaN without a positive or a negative;
        ``ap[g, i]`` is the average precision (NaN without a positive);
        ``variance[g, i, i]`` is DeLong's Σ pos·(V10ᵢ − Aᵢ)² / ((P − 1)·P) +
        Σ neg·(V01ᵢ − Aᵢ)² / ((N − 1)·N), V01 the positives' weight above the bucket and
        half of it in it, over P; ``variance[g, i, j]`` (i < j) that of Aᵢ − Aⱼ,
        Σ pos·(V10ᵢ − V10ⱼ − D)² / ((P − 1)·P) + Σ neg·(V01ᵢ − V01ⱼ − D)² / ((N − 1)·N)
        (equal to Var Aᵢ + Var Aⱼ − 2 Cov, with no cancellation); NaN unless P > 1 and N > 1.

    """
    first, last = span
    auc, error, variance, difference, ap, totals = out
    models = buckets.shape[1]
    widest = 0
    for g in range(first, last):
        widest = max(widest, bounds[g + 1] - bounds[g])
    v10 = np.empty((widest, models))
    v01 = np.empty((widest, models))
    column = np.empty(widest, np.int64)
    for g in range(first, last):
        begin, end = bounds[g], bounds[g + 1]
        m = end - begin
        P = 0.0
        N = 0.0
        n = 0.0
        for r in range(begin, end):
            P += weights[r, 0]
            N += weights[r, 1]
            n += weights[r, 2]
        totals[g, 0], totals[g, 1], totals[g, 2] = P, N, n
        both = P > 0.0 and N > 0.0
        for i in range(models):
            for t in range(m):
                column[t] = buckets[begin + t, i]
            rank = np.argsort(column[:m], kind="mergesort")
            cpos = 0.0
            cneg = 0.0
            area = 0.0
            ties = 0.0
            precision = 0.0
            t = m - 1
            while t >= 0:  # a bucket's rows, from the highest bucket down
                key = column[rank[t]]
                u = t
                pos = 0.0
                neg = 0.0
                while u >= 0 and column[rank[u]] == key:
                    pos += weights[begin + rank[u], 0]
                    neg += weights[begin + rank[u], 1]
                    u -= 1
                cpos += pos
                cneg += neg
                if pos > 0.0:
                    precision += pos * cpos / (cpos + cneg)
                if both:
                    below = (N - cneg + 0.5 * neg) / N
                    above = (cpos - 0.5 * pos) / P
                    for v in range(u + 1, t + 1):
                        v10[rank[v], i] = below
                        v01[rank[v], i] = above
                    area += twice_pairs(neg, pos, N - cneg)
                ties += pos * neg
                t = u
            if P > 0.0:
                ap[g, i] = precision / P
            if both:
                auc[g, i] = area / (2.0 * P * N)
                error[g, i] = ties / P / N * bound
        if not both:
            continue
        for i in range(models):
            for j in range(i + 1, models):  # the difference, from each row's difference
                d = 0.0
                for t in range(m):
                    d += weights[begin + t, 0] * (v10[t, i] - v10[t, j])
                difference[g, i, j] = d / P
        if not (P > 1.0 and N > 1.0):
            continue
        for i in range(models):
            s10 = 0.0
            s01 = 0.0
            for t in range(m):
                s10 += weights[begin + t, 0] * (v10[t, i] - auc[g, i]) ** 2
                s01 += weights[begin + t, 1] * (v01[t, i] - auc[g, i]) ** 2
            variance[g, i, i] = s10 / (P - 1.0) / P + s01 / (N - 1.0) / N
            for j in range(i + 1, models):
                d = difference[g, i, j]
                s10 = 0.0
                s01 = 0.0
                for t in range(m):
                    s10 += weights[begin + t, 0] * (v10[t, i] - v10[t, j] - d) ** 2
                    s01 += weights[begin + t, 1] * (v01[t, i] - v01[t, j] - d) ** 2
                variance[g, i, j] = s10 / (P - 1.0) / P + s01 / (N - 1.0) / N


@dataclass
class JointSums:
    """Per group of a paired state: its keys, the models' sums (:func:`joint_sums`' ``out``)."""

    keys: list[pl.Series]
    auc: npt.NDArray[np.float64]
    error: npt.NDArray[np.float64]
    variance: npt.NDArray[np.float64]
    difference: npt.NDArray[np.float64]
    ap: npt.NDArray[np.float64]
    totals: npt.NDArray[np.float64]

    def test_sums(self) -> pl.DataFrame:
        """Per group: ``auc{i}``, ``_e{i}``, and ``diff{i}_{j}``, ``var{i}_{j}`` (i < j).

        Null where undefined; as :func:`streameval.stats.compare.paired_test` sums them
        with Polars.
        """
        models = self.auc.shape[1]
        sums: dict[str, object] = {}
        for i in range(models):
            sums[f"auc{i}"] = self.auc[:, i]
            sums[f"_e{i}"] = self.error[:, i]
            for j in range(i + 1, models):
                sums[f"diff{i}_{j}"] = self.difference[:, i, j]
                sums[f"var{i}_{j}"] = self.variance[:, i, j]
        out = pl.DataFrame({**{s.name: s for s in self.keys}, **sums})
        return out.with_columns(pl.col(list(sums)).fill_nan(None))

    def model_rows(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Per group and model: the counts, AUC, its bound and AP; and DeLong's ``_var``.

        The two frames :func:`streameval.stats.compare.model_rows` reads (``model`` the
        model's index).
        """
        size, models = self.auc.shape
        group = np.repeat(np.arange(size), models)
        frame: dict[str, object] = {s.name: s.gather(group) for s in self.keys}
        frame["model"] = pl.Series(np.tile(np.arange(models, dtype=np.int32), size))
        frame["n"] = self.totals[group, 2]
        frame["positives"], frame["negatives"] = self.totals[group, 0], self.totals[group, 1]
        frame["roc_auc"], frame["roc_auc_error"] = self.auc.ravel(), self.error.ravel()
        frame["average_precision"] = self.ap.ravel()
        variance = np.diagonal(self.variance, axis1=1, axis2=2).ravel()
        names = [s.name for s in self.keys]
        values = ["n", "positives", "negatives", "roc_auc", "roc_auc_error", "average_precision"]
        rows = pl.DataFrame(frame).with_columns(pl.col(values).fill_nan(None))  # (not the keys)
        return rows, rows.select(*names, "model", pl.Series("_var", variance).fill_nan(None))


def paired_sums(table: pl.DataFrame, spec: Spec) -> JointSums | None:
    """Each group's sums of the models of a paired state (:func:`joint_sums`).

    None where the compiled loops are off or a key has no code.
    """
    names = bucket_columns(spec)
    count = pl.col("n") if spec.weighted else pl.col("pos") + pl.col("neg")
    wanted = [pl.col(names), pl.col("pos", "neg").cast(pl.Float64)]
    wanted.append(count.cast(pl.Float64).alias("_n"))
    coded = table_groups(table.lazy(), list(spec.keys), wanted)
    if coded is None:
        return None
    keys, codes, size, frame = coded
    models = len(names)
    with small_pages():
        dest, bounds = by_segment(codes, np.zeros(codes.size, np.int32), 1, size)
        buckets = np.empty((codes.size, models), np.int64)
        permute(dest, np.stack([frame[b].to_numpy() for b in names]), buckets)
        weights = np.empty((codes.size, 3))
        columns = [frame[c].to_numpy() for c in ("pos", "neg", "_n")]
        permute(dest, np.stack(columns), weights)
        del frame, dest, columns
        out = JointSums(
            keys,
            np.full((size, models), np.nan),
            np.full((size, models), np.nan),
            np.full((size, models, models), np.nan),
            np.full((size, models, models), np.nan),
            np.full((size, models), np.nan),
            np.zeros((size, 3)),
        )
        half = int(np.searchsorted(bounds, bounds[-1] // 2))  # two halves of the rows
        tie = 0.0 if spec.exact else 0.5
        sums = (out.auc, out.error, out.variance, out.difference, out.ap, out.totals)
        with ThreadPoolExecutor(2) as pool:
            for done in [
                pool.submit(joint_sums, bounds, buckets, weights, tie, span, sums)
                for span in ((0, half), (half, size))
            ]:
                done.result()
    return out
