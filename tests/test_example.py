"""The cross-validation example runs, and its numbers are scikit-learn's fold by fold.

The docs' cross-validation page shows the example file whole (its block runs there too).
"""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn import metrics as skm

from reference import close

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "crossval.py"


def docs_block() -> str:
    text = (ROOT / "docs" / "crossval.md").read_text(encoding="utf-8")
    found = re.search(
        r"<!-- crossval-example:start -->\n```python\n(.*?)```\n<!-- crossval-example:end -->",
        text,
        re.DOTALL,
    )
    assert found, "docs/crossval.md has no cross-validation example block"
    return found.group(1)


def test_the_docs_show_the_example_file():
    assert docs_block() == EXAMPLE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    out = tmp_path_factory.mktemp("crossval")
    argv = sys.argv
    sys.argv = [str(EXAMPLE), str(out)]
    try:
        return runpy.run_path(str(EXAMPLE), run_name="__main__")
    finally:
        sys.argv = argv


def _reference(y: np.ndarray, p: np.ndarray) -> dict:
    return {
        "n": len(y),
        "roc_auc": skm.roc_auc_score(y, p) if len(set(y)) == 2 else None,
        "accuracy": skm.accuracy_score(y, p >= 0.5),
        "log_loss": skm.log_loss(y, p, labels=[0, 1]),
    }


def test_the_example_folds_are_stratified(example):
    df = example["df"]
    counts = df.group_by("label", "fold").len()
    for (label,), part in counts.partition_by("label", as_dict=True).items():
        n = int((df["label"] == label).sum())
        assert set(part["len"].to_list()) <= {n // 5, -(-n // 5)}


def test_the_example_table_is_sklearn_fold_by_fold(example):
    cv, oof = example["cv"], pl.read_parquet(example["out"] / "oof")
    for (segment,), part in oof.partition_by("segment", as_dict=True).items():
        rows = {(r["fold"], r["estimate"]): r for r in cv.filter(segment=segment).to_dicts()}
        folds = []
        for (k,), fold in sorted(part.partition_by("fold", as_dict=True).items()):
            ref = _reference(fold["label"].to_numpy(), fold["score"].to_numpy())
            folds.append(ref)
            for name, value in ref.items():
                assert close(rows[(k, "fold")][name], value), (segment, k, name)
        for name in ("n", "accuracy", "log_loss", "roc_auc"):
            values = [f[name] for f in folds]
            if None in values:
                assert rows[(None, "mean")][name] is None
                continue
            assert close(rows[(None, "mean")][name], np.mean(values))
            assert close(rows[(None, "sd")][name], np.std(values, ddof=1))
        pooled = _reference(part["label"].to_numpy(), part["score"].to_numpy())
        for name, value in pooled.items():
            assert close(rows[(None, "pooled")][name], value)


def test_the_example_bootstrap_estimates(example):
    estimates, oob = example["estimates"], pl.read_parquet(example["out"] / "oob.parquet")
    resub = example["resubstitution"]
    for (segment,), part in oob.partition_by("segment", as_dict=True).items():
        rows = {r["estimate"]: r for r in estimates.filter(segment=segment).to_dicts()}
        wrong = part.with_columns(loss=(pl.col("score") >= 0.5).cast(pl.Int64) != pl.col("label"))
        err1 = wrong.group_by("id").agg(pl.col("loss").mean())["loss"].mean()
        mine = resub.filter(segment=segment)
        err = 1 - skm.accuracy_score(mine["label"], mine["score"] >= 0.5)
        assert close(rows["oob"]["error_rate"], err1)
        assert close(rows["resubstitution"]["error_rate"], err)
        assert close(rows[".632"]["error_rate"], 0.368 * err + 0.632 * err1)
        assert rows[".632"]["error_rate"] <= rows[".632+"]["error_rate"] <= err1
