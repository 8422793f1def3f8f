"""Line charts as inline SVG for the HTML report: vector data, no plotting library.

A :class:`Line` is one series of points (with an optional interval band and flagged points);
:func:`panel` draws the lines of one panel with its axes, ticks and title. Points closer than
half a pixel to the previous one are dropped, so a curve of thousands of buckets costs a few
hundred path commands and rendering a report stays fast.

>>> import numpy as np
>>> svg = panel("ROC", [Line("a", np.array([0.0, 0.5, 1.0]), np.array([0.0, 0.8, 1.0]))],
...             xlabel="fpr", ylabel="tpr", x_range=(0, 1), y_range=(0, 1))
>>> svg.startswith('<svg class="chart"'), svg.count("<path")
(True, 1)
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .plot import line_look

WIDTH, HEIGHT = 320, 230
LEFT, RIGHT, TOP, BOTTOM = 46, 30, 22, 38
DASHES = {"-": "", "--": "5 3", ":": "1.5 2.5", "-.": "6 2 1.5 2"}


@dataclass
class Line:
    """One series: ``xs``/``ys``, an optional band ``lo``–``hi`` and flagged points."""

    label: str
    xs: np.ndarray
    ys: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    flags: np.ndarray | None = None
    index: int = 0  # its colour and dash (:func:`streameval.plot.line_look`)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low``–``high`` (steps of 1, 2 or 5 × 10^k).

    >>> nice_ticks(0, 1)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(0.81, 0.87)
    [0.82, 0.84, 0.86]
    """
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [low]
    raw = span / count
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if m * base >= raw)
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(k * step, digits) for k in range(first, last + 1)]


def _label(value: float) -> str:
    return f"{value:g}"


def _thin(px: np.ndarray, py: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop points within half a pixel of the point kept before them (ends kept)."""
    keep = np.ones(px.size, dtype=bool)
    if px.size > 2:
        rx, ry = np.round(px * 2), np.round(py * 2)
        keep[1:] = (rx[1:] != rx[:-1]) | (ry[1:] != ry[:-1])
        keep[-1] = True
    return px[keep], py[keep]


def _path(px: np.ndarray, py: np.ndarray) -> str:
    finite = np.isfinite(px) & np.isfinite(py)
    px, py = _thin(px[finite], py[finite])
    if px.size == 0:
        return ""
    points = " L".join(f"{x:.1f},{y:.1f}" for x, y in zip(px.tolist(), py.tolist(), strict=True))
    return "M" + points


def panel(
    title: str,
    lines: Sequence[Line],
    *,
    xlabel: str,
    ylabel: str,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    diagonal: bool = False,
    x_names: Sequence[str] | None = None,
) -> str:
    """One chart as an ``<svg>`` element (``x_names``: category names at x = 0, 1, …)."""
    (x0, x1), (y0, y1) = x_range, y_range
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: np.ndarray) -> np.ndarray:
        return LEFT + (np.asarray(x, dtype=np.float64) - x0) / (x1 - x0) * w

    def sy(y: np.ndarray) -> np.ndarray:
        return TOP + h - (np.asarray(y, dtype=np.float64) - y0) / (y1 - y0) * h

    out = [
        f'<svg class="chart" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{html.escape(title)}">',
        f'<text x="{LEFT + w / 2:.0f}" y="14" class="title">{html.escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" class="frame"/>',
    ]
    for t in nice_ticks(y0, y1):
        y = float(sy(np.array(t)))
        out.append(f'<line x1="{LEFT - 3}" x2="{LEFT + w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'class="grid"/><text x="{LEFT - 5}" y="{y + 3:.1f}" class="ytick">'
                   f"{_label(t)}</text>")  # fmt: skip
    if x_names is not None:
        every = max(1, math.ceil(len(x_names) / 6))
        ticks = [(float(i), name) for i, name in enumerate(x_names) if i % every == 0]
    else:
        ticks = [(t, _label(t)) for t in nice_ticks(x0, x1)]
    for t, name in ticks:
        x = float(sx(np.array(t)))
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + h}" y2="{TOP + h + 3}" '
                   f'class="axis"/><text x="{x:.1f}" y="{TOP + h + 13}" class="xtick">'
                   f"{html.escape(name)}</text>")  # fmt: skip
    out.append(f'<text x="{LEFT + w / 2:.0f}" y="{HEIGHT - 6}" class="xlabel">'
               f"{html.escape(xlabel)}</text>")  # fmt: skip
    out.append(f'<text transform="translate(11 {TOP + h / 2:.0f}) rotate(-90)" '
               f'class="ylabel">{html.escape(ylabel)}</text>')  # fmt: skip
    if diagonal:
        ends = f"M{sx(np.array(x0)):.1f},{sy(np.array(y0)):.1f} L{sx(np.array(x1)):.1f},"
        out.append(f'<path d="{ends}{sy(np.array(y1)):.1f}" class="diagonal"/>')
    for line in lines:
        colour, style = line_look(line.index)
        label = html.escape(line.label)
        if line.lo is not None and line.hi is not None:
            ok = np.isfinite(line.lo) & np.isfinite(line.hi)
            if ok.any():
                px = sx(line.xs[ok])
                upper = _path(px, sy(line.hi[ok]))
                lower = _path(px[::-1], sy(line.lo[ok][::-1]))
                out.append(f'<path d="{upper} L{lower[1:]} Z" fill="{colour}" class="band" '
                           f'data-label="{label}"/>')  # fmt: skip
        d = _path(sx(line.xs), sy(line.ys))
        dash = f' stroke-dasharray="{DASHES[style]}"' if DASHES.get(style) else ""
        out.append(f'<path d="{d}" stroke="{colour}"{dash} class="line" data-label="{label}">'
                   f"<title>{label}</title></path>")  # fmt: skip
        if line.flags is not None:
            for x, y in zip(line.xs[line.flags], line.ys[line.flags], strict=True):
                out.append(f'<circle cx="{float(sx(x)):.1f}" cy="{float(sy(y)):.1f}" r="4" '
                           f'class="flag" stroke="{colour}" data-label="{label}"/>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)


#: The charts' look, part of the report's style sheet.
STYLE = """
svg.chart { background: #fff; margin: 2px; }
svg.chart .title { font-size: 11px; text-anchor: middle; }
svg.chart .frame { fill: none; stroke: #bbb; }
svg.chart .grid { stroke: #eee; }
svg.chart .axis { stroke: #888; }
svg.chart .ytick { font-size: 9px; text-anchor: end; fill: #444; }
svg.chart .xtick { font-size: 9px; text-anchor: middle; fill: #444; }
svg.chart .xlabel, svg.chart .ylabel { font-size: 10px; text-anchor: middle; fill: #333; }
svg.chart .diagonal { stroke: #bbb; stroke-dasharray: 2 3; fill: none; }
svg.chart .line { fill: none; stroke-width: 1.4; }
svg.chart .band { opacity: 0.15; stroke: none; }
svg.chart .flag { fill: none; stroke-width: 2; }
.panels { display: flex; flex-wrap: wrap; }
"""
