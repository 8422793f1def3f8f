"""The local engine: a metric table from units read here, finalized as each unit is summed."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from . import resample_plan
from .crossval import fold_cells, fold_metrics
from .errors import DomainWarning, caller_level
from .kernels import scatterloops
from .kernels.compiled import MAX_WINDOW_BITS, loops
from .kernels.staged import Staged
from .options import Accumulation, Evaluation
from .pipeline import (
    Plan,
    combine,
    inputs_of,
    local_accumulate,
    prepare,
    staged_table,
    unit_staged,
    units_staged,
)
from .resample import data_warnings, per_replicate, replicate_intervals
from .source import Engine, Source
from .spec import ALL, Spec
from .state import State
from .stats.compare import grouped_model_table
from .stats.proportions import METHODS
from .stats.tables import binary_intervals, check_ci
from .tasks.binary.metrics import COLUMNS, as_thresholds, grouped_metrics
from .tasks.common import Inputs
from .tasks.registry import offers


def local_evaluate(source: Source, evaluation: Evaluation) -> pl.DataFrame:
    """:func:`streameval.evaluate` on this machine (no Spark, no progress bar)."""
    e = evaluation
    if e.folds is not None or e.repeats is not None:
        return evaluate_folds(source, e)
    thresholds = as_thresholds(e.threshold)
    # (the rows' identity and the seed serve the bootstrap only)
    inputs = inputs_of(e.accumulation(row_id=None, seed=0))
    if e.ci == "bootstrap" and e.task in resample_plan.DRAWN and e.metrics is None:
        drawn = replace(inputs, bootstrap=e.bootstrap, row_id=e.row_id, seed=e.seed)
        parameters = {"alpha": e.alpha, "beta": e.beta}
        table = _drawn_bootstrap(source, drawn, e.by, e.level, parameters, e.drop_nulls, e.engine)
        if table is not None:
            return table
    if e.ci in ("bootstrap", "jackknife"):
        replicates = e.bootstrap if e.ci == "bootstrap" else None
        state = local_accumulate(source, e.accumulation(bootstrap=replicates))
        return state.metrics(
            e.threshold if offers(e.task, "thresholds") else None, alpha=e.alpha,
            beta=e.beta, metrics=e.metrics,
            ci=e.ci, level=e.level, jackknife=e.jackknife,
        )  # fmt: skip
    plan = prepare(source, inputs, by=e.by, drop_nulls=e.drop_nulls, engine=e.engine, tables=True)
    thresholded = offers(e.task, "thresholds")
    options: dict[str, Any] = {"threshold": thresholds} if thresholded else {}
    options.update(metrics=e.metrics, beta=e.beta)
    direct_ok = not e.metrics and e.ci is None
    if e.ci is not None:
        check_ci(e.ci, e.level, e.auc_method)
        options.update(ci=e.ci, level=e.level, auc_method=e.auc_method)
        # (intervals of counts and of each group's AUC: the kernel's aggregates serve)
        direct_ok = not e.metrics and thresholded and e.ci in METHODS
    if offers(e.task, "alpha"):
        options["alpha"] = e.alpha
    if offers(e.task, "models"):  # each model's AUC interval (DeLong's variance) at ``level``
        options["level"] = e.level
        direct_ok = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = _tables(plan, thresholds, options, direct_ok)
    warn_once(caught)
    return table


#: Groups whose aggregates are finalized together at most: the metric formulas' columns of
#: a million groups at once took 0.6 GB more than the pass itself.
FINISH_ROWS = 1 << 18


def _tables(
    plan: Plan,
    thresholds: list[float],
    options: dict[str, Any],
    direct_ok: bool,
    replicates: int = 0,
) -> pl.DataFrame:
    """The metric table of a planned pass: per hive unit, or of the whole source at once.

    With ``replicates`` (a plan made with ``drawn=True``), the table of bootstrap replicates
    0 … ``replicates`` (key ``replicate`` last), drawn by the kernel where it can.
    """
    ci = options.get("ci")
    paired = offers(plan.spec.kind, "models")
    variance = paired or (ci is not None and options.get("auc_method") == "delong")

    def grouped_of(staged: Staged | None, spec: Spec) -> pl.DataFrame | None:
        if staged is None:
            return None
        if replicates:
            return staged.replicated(spec, thresholds, replicates)
        return staged.grouped(spec, thresholds, variance) if direct_ok else None

    def metrics_of(staged: Staged | None, spec: Spec) -> pl.DataFrame | None:
        """The kernel's metric table of a unit (of its replicates), where it gives one."""
        if staged is None:
            return None
        task = plan.task
        if replicates:
            sums = staged.replicated_sums(spec, options, replicates)
            finish = task.finish_replicated
        else:
            sums, finish = staged.sums(spec, options), task.finish
        return None if sums is None or finish is None else finish(sums, spec, options)

    def finished(grouped: pl.DataFrame, spec: Spec) -> pl.DataFrame:
        """The metric table of grouped frames, with the intervals ``options`` ask for."""
        if paired:
            return grouped_model_table(grouped, spec, options["level"])
        if replicates:
            return _replicate_metrics(grouped, spec, thresholds, options["beta"])
        table = grouped_metrics(grouped, spec, thresholds, options["beta"])
        if ci is None:
            return table
        keys = list(spec.keys)
        groups = keys or [ALL]
        var = grouped.lazy().select(*groups, pl.col("_var").fill_nan(None)) if variance else None
        names = [c for c in COLUMNS if c not in ("n", "threshold")]
        return binary_intervals(table, keys, names, var, ci, options["level"])

    if plan.units is None:
        staged = unit_staged(plan)
        grouped = grouped_of(staged, plan.spec)
        if grouped is not None:
            return finished(grouped, plan.spec)
        if staged is None:
            return combine(plan).metrics(**options)
        table = metrics_of(staged, plan.spec)
        if table is not None:
            return table
        return _state_metrics(State(plan.spec, staged_table(plan, None, staged)), options)
    # Hive units hold disjoint groups: each is finalized on its own (one unit in memory at a
    # time), grouped by its other keys only, and its fixed key added back. Units whose
    # aggregates come from the kernel are finalized together, FINISH_ROWS groups at most.
    keys = list(plan.spec.keys)
    tables, parts = [], []
    schema = plan.schema
    for unit, staged in units_staged(plan):
        fixed = unit.constants
        spec = replace(plan.spec, keys=tuple(k for k in keys if k not in fixed))
        fixed_columns = [pl.lit(v, schema[k]).alias(k) for k, v in fixed.items()]
        grouped = grouped_of(staged, spec)
        if grouped is not None:
            # (without any key, the whole source's one group keeps its ALL column)
            rest = [c for c in grouped.columns[len(spec.keys) :] if c != ALL or not keys]
            parts.append(grouped.with_columns(fixed_columns).select(*keys, *rest))
            if sum(p.height for p in parts) >= FINISH_ROWS:  # (each row's metrics its own)
                tables.append(finished(pl.concat(parts, how="vertical_relaxed"), plan.spec))
                parts = []
            continue
        table = metrics_of(staged, spec)
        if table is None:
            state = State(plan.spec, staged_table(plan, unit, staged))
            table = _state_metrics(State(spec, state.table.drop(list(fixed))), options)
        columns = [*keys, *table.columns[len(spec.keys) :]]
        tables.append(table.with_columns(fixed_columns).select(columns))
    if parts:
        grouped = pl.concat(parts, how="vertical_relaxed")
        tables.append(finished(grouped, plan.spec))
    out = pl.concat(tables, how="vertical_relaxed")
    order = [*keys] + (["threshold"] if "threshold" in out.columns else [])
    # (stable: a paired table's models stay in their order within each group)
    return out.sort(order, nulls_last=False, maintain_order=True) if order else out


def _replicate_metrics(
    grouped: pl.DataFrame, spec: Spec, thresholds: list[float], beta: float
) -> pl.DataFrame:
    """The metric table of replicates' grouped frames (key ``replicate`` last).

    The warnings are those of replicate 0, the data itself: the replicates' would count
    replicate rows.
    """
    return data_warnings(lambda g: grouped_metrics(g, spec, thresholds, beta), grouped)


def _state_metrics(state: State, options: dict[str, Any]) -> pl.DataFrame:
    """The metric table of a unit's state; of a replicated one, with the data's warnings only."""
    if not state.spec.replicates:
        return state.metrics(**options)
    return per_replicate(state, lambda s: s.metrics(**options))


def _drawn_bootstrap(
    source: Any,
    inputs: Inputs,
    by: str | Sequence[str] | None,
    level: float,
    parameters: dict[str, float],
    drop_nulls: bool,
    engine: Engine,
) -> pl.DataFrame | None:
    """Bootstrap intervals with the replicates drawn by the compiled kernel.

    Each unit is read once and its replicates are read off its placed rows
    (:meth:`streameval.kernels.staged.Staged.replicated`, or
    :meth:`~streameval.kernels.staged.Staged.replicated_sums`): the same draws, replicate
    tables and intervals as the state's Polars passes (``State.metrics(ci="bootstrap")``),
    up to the order of float additions. ``level`` is the intervals' level, ``parameters``
    the metric table's ``alpha`` and ``beta``. None where the kernel does not apply (exact
    mode, a precision above its windows, the compiled loops off): the caller takes the state.
    """
    if loops() is None or inputs.precision > MAX_WINDOW_BITS or inputs.bootstrap is None:
        return None
    thresholds = list(inputs.thresholds)
    plan = prepare(source, inputs, by=by, drop_nulls=drop_nulls, engine=engine, drawn=True)
    options: dict[str, Any] = {"metrics": None, "beta": parameters["beta"]}
    if offers(inputs.task, "thresholds"):
        options["threshold"] = thresholds
    if offers(inputs.task, "alpha"):
        options["alpha"] = parameters["alpha"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = _tables(plan, thresholds, options, False, inputs.bootstrap)
    warn_once(caught)
    return replicate_intervals(table, plan.spec.keys[:-1], inputs.bootstrap, level)


#: The count in a unit's warning of multiclass rows whose scores do not sum to 1.
_UNNORMALIZED = re.compile(r"(?<=the scores of )(\d+)(?= row\(s\) do not sum to 1)")


def warn_once(caught: list[warnings.WarningMessage]) -> None:
    """Re-issue the units' warnings: those that count rows once, summed; others as they were."""
    outside = [w for w in caught if "log_loss and brier are null" in str(w.message)]
    unnormalized = [m for w in caught if (m := _UNNORMALIZED.search(str(w.message)))]
    domains: dict[str, list[int]] = {}
    for w in caught:
        if _UNNORMALIZED.search(str(w.message)):
            continue
        if isinstance(w.message, DomainWarning):
            for what, (rows, groups) in w.message.problems.items():
                total = domains.setdefault(what, [0, 0])
                total[0], total[1] = total[0] + rows, total[1] + groups
        elif w not in outside:
            warnings.warn(w.message, stacklevel=caller_level())
    if domains:
        warnings.warn(DomainWarning(domains), stacklevel=caller_level())
    if unnormalized:
        rows = sum(int(m.group(1)) for m in unnormalized)
        warnings.warn(
            _UNNORMALIZED.sub(str(rows), unnormalized[0].string, count=1), stacklevel=caller_level()
        )
    if outside:
        counts = [re.search(r"null for (\d+)", str(w.message)) for w in outside]
        nulls = sum(int(m.group(1)) for m in counts if m)
        warnings.warn(
            f"log_loss and brier are null for {nulls} group row(s) whose scores fall outside "
            "[0, 1]; they need probabilities (other metrics are computed)",
            stacklevel=caller_level(),
        )


def warm() -> float:
    """Load numba and the compiled loops now (about a second, once per process); the seconds.

    Their machine code comes from numba's on-disk cache (compiled there on first use ever), but
    loading it costs about a second in each new process: call this at start-up to keep that
    out of the first evaluation.

    >>> warm() >= 0.0
    True
    """
    started = time.perf_counter()
    if loops() is not None:
        shard, none = np.zeros(1, np.uint64), np.zeros(1, np.int64)
        scatterloops.shard_counts(shard, none.copy())
        scatterloops.destinations(shard, none, 1, none.copy())
        for kind, kept in ((np.int64, np.int32), (np.int64, np.int64), (np.uint8, np.uint8)):
            scatterloops.put(np.zeros(1, kind), none, np.zeros(1, kept))
        scatterloops.put(np.zeros(1), none, np.zeros(1))  # (Float64 columns)
        frame = pl.DataFrame({"g": ["a", "b"], "y": [True, False], "p": [0.75, 0.25]})
        local_accumulate(frame, Accumulation(label="y", score="p", by="g", precision=2))
        # the bootstrap's loops (:meth:`CompiledCells.replicated`)
        drawn = Evaluation(label="y", score="p", ci="bootstrap", bootstrap=1, precision=2)
        local_evaluate(frame, drawn)
        # DeLong's sums, of placed rows and of exact runs
        for precision in (2, "exact"):
            local_evaluate(
                frame, Evaluation(label="y", score="p", ci="wilson", precision=precision)
            )
    return time.perf_counter() - started


def evaluate_folds(source: Source, evaluation: Evaluation) -> pl.DataFrame:
    """``evaluate(..., folds=, repeats=)``: accumulate once, the cells as keys; fold_metrics."""
    e = evaluation
    keys = [] if e.by is None else [e.by] if isinstance(e.by, str) else list(e.by)
    cells = fold_cells(e.folds, e.repeats, keys)
    assert e.folds is not None  # fold_cells raised otherwise
    binary = offers(e.task, "thresholds")
    accumulation = e.accumulation(
        by=[*keys, *cells], row_id=None, seed=0, thresholds=e.threshold if binary else (0.5,)
    )
    return fold_metrics(
        local_accumulate(source, accumulation),
        e.folds,
        e.repeats,
        threshold=e.threshold if binary else None,
        alpha=e.alpha,
        beta=e.beta,
        metrics=e.metrics,
        ci=e.ci,
        level=e.level,
        auc_method=e.auc_method,
    )
