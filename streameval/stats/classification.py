"""scikit-learn's ``classification_report`` printout, per group, from a state's confusion counts.

Each group's block is the text ``sklearn.metrics.classification_report(y_true, y_pred,
labels=classes, sample_weight=w, digits=digits)`` prints for that group's rows: a row per
class (precision, recall, F1 and support), then accuracy and the macro and weighted
averages. A class with no prediction (or no support) has precision (or recall) 0, and F1 is
``2·tp / (2·tp + fp + fn)``, 0 where that is 0/0: scikit-learn's ``zero_division="warn"``
values, without its warning. Supports are counts, or weights (to 12 significant digits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ..errors import InputError
from ..states.data import StateData

HEADERS = ("precision", "recall", "f1-score", "support")
#: The longest heading of the averages' rows, which sets the names' column's least width.
LONGEST = "weighted avg"


def _ratio(num: npt.NDArray[np.float64], den: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``num / den``, 0 where ``den`` is 0."""
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den != 0)
    return out


def classification_report(
    names: Sequence[str], matrix: Sequence[Sequence[float]], digits: int = 2, weighted: bool = False
) -> str:
    """The report of one confusion matrix (rows: actual class, columns: predicted).

    Parameters
    ----------
    names : sequence of str
        The classes' names, in the matrix's order.
    matrix : 2-d sequence of float
        The weight of each (actual, predicted) pair.
    digits : int
        Digits after the decimal point.
    weighted : bool
        Whether the counts are weights (supports printed as floats).

    Returns
    -------
    str
        scikit-learn's layout, ending in a newline.

    Examples
    --------
    >>> matrix = [[3, 1, 0], [0, 2, 0], [1, 0, 0]]  # rows: actual; columns: predicted
    >>> print(classification_report(["ant", "bee", "cat"], matrix), end="")
                  precision    recall  f1-score   support
    <BLANKLINE>
             ant       0.75      0.75      0.75         4
             bee       0.67      1.00      0.80         2
             cat       0.00      0.00      0.00         1
    <BLANKLINE>
        accuracy                           0.71         7
       macro avg       0.47      0.58      0.52         7
    weighted avg       0.62      0.71      0.66         7

    """
    cells = np.asarray(matrix, dtype=np.float64)
    tp = np.diagonal(cells).copy()
    support = cells.sum(axis=1)
    predicted = cells.sum(axis=0)
    precision = _ratio(tp, predicted)
    recall = _ratio(tp, support)
    f1 = _ratio(2 * tp, 2 * tp + (predicted - tp) + (support - tp))
    total = float(support.sum())

    def count(value: float) -> Any:
        # (weights: to 12 significant digits, where scikit-learn prints its own sum's last bits)
        return float(f"{value:.12g}") if weighted else int(np.rint(value))

    width = _width(names, digits)
    text = _rows(names, np.stack([precision, recall, f1, support], axis=1), count, width, digits)
    accuracy = float(tp.sum()) / total if total else 0.0
    accuracy_row = "{:>{width}s} " + " {:>9.{digits}}" * 2 + " {:>9.{digits}f}" + " {:>9}\n"
    text += accuracy_row.format(
        "accuracy", "", "", accuracy, count(total), width=width, digits=digits
    )
    for heading, weights in (("macro avg", np.ones_like(support)), ("weighted avg", support)):
        scale = float(weights.sum())
        means = [
            float((v * weights).sum()) / scale if scale else 0.0 for v in (precision, recall, f1)
        ]
        text += _ROW.format(heading, *means, count(total), width=width, digits=digits)
    return text


_ROW = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}\n"


def _width(names: Sequence[str], digits: int) -> int:
    """The names' column's width: the longest name, or the averages' longest heading."""
    return max(max((len(n) for n in names), default=0), len(LONGEST), digits)


def _rows(
    names: Sequence[str],
    values: npt.NDArray[np.float64],
    count: Any,
    width: int,
    digits: int,
) -> str:
    """The heading line, then a line per name of its precision, recall, F1 and support."""
    head = "{:>{width}s} " + " {:>9}" * len(HEADERS)
    text = head.format("", *HEADERS, width=width) + "\n\n"
    for name, (precision, recall, f1, support) in zip(names, values, strict=True):
        text += _ROW.format(name, precision, recall, f1, count(support), width=width, digits=digits)
    return text + "\n"


def multilabel_report(
    names: Sequence[str],
    labels: npt.NDArray[np.float64],
    averages: npt.NDArray[np.float64],
    digits: int = 2,
    weighted: bool = False,
) -> str:
    """The report of one group of a multilabel state (scikit-learn's multilabel layout).

    ``labels``: a row per label of precision, recall, F1 and support; ``averages``: the
    micro, macro, weighted and samples averages' precision, recall and F1. Each average's
    support is the labels' total.

    >>> import numpy as np
    >>> labels = np.array([[1.0, 1.0, 1.0, 3], [0.5, 0.5, 0.5, 2]])
    >>> averages = np.array([[0.8, 0.8, 0.8], [0.75, 0.75, 0.75], [0.8, 0.8, 0.8],
    ...                      [0.9, 0.8, 0.83]])
    >>> print(multilabel_report(["news", "sport"], labels, averages), end="")
                  precision    recall  f1-score   support
    <BLANKLINE>
            news       1.00      1.00      1.00         3
           sport       0.50      0.50      0.50         2
    <BLANKLINE>
       micro avg       0.80      0.80      0.80         5
       macro avg       0.75      0.75      0.75         5
    weighted avg       0.80      0.80      0.80         5
     samples avg       0.90      0.80      0.83         5
    """

    def count(value: float) -> Any:
        return float(f"{value:.12g}") if weighted else int(np.rint(value))

    width = _width(names, digits)
    text = _rows(names, labels, count, width, digits)
    total = float(labels[:, 3].sum())
    for heading, means in zip(AVERAGES, averages, strict=True):
        text += _ROW.format(heading, *means, count(total), width=width, digits=digits)
    return text


#: The averages' rows of a multilabel report, and the metric table's columns they print.
AVERAGES = ("micro avg", "macro avg", "weighted avg", "samples avg")
_AVERAGED = ("micro", "macro", "weighted", "samples")


def group_title(keys: Sequence[str], row: dict[str, Any]) -> str:
    """A group's heading: ``segment = a, day = 2026-10-01``.

    >>> group_title(["segment"], {"segment": "a"})
    'segment = a'
    """
    return ", ".join(f"{k} = {row[k]}" for k in keys)


def _reports(
    keys: Sequence[str],
    groups: Sequence[dict[str, Any]],
    names: Sequence[str],
    matrices: Sequence[npt.NDArray[np.float64]],
    digits: int,
    weighted: bool,
) -> str:
    """Each group's report, under its heading where there are keys, a blank line apart."""
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 0:
        raise InputError(f"expected digits to be an integer of 0 or more, got {digits!r}")
    blocks = []
    for group, matrix in zip(groups, matrices, strict=True):
        report = classification_report(names, matrix.tolist(), digits, weighted)
        blocks.append(f"{group_title(keys, group)}\n\n{report}" if keys else report)
    return "\n".join(blocks)


def binary_reports(state: StateData, table: pl.DataFrame, digits: int) -> str:
    """The report of each group of a binary state's metric table at one threshold.

    The classes are the negative and the positive label value, in scikit-learn's (sorted)
    order; a negative value never seen is named ``not <positive>`` and comes first.
    """
    keys = state.keys
    positive, negative = state.spec.positive, state.spec.negative
    names = [f"not {positive}" if negative is None else str(negative), str(positive)]
    try:
        flip = negative is not None and bool(positive < negative)
    except TypeError:
        flip = False
    table = table.sort(keys, nulls_last=False) if keys else table
    groups = table.select(keys).to_dicts() if keys else [{}] * table.height
    counts = table.select("tn", "fp", "fn", "tp").cast(pl.Float64).to_numpy()
    matrices = [c.reshape(2, 2)[::-1, ::-1] if flip else c.reshape(2, 2) for c in counts]
    return _reports(
        keys, groups, names[::-1] if flip else names, matrices, digits, state.spec.weighted
    )


def label_reports(state: StateData, labels: pl.DataFrame, table: pl.DataFrame, digits: int) -> str:
    """The report of each group of a multilabel state: its per-label and metric tables."""
    keys = state.keys
    names = [str(c) for c in state.spec.classes]
    table = table.sort(keys, nulls_last=False) if keys else table
    labels = labels.sort(keys, nulls_last=False, maintain_order=True) if keys else labels
    per_label = labels.select("precision", "recall", "f1", "support").cast(pl.Float64)
    blocks = per_label.to_numpy().reshape(table.height, len(names), 4)
    columns = [
        f"{metric}_{average}" for average in _AVERAGED for metric in ("precision", "recall", "f1")
    ]
    averages = table.select(columns).to_numpy().reshape(table.height, len(AVERAGES), 3)
    groups = table.select(keys).to_dicts() if keys else [{}] * table.height
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 0:
        raise InputError(f"expected digits to be an integer of 0 or more, got {digits!r}")
    out = []
    for group, block, means in zip(groups, blocks, averages, strict=True):
        report = multilabel_report(names, block, means, digits, state.spec.weighted)
        out.append(f"{group_title(keys, group)}\n\n{report}" if keys else report)
    return "\n".join(out)


def class_reports(state: StateData, cells: pl.DataFrame, digits: int) -> str:
    """The report of each group of a multiclass state, from its confusion matrix's cells."""
    keys = state.keys
    classes = list(state.spec.classes)
    index = range(len(classes))
    groups = cells.select(keys).unique().sort(keys, nulls_last=False) if keys else pl.DataFrame()
    numbered = groups.with_row_index("_g")
    coded = (
        cells.join(numbered, on=keys, how="left", nulls_equal=True, maintain_order="left_right")
        if keys
        else cells
    ).select(
        pl.col("_g") if keys else pl.lit(0, pl.UInt32).alias("_g"),
        *(
            pl.col(c).replace_strict(classes, index, return_dtype=pl.Int64)
            for c in ("actual", "predicted")
        ),
        pl.col("count").cast(pl.Float64),
    )
    matrices = np.zeros((groups.height if keys else 1, len(classes), len(classes)))
    g, actual, predicted, count = (coded[c].to_numpy() for c in coded.columns)
    np.add.at(matrices, (g, actual, predicted), count)
    rows = groups.to_dicts() if keys else [{}]
    names = [str(c) for c in classes]
    return _reports(keys, rows, names, list(matrices), digits, state.spec.weighted)
