"""Multilabel state: per group the rows' set and ranking sums; per label a binary histogram.

One table, two parts (column ``part``), every value column a sum:

- part 0, per group (``label_index`` and ``bucket`` null): ``n`` rows, then the
  :data:`SUMS`: ``weight`` = Σw (the row count when
  unweighted) and Σw·value of each row's exact match, mismatched labels, sample precision,
  recall, F1 and Jaccard, label ranking average precision, coverage and ranking loss, at
  the spec's threshold;
- part 1, per group, label (``label_index``, in ``classes`` order) and score bucket: that
  label's binary score state (:mod:`streameval.tasks.binary.state`: ``pos``, ``neg``, and
  ``n`` when weighted, ``log_loss``, ``brier`` and ``psum`` when bucketed), cut at the
  threshold so that each label's confusion counts there are exact.

Each label's metrics (its confusion counts, AUC and average precision with their bounds)
are the binary task's, of the binary state part 1 holds
(:func:`streameval.tasks.multilabel.labels.binary_view`).
"""

from __future__ import annotations

import polars as pl

from ...spec import Spec
from ..binary import state as binary

#: Part 0's sums, per group (each Σw·value of a row's value; ``weight`` is Σw, the row count
#: when unweighted), as :func:`streameval.kernels.multilabel.row_sums` adds them up.
SUMS = (
    "weight",
    "exact_match",
    "mismatches",
    "sample_precision",
    "sample_recall",
    "sample_f1",
    "sample_jaccard",
    "lrap",
    "coverage",
    "ranking_loss",
)

#: The column of a label's index, in part 1.
LABEL = "label_index"
ALL_COLUMNS = ("part", LABEL, "bucket", "n", *SUMS, *binary.ALL_COLUMNS)


def binary_spec(spec: Spec) -> Spec:
    """The spec of the labels' binary states: the group keys and then the label's index."""
    return Spec(
        kind="binary",
        keys=(*spec.keys, LABEL),
        precision=spec.precision,
        splits=spec.splits,
        weighted=spec.weighted,
        label=spec.label,
        score=None,
        weight=spec.weight,
        positive=True,
        replicates=spec.replicates,
        seed=spec.seed,
        row_id=spec.row_id,
        schema_version=spec.schema_version,
    )


def merge_ops(spec: Spec) -> dict[str, str]:
    """Stored value columns and how each merges."""
    return dict.fromkeys(["n", *SUMS, *binary.merge_ops(binary_spec(spec))], "sum")


def group_columns(spec: Spec) -> list[str]:
    """Columns that identify a state row after the group keys."""
    return ["part", LABEL, "bucket"]


def check_found(spec: Spec) -> None:
    """Nothing to check: a multilabel state's labels are given, never found in the data."""


def reindex(table: pl.DataFrame, old: Spec, new: Spec) -> pl.DataFrame:
    """The table itself: a multilabel state holds no values found in the data to index."""
    return table


def check_merged(spec: Spec, table: pl.DataFrame) -> None:
    """Nothing to check: every merged table of this kind is a state of all its parts' rows."""


def ordered(table: pl.DataFrame, spec: Spec) -> pl.DataFrame:
    """A state table's columns in order and types, the value columns' nulls (other part) 0."""
    ops = merge_ops(spec)
    counts = ["n"] + ([] if spec.weighted else ["pos", "neg"])
    casts: dict[str, pl.DataType] = {"part": pl.Int8(), LABEL: pl.Int32(), "bucket": pl.Int64()}
    casts |= {c: pl.Int64() if c in counts else pl.Float64() for c in ops}
    order = [*spec.keys, *group_columns(spec), *ops]
    filled = table.with_columns(pl.col(list(ops)).fill_null(0))
    return filled.select(order).cast(casts)  # type: ignore[arg-type]
