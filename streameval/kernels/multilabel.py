"""Compiled per-row sums of the multilabel task: each row's set and ranking metrics, per group.

A row has L labels y (0/1) and L scores s; a label is predicted where its score is at least
the threshold. With i = |Y ∩ P|, |Y|, |P| and the mismatches |Y △ P|, a row's set metrics
are scikit-learn's ``average="samples"`` ones, 0/0 counting 0 (``zero_division=0``):
precision i/|P|, recall i/|Y|, F1 2i/(|Y| + |P|), Jaccard i/|Y ∪ P|, and its exact match.

Its ranking metrics are those of scikit-learn's label ranking functions: for each relevant
label j, rank_j = #{k: s_k ≥ s_j} and its relevant share #{k relevant: s_k ≥ s_j}/rank_j
(averaged: ``label_ranking_average_precision_score``, 1 where no label or every label is
relevant); the irrelevant labels scored at least as high as a relevant one, over the
|Y|·(L − |Y|) pairs (``label_ranking_loss``, 0 where no pair); and the labels scored at least
as high as the lowest-scored relevant label (``coverage_error``, 0 where none is relevant).

>>> import numpy as np
>>> y = np.array([[1, 0, 1]], np.uint8); s = np.array([[0.9, 0.8, 0.1]])
>>> sums, rows = row_sums(np.zeros(1, np.int64), 1, y, s, np.zeros(0), 0.5)
>>> [round(float(v), 4) for v in sums[0]]
[1.0, 0.0, 2.0, 0.5, 0.5, 0.5, 0.3333, 0.8333, 3.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
import polars as pl

from ..spec import Spec
from ..tasks.multilabel.state import LABEL, SUMS
from .buckets import bucketed_state
from .collect import choose
from .groups import GroupCodes
from .runs import runs_state

_THREADS = 2


@numba.njit(cache=True, nogil=True)
def _rows(
    group: npt.NDArray[np.int64],
    y: npt.NDArray[np.uint8],
    s: npt.NDArray[np.float64],
    w: npt.NDArray[np.float64],
    threshold: float,
    start: int,
    stop: int,
    sums: npt.NDArray[np.float64],
    rows: npt.NDArray[np.int64],
) -> None:
    """Add rows ``start`` … ``stop`` − 1 to ``sums`` (group × ``SUMS``) and ``rows``."""
    labels = s.shape[1]
    weighted = w.size > 0
    for r in range(start, stop):
        g = group[r]
        wr = w[r] if weighted else 1.0
        both = 0
        relevant = 0
        predicted = 0
        for j in range(labels):
            t = y[r, j] != 0
            p = s[r, j] >= threshold
            relevant += t
            predicted += p
            both += t and p
        mismatches = relevant + predicted - 2 * both
        union = relevant + predicted - both
        shares = 0.0
        wrong_pairs = 0
        lowest = np.inf
        for j in range(labels):
            if y[r, j] == 0:
                continue
            sj = s[r, j]
            lowest = min(lowest, sj)
            rank = 0
            above = 0
            for k in range(labels):
                if s[r, k] >= sj:
                    rank += 1
                    above += y[r, k] != 0
            shares += above / rank
            wrong_pairs += rank - above
        coverage = 0
        if relevant:
            for k in range(labels):
                coverage += s[r, k] >= lowest
        ranked = 0 < relevant < labels
        out = sums[g]
        out[0] += wr
        out[1] += wr * (mismatches == 0)
        out[2] += wr * mismatches
        out[3] += wr * (both / predicted if predicted else 0.0)
        out[4] += wr * (both / relevant if relevant else 0.0)
        out[5] += wr * (2.0 * both / (relevant + predicted) if relevant + predicted else 0.0)
        out[6] += wr * (both / union if union else 0.0)
        out[7] += wr * (shares / relevant if ranked else 1.0)
        out[8] += wr * coverage
        out[9] += wr * (wrong_pairs / (relevant * (labels - relevant)) if ranked else 0.0)
        rows[g] += 1


def row_sums(
    group: npt.NDArray[np.int64],
    groups: int,
    y: npt.NDArray[np.uint8],
    s: npt.NDArray[np.float64],
    w: npt.NDArray[np.float64],
    threshold: float,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Per group (codes 0 … ``groups`` − 1): the state's ``SUMS`` and the row count.

    ``y`` and ``s`` are rows × labels (C order), ``w`` the weights (empty: unweighted). The
    rows are summed in two halves on two threads, the halves' sums then added.
    """
    n = s.shape[0]
    cuts = np.linspace(0, n, _THREADS + 1).astype(np.int64)
    parts = [(np.zeros((groups, len(SUMS))), np.zeros(groups, np.int64)) for _ in range(_THREADS)]
    y, s = np.ascontiguousarray(y), np.ascontiguousarray(s)

    def run(i: int) -> None:
        sums, rows = parts[i]
        _rows(group, y, s, w, threshold, int(cuts[i]), int(cuts[i + 1]), sums, rows)

    if n < 1 << 16:
        for i in range(_THREADS):
            run(i)
    else:
        with ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(run, range(_THREADS)))
    sums = parts[0][0] + parts[1][0]
    rows = parts[0][1] + parts[1][1]
    return sums, rows


def label_tables(
    frame: pl.DataFrame,
    groups: GroupCodes,
    spec: Spec,
    labels: int,
    schema: pl.Schema,
    constants: Mapping[str, Any],
) -> pl.DataFrame | None:
    """Each label's binary state table over a unit's groups, with its ``label_index``.

    Label j's rows (``_y{j}``, ``_p{j}`` and ``_w`` of ``frame``) go through the binary
    task's kernels (:func:`.collect.choose`: dense cells in bucketed mode, sorted runs in
    exact mode) with the unit's group codes, as a binary unit's would: ``spec`` is the
    binary spec over the unit's keys. Each label gets its own copy of the codes (a kernel
    hands its rows' buffers back for reuse). None where a kernel declines (a sum that could
    overflow): the Polars group-by then builds the tables.
    """
    parts = []
    weight = ["_w"] if spec.weighted else []
    for j in range(labels):
        rows = frame.select(pl.col(f"_y{j}").alias("_y"), pl.col(f"_p{j}").alias("_p"), *weight)
        staged = choose(rows, replace(groups, codes=groups.codes.copy()), spec, spec.weighted)
        table = staged.table(schema, constants)
        if table is None:
            runs = staged.runs()
            if runs is None:
                return None
            if spec.exact:
                table = runs_state(runs, spec, schema, constants)
            else:
                table = bucketed_state(runs, spec, schema, constants)
            if table is None:
                return None
        parts.append(table.with_columns(pl.lit(j, pl.Int32).alias(LABEL)))
    return pl.concat(parts)


def label_grouped(
    frame: pl.DataFrame,
    groups: GroupCodes,
    spec: Spec,
    labels: int,
    threshold: float,
    wanted: tuple[bool, bool] = (True, True),
) -> tuple[pl.DataFrame | None, pl.DataFrame | None] | None:
    """Each label's binary metric aggregates per group, and those of the labels pooled.

    The binary kernels' grouped frames (:meth:`.staged.Staged.grouped`, straight from the
    rows, no state): label j's from its rows (``label_index`` j added after the keys), the
    pooled one's from every label's rows stacked, each with its group's code (the micro
    averages: as much work again as the labels'). ``wanted`` says which of the two to
    compute (the other is None). None where a kernel declines: the state's finalize then
    gives the table.
    """
    weighted = spec.weighted
    weight = ["_w"] if weighted else []
    parts = []
    for j in range(labels if wanted[0] else 0):
        rows = frame.select(pl.col(f"_y{j}").alias("_y"), pl.col(f"_p{j}").alias("_p"), *weight)
        staged = choose(rows, replace(groups, codes=groups.codes.copy()), spec, weighted)
        grouped = staged.grouped(spec, [threshold])
        if grouped is None:
            return None
        parts.append(grouped.with_columns(pl.lit(j, pl.Int32).alias(LABEL)))
    if not wanted[1]:
        return (pl.concat(parts) if parts else None), None
    stacked = pl.DataFrame(
        {
            "_y": pl.concat([frame[f"_y{j}"] for j in range(labels)], rechunk=False),
            "_p": pl.concat([frame[f"_p{j}"] for j in range(labels)], rechunk=False),
            **({"_w": pl.concat([frame["_w"]] * labels, rechunk=False)} if weighted else {}),
        }
    )
    tiled = replace(groups, codes=np.tile(groups.codes, labels))
    pooled = choose(stacked, tiled, spec, weighted).grouped(spec, [threshold])
    if pooled is None:
        return None
    return (pl.concat(parts) if parts else None), pooled
