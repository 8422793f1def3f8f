"""A self-contained HTML report: metric table, worst segments first, curves per segment.

One file that works offline (no external scripts, styles or fonts): the metric table with
intervals (sortable by clicking a header), the groups ranked worst first by AUC (or accuracy,
or RMSE) with their size, and the curves per group as embedded PNG images. Plots need the
``plot`` extra (matplotlib).
"""

from __future__ import annotations

import base64
import html
import io
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from .plot import legend_entries, natural_key, plot_confusion, plot_curve
from .stats.summary import negative_name, r_level

if TYPE_CHECKING:
    from .state import State

RANKING = {"binary": ("roc_auc", False), "multiclass": ("accuracy", False),
           "regression": ("rmse", True)}  # fmt: skip
SORT_SCRIPT = """
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
  var ok = Array.from(document.images).filter(function (im) { return im.naturalWidth > 0; });
  document.body.dataset.imagesLoaded = String(ok.length);
});
"""
STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 12px; margin-bottom: 2em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f0f0f0; cursor: pointer; position: sticky; top: 0; }
td.key, th.key { text-align: left; white-space: nowrap; }
ul.legend { list-style: none; padding: 0; margin: 0 0 1em; font-size: 12px; columns: 4 12em; }
ul.legend .swatch { display: inline-block; width: 2em; height: 0; margin-right: 0.5em;
  vertical-align: middle; border-top-width: 3px; }
.wrap { overflow-x: auto; max-width: 100%; }
img { max-width: 100%; border: 1px solid #eee; margin: 4px 0; }
.note { color: #666; font-size: 12px; }
"""


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(value: Any, key: bool = False) -> str:
    attrs = ' class="key"' if key else ""
    if value is None:
        return f'<td{attrs} data-v="">–</td>'
    if isinstance(value, float):
        shown = f"{value:.3g}" if value != 0 and abs(value) < 1e-3 else f"{value:.4f}"
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


def table_html(table: pl.DataFrame, keys: list[str], table_id: str) -> str:
    """A sortable HTML table (cells carry their raw value for sorting; keys do not wrap)."""
    head = "".join(
        f'<th class="{"key" if c in keys else ""}">{html.escape(c)}</th>' for c in table.columns
    )
    is_key = [c in keys for c in table.columns]
    rows = []
    for row in table.iter_rows():
        cells = "".join(_cell(v, k) for v, k in zip(row, is_key, strict=True))
        rows.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="wrap"><table id="{table_id}" class="sortable"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def build_report(state: State, *, title: str = "streameval report", level: float = 0.95) -> str:
    """The report of a state as one HTML string.

    >>> import polars as pl, streameval as se
    >>> from streameval.report import build_report
    >>> df = pl.DataFrame({"g": ["a", "a", "b", "b"], "y": [0, 1, 0, 1], "p": [0.2, 0.7, 0.6, 0.4]})
    >>> text = build_report(se.accumulate(df, label="y", score="p", by="g"))
    >>> text.count('<img '), "http" in text.split("<body")[1]
    (4, False)
    """
    kind = state.spec.kind
    keys = state.keys
    if kind in ("binary", "multiclass"):
        table = state.metrics(ci="wilson", level=level)
    else:
        table = state.metrics()
    table = natural_order(table, keys)
    metric, descending = RANKING.get(kind, ("n", True))
    sections = [f"<h1>{html.escape(title)}</h1>", _summary_line(state, table)]
    sections += ["<h2>Metrics</h2>", table_html(table, keys, "metrics")]
    if keys and metric in table.columns:
        ranked = table.sort(metric, descending=descending, nulls_last=True).select(
            *keys, "n", metric, *[c for c in (f"{metric}_lo", f"{metric}_hi") if c in table.columns]
        )
        ranked = ranked.unique(keys, keep="first", maintain_order=True)
        sections += [
            f"<h2>Groups ranked worst first (by {metric})</h2>",
            table_html(ranked, keys, "ranked"),
        ]
    sections += _figures(state)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "\n".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n"
        f'<p class="note">Generated {generated}. Intervals: Wilson for proportions, DeLong '
        f"for AUC, at level {level}.</p>\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )


def _summary_line(state: State, table: pl.DataFrame) -> str:
    spec = state.spec
    groups = table.select(state.keys).n_unique() if state.keys else 1
    label = html.escape(spec.label)
    if spec.kind in ("binary", "paired"):
        negative = negative_name(spec.positive, spec.negative)
        classes = f"positive class {r_level(spec.positive)}, negative class {negative}"
        label += f" ({html.escape(classes)})"
    return (
        f'<p class="note">Task {spec.kind}, label {label}, {groups} group(s)'
        f"{' by ' + html.escape(', '.join(state.keys)) if state.keys else ''}, "
        f"precision {'exact' if spec.exact else f'{spec.precision} bits'}.</p>"
    )


def _figures(state: State) -> list[str]:
    facet = state.keys[0] if state.keys else None
    out: list[str] = []
    if state.spec.kind == "binary":
        out.append("<h2>Curves</h2>")
        kinds = [("roc", "ROC"), ("pr", "Precision–recall"), ("cost", "Cost curves")]
        if table_in_unit_interval(state):
            kinds.append(("calibration", "Calibration"))
        for kind, name in kinds:
            fig = plot_curve(state, kind, facet=facet)
            legend = _legend_html(fig, kind)
            out.append(f'<h3>{name}</h3><img alt="{kind} curves" src="data:image/png;base64,'
                       f'{_png(fig)}">{legend}')  # fmt: skip
    if state.spec.kind == "multiclass":
        out.append("<h2>Confusion matrix (all groups, normalized by actual class)</h2>")
        fig = plot_confusion(state, normalize="true")
        out.append(f'<img alt="confusion matrix" src="data:image/png;base64,{_png(fig)}">')
        out += [
            "<h2>Per class</h2>",
            table_html(
                natural_order(state.per_class(ci="wilson"), state.keys), state.keys, "per-class"
            ),
        ]
    return out


_DASHES = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dashed"}


def _legend_html(fig: Any, kind: str) -> str:
    """The figure's legend as an HTML list (label, colour and line style per line)."""
    entries = legend_entries(fig)
    if not entries:
        return ""
    items = "".join(
        f'<li data-color="{colour}" data-style="{html.escape(style)}"><span class="swatch" '
        f'style="border-top-style: {_DASHES.get(style, "solid")}; border-top-color: '
        f'{colour}"></span><span class="label">{html.escape(label)}</span></li>'
        for label, colour, style in entries
    )
    return f'<ul class="legend" data-kind="{kind}">{items}</ul>'


def table_in_unit_interval(state: State) -> bool:
    """Whether every score of a binary state is a probability (calibration applies)."""
    from .bucketing import key_to_float

    score = key_to_float(pl.col("bucket"))
    low, high = state.table.select(score.min().alias("low"), score.max().alias("high")).row(0)
    return low is not None and low >= 0 and high <= 1


def write_report(state: State, path: str | os.PathLike[str], **options: Any) -> None:
    """Write :func:`build_report` to ``path`` (atomically)."""
    text = build_report(state, **options)
    target = os.fspath(path)
    tmp = f"{target}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, target)
