"""The State: a tidy Polars table of sums plus the spec that says how it was computed."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl

from .errors import InputError, SpecMismatchError
from .spec import Spec
from .states import binary


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

    def metrics(self, threshold: float | Sequence[float] = 0.5) -> pl.DataFrame:
        """Metric table, one row per group (and per threshold when a list is given)."""
        from .metrics.binary import metric_table

        return metric_table(self, threshold)

    def roc_curve(self) -> pl.DataFrame:
        """ROC points per group: keys, threshold, fpr, tpr (as sklearn's ``roc_curve``)."""
        from .metrics.curves import roc_curve

        return roc_curve(self)

    def pr_curve(self) -> pl.DataFrame:
        """PR points per group: keys, threshold, precision, recall."""
        from .metrics.curves import pr_curve

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
    ops = binary.merge_ops(spec)
    table = pl.concat([s.table for s in items], how="vertical")
    group = [*spec.keys, "bucket"]
    merged = (
        table.lazy()
        .group_by(group)
        .agg([getattr(pl.col(c), op)() for c, op in ops.items()])
        .collect()
    )
    return State(spec, merged.select(table.columns))
