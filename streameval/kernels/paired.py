"""Paired task on the kernel: each model's scores summed as a binary task over shared rows.

A unit's rows are collected once (group codes, the label, each model's score and the
weight; :func:`collect_paired`). Its metric table (:func:`streameval.stats.compare.model_rows`)
needs each model's own histogram only: each model's scores go through the binary kernel
(:func:`.collect.choose`) over the same rows and group codes, with DeLong's variance, and its
grouped frame gets the key ``model`` (the model's index in ``spec.scores``).

The paired *state* (:mod:`streameval.tasks.paired.state`, which DeLong's paired test reads) is a
joint histogram of about a row per row at the default precision, built by the Polars group-by
of the state query, so the task's kernel serves metric tables only
(:attr:`streameval.tasks.common.TaskPlan.states`). Measured at 2e7 rows, 3,000 groups, these
rows summed by a compiled hash table took 2.0-2.4 s from hive partitions, 5.5 s from a
LazyFrame and 3.6 s from a DataFrame, against 1.6-1.9 s, 2.9 s and 2.4 s for the streaming
group-by; since the group-by keeps its groups' order (:mod:`streameval.ordered`), 3.7-4.0 s,
4.4-4.6 s and 4.8-5.0 s. DeLong's test of such a state is summed by compiled loops
(:mod:`.pairedstate`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from ..codes import KeyCode
from ..spec import Spec
from .collect import Collect, choose, key_exprs, unit_groups
from .groups import GroupCodes
from .runs import Runs
from .staged import Staged

#: The model index column of the grouped frames (Int32, as the Polars path's).
MODEL = "model"


def collect_paired(
    lf: pl.LazyFrame,
    keys: list[str],
    codes: Mapping[str, KeyCode | None],
    rows: tuple[pl.Expr, Sequence[pl.Expr], pl.Expr | None, pl.Expr],
    collect: Collect,
    invalid: Callable[[], Exception],
) -> PairedRows | None:
    """The columns the kernel needs of the rows of ``lf`` (None when a key has no code).

    As :func:`.collect.collect_unit`, with ``rows`` the label as Boolean, each model's score
    as Float64, the weight (or None) and the bad-row flag; the scores are ``_p0``, ``_p1``, ….
    """
    label, scores, weight, bad = rows
    coded = key_exprs(keys, codes)
    if coded is None:
        return None
    key_codes, exprs = coded
    exprs.append(label.fill_null(False).cast(pl.UInt8).alias("_y"))
    exprs += [
        (pl.when(~bad).then(p) if i == 0 else p).alias(f"_p{i}") for i, p in enumerate(scores)
    ]
    if weight is not None:
        exprs.append(weight.alias("_w"))
    frame = collect(lf, exprs)
    if frame["_p0"].null_count():
        raise invalid()
    return PairedRows(frame, key_codes)


@dataclass
class PairedRows:
    """A unit's collected columns (``_g0``…, ``_y``, ``_p0``…, ``_w``), not yet coded."""

    frame: pl.DataFrame
    key_codes: list[KeyCode]

    def staged(self, spec: Spec | None = None) -> Staged:
        """The rows with their group codes, for :class:`PairedStaged` to sum."""
        if self.frame.height == 0:
            return PairedStaged(None, None)
        groups, frame = unit_groups(self.frame, self.key_codes)
        return PairedStaged(frame, groups)


@dataclass
class PairedStaged(Staged):
    """A unit's coded rows of several models' scores, for a metric table only.

    It builds no state (:meth:`table` and :meth:`runs` give None): the paired state's joint
    histogram comes from the state query, which is faster at it (see the module's notes).
    """

    frame: pl.DataFrame | None
    groups: GroupCodes | None

    def _finish(self) -> Runs | None:
        """No runs: a paired state is a joint histogram (:meth:`table`)."""
        return None

    def grouped(
        self, spec: Spec, thresholds: list[float], variance: bool = False
    ) -> pl.DataFrame | None:
        """Each model's binary grouped frame with ``_var``, the key ``model`` after the keys.

        ``spec`` is the paired spec with the unit's varying keys. None when the kernel hands
        over no aggregates for a model (weighted exact mode): the state's finalize serves.
        """
        frame, groups = self.frame, self.groups
        if frame is None or groups is None:
            return None
        weight = ["_w"] if spec.weighted else []
        at = len(spec.keys) or 1  # the model key goes after the keys (or the ALL column)
        parts = []
        for i, score in enumerate(spec.scores):
            binary = replace(spec, kind="binary", score=score, scores=())
            rows = frame.select("_y", pl.col(f"_p{i}").alias("_p"), *weight)
            mine = replace(groups, codes=groups.codes.copy())  # (the kernels consume codes)
            grouped = choose(rows, mine, binary, spec.weighted).grouped(binary, [], True)
            if grouped is None:
                return None
            model = pl.Series(MODEL, np.full(grouped.height, i, np.int32))
            parts.append(grouped.insert_column(at, model))
        return pl.concat(parts, how="vertical_relaxed")
