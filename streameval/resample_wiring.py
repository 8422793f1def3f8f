"""``State.metrics(ci="bootstrap" | "jackknife")``: resampled intervals of every metric."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from .errors import InputError

if TYPE_CHECKING:
    from .state import State


def resampled_metrics(
    state: State,
    ci: str,
    level: float,
    jackknife: str | None,
    threshold: float | Sequence[float] | None,
    alpha: float,
    metrics: Sequence[str] | None,
) -> pl.DataFrame:
    """The metric table with bootstrap or jackknife intervals of every metric column."""
    from .resample import bootstrap_intervals, jackknife_intervals

    options: dict[str, Any] = {"metrics": metrics}
    if state.spec.kind == "binary":
        options["threshold"] = threshold
    elif threshold is not None:
        raise InputError(f"expected no threshold for a {state.spec.kind} state, got {threshold!r}")
    if state.spec.kind == "regression":
        options["alpha"] = alpha

    def table(s: State) -> pl.DataFrame:
        return s.metrics(**options)

    if ci == "bootstrap":
        if not getattr(state.spec, "replicates", 0):
            raise InputError(
                "expected a state accumulated with bootstrap=R for ci='bootstrap', got one "
                "without replicates; hint: se.accumulate(..., bootstrap=200, row_id='id')"
            )
        return bootstrap_intervals(state, table, level)
    if jackknife is None:
        raise InputError(
            "expected jackknife= naming a group key (a partition or day column) with "
            "ci='jackknife'; hint: metrics(ci='jackknife', jackknife='day')"
        )
    return jackknife_intervals(state, jackknife, table, level)
