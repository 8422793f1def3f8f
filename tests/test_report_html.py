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
    measures = [f"{s} {m}" for s in SEGMENTS for m in ("f1", "precision", "recall")]
    for legend in legends:
        labels = [label for label, _, _ in legend]
        if labels == measures:  # the threshold curve: a line per segment and measure
            looks = [(colour, style) for _, colour, style in legend]
            assert len(set(looks)) == len(looks), looks  # 39 lines, each its own look
            continue
        assert labels == SEGMENTS
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


def _drifting(seed: int = 7) -> pl.DataFrame:
    """Three days of two segments; segment "b"'s model breaks on the third day."""
    from datetime import date

    rng = np.random.default_rng(seed)
    frames = []
    for d in (1, 2, 3):
        for seg in ("a", "b"):
            n = 2000
            y = rng.integers(0, 2, n)
            signal = 0.0 if (seg, d) == ("b", 3) else 0.5
            frames.append(pl.DataFrame({
                "day": [date(2026, 10, d)] * n, "seg": [seg] * n, "y": y,
                "p": np.clip(signal * y + (1 - signal) * rng.random(n), 0, 1),
            }))  # fmt: skip
    return pl.concat(frames)


def test_a_changed_day_is_flagged_in_the_tables_and_on_the_chart():
    from streameval.report import build_report

    state = se.accumulate(_drifting(), label="y", score="p", by=["seg", "day"])
    text = build_report(state)
    tests = state.roc_test("day", "previous")
    changed = tests.filter(pl.col("p_value") < 0.05)
    assert changed.select("seg", pl.col("day").cast(str)).rows() == [("b", "2026-10-03")]
    flagged = re.search(r'<table id="changes".*?<tbody>(.*?)</tbody>', text, re.S)
    assert flagged is not None
    assert re.findall(r'<tr class="flag"><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>',
                      flagged.group(1)) == [("b", "2026-10-03")]  # fmt: skip
    metrics = re.search(r'<table id="metrics".*?<tbody>(.*?)</tbody>', text, re.S)
    assert metrics is not None
    rows = re.findall(r"<tr( class=\"flag\")?><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>",
                      metrics.group(1))  # fmt: skip
    assert [(seg, day) for mark, seg, day in rows if mark] == [("b", "2026-10-03")]
    assert len(rows) == 6
    panels = re.findall(r'<svg class="chart".*?aria-label="([^"]+)".*?</svg>',
                        text.split('data-kind="trend"')[1].split("</div>")[0], re.S)  # fmt: skip
    assert panels[:2] == ["roc_auc", "average_precision"]
    auc_panel = text.split('aria-label="roc_auc"')[1].split("</svg>")[0]
    assert auc_panel.count('class="flag"') == 1 and 'data-label="b"' in auc_panel
    assert auc_panel.count('class="band"') == 2  # each segment's DeLong interval


def test_the_baseline_can_be_one_day_and_the_trend_any_key():
    from streameval.report import build_report

    state = se.accumulate(_drifting(), label="y", score="p", by=["seg", "day"])
    text = build_report(state, baseline="2026-10-01")
    body = re.search(r'<table id="tests".*?<tbody>(.*?)</tbody>', text, re.S)
    assert body is not None and body.group(1).count("<tr") == 4  # two later days × 2 segments
    assert "differs from the baseline" in text
    strings = se.accumulate(_drifting().with_columns(pl.col("day").cast(str)), label="y",
                            score="p", by=["seg", "day"])  # fmt: skip
    assert "<h2>Over" not in build_report(strings)  # a String key is no date: no trend
    assert "<h2>Over day</h2>" in build_report(strings, trend="day")
    with pytest.raises(se.errors.InputError, match="expected trend to be a group key"):
        build_report(strings, trend="hour")
