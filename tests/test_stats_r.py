"""Intervals and tests against values computed with R (pROC, caret, vcd, stats).

The fixtures and the R scripts that made them are in ``tests/fixtures/r/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import streameval as se
from streameval.stats.confusion import binomial_greater, mcnemar_2x2
from streameval.stats.proportions import interval

FIXTURES = Path(__file__).parent / "fixtures" / "r"
TOL = 1e-9


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def close(ours: float | None, theirs: float | None, tol: float = TOL) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return abs(ours - theirs) <= tol * max(1.0, abs(theirs))


def rel_close(ours: float, theirs: float, tol: float = 1e-9) -> bool:
    return abs(ours - theirs) <= tol * abs(theirs) or abs(ours - theirs) < 1e-300


BINOMIAL = load("binomial.json")
DELONG = load("delong.json")
CARET = load("caret.json")


@pytest.mark.parametrize("case", BINOMIAL["intervals"], ids=lambda c: f"{c['x']}/{c['n']}")
@pytest.mark.parametrize("method", ["clopper-pearson", "wilson"])
def test_proportion_intervals_match_r(case: dict[str, Any], method: str) -> None:
    key = method.replace("-", "_")
    for level, name in ((0.95, "conf_95"), (0.9, "conf_90")):
        lo, hi = interval(np.array([case["x"]]), np.array([case["n"]]), method, level)
        r_lo, r_hi = case[key][name]
        assert close(float(lo[0]), r_lo) and close(float(hi[0]), r_hi), (lo, hi, r_lo, r_hi)


@pytest.mark.parametrize("case", BINOMIAL["binom_greater"], ids=lambda c: f"{c['x']}/{c['n']}")
def test_binomial_test_matches_r(case: dict[str, Any]) -> None:
    ours = binomial_greater(np.array([case["x"]]), np.array([case["n"]]), np.array([case["p0"]]))
    assert rel_close(float(ours[0]), case["p_value"])


def test_mcnemar_matches_r() -> None:
    for case in BINOMIAL["mcnemar"]:
        rows = np.asarray(case["rows"], dtype=float)
        if rows.shape == (2, 2):
            ours = mcnemar_2x2(np.array([rows[0, 1]]), np.array([rows[1, 0]]))
            assert rel_close(float(ours[0]), case["correct_true"]["p_value"])
        else:
            cells = [
                (str(a), str(p), int(rows[p, a]))
                for p in range(rows.shape[0])
                for a in range(rows.shape[1])
            ]
            state = _multiclass_state(cells, [str(i) for i in range(rows.shape[0])])
            ours = state.metrics(ci="wilson")["mcnemar_pvalue"].item()
            assert rel_close(ours, case["correct_true"]["p_value"])


def _multiclass_state(cells: list[tuple[Any, Any, int]], levels: list[Any]) -> se.State:
    """A multiclass state of (actual, predicted, count) cells, written as two Parquet-free
    chunks merged (so the statistics come from a merged state)."""
    rows = [(a, p) for a, p, count in cells for _ in range(count)]
    df = pl.DataFrame(rows, schema=["y", "pred"], orient="row")
    half = df.height // 2
    parts = [df[:half], df[half:]]
    states = [
        se.accumulate(part, task="multiclass", label="y", prediction="pred", classes=levels)
        for part in parts
    ]
    return se.merge(states)


def _caret_state(case: dict[str, Any]) -> se.State:
    cells = [(c["actual"], c["predicted"], int(c["count"])) for c in case["table"]]
    return _multiclass_state(cells, case["levels"])


@pytest.mark.parametrize("name", ["sms", "three_class", "four_class"])
def test_caret_overall_statistics(name: str) -> None:
    case = CARET[name]
    overall = case["overall"]
    row = _caret_state(case).metrics(ci="clopper-pearson").row(0, named=True)
    assert close(row["accuracy"], overall["Accuracy"])
    assert close(row["cohen_kappa"], overall["Kappa"], 1e-12)
    assert close(row["accuracy_lo"], overall["AccuracyLower"])
    assert close(row["accuracy_hi"], overall["AccuracyUpper"])
    assert close(row["no_information_rate"], overall["AccuracyNull"])
    assert rel_close(row["accuracy_pvalue"], overall["AccuracyPValue"])
    assert rel_close(row["mcnemar_pvalue"], overall["McnemarPValue"])
    assert close(row["cohen_kappa_se"], case["kappa_ase"]["unweighted"]["ase"])


@pytest.mark.parametrize("name", ["three_class", "four_class"])
def test_caret_by_class_statistics(name: str) -> None:
    case = CARET[name]
    table = _caret_state(case).per_class(ci="wilson")
    names = {
        "Sensitivity": "recall",
        "Specificity": "specificity",
        "Pos Pred Value": "precision",
        "Neg Pred Value": "npv",
        "Precision": "precision",
        "Recall": "recall",
        "F1": "f1",
    }
    for row in table.iter_rows(named=True):
        theirs = case["byClass"][f"Class: {row['class']}"]
        for r_name, column in names.items():
            if r_name in theirs:
                assert close(row[column], theirs[r_name]), (row["class"], r_name)


def test_sms_binary_task_reproduces_caret_printout() -> None:
    """The reference texts' SMS spam example: TN 1203, FP 4, FN 31, TP 152."""
    case = CARET["sms"]
    rows = []
    for cell in case["table"]:
        predicted_spam = 1.0 if cell["predicted"] == "spam" else 0.0
        rows += [(cell["actual"], predicted_spam)] * int(cell["count"])
    df = pl.DataFrame(rows, schema=["actual", "spam_score"], orient="row")
    state = se.accumulate(df, label="actual", score="spam_score", positive="spam")
    row = state.metrics(ci="clopper-pearson").row(0, named=True)
    assert (row["tn"], row["fp"], row["fn"], row["tp"]) == (1203, 4, 31, 152)
    by_class = case["byClass"]
    assert close(row["recall"], by_class["Sensitivity"])
    assert close(row["specificity"], by_class["Specificity"])
    assert close(row["precision"], by_class["Precision"])
    assert close(row["npv"], by_class["Neg Pred Value"])
    assert close(row["prevalence"], by_class["Prevalence"])
    assert close(row["balanced_accuracy"], by_class["Balanced Accuracy"])
    assert close(row["cohen_kappa_se"], case["kappa_ase"]["unweighted"]["ase"])
    printed = (FIXTURES / "caret_sms.txt").read_text().splitlines()
    ours = state.summary().splitlines()
    start = next(i for i, line in enumerate(printed) if "Accuracy :" in line)
    offset = next(i for i, line in enumerate(ours) if "Accuracy :" in line)
    assert [line.rstrip() for line in ours[offset:]] == [
        line.rstrip() for line in printed[start : start + len(ours) - offset]
    ]


@pytest.mark.parametrize("name", ["three_class", "four_class"])
def test_multiclass_summary_is_carets_printout(name: str) -> None:
    ours = _caret_state(CARET[name]).summary().splitlines()
    printed = (FIXTURES / CARET[name]["printed_file"]).read_text().splitlines()
    assert [line.rstrip() for line in ours] == [line.rstrip() for line in printed]


def _roc_data() -> pl.DataFrame:
    return pl.read_csv(FIXTURES / "delong_data.csv")


@pytest.mark.parametrize("case", DELONG["case_order"])
def test_delong_interval_matches_proc(case: str) -> None:
    data = _roc_data().filter(pl.col("case") == case)
    for model in ("a", "b"):
        theirs = DELONG["cases"][case][model]
        state = se.accumulate(data, label="y", score=model, precision="exact")
        for level, name in ((0.95, "ci_delong_95"), (0.9, "ci_delong_90")):
            row = state.metrics(ci="wilson", level=level).row(0, named=True)
            assert close(row["roc_auc"], theirs["auc"])
            assert close(row["roc_auc_se"] ** 2, theirs["var_delong"])
            assert close(row["roc_auc_lo"], theirs[name][0])
            assert close(row["roc_auc_hi"], theirs[name][2])


@pytest.mark.parametrize("case", DELONG["case_order"])
@pytest.mark.parametrize("alternative", ["two_sided", "greater", "less"])
def test_paired_delong_matches_proc(case: str, alternative: str) -> None:
    data = _roc_data().filter(pl.col("case") == case)
    theirs = DELONG["cases"][case]["paired_test"][alternative]
    chunks = [data[i::3] for i in range(3)]
    state = se.merge(
        se.accumulate(c, task="paired", label="y", scores=["a", "b"], precision="exact")
        for c in chunks
    )
    row = state.roc_test(alternative=alternative.replace("_", "-")).row(0, named=True)
    assert close(row["roc_auc_a"], theirs["estimate"][0])
    assert close(row["roc_auc_b"], theirs["estimate"][1])
    assert close(row["z"], theirs["statistic"])
    assert rel_close(row["p_value"], theirs["p_value"]) or close(row["p_value"], theirs["p_value"])
    assert close(row["difference_lo"], theirs["conf_int"][0])
    assert close(row["difference_hi"], theirs["conf_int"][1])
    models = state.metrics()
    for model, auc in zip(["a", "b"], theirs["estimate"], strict=True):
        ours = models.filter(pl.col("model") == model)
        assert close(ours["roc_auc"].item(), auc)
        var = DELONG["cases"][case][model]["var_delong"]
        assert close(ours["roc_auc_se"].item() ** 2, var)


@pytest.mark.parametrize("alternative", ["two_sided", "greater", "less"])
def test_unpaired_delong_matches_proc(alternative: str) -> None:
    spec = DELONG["unpaired_test"]
    first, second = spec["roc1"], spec["roc2"]
    data = _roc_data()
    parts = [
        data.filter(pl.col("case") == side["case"]).select(
            pl.lit(side["case"]).alias("which"), "y", pl.col(side["model"]).alias("score")
        )
        for side in (first, second)
    ]
    state = se.accumulate(pl.concat(parts), label="y", score="score", by="which", precision="exact")
    theirs = spec[alternative]
    row = state.roc_test("which", second["case"], alternative=alternative.replace("_", "-"))
    row_ = row.row(0, named=True)
    assert row_["which"] == first["case"]
    assert close(row_["statistic"], theirs["statistic"])
    assert close(row_["df"], theirs["parameter"]["df"])
    assert close(row_["p_value"], theirs["p_value"])


def test_one_vs_rest_delong_matches_proc() -> None:
    data = pl.read_csv(FIXTURES / "delong_multi.csv")
    state = se.accumulate(
        data, task="multiclass", label="y", scores=["p0", "p1", "p2"], precision="exact"
    )
    table = state.per_class(ci="wilson")
    for row in table.iter_rows(named=True):
        theirs = DELONG["multiclass"]["one_vs_rest"][f"class_{row['class']}"]
        assert close(row["roc_auc"], theirs["auc"])
        assert close(row["roc_auc_se"] ** 2, theirs["var_delong"])
        assert close(row["roc_auc_lo"], theirs["ci_delong_95"][0])
        assert close(row["roc_auc_hi"], theirs["ci_delong_95"][2])
