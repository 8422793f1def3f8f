"""Per-label table of a multilabel state: each label's confusion counts, metrics and AUC.

A label's row is the binary task's metric row of its score histogram at the state's
threshold (:func:`binary_view`): scikit-learn's
``multilabel_confusion_matrix`` counts (``tn``, ``fp``, ``fn``, ``tp``) and the label's
``precision_score`` … ``jaccard_score`` (``average=None``, ``zero_division=0``), with its
AUC and average precision and their bucketing bounds.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import polars as pl

from ...metrics.declare import Metric, bound, count
from ...spec import ALL
from ...states.data import StateData
from ..binary import state as binary
from ..binary.metrics import COUNTS
from ..binary.metrics import metric_table as binary_metrics
from .state import LABEL, SUMS, binary_spec

#: The per-label table's columns (after the keys and ``class``).
DECLARED = (
    count("support"),
    count("tp"),
    count("fp"),
    count("fn"),
    count("tn"),
    Metric("precision", direction="higher", interval="proportion", counts=COUNTS["precision"]),
    Metric("recall", direction="higher", interval="proportion", counts=COUNTS["recall"]),
    Metric("f1", direction="higher"),
    Metric("jaccard", direction="higher"),
    Metric("roc_auc", direction="higher", interval="auc"),
    bound("roc_auc_error", "roc_auc"),
    Metric("average_precision", direction="higher"),
    bound("average_precision_error", "average_precision"),
)
PER_LABEL = [m.name for m in DECLARED]
_PARTS = ("_lo", "_hi", "_se")


@contextmanager
def scores_as_margins() -> Iterator[None]:
    """The labels' binary tables without the warning about scores outside [0, 1].

    A multilabel table has no log loss or Brier score: its scores may be margins.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "log_loss and brier are null", UserWarning)
        yield


def binary_view(state: StateData) -> StateData:
    """Part 1 as the binary state of every (group, label): keys, ``label_index``, buckets."""
    spec = binary_spec(state.spec)
    columns = [*spec.keys, "bucket", *binary.merge_ops(spec)]
    return StateData(spec, state.table.filter(pl.col("part") == 1).select(columns))


def rows_view(state: StateData) -> pl.DataFrame:
    """Part 0: per group, the rows' count and sums."""
    return state.table.filter(pl.col("part") == 0).select(*state.keys, "n", *SUMS)


def label_columns(table: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The per-label columns (and their intervals) of the labels' binary metric table."""
    tp, fp, fn = pl.col("tp"), pl.col("fp"), pl.col("fn")
    jaccard = pl.when(tp + fp + fn > 0).then(tp / (tp + fp + fn)).otherwise(0.0)
    table = table.with_columns(pl.col("positives").alias("support"), jaccard.alias("jaccard"))
    order = [
        c for name in PER_LABEL for c in (name, *(name + p for p in _PARTS)) if c in table.columns
    ]
    return table.select(*keys, *order)


def label_rows(state: StateData) -> pl.DataFrame:
    """Per group and label index (``label_index``): :data:`PER_LABEL`."""
    view = binary_view(state)
    with scores_as_margins():
        table = binary_metrics(view, state.spec.threshold)
    return label_columns(table, view.keys)


def named(rows: pl.DataFrame, state: StateData) -> pl.DataFrame:
    """Per-label rows with ``class`` (the label's name) for ``label_index``, after the keys."""
    classes = list(state.spec.classes)
    name = pl.col(LABEL).replace_strict(range(len(classes)), classes, return_dtype=None)
    out = rows.with_columns(name.alias("class")).select(
        *state.keys, "class", pl.exclude(*state.keys, LABEL, "class")
    )
    return out.drop(ALL) if ALL in out.columns else out
