"""A self-contained HTML report: metric table, changes over days, worst groups, curves.

One file that works offline (no external scripts, styles or fonts), drawn as inline SVG (no
plotting library, fast for hundreds of groups):

- the metric table: the summary metrics with their intervals (Wilson for proportions,
  DeLong for the AUC), sortable by clicking a header; every column behind a toggle;
- when a key is a date (or ``trend=`` names one), a trend panel per metric: each group's
  value per day with its interval band, and the days whose AUC differs from the baseline
  (the day before, or ``baseline=``) by DeLong's unpaired test at the report's level flagged
  on the chart and in the tables;
- the groups ranked worst first by AUC (or accuracy, or RMSE) with their size;
- the curves per group (ROC, precision–recall, cost, calibration), or the confusion matrix
  and per-class table of a multiclass state.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from . import charts
from . import progress as bar
from .bucketing import key_to_float
from .errors import InputError
from .metrics.declare import trends
from .metrics.registry import TABLES, direction, summary_columns
from .plot import AXES, MAX_PANELS, confusion_matrix, curve_table, line_look, natural_key
from .stats.summary import negative_name, r_level
from .tasks.registry import offering, offers

if TYPE_CHECKING:
    from .state import State

#: The metrics drawn over days, per task (those the table has).
TRENDS = {task: trends(TABLES[task]) for task in offering("metrics")}
#: The metric whose worst groups the report lists first, per task (worst: by its direction):
#: its first trend.
RANKING = {task: names[0] for task, names in TRENDS.items()}
#: Curves are drawn from buckets of at most this many mantissa bits, fewer while a group
#: has more than CURVE_POINTS buckets on average (a panel is 240 pixels wide).
CURVE_BITS, CURVE_POINTS = 7, 2000
CURVES = [
    ("roc", "ROC"),
    ("pr", "Precision–recall"),
    ("threshold", "Precision, recall and F1 by threshold"),
    ("cost", "Cost curves"),
]
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var rows = Array.from(body.rows);
    var down = th.dataset.order !== "asc";
    th.dataset.order = down ? "asc" : "desc";
    rows.sort(function (a, b) {
      var x = a.cells[i].dataset.v, y = b.cells[i].dataset.v;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return down ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
window.addEventListener("load", function () {
  var drawn = Array.from(document.querySelectorAll("svg.chart")).filter(function (svg) {
    var box = svg.getBoundingClientRect();
    return box.width > 0 && svg.querySelector("path.line, rect.cell") !== null;
  });
  document.body.dataset.chartsDrawn = String(drawn.length);
  var table = document.getElementById("metrics");
  if (table) { document.body.dataset.metricsWidth = String(table.offsetWidth); }
});
"""
STYLE = (
    """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f0f0f0; cursor: pointer; position: sticky; top: 0; }
td.key, th.key { text-align: left; white-space: nowrap; }
td .ci { color: #777; font-size: 10px; white-space: nowrap; }
tr.flag td { background: #fdecea; }
td.failed { background: #f8c9c4; font-weight: bold; }
td.warned { background: #fff1c2; }
.checks-line span { margin-right: 1.5em; }
ul.legend { list-style: none; padding: 0; margin: 0 0 1em; font-size: 12px; columns: 4 12em; }
ul.legend .swatch { display: inline-block; width: 2em; height: 0; margin-right: 0.5em;
  vertical-align: middle; border-top-width: 3px; }
.wrap { overflow-x: auto; max-width: 100%; }
details { margin-bottom: 2em; }
summary { cursor: pointer; color: #335; font-size: 13px; margin-bottom: 0.5em; }
.note { color: #666; font-size: 12px; }
"""
    + charts.STYLE
)


def _number(value: float) -> str:
    return f"{value:.3g}" if value != 0 and abs(value) < 1e-3 else f"{value:.4f}"


def _cell(
    value: Any,
    key: bool = False,
    interval: tuple[Any, Any] | None = None,
    failed: tuple[str, str] | None = None,
) -> str:
    attrs = ' class="key"' if key else ""
    if failed is not None:  # a check failed (or warned) on this cell: its reasons on hover
        attrs = f' class="{failed[0]}" title="{html.escape(failed[1])}"'
    if value is None:
        return f'<td{attrs} data-v="">–</td>'
    if isinstance(value, float):
        shown = _number(value)
        if interval is not None and None not in interval:
            lo, hi = interval
            shown += f' <span class="ci">[{_number(lo)}, {_number(hi)}]</span>'
        return f'<td{attrs} data-v="{value!r}">{shown}</td>'
    return f'<td{attrs} data-v="{html.escape(str(value))}">{html.escape(str(value))}</td>'


def natural_order(table: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The rows sorted by their keys as :func:`.plot.natural_key` orders them (stable).

    >>> t = pl.DataFrame({"g": ["s10", "s2", "s2"], "v": [1, 2, 3]})
    >>> natural_order(t, ["g"])["v"].to_list()
    [2, 3, 1]
    """
    if not keys or table.height < 2:
        return table
    rows = table.select(keys).rows()
    order = sorted(range(len(rows)), key=lambda i: natural_key(rows[i]))
    return table[order]


def table_html(
    table: pl.DataFrame,
    keys: list[str],
    table_id: str,
    *,
    intervals: bool = False,
    flagged: pl.Series | None = None,
    failed: dict[tuple[Any, ...], tuple[str, str]] | None = None,
) -> str:
    """A sortable HTML table (cells carry their raw value for sorting; keys do not wrap).

    With ``intervals``, a column ``m`` shows ``m_lo``/``m_hi`` in its cells (those columns
    are not shown on their own); rows where ``flagged`` is true are marked; the cells
    ``failed`` names (the row's key values and the column) are marked with their reason.
    """
    columns = table.columns
    paired = {
        c: (f"{c}_lo", f"{c}_hi")
        for c in columns
        if intervals and f"{c}_lo" in columns and f"{c}_hi" in columns
    }
    hidden = {c for pair in paired.values() for c in pair}
    shown = [c for c in columns if c not in hidden]
    head = "".join(
        f'<th class="{"key" if c in keys else ""}">{html.escape(c)}'
        f"{' [lo, hi]' if c in paired else ''}</th>"
        for c in shown
    )
    index = {c: i for i, c in enumerate(columns)}
    marks = [False] * table.height if flagged is None else flagged.fill_null(False).to_list()
    rows = []
    failed = failed or {}
    for row, mark in zip(table.iter_rows(), marks, strict=True):
        ids = tuple(str(row[index[k]]) for k in keys)
        cells = "".join(
            _cell(
                row[index[c]],
                c in keys,
                (row[index[paired[c][0]]], row[index[paired[c][1]]]) if c in paired else None,
                failed.get((*ids, c)),
            )
            for c in shown
        )
        rows.append(f'<tr class="flag">{cells}</tr>' if mark else f"<tr>{cells}</tr>")
    return (
        f'<div class="wrap"><table id="{table_id}" class="sortable"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def build_report(
    state: State,
    *,
    title: str = "streameval report",
    level: float = 0.95,
    trend: str | None = None,
    baseline: Any = "previous",
    checks: pl.DataFrame | None = None,
) -> str:
    """The report of a state as one HTML string.

    Parameters
    ----------
    state : State
        A binary, multiclass or regression state.
    title : str
        The report's title.
    level : float
        Confidence level of the intervals, and of the test that flags a changed AUC.
    trend : str, optional
        The date key drawn over (default: the first Date or Datetime key, if any).
    baseline : optional
        What each day's AUC is tested against: ``"previous"`` (the day before) or one value
        of the ``trend`` key.
    checks : DataFrame, optional
        A job's checks table (:mod:`streameval.jobs.checks`): the report opens with its
        verdicts, and the metric cells of the slices whose checks failed or warned are
        marked (with the reason on hover).

    Returns
    -------
    str
        A self-contained HTML page (no external scripts, styles or fonts): the metric
        table with intervals, the trends over days, the groups ranked worst first, and the
        curves per group (or a multiclass state's confusion matrix and per-class table).

    Raises
    ------
    InputError
        A paired state, a ``trend`` that is not a group key, or options
        :meth:`State.metrics <streameval.State.metrics>` refuses.

    Examples
    --------
    >>> import polars as pl, streameval as se
    >>> from streameval.report import build_report
    >>> df = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": [0, 1, 0, 1], "p": [0.2, 0.7, 0.6, 0.4]})
    >>> text = build_report(se.accumulate(df, label="y", score="p", by="g"))
    >>> text.count('<svg class="chart"'), "http:" in text.split("<body")[1]  # 2 groups × 5 curves
    (10, False)

    """
    return _build(state, title, level, trend, baseline, checks)[0]


def _build(
    state: State,
    title: str,
    level: float,
    trend: str | None,
    baseline: Any,
    checks: pl.DataFrame | None = None,
) -> tuple[str, pl.DataFrame]:
    """The report's text and its metric table."""
    kind = state.spec.kind
    keys = state.keys
    if not offers(kind, "metrics"):
        raise InputError(
            f"expected a {', '.join(offering('metrics'))} state for a report, got {kind!r}; "
            "hint: report each model's binary state"
        )
    day = _trend_key(state, trend)
    bar.expect(3, "parts")
    if any(m.interval != "none" for m in TABLES[kind]):  # (analytic intervals to show)
        table = state.metrics(ci="wilson", level=level)
    else:
        table = state.metrics()
    table = natural_order(table, keys)
    changes = _changes(state, day, baseline, level) if day and offers(kind, "curves") else None
    flagged = None
    if changes is not None:
        marks = changes.select(*keys, (pl.col("p_value") < 1 - level).alias("_flag"))
        table = table.join(marks, on=keys, how="left", nulls_equal=True, maintain_order="left")
        flagged, table = table["_flag"], table.drop("_flag")
    bar.step(name="metrics")
    summary = [c for c in summary_columns(kind) if c in table.columns]
    compact = table.select(
        *keys, *(c for n in summary for c in (n, f"{n}_lo", f"{n}_hi") if c in table.columns)
    )
    sections = [f"<h1>{html.escape(title)}</h1>", _summary_line(state, table)]
    failed = {} if checks is None else failed_cells(checks, keys)
    if checks is not None:
        sections += checks_html(checks)
    sections += [
        "<h2>Metrics</h2>",
        table_html(compact, keys, "metrics", intervals=True, flagged=flagged, failed=failed),
        f"<details><summary>All {table.width} columns</summary>"
        f"{table_html(table, keys, 'metrics-all', flagged=flagged, failed=failed)}</details>",
    ]
    if day is not None:
        sections += _trends(state, table, day, changes, level)
    bar.step(name="trends")
    metric = RANKING[kind]
    descending = direction(kind, metric) == "lower"  # (the worst first)
    if keys and metric in table.columns:
        ranked = table.sort(metric, descending=descending, nulls_last=True).select(
            *keys, "n", metric, *[c for c in (f"{metric}_lo", f"{metric}_hi") if c in table.columns]
        )
        ranked = ranked.unique(keys, keep="first", maintain_order=True)
        sections += [
            f"<h2>Groups ranked worst first (by {metric})</h2>",
            table_html(ranked, keys, "ranked", intervals=True),
        ]
    sections += _figures(state, day)
    bar.step(name="curves")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n".join(sections)
    text = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
        f'<p class="note">Generated {generated}. Intervals: Wilson for proportions, DeLong '
        f"for AUC, at level {level}.</p>\n<script>{SCRIPT}</script>\n</body></html>\n"
    )
    return text, table


#: The checks table's columns the report shows for each row that did not pass.
CHECK_COLUMNS = ("check", "severity", "window", "metric", "value", "baseline", "difference")
CHECK_TAIL = ("p_adjusted", "status", "reason")


def checks_html(checks: pl.DataFrame) -> list[str]:
    """The report's opening section: the count of each status, and the rows not passed."""
    counts = checks.group_by("status", maintain_order=True).len().sort("status")
    line = "".join(f"<span>{html.escape(str(s))}: {n:,}</span>" for s, n in counts.iter_rows())
    bad = checks.filter(pl.col("status").is_in(["fail", "warn"]))
    # the slice: the columns before the metric (the day, the group keys, a threshold)
    keys = [c for c in checks.columns[: checks.columns.index("metric")] if c not in CHECK_COLUMNS]
    section = ["<h2>Checks</h2>", f'<p class="checks-line">{line}</p>']
    if bad.height == 0:
        return [*section, '<p class="note">Every judged check passed.</p>']
    shown = bad.select("check", "severity", *keys, *CHECK_COLUMNS[2:], *CHECK_TAIL)
    return [*section, table_html(shown, keys, "checks", flagged=bad["status"] == "fail")]


def failed_cells(checks: pl.DataFrame, keys: list[str]) -> dict[tuple[Any, ...], tuple[str, str]]:
    """The metric cells to mark: (the slice's key values as text, metric) → (class, reasons).

    The class is ``failed`` when an error check failed on the cell, else ``warned``.
    """
    if any(k not in checks.columns for k in keys):
        return {}
    bad = checks.filter(pl.col("status").is_in(["fail", "warn"]))
    cells: dict[tuple[Any, ...], tuple[str, str]] = {}
    for row in bad.iter_rows(named=True):
        cell = (*(str(row[k]) for k in keys), row["metric"])
        text = f"{row['check']} ({row['status']}): {row['reason']}"
        kind, before = cells.get(cell, ("warned", ""))
        kind = "failed" if row["status"] == "fail" else kind
        cells[cell] = (kind, f"{before}; {text}" if before else text)
    return cells


def _trend_key(state: State, trend: str | None) -> str | None:
    """The key drawn over: ``trend``, else the first date key with two values or more."""
    schema = state.table.schema
    if trend is not None:
        if trend not in state.keys:
            raise InputError(
                f"expected trend to be a group key among {state.keys}, got {trend!r}; hint: "
                "accumulate with by=[..., 'day'] to draw metrics over days"
            )
        return trend
    for key in state.keys:
        dated = schema[key] == pl.Date or isinstance(schema[key], pl.Datetime)
        if dated and state.table[key].n_unique() > 1:
            return key
    return None


def _changes(state: State, day: str, baseline: Any, level: float) -> pl.DataFrame:
    """Each group's AUC against its baseline day: DeLong's unpaired test."""
    rest = [k for k in state.keys if k != day]
    tests = state.roc_test(day, baseline, level=level)
    return tests.select(*rest, day, "baseline", "roc_auc", "roc_auc_baseline", "difference",
                        "p_value")  # fmt: skip


def _series(
    table: pl.DataFrame, keys: list[str], facet: str | None, value: Any
) -> list[tuple[str, pl.DataFrame]]:
    """The lines of one panel: each combination of the keys other than ``facet``."""
    part = table if facet is None else table.filter(pl.col(facet).eq_missing(value))
    others = [k for k in keys if k != facet]
    groups = part.partition_by(others, as_dict=True, maintain_order=True) if others else {(): part}
    ordered = sorted(groups.items(), key=lambda kv: natural_key(kv[0]))
    return [(" ".join(str(v) for v in key), frame) for key, frame in ordered]


def _legend(labels: list[str], kind: str) -> str:
    """The lines of a figure as an HTML list (label, colour and line style per line)."""
    if not any(labels):
        return ""
    items = []
    for i, label in enumerate(labels):
        colour, style = line_look(i)
        items.append(
            f'<li data-color="{colour}" data-style="{html.escape(style)}"><span class="swatch" '
            f'style="border-top-style: {_DASHES.get(style, "solid")}; border-top-color: '
            f'{colour}"></span><span class="label">{html.escape(label)}</span></li>'
        )
    return f'<ul class="legend" data-kind="{kind}">{"".join(items)}</ul>'


_DASHES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dashed"}


def _span(values: pl.Series) -> tuple[float, float]:
    """The finite range of ``values`` (scores: any scale), widened where it is one point.

    >>> _span(pl.Series([0.2, 0.9, float("inf")])), _span(pl.Series([3.0]))
    ((0.2, 0.9), (2.5, 3.5))
    """
    finite = values.cast(pl.Float64).filter(values.cast(pl.Float64).is_finite())
    if finite.is_empty():
        return 0.0, 1.0
    low, high = float(finite.min()), float(finite.max())  # type: ignore[arg-type]
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def _figure(
    name: str,
    kind: str,
    table: pl.DataFrame,
    keys: list[str],
    facet: str | None,
    make: Callable[[str, pl.DataFrame, int], charts.Line],
    **axes: Any,
) -> str:
    """Panels of ``table`` (one per value of ``facet``), a line per other keys' group."""
    values = sorted(set(table[facet].to_list()), key=natural_key) if facet else [None]
    shown = values[:MAX_PANELS]
    panels = [(v, _series(table, keys, facet, v)) for v in shown]
    labels = sorted({label for _, lines in panels for label, _ in lines}, key=natural_key)
    index = {label: i for i, label in enumerate(labels)}
    svgs = []
    for value, lines in panels:
        drawn = [make(label, frame, index[label]) for label, frame in lines]
        heading = f"{facet} = {value}" if facet else name
        svgs.append(charts.panel(heading, drawn, **axes))
    more = (
        f'<p class="note">first {len(shown)} of {len(values)} {facet} values</p>'
        if len(values) > len(shown)
        else ""
    )
    return (
        f'<h3>{html.escape(name)}</h3><div class="panels" data-kind="{kind}">{"".join(svgs)}'
        f"</div>{more}{_legend(labels, kind)}"
    )


def _trends(
    state: State, table: pl.DataFrame, day: str, changes: pl.DataFrame | None, level: float
) -> list[str]:
    """A panel per metric: each group's value per day, its band, and the flagged days."""
    days = sorted(set(table[day].to_list()), key=natural_key)
    position = {d: float(i) for i, d in enumerate(days)}
    rest = [k for k in state.keys if k != day]
    out = [f"<h2>Over {html.escape(day)}</h2>"]
    if changes is not None:
        out += _changes_html(changes, rest, day, level)
        flags = changes.select(*rest, day, (pl.col("p_value") < 1 - level).alias("_flag"))
        table = table.join(flags, on=[*rest, day], how="left", nulls_equal=True,
                           maintain_order="left")  # fmt: skip
    metrics = [m for m in TRENDS[state.spec.kind] if m in table.columns]
    # a row key that varies within a group (a ranking table's cutoff k) draws a line of its own
    for m in TABLES[state.spec.kind]:
        if m.role == "identifier" and m.name in table.columns and table[m.name].n_unique() > 1:
            line = pl.format(f"{m.name}={{}}", pl.col(m.name).cast(pl.String).fill_null("all"))
            table = table.with_columns(line.alias(f"_{m.name}"))
            rest = [*rest, f"_{m.name}"]
    groups = _series(table, rest, None, None)  # (the table is in key order: days in order)
    index = {label: i for i, (label, _) in enumerate(groups)}
    svgs = []
    for metric in metrics:
        band = [c for c in (f"{metric}_lo", f"{metric}_hi") if c in table.columns]
        values = table.select(pl.concat_list(metric, *band).explode()).to_series()
        found = values.cast(pl.Float64).drop_nulls().drop_nans().to_numpy()
        low, high = (float(found.min()), float(found.max())) if found.size else (0.0, 1.0)
        pad = (high - low) * 0.05 or 0.05
        lines = []
        for label, frame in groups:
            flag = frame["_flag"] if metric == "roc_auc" and "_flag" in frame.columns else None
            ys = _floats(frame, metric)
            assert ys is not None
            lines.append(charts.Line(
                label or metric, np.array([position[d] for d in frame[day].to_list()]), ys,
                _floats(frame, f"{metric}_lo"), _floats(frame, f"{metric}_hi"),
                None if flag is None else flag.fill_null(False).to_numpy(), index[label],
            ))  # fmt: skip
        svgs.append(charts.panel(
            metric, lines, xlabel=str(day), ylabel=metric, x_range=(-0.3, len(days) - 0.7),
            y_range=(low - pad, high + pad), x_names=[str(d) for d in days],
        ))  # fmt: skip
    out.append(f'<div class="panels" data-kind="trend">{"".join(svgs)}</div>')
    out.append(_legend([label for label, _ in groups], "trend"))
    return out


def _changes_html(changes: pl.DataFrame, rest: list[str], day: str, level: float) -> list[str]:
    """The days whose AUC changed (flagged), and every test behind a toggle."""
    changed = changes["p_value"] < 1 - level
    what = "the day before" if changes["baseline"].n_unique() > 1 else "the baseline"
    keys = [*rest, day]
    flagged = natural_order(changes.filter(changed), keys)
    out = [
        f'<p class="note">Circled on the roc_auc panel, and marked in the tables: the '
        f"{flagged.height} of {changes.height} days whose AUC differs from {what} by DeLong's "
        f"unpaired test at level {level} (p &lt; {1 - level:.3g}).</p>"
    ]
    if flagged.height:
        out.append(table_html(flagged, keys, "changes", flagged=pl.Series([True] * flagged.height)))
    ordered = natural_order(changes.with_columns(changed.alias("_c")), keys)
    out.append(
        f"<details><summary>Every test ({changes.height})</summary>"
        f"{table_html(ordered.drop('_c'), keys, 'tests', flagged=ordered['_c'])}</details>"
    )
    return out


def _floats(frame: pl.DataFrame, column: str) -> np.ndarray | None:
    """A column as floats (nulls as NaN), or None where the frame has no such column."""
    if column not in frame.columns:
        return None
    return frame[column].cast(pl.Float64).fill_null(np.nan).to_numpy()


def _summary_line(state: State, table: pl.DataFrame) -> str:
    spec = state.spec
    groups = table.select(state.keys).n_unique() if state.keys else 1
    label = html.escape(spec.label)
    if offers(spec.kind, "positive"):
        negative = negative_name(spec.positive, spec.negative)
        classes = f"positive class {r_level(spec.positive)}, negative class {negative}"
        label += f" ({html.escape(classes)})"
    return (
        f'<p class="note">Task {spec.kind}, label {label}, {groups} group(s)'
        f"{' by ' + html.escape(', '.join(state.keys)) if state.keys else ''}, "
        f"precision {'exact' if spec.exact else f'{spec.precision} bits'}.</p>"
    )


def _figures(state: State, day: str | None) -> list[str]:
    """The curves of a binary state, or the confusion matrix of a multiclass one."""
    keys = state.keys
    facets = [k for k in keys if k != day] or keys
    facet = facets[0] if facets else None
    out: list[str] = []
    if offers(state.spec.kind, "curves"):
        out.append("<h2>Curves</h2>")
        state, note = _drawn(state)
        out.append(note)
        kinds = list(CURVES)
        if table_in_unit_interval(state):
            kinds.append(("calibration", "Calibration"))
        for kind, name in kinds:
            x, y, xlabel, ylabel = AXES[kind]
            table = curve_table(state, kind)
            ys = table[y].cast(pl.Float64).drop_nulls().drop_nans().to_numpy()
            top = float(ys.max()) if kind == "cost" and ys.size else 1.0
            lines = [*keys, "measure"] if "measure" in table.columns else keys
            x_range = _span(table[x]) if kind == "threshold" else (0.0, 1.0)

            def line(
                label: str, frame: pl.DataFrame, i: int, x: str = x, y: str = y
            ) -> charts.Line:
                return charts.Line(label, frame[x].to_numpy(), frame[y].to_numpy(), index=i)

            out.append(
                _figure(
                    name,
                    kind,
                    table,
                    lines,
                    facet,
                    make=line,
                    xlabel=xlabel,
                    ylabel=ylabel,
                    x_range=x_range,
                    y_range=(0.0, max(top, 1e-9)),
                    diagonal=kind in ("roc", "calibration"),
                )
            )
    if offers(state.spec.kind, "classes"):
        out.append("<h2>Confusion matrix (all groups, normalized by actual class)</h2>")
        out.append(_confusion_html(state))
        out += [
            "<h2>Per class</h2>",
            table_html(
                natural_order(state.per_class(ci="wilson"), state.keys), state.keys, "per-class"
            ),
        ]
    return out


def _drawn(state: State) -> tuple[State, str]:
    """The state the curves are drawn from, and a note saying so.

    Its buckets are merged to at most :data:`CURVE_BITS` mantissa bits, fewer while the
    groups average more than :data:`CURVE_POINTS` buckets.
    """
    spec = state.spec
    if spec.exact or state.table.height <= CURVE_POINTS:
        return state, ""
    groups = state.table.select(spec.keys).n_unique() if spec.keys else 1
    drawn = state
    for bits in range(min(CURVE_BITS, spec.precision), 2, -1):
        drawn = drawn.coarsen(bits)
        if drawn.table.height <= CURVE_POINTS * groups:
            break
    if drawn is state:
        return state, ""
    note = (
        f'<p class="note">Curves drawn from the score buckets merged to '
        f"{drawn.spec.precision} mantissa bits (the tables use all {spec.precision}).</p>"
    )
    return drawn, note


def _confusion_html(state: State) -> str:
    """The confusion matrix summed over groups, rows normalized, as a shaded SVG grid."""
    labels, matrix = confusion_matrix(state, "true", 0.5)
    size, left, top = 34, 90, 70
    n = len(labels)
    width, height = left + n * size + 10, top + n * size + 10
    out = [f'<svg class="chart" width="{width}" '
           f'height="{height}" role="img" aria-label="confusion matrix">',
           f'<text x="{left + n * size / 2:.0f}" y="12" class="title">predicted</text>',
           f'<text transform="translate(12 {top + n * size / 2:.0f}) rotate(-90)" '
           'class="ylabel">actual</text>']  # fmt: skip
    for i, name in enumerate(labels):
        text = html.escape(name)
        out.append(f'<text x="{left - 4}" y="{top + i * size + size / 2 + 3:.0f}" '
                   f'class="ytick">{text}</text>')  # fmt: skip
        out.append(f'<text transform="translate({left + i * size + size / 2 + 3:.0f} '
                   f'{top - 4}) rotate(-60)" class="ytick" style="text-anchor: start">{text}'
                   "</text>")  # fmt: skip
        for j, value in enumerate(matrix[i]):
            shade = round(255 - 200 * value)
            ink = "#fff" if value > 0.5 else "#000"
            out.append(
                f'<rect class="cell" x="{left + j * size}" y="{top + i * size}" width="{size}" '
                f'height="{size}" fill="rgb({shade},{shade},255)" data-v="{value!r}"/>'
                f'<text x="{left + j * size + size / 2:.0f}" '
                f'y="{top + i * size + size / 2 + 3:.0f}" class="xtick" fill="{ink}">'
                f"{value:.2f}</text>"
            )
    out.append("</svg>")
    return "".join(out)


def table_in_unit_interval(state: State) -> bool:
    """Whether every score of a binary state is a probability (calibration applies)."""
    score = key_to_float(pl.col("bucket"))
    low, high = state.table.select(score.min().alias("low"), score.max().alias("high")).row(0)
    return low is not None and low >= 0 and high <= 1


def write_report(
    state: State,
    path: str | os.PathLike[str],
    *,
    title: str = "streameval report",
    level: float = 0.95,
    trend: str | None = None,
    baseline: Any = "previous",
    checks: pl.DataFrame | None = None,
) -> tuple[int, int]:
    """Write :func:`build_report` to ``path`` (atomically); return its (groups, rows).

    Parameters
    ----------
    state : State
        A binary, multiclass or regression state.
    path : str or path-like
        The HTML file to write (replaced if it exists).
    title : str
        The report's title.
    level : float
        Confidence level of the intervals, and of the test that flags a changed AUC.
    trend : str, optional
        The date key drawn over (default: the first Date or Datetime key, if any).
    baseline : optional
        What each day's AUC is tested against: ``"previous"`` (the day before) or one value
        of the ``trend`` key.
    checks : DataFrame, optional
        A job's checks table, shown first, its failed cells marked (:func:`build_report`).

    Returns
    -------
    tuple of int
        The number of groups reported and the sum of the metric table's ``n`` (the rows
        evaluated).

    Raises
    ------
    InputError
        As :func:`build_report`.

    Examples
    --------
    >>> import os, tempfile, polars as pl, streameval as se
    >>> from streameval.report import write_report
    >>> df = pl.DataFrame({"g": ["a", "a", "a", "b", "b", "b"], "y": [0, 1, 1, 0, 1, 0],
    ...                    "p": [0.2, 0.7, 0.4, 0.3, 0.9, 0.6]})
    >>> path = os.path.join(tempfile.mkdtemp(), "report.html")
    >>> write_report(se.accumulate(df, label="y", score="p", by="g"), path)
    (2, 6)
    >>> open(path, encoding="utf-8").read().startswith("<!DOCTYPE html>")
    True

    """
    text, table = _build(state, title, level, trend, baseline, checks)
    target = os.fspath(path)
    tmp = f"{target}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, target)
    groups = table.select(state.keys).n_unique() if state.keys else 1
    return groups, int(table["n"].sum())
