"""caret-like printed summary of a confusion matrix and its statistics, per group.

The layout and number formatting follow caret's ``print(confusionMatrix(...))``: overall
statistics rounded to 4 decimals, p-values as R's ``format.pval`` with 4 digits, per-class
statistics with 4 significant digits. Accuracy's interval is Clopper–Pearson, as caret's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from ..bucketing import EPS

if TYPE_CHECKING:
    from ..states.data import StateData

DIGITS = 4
BY_CLASS = [
    ("Sensitivity", "recall"),
    ("Specificity", "specificity"),
    ("Pos Pred Value", "precision"),
    ("Neg Pred Value", "npv"),
    ("Prevalence", "prevalence"),
    ("Detection Rate", "detection_rate"),
    ("Detection Prevalence", "detection_prevalence"),
    ("Balanced Accuracy", "balanced_accuracy"),
]


def _significant(x: float, digits: int) -> int:
    """Fewest significant digits (≤ digits) that show ``x`` as ``digits`` digits would."""
    if x == 0 or not math.isfinite(x):
        return 1
    target = float(f"{x:.{digits - 1}e}")
    for d in range(1, digits + 1):
        if float(f"{x:.{d - 1}e}") == target:
            return d
    return digits


def r_format(values: Sequence[float | None], digits: int = DIGITS) -> list[str]:
    """R's ``format(x, digits=)`` of a numeric vector: common decimals, fixed or scientific.

    >>> r_format([0.78125, 0.4, 0.325])
    ['0.7812', '0.4000', '0.3250']
    >>> r_format([1.1087e-05])
    ['1.109e-05']
    """
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return ["NA" if v is None else str(v) for v in values]
    decimals, sci_sig = 0, 1
    for v in finite:
        sig = _significant(v, digits)
        rounded = float(f"{v:.{sig - 1}e}")
        exponent = math.floor(math.log10(abs(rounded))) if rounded else 0
        decimals = max(decimals, sig - 1 - exponent)
        sci_sig = max(sci_sig, sig)
    fixed = [f"{v:.{decimals}f}" for v in finite]
    sci = [_r_sci(v, sci_sig) for v in finite]
    use_sci = max(map(len, fixed)) > max(map(len, sci))
    it = iter(sci if use_sci else fixed)
    return ["NA" if v is None else ("NaN" if not math.isfinite(v) else next(it)) for v in values]


def _r_sci(x: float, sig: int) -> str:
    mantissa, exponent = f"{x:.{sig - 1}e}".split("e")
    return f"{mantissa}e{int(exponent):+03d}"


def r_round(x: float | None) -> str:
    """``paste(round(x, 4))`` in R."""
    if x is None or not math.isfinite(x):
        return "NaN" if x is not None else "NA"
    return f"{round(x, DIGITS):.15g}"


def format_pvalues(values: Sequence[float | None], digits: int = DIGITS) -> list[str]:
    """R's ``format.pval(values, digits=)`` (values below machine epsilon as ``< eps``).

    >>> format_pvalues([9.8e-45, 1.1087e-05])
    ['< 2.2e-16', '1.109e-05']
    >>> format_pvalues([9.2e-23, 0.028738])
    ['< 2e-16', '0.02874']
    """
    shown = [v for v in values if v is not None and v >= EPS]
    formatted = {
        id(v): s for v, s in zip(shown, [r_format([v], digits)[0] for v in shown], strict=True)
    }
    small = max(1, digits - 2)
    sep = " "
    if shown:
        width = max(len(s) for s in formatted.values())
        if small > 1 and small + 6 > width:
            small = max(1, width - 7)
        sep = "" if small == 1 and width <= 6 else " "
    elif small == 1:
        sep = ""
    eps = f"{EPS:.{small - 1}e}".split("e")
    tiny = f"<{sep}{eps[0]}e{int(eps[1]):+03d}"
    return ["NA" if v is None else (formatted[id(v)] if v >= EPS else tiny) for v in values]


def _block(names: Sequence[str], texts: Sequence[str]) -> list[str]:
    """R's print of a two-column character matrix (names right-justified, text left)."""
    labels = [f"{n} :" if n else "" for n in names]
    width = max(map(len, labels))
    text_width = max(map(len, texts))
    lines = [" " + " " * width + " " + " " * text_width]
    lines += [
        " " + label.rjust(width) + " " + text.ljust(text_width)
        for label, text in zip(labels, texts, strict=True)
    ]
    return lines


def _matrix(labels: Sequence[str], counts: Sequence[Sequence[float]]) -> list[str]:
    """The confusion table as R prints ``table(Prediction, Reference)``.

    ``counts[i][j]`` is the weight predicted as class i whose actual class is j.
    """
    cells = [r_numbers(row) for row in counts]
    columns = list(zip(*cells, strict=True)) if cells else []
    widths = [max(len(lab), *map(len, col)) for lab, col in zip(labels, columns, strict=True)]
    label_width = max(map(len, labels))
    head = max(len("Prediction"), label_width)
    lines = [" " * head + "Reference"]
    lines.append("Prediction".ljust(head) + _cells(labels, widths))
    for label, row in zip(labels, cells, strict=True):
        lines.append(label.ljust(label_width).rjust(head) + _cells(row, widths))
    return lines


def _cells(texts: Sequence[str], widths: Sequence[int]) -> str:
    return "".join(" " + t.rjust(w) for t, w in zip(texts, widths, strict=True))


def r_numbers(values: Sequence[float]) -> list[str]:
    """Counts as integers when whole, else R's format with 7 digits."""
    if all(float(v).is_integer() for v in values):
        return [str(int(v)) for v in values]
    return r_format(values, 7)


def _overall(row: dict[str, Any]) -> tuple[list[str], list[str]]:
    pvalues = format_pvalues([row["accuracy_pvalue"], row["mcnemar_pvalue"]])
    ci = f"({r_round(row['accuracy_lo'])}, {r_round(row['accuracy_hi'])})"
    names = ["Accuracy", f"{_percent(row['_level'])}% CI", "No Information Rate"]
    names += ["P-Value [Acc > NIR]", "", "Kappa", "", "Mcnemar's Test P-Value"]
    texts = [r_round(row["accuracy"]), ci, r_round(row["no_information_rate"]), pvalues[0]]
    texts += ["", r_round(row["cohen_kappa"]), "", pvalues[1]]
    return names, texts


def _percent(level: float) -> str:
    return f"{level * 100:.10g}"


def _title(keys: Sequence[str], row: dict[str, Any]) -> list[str]:
    if not keys:
        return []
    return [", ".join(f"{k} = {row[k]}" for k in keys), ""]


def binary_summary(state: StateData, table: pl.DataFrame, level: float) -> str:
    """Caret's two-class printout per group, the classes named and ordered as its levels.

    ``table`` is the state's metric table at one threshold with Clopper–Pearson intervals
    at ``level``.
    """
    positive = state.spec.positive
    labels, positive_first = class_labels(state.spec.positive, state.spec.negative)
    blocks = []
    for row in table.with_columns(pl.lit(level).alias("_level")).iter_rows(named=True):
        total = row["tp"] + row["fp"] + row["tn"] + row["fn"]
        counts = [[row["tn"], row["fn"]], [row["fp"], row["tp"]]]
        if positive_first:
            counts = [[row["tp"], row["fp"]], [row["fn"], row["tn"]]]
        names, texts = _overall(row)
        values = [
            row["recall"],
            row["specificity"],
            row["precision"],
            row["npv"],
            row["prevalence"],
            row["tp"] / total if total else None,
            (row["tp"] + row["fp"]) / total if total else None,
            row["balanced_accuracy"],
        ]
        names += ["", *(n for n, _ in BY_CLASS), "", "'Positive' Class", ""]
        texts += ["", *r_format(values), "", r_level(positive), ""]
        lines = ["Confusion Matrix and Statistics", "", *_matrix(labels, counts)]
        lines += _block(names, texts)
        blocks.append("\n".join(_title(state.keys, row) + lines))
    return "\n\n".join(blocks) + "\n"


def r_level(value: Any) -> str:
    """A label value as R names its factor level (``TRUE``, ``1`` for 1.0, ``ham``).

    >>> r_level(True), r_level(1.0), r_level(0.25), r_level("ham")
    ('TRUE', '1', '0.25', 'ham')
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def negative_name(positive: Any, negative: Any) -> str:
    """The negative class's name: its level, or ``not <positive>`` when no value is known.

    >>> negative_name("spam", "ham"), negative_name("spam", None), negative_name(1, 0)
    ('ham', 'not spam', '0')
    """
    return f"not {r_level(positive)}" if negative is None else r_level(negative)


def class_labels(positive: Any, negative: Any) -> tuple[list[str], bool]:
    """The two classes' names in caret's (sorted level) order, and whether positive is first.

    ``negative`` None (no negative value known: only positives were seen) is shown as
    ``not <positive>``, first.

    >>> class_labels("spam", "ham"), class_labels("ham", "spam")
    ((['ham', 'spam'], False), (['ham', 'spam'], True))
    >>> class_labels(True, False), class_labels("spam", None)
    ((['FALSE', 'TRUE'], False), (['not spam', 'spam'], False))
    """
    if negative is None:
        return [negative_name(positive, negative), r_level(positive)], False
    try:
        positive_first = bool(positive < negative)
    except TypeError:
        positive_first = False
    pair = [r_level(negative), r_level(positive)]
    return (pair[::-1] if positive_first else pair), positive_first


def multiclass_summary(
    state: StateData,
    tables: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
    level: float,
) -> str:
    """Caret's multiclass printout per group: overall statistics, statistics by class.

    ``tables`` are the state's accuracy and kappa (Clopper–Pearson intervals at ``level``),
    its per-class table and its confusion matrix.
    """
    keys = state.keys
    overall, per_class, matrix = tables
    classes = list(state.spec.classes)
    labels = [str(c) for c in classes]
    predicted = matrix.group_by(*keys, pl.col("predicted").alias("class"), maintain_order=True).agg(
        pl.col("count").sum().alias("_p")
    )
    total = pl.col("support").sum()
    by_class = (
        per_class.join(
            predicted,
            on=[*keys, "class"],
            how="left",
            nulls_equal=True,
            maintain_order="left_right",
        )
        .with_columns((total.over(keys) if keys else total).alias("_s"))
        .with_columns(
            (pl.col("recall") + pl.col("specificity")).truediv(2).alias("balanced_accuracy"),
            (pl.col("support") / pl.col("_s")).alias("prevalence"),
            (pl.col("support") * pl.col("recall") / pl.col("_s")).alias("detection_rate"),
            (pl.col("_p") / pl.col("_s")).alias("detection_prevalence"),
        )
    )
    blocks = []
    for row in overall.with_columns(pl.lit(level).alias("_level")).iter_rows(named=True):
        match = (
            pl.all_horizontal([pl.col(k).eq_missing(row[k]) for k in keys])
            if keys
            else pl.lit(True)
        )
        cells = matrix.filter(match)
        weight = {(r["predicted"], r["actual"]): r["count"] for r in cells.iter_rows(named=True)}
        counts = [[weight.get((p, a), 0.0) for a in classes] for p in classes]
        names, texts = _overall(row)
        lines = ["Confusion Matrix and Statistics", "", *_matrix(labels, counts), ""]
        lines += ["Overall Statistics", *_block(names, texts), "", "Statistics by Class:", ""]
        stats = by_class.filter(match)
        lines += _class_matrix(
            labels, [[r[c] for r in stats.iter_rows(named=True)] for _, c in BY_CLASS]
        )
        blocks.append("\n".join(_title(keys, row) + lines))
    return "\n\n".join(blocks) + "\n"


def _class_matrix(labels: Sequence[str], rows: Sequence[Sequence[float | None]]) -> list[str]:
    """R's print of the statistics-by-class matrix (each column formatted on its own)."""
    headers = [f"Class: {lab}" for lab in labels]
    columns = [r_format([row[j] for row in rows]) for j in range(len(labels))]
    widths = [max(len(h), *map(len, col)) for h, col in zip(headers, columns, strict=True)]
    name_width = max(len(n) for n, _ in BY_CLASS)
    lines = [" " * name_width + _cells(headers, widths)]
    for i, (name, _) in enumerate(BY_CLASS):
        lines.append(name.ljust(name_width) + _cells([col[i] for col in columns], widths))
    return lines
