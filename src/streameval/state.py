"""The State: a tidy Polars table of sums plus the spec that says how it was computed."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from .errors import InputError, SpecMismatchError
from .spec import Spec
from .states import kind_module


@dataclass(frozen=True)
class State:
    """Mergeable evaluation state.

    The table has one row per group and score bucket; every value column is a sum, so
    states of disjoint parts of the data merge by concatenating and re-aggregating.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]})
    >>> a = se.accumulate(df[:2], label="y", score="p", precision="exact")
    >>> b = se.accumulate(df[2:], label="y", score="p", precision="exact")
    >>> a.merge(b).metrics()["roc_auc"].item()
    0.75

    """

    spec: Spec
    table: pl.DataFrame

    @property
    def keys(self) -> list[str]:
        """Group key columns."""
        return list(self.spec.keys)

    def merge(self, *others: State) -> State:
        """Merge with other states of the same spec (sums re-aggregated)."""
        return merge([self, *others])

    def metrics(
        self,
        threshold: float | Sequence[float] | None = None,
        *,
        alpha: float = 0.5,
        metrics: Sequence[str] | None = None,
    ) -> pl.DataFrame:
        """Metric table, one row per group (binary: and per threshold when a list is given).

        Parameters
        ----------
        threshold : float or list of float, optional
            Binary: predicted positive means ``score >= threshold`` (default 0.5).
        alpha : float
            Regression: the quantile of ``mean_pinball_loss``.
        metrics : list of str, optional
            Only these metric columns (after the keys and ``n``). A metric asked for by name
            whose domain the data violates raises instead of being null with a warning.

        """
        kind = self.spec.kind
        if kind != "binary" and threshold is not None:
            raise InputError(
                f"expected no threshold for a {kind} state, got {threshold!r}; "
                "hint: thresholds apply to binary scores"
            )
        if kind == "regression":
            from .metrics.regression import metric_table as regression_table

            return regression_table(self, alpha=alpha, metrics=metrics)
        if kind == "multiclass":
            from .metrics.multiclass import metric_table as multiclass_table

            return multiclass_table(self, metrics=metrics)
        from .metrics.binary import COLUMNS, metric_table
        from .metrics.select import select_metrics

        fixed = ["n", "threshold"]
        names = select_metrics(metrics, [c for c in COLUMNS if c not in fixed])
        t = 0.5 if threshold is None else threshold
        if metrics is None or not {"log_loss", "brier"} & set(names):
            table = metric_table(self, t)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)
                try:
                    table = metric_table(self, t)
                except UserWarning as exc:
                    raise InputError(f"expected probabilities, but {exc}") from None
        return table.select(*self.keys, "n", *names, "threshold")

    def per_class(self) -> pl.DataFrame:
        """Multiclass: per group and class, support and one-vs-rest metrics (and AUC, AP)."""
        from .metrics.classes import per_class

        self._require("multiclass", "per_class")
        return per_class(self)

    def confusion_matrix(
        self, normalize: Literal["true", "pred", "all"] | None = None, *, wide: bool = False
    ) -> pl.DataFrame:
        """Multiclass: confusion matrix per group, long (keys, actual, predicted, count) or wide.

        ``normalize`` divides by the actual class's total (``"true"``), the predicted
        class's (``"pred"``) or the group's (``"all"``).
        """
        from .metrics.classes import confusion_matrix

        self._require("multiclass", "confusion_matrix")
        return confusion_matrix(self, normalize, wide=wide)

    def _require(self, kind: str, method: str) -> None:
        if self.spec.kind != kind:
            raise InputError(
                f"expected a {kind} state for {method}(), got a {self.spec.kind} state; "
                f"hint: accumulate with task='{kind}'"
            )

    def roc_curve(self) -> pl.DataFrame:
        """ROC points per group: keys, threshold, fpr, tpr (as sklearn's ``roc_curve``)."""
        from .metrics.curves import roc_curve

        self._require("binary", "roc_curve")
        return roc_curve(self)

    def pr_curve(self) -> pl.DataFrame:
        """PR points per group: keys, threshold, precision, recall."""
        from .metrics.curves import pr_curve

        self._require("binary", "pr_curve")
        return pr_curve(self)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write to Parquet (atomically), spec and schema version in the file metadata."""
        from .io import write_state

        write_state(self, path)

    def __len__(self) -> int:
        return self.table.height


def merge(states: Iterable[State]) -> State:
    """Merge states computed with the same spec.

    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, 0.7, 0.7]})
    >>> parts = [se.accumulate(df[i : i + 1], label="y", score="p") for i in range(3)]
    >>> se.merge(parts).table.height
    2
    """
    items = list(states)
    if not items:
        raise InputError("expected at least one state to merge, got none")
    spec = items[0].spec
    schema = items[0].table.schema
    for other in items[1:]:
        spec.check_mergeable(other.spec)
        if other.table.schema != schema:
            diffs = [
                f"{name}: {schema.get(name)} vs {dtype}"
                for name, dtype in other.table.schema.items()
                if schema.get(name) != dtype
            ]
            raise SpecMismatchError(
                "expected states with the same column types, but they differ ("
                + "; ".join(diffs)
                + "); hint: cast the group keys to one type before accumulating"
            )
    if len(items) == 1:
        return items[0]
    kind = kind_module(spec)
    ops = kind.merge_ops(spec)
    table = pl.concat([s.table for s in items], how="vertical")
    group = [*spec.keys, *kind.group_columns(spec)]
    merged = (
        table.lazy()
        .group_by(group)
        .agg([getattr(pl.col(c), op)() for c, op in ops.items()])
        .collect()
    )
    return State(spec, merged.select(table.columns))
