"""What a unit's reading thread hands to its summing thread: :class:`Staged` rows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .metrics import runs_grouped

if TYPE_CHECKING:
    import polars as pl

    from ..spec import Spec
    from .runs import Runs


class Staged(ABC):
    """A unit's rows on their way to runs: the work left for the summing thread.

    :meth:`runs` finishes them (once; later calls give the same runs). :meth:`grouped` gives
    each group's aggregates for the metric formulas
    (:func:`streameval.tasks.binary.metrics.grouped_metrics`), from the runs, or straight from the
    rows where the kernel can (:class:`.compiled.CompiledCells`).
    """

    def runs(self) -> Runs | None:
        """The unit's runs (None: the Polars path must compute its state)."""
        if not hasattr(self, "_runs"):
            self._runs = self._finish()
        return self._runs

    @abstractmethod
    def _finish(self) -> Runs | None:
        """The runs, computed (each kernel its own way); :meth:`runs` calls it once."""

    def grouped(
        self, spec: Spec, thresholds: list[float], variance: bool = False
    ) -> pl.DataFrame | None:
        """The grouped frame of the metric formulas (:func:`.metrics.runs_grouped` of :meth:`runs`).

        ``variance`` adds each group's DeLong variance of the AUC (``_var``, NaN where it is
        undefined). None when the metrics must come from the state table (weighted, say).
        """
        runs = self.runs()
        return None if runs is None else runs_grouped(runs, spec, thresholds, variance)

    def sums(self, spec: Spec, options: Mapping[str, Any]) -> Any:
        """The unit's per-group sums straight from the rows, for its task's finalize.

        The task's :attr:`streameval.tasks.common.TaskPlan.finish` turns them into the metric table.
        ``options`` are :meth:`streameval.State.metrics`' (the kernel returns None for those
        it does not handle). None: the metrics come from :meth:`grouped` or the state.
        """
        return None

    def replicated(
        self, spec: Spec, thresholds: list[float], replicates: int
    ) -> pl.DataFrame | None:
        """The grouped frame of bootstrap replicates 0 … ``replicates`` (key ``replicate`` last).

        None where the kernel does not draw replicates (the Polars passes then compute them).
        """
        return None

    def replicated_sums(self, spec: Spec, options: Mapping[str, Any], replicates: int) -> Any:
        """:meth:`sums` of bootstrap replicates 0 … ``replicates`` (key ``replicate`` last).

        For kernels whose metric table comes from :meth:`sums` rather than a grouped frame
        (finished by the task's :attr:`streameval.tasks.common.TaskPlan.finish_replicated`); the
        rows must have been read with their keys. None where the kernel does not draw
        replicates (the Polars passes then compute them).
        """
        return None

    def table(self, schema: pl.Schema, constants: Mapping[str, Any]) -> pl.DataFrame | None:
        """The unit's state table straight from the rows, where the kernel builds one.

        None: the state comes from :meth:`runs` (or the Polars query without them).
        """
        return None
