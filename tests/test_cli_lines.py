"""Issue 23, items 3–8: every line the command line prints is true, complete and fits."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import streameval as se
from streameval import display
from streameval.cli import main


def cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streameval", *args],
        capture_output=True,
        text=True,
        check=False,
        **kw,  # type: ignore[call-overload]
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Binary predictions with a segment, a fold column, a row id, and multiclass columns."""
    rng = np.random.default_rng(3)
    n = 600
    y = rng.integers(0, 2, n)
    path = tmp_path_factory.mktemp("cli_lines") / "preds.parquet"
    pl.DataFrame(
        {
            "label": y,
            "score": np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1),
            "other": rng.random(n),
            "segment": rng.choice(["north", "south", "east"], n),
            "fold": rng.integers(0, 3, n),
            "id": np.arange(n),
            "animal": rng.choice(["cat", "dog", "bird"], n),
            "guess": rng.choice(["cat", "dog", "bird"], n),
            "amount": rng.random(n) * 10,
        }
    ).write_parquet(path)
    return path


@pytest.fixture
def tty(monkeypatch):
    """Make the command line believe stdout is a terminal of the given width."""

    def set_width(width: int) -> None:
        monkeypatch.setattr(display, "terminal_width", lambda stream=None: width)

    return set_width


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# ----------------------------------------------------- item 3: every combination prints

BINARY = ["--label", "label", "--score", "score"]
COMBOS = list(
    itertools.product(
        [[], ["--metric", "roc_auc"], ["--metric", "recall", "--metric", "f1"]],
        [[], ["--by", "segment"]],
        [[], ["--threshold", "0.3", "--threshold", "0.6"]],
        [
            [],
            ["--ci", "wilson"],
            ["--ci", "bootstrap", "--replicates", "20"],
            ["--ci", "jackknife", "--jackknife-by", "fold", "--by", "fold"],
        ],
        [[], ["--folds", "fold"]],
    )
)


@pytest.mark.parametrize("parts", COMBOS, ids=lambda p: " ".join(itertools.chain(*p)) or "plain")
def test_every_combination_of_metric_by_threshold_ci_folds_prints(data, capsys, tty, parts):
    tty(100)
    argv = ["evaluate", str(data), *BINARY, *itertools.chain.from_iterable(parts)]
    status, out, err = run(capsys, *argv)
    if parts[4] and ("bootstrap" in parts[3] or "jackknife" in parts[3]):
        # resampling and folds do not combine: one error line that says so, before any data
        assert status == 2 and err.count("\n") == 1 and "--folds" in err, err
        return
    assert status == 0, err
    lines = out.splitlines()
    assert lines and all(len(line) <= 100 for line in lines), out
    if "segment" in argv:
        assert "north" in out


@pytest.mark.parametrize(
    "extra",
    [
        ["--task", "multiclass", "--label", "animal", "--prediction", "guess", "--table", t]
        for t in ("metrics", "per-class", "confusion")
    ]
    + [
        [
            "--task",
            "multiclass",
            "--label",
            "animal",
            "--prediction",
            "guess",
            "--table",
            "per-class",
            "--ci",
            "wilson",
        ],
        ["--task", "paired", "--label", "label", "--scores", "score,other", "--table", "tests"],
        ["--task", "paired", "--label", "label", "--scores", "score,other", "--ci", "wilson"],
        ["--task", "regression", "--label", "amount", "--prediction", "score", "--metric", "r2"],
    ],
    ids=lambda e: " ".join(e[1:2] + e[-2:]),
)
@pytest.mark.parametrize("by", [[], ["--by", "segment"]], ids=["all", "by"])
def test_every_table_prints(data, capsys, tty, extra, by):
    tty(80)
    status, out, err = run(capsys, "evaluate", str(data), *extra, *by)
    assert status == 0, err
    assert all(len(line) <= 80 for line in out.splitlines()), out


# -------------------------------------- item 4: --classes checked, --output - streams a table


def test_classes_with_the_binary_task_is_an_error(data, capsys):
    status, _out, err = run(capsys, "evaluate", str(data), *BINARY, "--by", "segment",
                            "--classes", "a")  # fmt: skip
    assert status == 2
    assert "--classes" in err and "multiclass" in err and "binary" in err


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_output_dash_streams_the_table(data, fmt):
    args = ["evaluate", str(data), *BINARY, "--by", "segment", "--output", "-", "--format", fmt]
    result = subprocess.run(
        [sys.executable, "-m", "streameval", *args], capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr
    expected = se.evaluate(data, label="label", score="score", by="segment")
    if fmt == "csv":
        got = pl.read_csv(io.BytesIO(result.stdout))
    elif fmt == "json":
        got = pl.DataFrame(json.loads(result.stdout))
    else:
        got = pl.read_parquet(io.BytesIO(result.stdout))
    assert got.columns == expected.columns
    assert got["roc_auc"].to_list() == pytest.approx(expected["roc_auc"].to_list(), rel=1e-12)


def test_format_overrides_the_suffix_of_output(data, tmp_path, capsys):
    out = tmp_path / "metrics.txt"
    status, _o, err = run(capsys, "evaluate", str(data), *BINARY, "--output", str(out),
                          "--format", "csv")  # fmt: skip
    assert status == 0, err
    assert pl.read_csv(out).height == 1


# --------------------------------------------------- item 5: arguments before any data


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--output", "metrics.xlsx"], "metrics.xlsx"),
        (["--output", "-", "--format", "xlsx"], "xlsx"),
        (["--ci", "wilson", "--level", "1.5"], "1.5"),
        (["--threshold", "nan"], "nan"),
        (["--ci", "bootstrap", "--replicates", "0"], "--replicates"),
        (["--repeats", "r"], "--folds"),
        (["--ci", "jackknife"], "--jackknife-by"),
    ],
)
def test_arguments_are_checked_before_data_is_read(tmp_path, capsys, extra, needle):
    missing = str(tmp_path / "not-there.parquet")  # reading it would fail: "does not exist"
    status, _out, err = run(capsys, "evaluate", missing, *BINARY, *extra)
    assert status == 2
    assert needle in err and "does not exist" not in err, err


def test_state_metrics_output_is_checked_before_the_state_is_read(tmp_path, capsys):
    status, _out, err = run(capsys, "state", "metrics", str(tmp_path / "gone.parquet"),
                            "--output", "m.xlsx")  # fmt: skip
    assert status == 2 and "m.xlsx" in err, err


# ------------------------------------- item 6: --version, usage hint, options of other tasks


def test_version():
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"streameval {se.__version__}"


def test_usage_hint_names_the_command_once(capsys):
    status, _out, err = run(capsys, "evaluate", "--label", "x")
    assert status == 2
    assert "streameval streameval" not in err and "'streameval evaluate --help'" in err


REGRESSION = ["--task", "regression", "--label", "amount", "--prediction", "score"]
MULTICLASS = ["--task", "multiclass", "--label", "animal", "--prediction", "guess"]


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        ([*BINARY, "--classes", "a"], ["--classes", "multiclass"]),
        ([*BINARY, "--power", "2"], ["--power", "regression"]),
        ([*BINARY, "--alpha", "0.9"], ["--alpha", "regression"]),
        ([*BINARY, "--top-k", "3"], ["--top-k", "multiclass"]),
        ([*REGRESSION, "--top-k", "3"], ["--top-k", "multiclass"]),
        ([*REGRESSION, "--positive", "1"], ["--positive", "binary"]),
        ([*MULTICLASS, "--positive", "cat"], ["--positive", "binary"]),
        ([*MULTICLASS, "--threshold", "0.3"], ["--threshold", "binary"]),
        ([*BINARY, "--level", "0.9"], ["--level", "--ci"]),
        ([*BINARY, "--replicates", "50"], ["--replicates", "--ci bootstrap"]),
        ([*BINARY, "--seed", "4"], ["--seed", "--ci bootstrap"]),
        ([*BINARY, "--ci", "wilson", "--row-id", "id"], ["--row-id", "--ci bootstrap"]),
        ([*BINARY, "--jackknife-by", "fold"], ["--jackknife-by", "--ci jackknife"]),
        ([*BINARY, "--auc-method", "hanley-mcneil"], ["--auc-method", "--ci"]),
        ([*BINARY, "--table", "confusion"], ["--table confusion", "multiclass"]),
    ],
    ids=lambda v: " ".join(v[-2:]) if isinstance(v, list) and v and v[0].startswith("--") else "",
)
def test_an_option_of_another_task_is_an_error(data, capsys, extra, needles):
    status, _out, err = run(capsys, "evaluate", str(data), *extra)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("streameval: error:")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_state_metrics_alpha_on_a_binary_state(data, tmp_path, capsys):
    path = tmp_path / "s.parquet"
    se.accumulate(data, label="label", score="score").write(path)
    status, _out, err = run(capsys, "state", "metrics", str(path), "--alpha", "0.9")
    assert status == 2 and "--alpha" in err and "regression" in err and "binary" in err, err


@pytest.mark.parametrize(
    ("extra", "kwargs"),
    [
        (
            [
                "--task",
                "multiclass",
                "--label",
                "animal",
                "--scores",
                "score,other,amount",
                "--classes",
                "cat,dog,bird",
            ],
            {
                "task": "multiclass",
                "label": "animal",
                "scores": ["score", "other", "amount"],
                "classes": ["cat", "dog", "bird"],
            },
        ),
        (REGRESSION, {"task": "regression", "label": "amount", "prediction": "score"}),
        (
            [*BINARY, "--ci", "bootstrap", "--replicates", "20", "--metric", "roc_auc"],
            {
                "label": "label",
                "score": "score",
                "ci": "bootstrap",
                "bootstrap": 20,
                "metrics": ["roc_auc"],
            },
        ),
    ],
    ids=["multiclass", "regression", "bootstrap"],
)
def test_effective_defaults_are_unchanged(data, capsys, extra, kwargs):
    status, out, err = run(capsys, "evaluate", str(data), *extra, "--output", "-")
    assert status == 0, err
    got = pl.read_csv(io.StringIO(out))
    expected = se.evaluate(data, **kwargs)
    assert got.columns == expected.columns
    for column in expected.columns:
        if expected[column].dtype.is_float():
            assert got[column].to_list() == pytest.approx(expected[column].to_list(), rel=1e-12)


# ------------------------------------------------- item 7: tables that fit the terminal


def test_the_default_table_fits_80_and_120_columns_and_says_what_is_left_out(data, capsys, tty):
    for width in (80, 120):
        tty(width)
        for ci in ([], ["--ci", "bootstrap", "--replicates", "20"]):
            status, out, err = run(capsys, "evaluate", str(data), *BINARY, "--by", "segment", *ci)
            assert status == 0, err
            lines = out.splitlines()
            assert max(len(line) for line in lines) <= width, out
            assert "segment" in lines[0] and "roc_auc" in lines[0]
            assert "did not fit" in out and "--all" in out


def test_bootstrap_intervals_are_shown_whole(data, capsys, tty):
    tty(120)
    status, out, _ = run(capsys, "evaluate", str(data), *BINARY, "--ci", "bootstrap",
                         "--replicates", "20", "--metric", "roc_auc")  # fmt: skip
    assert status == 0
    table = se.evaluate(data, label="label", score="score", ci="bootstrap", bootstrap=20,
                        metrics=["roc_auc"])  # fmt: skip
    lo = display.number(table["roc_auc_lo"].item())
    hi = display.number(table["roc_auc_hi"].item())
    assert f"[{lo}, {hi}]" in out


def test_a_cut_table_says_how_many_rows_are_left(tmp_path, capsys, tty):
    tty(80)
    n = 2_000
    path = tmp_path / "many.parquet"
    pl.DataFrame({"y": [i % 2 for i in range(n)], "p": [(i % 7) / 7 for i in range(n)],
                  "g": [i // 4 for i in range(n)]}).write_parquet(path)  # fmt: skip
    status, out, _ = run(capsys, "evaluate", str(path), "--label", "y", "--score", "p",
                         "--by", "g")  # fmt: skip
    assert status == 0
    assert "… 300 more rows (--all, or --output FILE)" in out
    status, out, _ = run(capsys, "evaluate", str(path), "--label", "y", "--score", "p",
                         "--by", "g", "--all")  # fmt: skip
    assert "more rows" not in out and max(len(line) for line in out.splitlines()) <= 80


def test_piped_output_is_complete_csv(tmp_path, capsys):
    n = 2_000
    path = tmp_path / "many.parquet"
    pl.DataFrame({"y": [i % 2 for i in range(n)], "p": [(i % 7) / 7 for i in range(n)],
                  "g": [i // 4 for i in range(n)]}).write_parquet(path)  # fmt: skip
    status, out, err = run(capsys, "evaluate", str(path), "--label", "y", "--score", "p",
                           "--by", "g")  # fmt: skip
    assert status == 0
    table = pl.read_csv(io.StringIO(out))
    assert table.height == 500 and table.columns[:3] == ["g", "n", "positives"]
    assert "more columns" in err  # the note goes to stderr, the table stays CSV


def test_state_metrics_prints_a_fitted_table_not_a_polars_frame(data, tmp_path, capsys, tty):
    tty(80)
    path = tmp_path / "s.parquet"
    se.accumulate(data, label="label", score="score", by="segment").write(path)
    status, out, _ = run(capsys, "state", "metrics", str(path))
    assert status == 0
    assert "┌" not in out and "shape:" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert out.splitlines()[0].split()[:2] == ["segment", "n"]


def test_numbers_have_four_significant_digits():
    assert display.number(0.812345) == "0.8123"
    assert display.number(0.0312) == "0.03120"
    assert display.number(3e-05) == "3.000e-05"
    assert display.number(12345.67) == "12346"
    assert display.number(0.0) == "0"
    assert display.number(None) == "null"


# ---------------------------------------------------- item 8: messages in the user's words


def test_report_message_names_groups_rows_and_the_file(data, tmp_path):
    out = tmp_path / "r.html"
    result = cli("report", str(data), *BINARY, "--by", "segment", "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert "state rows" not in result.stderr
    assert "3 groups" in result.stderr and "600 rows" in result.stderr
    assert str(out) in result.stderr


def test_demo_says_where_its_data_went_and_removes_it(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**__import__("os").environ, "TMPDIR": str(scratch)}
    result = cli("demo", "--rows", "3000", "--output", "-", env=env)
    assert result.returncode == 0, result.stderr
    assert list(scratch.iterdir()) == [], "the demo's data was left behind"
    assert "removed" in result.stderr and str(scratch) in result.stderr
    kept = tmp_path / "kept"
    result = cli("demo", "--rows", "3000", "--dir", str(kept), "--output", "-")
    assert result.returncode == 0, result.stderr
    assert any(kept.rglob("*.parquet")) and str(kept) in result.stderr
