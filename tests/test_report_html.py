"""The HTML report's legends, colours, key cells and counts, read from the HTML itself."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

import streameval as se

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

SEGMENTS = [f"seg {i}" for i in range(1, 14)]  # 13 segments: "seg 10" sorts after "seg 9"


def _frame(n: int = 6000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "day": rng.choice(["2026-10-01", "2026-10-02"], n),
            "segment": rng.choice(SEGMENTS, n),
            "y": y,
            "p": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1),
        }
    )


def _report(by: list[str]) -> str:
    from streameval.report import build_report

    return build_report(se.accumulate(_frame(), label="y", score="p", by=by))


def _legends(text: str) -> list[list[tuple[str, str, str]]]:
    """Each figure's legend: (label, colour, line style) per entry, in order."""
    out = []
    for block in re.findall(r'<ul class="legend"[^>]*>(.*?)</ul>', text, re.S):
        entries = re.findall(
            r'<li data-color="([^"]+)" data-style="([^"]+)"[^>]*>.*?<span class="label">([^<]*)'
            r"</span></li>",
            block,
            re.S,
        )
        out.append([(label, colour, style) for colour, style, label in entries])
    return out


def test_legends_sort_naturally_and_keep_their_colours_apart():
    text = _report(["day", "segment"])  # a panel per day, a line per segment
    legends = _legends(text)
    assert legends, "the report lists each figure's legend in HTML"
    for legend in legends:
        assert [label for label, _, _ in legend] == SEGMENTS
        colours = [colour for _, colour, _ in legend]
        assert len(set(colours)) == len(colours), colours  # 13 distinct colours


def test_plot_legend_order_and_colours():
    from matplotlib.colors import to_hex

    from streameval.plot import plot_curve

    state = se.accumulate(_frame(), label="y", score="p", by=["day", "segment"])
    fig = plot_curve(state, "roc", facet="day")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    assert labels == SEGMENTS
    assert len({to_hex(h.get_color()) for h in handles}) == len(SEGMENTS)


def test_panels_and_the_metric_table_sort_naturally():
    from streameval.plot import plot_curve

    state = se.accumulate(_frame(), label="y", score="p", by="segment")
    fig = plot_curve(state, "roc", facet="segment")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == [f"segment = {s}" for s in SEGMENTS]
    text = _report(["segment"])
    body = re.search(r'<table id="metrics".*?<tbody>(.*?)</tbody>', text, re.S)
    assert body is not None
    firsts = re.findall(r"<tr><td[^>]*>([^<]*)</td>", body.group(1))
    assert firsts == SEGMENTS


def test_numeric_keys_sort_by_value():
    from streameval.plot import plot_curve

    df = _frame().with_columns(pl.col("segment").str.slice(4).cast(pl.Int64).alias("k"))
    state = se.accumulate(df, label="y", score="p", by=["day", "k"])
    labels = plot_curve(state, "roc", facet="day").axes[0].get_legend_handles_labels()[1]
    assert labels == [str(i) for i in range(1, 14)]


def test_key_cells_do_not_wrap():
    text = _report(["day", "segment"])
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert style is not None
    rule = re.search(r"td\.key[^{]*\{([^}]*)\}", style.group(1))
    assert rule is not None and "white-space: nowrap" in rule.group(1)
    body = re.search(r'<table id="metrics".*?<tbody>(.*?)</tbody>', text, re.S)
    assert body is not None
    row = re.search(r"<tr>(.*?)</tr>", body.group(1), re.S)
    assert row is not None
    cells = re.findall(r"<td([^>]*)>", row.group(1))
    assert all('class="key"' in c for c in cells[:2]) and 'class="key"' not in cells[2]


@pytest.mark.parametrize("weights", [None, "int", "float"])
def test_multiclass_support_is_a_count_where_the_weights_are(weights):
    from streameval.report import build_report

    rng = np.random.default_rng(3)
    n = 3000
    y = rng.choice(["a", "b", "c"], n)
    df = pl.DataFrame({"y": y, "guess": rng.permutation(y), "w": rng.integers(1, 4, n)})
    if weights == "float":
        df = df.with_columns(pl.col("w") * 0.3)
    state = se.accumulate(
        df, task="multiclass", label="y", prediction="guess", weight=None if weights is None
        else "w",
    )  # fmt: skip
    table = state.per_class()
    integral = weights != "float"
    assert (table["support"].dtype == pl.Int64) is integral
    text = build_report(state)
    body = re.search(r'<table id="per-class".*?<thead><tr>(.*?)</tr>.*?<tbody>(.*?)</tbody>',
                     text, re.S)  # fmt: skip
    assert body is not None
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", body.group(1))
    column = heads.index("support")
    rows = re.findall(r"<tr>(.*?)</tr>", body.group(2), re.S)
    shown = [re.findall(r"<td[^>]*>([^<]*)</td>", r)[column] for r in rows]
    assert all(re.fullmatch(r"\d+", s) for s in shown) is integral, shown
