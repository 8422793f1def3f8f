"""Plots and the HTML report: real files, and the report opened in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import streameval as se
from streameval.errors import InputError

matplotlib = pytest.importorskip("matplotlib")
pytestmark = pytest.mark.filterwarnings("ignore:log_loss and brier are null:UserWarning")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _frame(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "segment": rng.choice(["north", "south", "east"], n),
            "day": rng.choice(["2026-10-01", "2026-10-02"], n),
            "y": y,
            "a": np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1),
            "b": np.clip(0.1 * y + 0.9 * rng.random(n), 0, 1),
        }
    )


def _nonblank(png: Path) -> float:
    """Share of pixels that are not (near) white."""
    import matplotlib.image

    image = matplotlib.image.imread(png)[..., :3]
    return float((image.min(axis=2) < 0.9).mean())


@pytest.mark.parametrize("kind", ["roc", "pr", "det", "cost", "gains"])
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_curve_plots_have_a_panel_per_facet_and_a_line_per_overlay(tmp_path, kind, suffix):
    from streameval.plot import plot_curve

    df = _frame()
    a = se.accumulate(df, label="y", score="a", by=["segment", "day"])
    b = se.accumulate(df, label="y", score="b", by=["segment", "day"])
    path = tmp_path / f"{kind}{suffix}"
    fig = plot_curve({"model a": a, "model b": b}, kind, facet="segment", path=path)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 3
    labels = visible[0].get_legend_handles_labels()[1]
    assert labels == ["model a 2026-10-01", "model a 2026-10-02", "model b 2026-10-01",
                      "model b 2026-10-02"]  # fmt: skip
    assert path.stat().st_size > 1000
    if suffix == ".png":
        assert _nonblank(path) > 0.01


def test_confusion_heatmap_and_plot_errors(tmp_path):
    from streameval.plot import plot_confusion, plot_curve

    df = _frame().with_columns(
        pl.col("segment").alias("actual"), pl.col("segment").shuffle(seed=1).alias("guess")
    )
    state = se.accumulate(df, task="multiclass", label="actual", prediction="guess")
    fig = plot_confusion(state, normalize="true", path=tmp_path / "cm.png")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 9 and _nonblank(tmp_path / "cm.png") > 0.01
    binary = se.accumulate(df, label="y", score="a", by="segment")
    with pytest.raises(InputError, match="curve kind"):
        plot_curve(binary, "lift")
    with pytest.raises(InputError, match="facet"):
        plot_curve(binary, "roc", facet="day")
    with pytest.raises(InputError, match="mapping name"):
        plot_curve({"a": "not a state"}, "roc")  # type: ignore[dict-item]


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_report_renders_in_chromium(tmp_path, task):
    if CHROMIUM is None:  # CI installs Debian's chromium (.ci/run): there, a missing one fails
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Chromium browser: .ci/run installs Debian's chromium")
        pytest.skip("needs a Chromium browser (Debian's chromium)")
    source = tmp_path / "preds"
    for (day,), part in _frame(4000).partition_by("day", as_dict=True).items():
        folder = source / f"day={day}"
        folder.mkdir(parents=True)
        part.drop("day").with_columns(
            pl.col("segment").shuffle(seed=2).alias("guess")
        ).write_parquet(folder / "part-0.parquet")
    report = tmp_path / "report.html"
    args = ["--label", "y", "--score", "a", "--by", "segment"] if task == "binary" else [
        "--task", "multiclass", "--label", "segment", "--prediction", "guess"]  # fmt: skip
    run = subprocess.run(
        [sys.executable, "-m", "streameval", "report", str(source), *args, "--by", "day",
         "--output", str(report)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    text = report.read_text()
    assert "http://" not in text and "https://" not in text  # works offline: nothing fetched
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--virtual-time-budget=5000", "--window-size=1400,1000"]  # fmt: skip
    dom = subprocess.run(
        [*browser, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    metrics = re.search(r'<table id="metrics".*?<tbody>(.*?)</tbody>', dom, re.S)
    groups = 6 if task == "binary" else 2  # three segments × two days, or two days
    assert metrics is not None and metrics.group(1).count("<tr") == groups
    charts = text.count('<svg class="chart"')
    # binary: a trend panel per metric (6) and ROC, PR, threshold, cost and calibration per
    # segment (15); multiclass: accuracy, balanced accuracy, macro F1 and kappa over days, the
    # confusion matrix
    assert charts == (21 if task == "binary" else 5)
    assert f'data-charts-drawn="{charts}"' in dom  # each one laid out, with its lines
    width = re.search(r'data-metrics-width="(\d+)"', dom)
    assert width is not None and int(width.group(1)) <= 1400  # the table fits a 1400 px window
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", report.as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert _nonblank(shot) > 0.02


def test_the_threshold_plot_draws_precision_recall_and_f1_per_group(tmp_path):
    from streameval.plot import curve_table, plot_curve

    state = se.accumulate(_frame(), label="y", score="a", by=["segment", "day"])
    long = curve_table(state, "threshold")
    wide = state.threshold_curve()
    assert long.height == 3 * wide.height
    precision = long.filter(pl.col("measure") == "precision").drop("measure", "value")
    assert precision.equals(wide.select(precision.columns))
    fig = plot_curve(state, "threshold", facet="segment", path=tmp_path / "t.png")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 3
    labels = visible[0].get_legend_handles_labels()[1]
    assert labels == [f"{day} {m}" for day in ("2026-10-01", "2026-10-02")
                      for m in ("f1", "precision", "recall")]  # fmt: skip
    assert visible[0].get_xlabel() == "threshold" and _nonblank(tmp_path / "t.png") > 0.01


def test_the_report_has_the_threshold_panel_with_a_line_per_group_and_measure():
    from streameval.report import build_report

    state = se.accumulate(_frame(), label="y", score="a", by=["segment"])
    text = build_report(state)
    figure = text.split('data-kind="threshold"')[1].split("</div>")[0]
    assert figure.count('<svg class="chart"') == 3  # a panel per segment
    legend = text.split('<ul class="legend" data-kind="threshold">')[1].split("</ul>")[0]
    assert legend.count("<li") == 3  # precision, recall, f1 (one group per panel)
