"""The negative class is named by its label value, as caret prints it (issue 18).

caret's ``print(confusionMatrix(...))`` names both classes by their factor levels; a binary
state with string labels records the values found in the data (``spec.classes``), so the
printout names the negative value (``ham``) rather than ``not spam``, also when the parts
merged had one class each.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import streameval as se
from streameval.spec import Spec

FIXTURES = Path(__file__).parent / "fixtures" / "r"
CARET = json.loads((FIXTURES / "caret.json").read_text())
PRINTED = [line.rstrip() for line in (FIXTURES / "caret_sms.txt").read_text().splitlines()]


def _sms() -> pl.DataFrame:
    """caret's SMS spam table as rows: TN 1203, FP 4, FN 31, TP 152 (positive 'spam')."""
    rows = []
    for cell in CARET["sms"]["table"]:
        predicted_spam = 1.0 if cell["predicted"] == "spam" else 0.0
        rows += [(cell["actual"], predicted_spam)] * int(cell["count"])
    return pl.DataFrame(rows, schema=["actual", "spam_score"], orient="row")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _split_parquet(tmp_path: Path) -> list[str]:
    """The SMS rows in two files: one with only 'spam' labels, one with only 'ham'."""
    df = _sms()
    paths = []
    for name in ("spam", "ham"):
        path = tmp_path / f"{name}.parquet"
        df.filter(pl.col("actual") == name).write_parquet(path)
        paths.append(str(path))
    return paths


def test_dataframe_summary_is_carets_whole_printout() -> None:
    state = se.accumulate(_sms(), label="actual", score="spam_score", positive="spam")
    assert state.spec.negative == "ham"
    assert _lines(state.summary()) == PRINTED


def test_parquet_parts_with_one_class_each_merge_to_carets_printout(tmp_path: Path) -> None:
    paths = _split_parquet(tmp_path)
    parts = [se.accumulate(p, label="actual", score="spam_score", positive="spam") for p in paths]
    assert [p.spec.classes for p in parts] == [("spam",), ("ham",)]
    merged = se.merge(parts)
    assert merged.spec.classes == ("ham", "spam")
    assert _lines(merged.summary()) == PRINTED
    # The same through state files (spec in the metadata) and through one scan of both.
    for i, part in enumerate(parts):
        part.write(tmp_path / f"part{i}.state.parquet")
    read = [se.read_state(tmp_path / f"part{i}.state.parquet") for i in range(2)]
    assert _lines(se.merge(read).summary()) == PRINTED
    scanned = se.accumulate(paths, label="actual", score="spam_score", positive="spam")
    assert _lines(scanned.summary()) == PRINTED
    counts = se.evaluate(paths, label="actual", score="spam_score", positive="spam")
    assert counts.select("tn", "fp", "fn", "tp").row(0) == (1203, 4, 31, 152)


def test_cli_summary_names_ham(tmp_path: Path) -> None:
    paths = _split_parquet(tmp_path)
    run = [sys.executable, "-m", "streameval", "evaluate", *paths, "--label", "actual"]
    run += ["--score", "spam_score", "--positive", "spam", "--summary"]
    out = subprocess.run(run, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert _lines(out.stdout) == PRINTED


def test_positive_first_in_level_order_keeps_carets_matrix_order() -> None:
    """caret orders the table by factor levels (sorted), whichever class is positive."""
    state = se.accumulate(_sms(), label="actual", score="spam_score", positive="ham")
    lines = _lines(state.summary())
    assert lines[3:6] == ["Prediction  ham spam", "      ham     4  152", "      spam 1203   31"]
    assert lines[-2] == "       'Positive' Class : ham"


@pytest.mark.parametrize(
    ("labels", "positive", "names"),
    [
        ([0, 1, 1, 0], None, ["0", "1"]),
        ([1, 2, 2, 1], 2, ["1", "2"]),
        ([False, True, True, False], None, ["FALSE", "TRUE"]),
    ],
)
def test_numeric_and_boolean_levels(
    labels: list[object], positive: object, names: list[str]
) -> None:
    df = pl.DataFrame({"y": labels, "p": [0.2, 0.7, 0.4, 0.6]})
    lines = _lines(se.accumulate(df, label="y", score="p", positive=positive).summary())
    neg, pos = names
    width = max(len("Prediction"), len(neg), len(pos))
    assert lines[3].split() == ["Prediction", neg, pos]
    assert lines[4].split()[0] == neg and lines[5].split()[0] == pos
    assert lines[3].startswith("Prediction".ljust(width))
    assert lines[-2].split(":")[1].strip() == pos


def test_only_positives_seen_names_the_negative_not_positive() -> None:
    """No negative value in any part: nothing to name it by, so ``not spam`` stands in."""
    df = pl.DataFrame({"y": ["spam", "spam"], "p": [0.7, 0.2]})
    state = se.accumulate(df, label="y", score="p", positive="spam")
    assert state.spec.negative is None
    lines = _lines(state.summary())
    assert lines[3].split() == ["Prediction", "not", "spam", "spam"]
    assert lines[4].startswith("  not spam") and lines[5].startswith("  spam    ")
    later = se.accumulate(pl.DataFrame({"y": ["ham"], "p": [0.1]}), label="y", score="p",
                          positive="spam")  # fmt: skip
    assert se.merge([state, later]).spec.negative == "ham"


def test_report_names_both_classes() -> None:
    from streameval.report import build_report

    state = se.accumulate(_sms(), label="actual", score="spam_score", positive="spam")
    assert "positive class spam, negative class ham" in build_report(state)


def test_old_spec_json_still_reads() -> None:
    spec = Spec.from_json('{"kind": "binary", "keys": [], "precision": 8, "positive": "spam"}')
    assert spec.negative is None
    assert Spec(kind="binary", keys=(), precision=8).negative == 0
    assert Spec(kind="binary", keys=(), precision=8, positive=False).negative is True
