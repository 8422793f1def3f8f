"""Plots of curves and confusion matrices (extra ``plot``: matplotlib, imported lazily).

Every function takes a state — or a mapping name → state to overlay several models or
days — and returns a matplotlib Figure; ``path`` saves it (PNG or SVG by extension).
``facet`` draws one small panel per value of a group key; the remaining keys' groups are
overlaid in each panel.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from .errors import InputError
from .state import State
from .tasks.registry import offers

if TYPE_CHECKING:
    from .state import State

KINDS = ("roc", "pr", "det", "cost", "gains", "calibration", "threshold")
#: The measures of the threshold curve, each a line (the long table's ``measure``).
MEASURES = ("precision", "recall", "f1")
MAX_PANELS = 36
AXES = {
    "roc": ("fpr", "tpr", "false positive rate", "true positive rate"),
    "pr": ("recall", "precision", "recall", "precision"),
    "det": ("fpr", "fnr", "false positive rate", "false negative rate"),
    "cost": ("probability_cost", "normalized_cost", "probability cost", "normalized cost"),
    "gains": ("population", "gain", "population reached", "positives captured"),
    "calibration": ("mean_predicted", "observed_rate", "mean prediction", "observed rate"),
    "threshold": ("threshold", "value", "threshold", "precision, recall, F1"),
}


#: Line colours: matplotlib's ten (tab10), then the light halves of tab20's pairs, then
#: ten darker hues; beyond 30 lines the colours come round again with another line style.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
    "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
    "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363",
)  # fmt: skip
LINE_STYLES = ("-", "--", ":", "-.")


def line_look(index: int) -> tuple[str, str]:
    """Colour and line style of a panel's ``index``-th line: 30 colours, then new styles.

    Parameters
    ----------
    index : int
        The line's position among a panel's lines, from 0.

    Returns
    -------
    tuple of str
        The colour (hex) from :data:`PALETTE` and the matplotlib line style from
        :data:`LINE_STYLES`.

    Examples
    --------
    >>> line_look(0), line_look(12), line_look(30)
    (('#1f77b4', '-'), ('#98df8a', '-'), ('#1f77b4', '--'))

    """
    return PALETTE[index % len(PALETTE)], LINE_STYLES[index // len(PALETTE) % len(LINE_STYLES)]


def natural_key(value: Any) -> tuple[Any, ...]:
    """Sort key of a group key's value: by its own type, strings with numbers by value.

    Numbers, dates and the like sort as themselves; strings split into text and digit runs
    ("seg 2" before "seg 10"); tuples part by part; None last.

    Parameters
    ----------
    value : Any
        A group key's value (or a tuple of them).

    Returns
    -------
    tuple
        A key that sorts the values of one type in that order.

    Examples
    --------
    >>> sorted(["seg 10", "seg 2", "seg 1b", None, "Seg 3"], key=natural_key)
    ['seg 1b', 'seg 2', 'Seg 3', 'seg 10', None]
    >>> sorted([(10, "b"), (2, "a")], key=natural_key)
    [(2, 'a'), (10, 'b')]

    """
    if value is None:
        return (2,)
    if isinstance(value, tuple):
        return (0, tuple(natural_key(v) for v in value))
    if isinstance(value, str):
        parts = re.split(r"(\d+)", value)
        return (1, tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in parts
                          if p), value)  # fmt: skip
    return (0, value)


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            "expected matplotlib for plots, but it is not installed; hint: "
            "pip install 'streameval[plot]'"
        ) from None
    return plt


def curve_table(state: State, kind: str) -> pl.DataFrame:
    """The points of one kind of curve, for every group of a binary state.

    Parameters
    ----------
    state : State
        A binary state.
    kind : {"roc", "pr", "det", "cost", "gains", "calibration", "threshold"}
        The curve: :meth:`State.roc_curve` (collinear points dropped),
        :meth:`~State.pr_curve`, :meth:`~State.det_curve`, :meth:`~State.cost_curve`,
        :meth:`~State.calibration_curve` (10 bins), :meth:`~State.gains` at 20 quantiles
        with each group's origin (population 0, gain 0) added, or
        :meth:`~State.threshold_curve` as a long table (a row per group, ``measure`` —
        precision, recall, f1 — and threshold, its ``value``).

    Returns
    -------
    DataFrame
        The curve's table, as the state method gives it (gains: sorted by population;
        threshold: long).

    Raises
    ------
    InputError
        An unknown ``kind``, or a state that is not binary.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 0, 1, 1, 0, 1],
    ...                    "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p", by="g", precision="exact")
    >>> curve_table(st, "roc").filter(pl.col("g") == "b")
    shape: (4, 4)
    ┌─────┬───────────┬─────┬─────┐
    │ g   ┆ threshold ┆ fpr ┆ tpr │
    │ --- ┆ ---       ┆ --- ┆ --- │
    │ str ┆ f64       ┆ f64 ┆ f64 │
    ╞═════╪═══════════╪═════╪═════╡
    │ b   ┆ inf       ┆ 0.0 ┆ 0.0 │
    │ b   ┆ 0.8       ┆ 0.0 ┆ 0.5 │
    │ b   ┆ 0.7       ┆ 0.0 ┆ 1.0 │
    │ b   ┆ 0.2       ┆ 1.0 ┆ 1.0 │
    └─────┴───────────┴─────┴─────┘

    """
    if kind not in KINDS:
        raise InputError(f"expected a curve kind among {list(KINDS)}, got {kind!r}")
    if kind == "roc":
        return state.roc_curve(drop_intermediate=True)
    if kind == "pr":
        return state.pr_curve()
    if kind == "det":
        return state.det_curve()
    if kind == "cost":
        return state.cost_curve()
    if kind == "calibration":
        return state.calibration_curve(10)
    if kind == "threshold":  # long: a line per measure
        wide = state.threshold_curve()
        long = wide.unpivot(list(MEASURES), index=[*state.keys, "threshold"],
                            variable_name="measure", value_name="value")  # fmt: skip
        order = pl.col("measure").replace_strict(list(MEASURES), range(len(MEASURES)))
        return long.sort(*state.keys, order, "threshold", nulls_last=False)
    curve = state.gains(20)
    start = curve.group_by(state.keys, maintain_order=True).first() if state.keys else curve.head(1)
    origin = start.with_columns(pl.lit(0.0).alias("population"), pl.lit(0.0).alias("gain"))
    return pl.concat([origin.select(curve.columns), curve]).sort(
        [*state.keys, "population"], nulls_last=False
    )


def _states(states: State | Mapping[str, State]) -> dict[str, State]:
    if isinstance(states, State):
        return {"": states}
    if not states or not all(isinstance(s, State) for s in states.values()):
        raise InputError(
            "expected a State or a mapping name → State to overlay, got "
            f"{type(states).__name__}; hint: plot_curve({{'model a': a, 'model b': b}})"
        )
    return dict(states)


def plot_curve(
    states: State | Mapping[str, State],
    kind: str = "roc",
    *,
    facet: str | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Any:
    """Draw ROC, PR, DET, cost, gains, calibration or threshold curves of binary states.

    Parameters
    ----------
    states : State or mapping of name to State
        One state, or several (models, days) drawn over each other.
    kind : {"roc", "pr", "det", "cost", "gains", "calibration", "threshold"}
        The curve; ``"threshold"`` draws precision, recall and F1 against the threshold, a
        line each (the reference texts' plot of precision and recall by threshold).
    facet : str, optional
        A group key: one panel per value (at most 36, the others are left out with a note).
    path : path, optional
        Save the figure there (``.png`` or ``.svg``).
    title : str, optional
        The title of a figure without facets (default: the curve's kind).

    Returns
    -------
    matplotlib.figure.Figure
        The figure: one panel (or one per ``facet`` value, six to a row), a line per state
        and group of the other keys, with a legend naming them.

    Raises
    ------
    InputError
        matplotlib not installed, an unknown ``kind``, states that are not binary, an empty
        mapping, or a ``facet`` that is not a group key.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> from streameval.plot import plot_curve
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> fig = plot_curve(se.accumulate(df, label="y", score="p"), "roc")
    >>> len(fig.axes)
    1

    Two days, one panel each:

    >>> days = pl.DataFrame({"day": ["d1", "d1", "d1", "d2", "d2", "d2"],
    ...                      "y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> fig = plot_curve(se.accumulate(days, label="y", score="p", by="day"), "pr", facet="day")
    >>> [ax.get_title() for ax in fig.axes]
    ['day = d1', 'day = d2']

    """
    plt = _pyplot()
    named = _states(states)
    x, y, xlabel, ylabel = AXES.get(kind, ("", "", "", ""))
    tables = {name: curve_table(state, kind) for name, state in named.items()}
    first = next(iter(named.values()))
    if facet is not None and facet not in first.keys:
        raise InputError(f"expected facet to be a group key among {first.keys}, got {facet!r}")
    panels = sorted(
        {v for t in tables.values() for v in (t[facet].unique().to_list() if facet else [None])},
        key=natural_key,
    )
    shown = panels[:MAX_PANELS]
    cols = min(len(shown), 6) or 1
    rows = math.ceil(len(shown) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.0 * rows), squeeze=False)
    for ax, value in zip(axes.flat, shown, strict=False):
        lines = 0
        for name, table in tables.items():
            part = table if facet is None else table.filter(pl.col(facet).eq_missing(value))
            others = [k for k in named[name].keys if k != facet]
            others += ["measure"] if "measure" in part.columns else []
            groups = part.partition_by(others, as_dict=True) if others else {(): part}
            for key, group in sorted(groups.items(), key=lambda kv: natural_key(kv[0])):
                label = " ".join(str(v) for v in (name, *key) if v != "") or None
                colour, style = line_look(lines)
                lines += 1
                ax.plot(group[x].to_numpy(), group[y].to_numpy(), label=label, linewidth=1.2,
                        color=colour, linestyle=style)  # fmt: skip
        if kind in ("roc", "calibration"):
            ax.plot([0, 1], [0, 1], color="0.7", linestyle=":", linewidth=0.8)
        ax.set_title(f"{facet} = {value}" if facet else (title or kind.upper()), fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize=6, loc="best", ncols=1 + lines // 16)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    if len(panels) > len(shown):
        fig.suptitle(f"first {len(shown)} of {len(panels)} {facet} values", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def plot_confusion(
    state: State,
    *,
    normalize: str | None = None,
    threshold: float = 0.5,
    path: str | os.PathLike[str] | None = None,
) -> Any:
    """Heatmap of the confusion matrix (a multiclass state, or a binary one at ``threshold``).

    Groups are summed over: pass a state of one group (or without keys) for one group's
    matrix. ``normalize`` is ``None``, ``"true"``, ``"pred"`` or ``"all"``.

    Parameters
    ----------
    state : State
        A multiclass or binary state.
    normalize : {None, "true", "pred", "all"}
        Divide by the actual class's total, the predicted class's or the whole matrix's
        (0 where that total is 0); None: the counts.
    threshold : float
        Binary: predicted positive means ``score >= threshold``.
    path : path, optional
        Save the figure there (``.png`` or ``.svg``).

    Returns
    -------
    matplotlib.figure.Figure
        The heatmap (actual classes in rows, predicted in columns, each cell's value
        written in it) with its colour bar.

    Raises
    ------
    InputError
        matplotlib not installed, a state neither multiclass nor binary, or an unknown
        ``normalize``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> from streameval.plot import plot_confusion
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a", "b", "c"],
    ...                    "pred": ["a", "b", "b", "a", "c", "c"]})
    >>> st = se.accumulate(df, task="multiclass", label="y", prediction="pred")
    >>> fig = plot_confusion(st, normalize="true")
    >>> ax = fig.axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel(), [t.get_text() for t in ax.texts[:3]]
    ('predicted', 'actual', ['1.00', '0.00', '0.00'])

    """
    plt = _pyplot()
    labels, matrix = confusion_matrix(state, normalize, threshold)
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(labels), 0.8 + 0.6 * len(labels)))
    image = ax.imshow(matrix, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=45)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlabel("predicted", fontsize=8)
    ax.set_ylabel("actual", fontsize=8)
    top = max((v for row in matrix for v in row), default=0.0)
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            text = f"{v:.2f}" if normalize else f"{v:g}"
            color = "white" if top and v > top / 2 else "black"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def confusion_matrix(
    state: State, normalize: str | None, threshold: float
) -> tuple[list[str], list[list[float]]]:
    """Class names and the confusion matrix summed over groups (normalized as asked).

    Parameters
    ----------
    state : State
        A multiclass or binary state.
    normalize : {None, "true", "pred", "all"}
        Divide by the actual class's total, the predicted class's or the whole matrix's
        (0 where that total is 0); None: the counts.
    threshold : float
        Binary: predicted positive means ``score >= threshold``.

    Returns
    -------
    labels : list of str
        The classes (binary: ``"negative"``, ``"positive"``).
    matrix : list of list of float
        The matrix, actual classes in rows and predicted classes in columns.

    Raises
    ------
    InputError
        A state neither multiclass nor binary, or an unknown ``normalize``.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 0, 1], "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p")
    >>> confusion_matrix(st, None, 0.5)
    (['negative', 'positive'], [[3.0, 0.0], [1.0, 2.0]])

    """
    if offers(state.spec.kind, "classes"):
        cells = (
            state.confusion_matrix()
            .group_by("actual", "predicted", maintain_order=True)
            .agg(pl.col("count").sum())
        )
        labels = [str(c) for c in state.spec.classes]
        count = {(str(a), str(p)): c for a, p, c in cells.iter_rows()}
        matrix = [[count.get((a, p), 0.0) for p in labels] for a in labels]
    elif offers(state.spec.kind, "thresholds"):
        row = state.metrics(threshold).select(pl.col("tn", "fp", "fn", "tp").sum()).row(0)
        labels = ["negative", "positive"]
        matrix = [[float(row[0]), float(row[1])], [float(row[2]), float(row[3])]]
    else:
        raise InputError(f"expected a binary or multiclass state, got a {state.spec.kind} state")
    if normalize is None:
        return labels, matrix
    if normalize not in ("true", "pred", "all"):
        raise InputError(f"expected normalize None, 'true', 'pred' or 'all', got {normalize!r}")
    if normalize == "all":
        total = sum(map(sum, matrix))
        return labels, [[v / total if total else 0.0 for v in r] for r in matrix]
    if normalize == "true":
        return labels, [[v / sum(r) if sum(r) else 0.0 for v in r] for r in matrix]
    columns = [sum(r[j] for r in matrix) for j in range(len(labels))]
    return labels, [
        [v / columns[j] if columns[j] else 0.0 for j, v in enumerate(r)] for r in matrix
    ]


def legend_entries(fig: Any) -> list[tuple[str, str, str]]:
    """The lines named in a figure's legends, in order: (label, colour, line style).

    The union over its panels (each label once, in the order first drawn).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure, such as :func:`plot_curve` draws.

    Returns
    -------
    list of tuple of str
        (label, colour as hex, line style) of each named line.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> df = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 0, 1, 1, 0, 1],
    ...                    "p": [0.1, 0.4, 0.35, 0.8, 0.2, 0.7]})
    >>> st = se.accumulate(df, label="y", score="p", by="g")
    >>> legend_entries(plot_curve(st, "roc"))
    [('a', '#1f77b4', '-'), ('b', '#ff7f0e', '-')]

    """
    from matplotlib.colors import to_hex

    seen: dict[str, tuple[str, str, str]] = {}
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in seen:
                seen[label] = (label, to_hex(handle.get_color()), str(handle.get_linestyle()))
    return list(seen.values())
